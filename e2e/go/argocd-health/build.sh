#!/usr/bin/env bash
# Builds e2e/go/argocd-health (an Argo CD health.lua in gopher-lua, the Lua Argo CD embeds, at the
# version Argo CD pins) from its module and caches it: e2e/go/build-program.sh. Prints its path.
exec "$(dirname "${BASH_SOURCE[0]}")/../build-program.sh" argocd-health github.com/yuin/gopher-lua

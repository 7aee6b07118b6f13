#!/usr/bin/env bash
# Builds e2e/go/argocd-health (runs an Argo CD health.lua in github.com/yuin/gopher-lua, the Lua
# implementation Argo CD embeds, at the version Argo CD pins) from its module through the Go
# module proxy, verified against go.sum, and caches it under $AIRUNWAY_CONTROL_PLANE_CACHE/..
# (default $HOME/.cache/airunway) keyed by the gopher-lua version and a hash of the sources.
# Prints the binary's path.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache_root="$(dirname "${AIRUNWAY_CONTROL_PLANE_CACHE:-$HOME/.cache/airunway/control-plane}")"
version="$(sed -n 's#^require github\.com/yuin/gopher-lua \(v[^ ]*\).*#\1#p' "$here/go.mod" | head -n1)"
[ -n "$version" ] || { echo "error: no github.com/yuin/gopher-lua version in $here/go.mod" >&2; exit 1; }
sources="$(cat "$here/go.mod" "$here/go.sum" "$here/main.go" | sha256sum | cut -c1-12)"
dest="$cache_root/argocd-health-gopher-lua-$version-$sources"
if [ -x "$dest/argocd-health" ]; then
  echo "$dest/argocd-health"
  exit 0
fi
command -v go >/dev/null || { echo "error: the Go toolchain is required (go >= 1.26)" >&2; exit 1; }
mkdir -p "$dest"
start=$(date +%s)
(cd "$here" && CGO_ENABLED=0 GOFLAGS="-buildvcs=false -mod=readonly" GOTOOLCHAIN="${GOTOOLCHAIN:-auto}" \
  go build -trimpath -ldflags "-s -w" -o "$dest/argocd-health.tmp" .)
mv "$dest/argocd-health.tmp" "$dest/argocd-health"
echo "built argocd-health (github.com/yuin/gopher-lua $version) in $(( $(date +%s) - start ))s" >&2
echo "$dest/argocd-health"

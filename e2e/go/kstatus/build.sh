#!/usr/bin/env bash
# Builds e2e/go/kstatus (kstatus of sigs.k8s.io/cli-utils, the status library Flux uses) from its
# module and caches it: e2e/go/build-program.sh. Prints its path.
exec "$(dirname "${BASH_SOURCE[0]}")/../build-program.sh" kstatus sigs.k8s.io/cli-utils

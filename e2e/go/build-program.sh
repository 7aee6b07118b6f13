#!/usr/bin/env bash
# Builds one of the harness's small Go programs (e2e/go/<name>: a main.go around one upstream
# module) from its module through the Go module proxy, verified against its go.sum, and caches
# it under $AIRUNWAY_CONTROL_PLANE_CACHE/.. (default $HOME/.cache/airunway) keyed by that
# module's version and a hash of the sources. Prints the binary's path.
#
#   e2e/go/build-program.sh <name> <module>    e.g. kstatus sigs.k8s.io/cli-utils
set -euo pipefail

name="${1:?usage: build-program.sh <name> <module>}"
module="${2:?usage: build-program.sh <name> <module>}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/$name" && pwd)"
cache_root="$(dirname "${AIRUNWAY_CONTROL_PLANE_CACHE:-$HOME/.cache/airunway/control-plane}")"
# The module's version in go.mod: `require <module> vX` or an indented line of a require block.
version="$(awk -v m="$module" '($1 == m) { print $2; exit } ($1 == "require" && $2 == m) { print $3; exit }' "$here/go.mod")"
[ -n "$version" ] || { echo "error: no $module version in $here/go.mod" >&2; exit 1; }
sources="$(cat "$here/go.mod" "$here/go.sum" "$here/main.go" | sha256sum | cut -c1-12)"
dest="$cache_root/$name-$version-$sources"
if [ -x "$dest/$name" ]; then
  echo "$dest/$name"
  exit 0
fi
command -v go >/dev/null || { echo "error: the Go toolchain is required (go >= 1.26)" >&2; exit 1; }
mkdir -p "$dest"
start=$(date +%s)
(cd "$here" && CGO_ENABLED=0 GOFLAGS="-buildvcs=false -mod=readonly" GOTOOLCHAIN="${GOTOOLCHAIN:-auto}" \
  go build -trimpath -ldflags "-s -w" -o "$dest/$name.tmp" .)
mv "$dest/$name.tmp" "$dest/$name"
echo "built $name ($module $version) in $(( $(date +%s) - start ))s" >&2
echo "$dest/$name"

#!/usr/bin/env bash
# Builds e2e/go/reference (a tiny program around github.com/distribution/reference, the
# image-reference grammar of container runtimes) from its module through the Go module proxy,
# verified against go.sum, and caches it under $AIRUNWAY_CONTROL_PLANE_CACHE/.. (default
# $HOME/.cache/airunway) keyed by the module's version and a hash of the sources. Prints the
# binary's path.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache_root="$(dirname "${AIRUNWAY_CONTROL_PLANE_CACHE:-$HOME/.cache/airunway/control-plane}")"
version="$(sed -n 's#^require github\.com/distribution/reference \(v[^ ]*\).*#\1#p' "$here/go.mod" | head -n1)"
[ -n "$version" ] || { echo "error: no github.com/distribution/reference version in $here/go.mod" >&2; exit 1; }
sources="$(cat "$here/go.mod" "$here/go.sum" "$here/main.go" | sha256sum | cut -c1-12)"
dest="$cache_root/reference-$version-$sources"
if [ -x "$dest/reference" ]; then
  echo "$dest/reference"
  exit 0
fi
command -v go >/dev/null || { echo "error: the Go toolchain is required (go >= 1.26)" >&2; exit 1; }
mkdir -p "$dest"
start=$(date +%s)
(cd "$here" && CGO_ENABLED=0 GOFLAGS="-buildvcs=false -mod=readonly" GOTOOLCHAIN="${GOTOOLCHAIN:-auto}" \
  go build -trimpath -ldflags "-s -w" -o "$dest/reference.tmp" .)
mv "$dest/reference.tmp" "$dest/reference"
echo "built reference (github.com/distribution/reference $version) in $(( $(date +%s) - start ))s" >&2
echo "$dest/reference"

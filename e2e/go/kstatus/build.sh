#!/usr/bin/env bash
# Builds e2e/go/kstatus (a tiny program around sigs.k8s.io/cli-utils/pkg/kstatus, the status
# library Flux uses) from its module through the Go module proxy, verified against go.sum, and
# caches it under $AIRUNWAY_CONTROL_PLANE_CACHE/.. (default $HOME/.cache/airunway) keyed by the
# cli-utils version and a hash of the sources. Prints the binary's path.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache_root="$(dirname "${AIRUNWAY_CONTROL_PLANE_CACHE:-$HOME/.cache/airunway/control-plane}")"
version="$(sed -n 's#^[[:space:]]*sigs\.k8s\.io/cli-utils \(v[^ ]*\).*#\1#p' "$here/go.mod" | head -n1)"
[ -n "$version" ] || { echo "error: no sigs.k8s.io/cli-utils version in $here/go.mod" >&2; exit 1; }
sources="$(cat "$here/go.mod" "$here/go.sum" "$here/main.go" | sha256sum | cut -c1-12)"
dest="$cache_root/kstatus-$version-$sources"
if [ -x "$dest/kstatus" ]; then
  echo "$dest/kstatus"
  exit 0
fi
command -v go >/dev/null || { echo "error: the Go toolchain is required (go >= 1.26)" >&2; exit 1; }
mkdir -p "$dest"
start=$(date +%s)
(cd "$here" && CGO_ENABLED=0 GOFLAGS="-buildvcs=false -mod=readonly" GOTOOLCHAIN="${GOTOOLCHAIN:-auto}" \
  go build -trimpath -ldflags "-s -w" -o "$dest/kstatus.tmp" .)
mv "$dest/kstatus.tmp" "$dest/kstatus"
echo "built kstatus (sigs.k8s.io/cli-utils $version) in $(( $(date +%s) - start ))s" >&2
echo "$dest/kstatus"

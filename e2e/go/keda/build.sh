#!/usr/bin/env bash
# Builds KEDA's operator and its external metrics API server (github.com/kedacore/keda/v2
# cmd/operator and cmd/adapter, the version pinned in go.mod here and in KEDA_VERSION of
# e2e/control-plane/versions.env) through the Go module proxy, verified against go.sum, and
# caches them under $AIRUNWAY_CONTROL_PLANE_CACHE/.. (default $HOME/.cache/airunway) keyed by
# that version and a hash of go.mod and go.sum:
#
#   keda-v$KEDA_VERSION-<hash>/{keda-operator,keda-adapter}
#
# Prints that directory. `--dest` prints it without building; `--cached` exits 0 when both
# binaries are there. e2e/control-plane/build.sh runs this as one of its parallel groups (same
# private Go build and module caches); run alone it uses the caller's GOCACHE and GOMODCACHE.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../../control-plane/versions.env
. "$here/../../control-plane/versions.env"
cache_root="$(dirname "${AIRUNWAY_CONTROL_PLANE_CACHE:-$HOME/.cache/airunway/control-plane}")"
version="$(awk '$1 == "github.com/kedacore/keda/v2" { print $2; exit }' "$here/go.mod")"
[ "$version" = "v$KEDA_VERSION" ] || {
  echo "error: $here/go.mod requires github.com/kedacore/keda/v2 ${version:-(none)}, versions.env says KEDA_VERSION=$KEDA_VERSION" >&2
  exit 1
}
sources="$(cat "$here/go.mod" "$here/go.sum" "$here/build.sh" | sha256sum | cut -c1-12)"
dest="$cache_root/keda-v$KEDA_VERSION-$sources"
case "${1:-}" in
  --dest) echo "$dest"; exit 0 ;;
  --cached) [ -x "$dest/keda-operator" ] && [ -x "$dest/keda-adapter" ]; exit ;;
esac
if [ -x "$dest/keda-operator" ] && [ -x "$dest/keda-adapter" ]; then
  echo "$dest"
  exit 0
fi
command -v go >/dev/null || { echo "error: the Go toolchain is required (go >= 1.26)" >&2; exit 1; }
mkdir -p "$dest"
start=$(date +%s)
ldflags="-s -w -X github.com/kedacore/keda/v2/version.Version=$KEDA_VERSION -X github.com/kedacore/keda/v2/version.GitCommit=unknown"
(cd "$here" && CGO_ENABLED=0 GOFLAGS="-buildvcs=false -mod=readonly" GOTOOLCHAIN="${GOTOOLCHAIN:-auto}" \
  go build -trimpath -ldflags "$ldflags" -o "$dest/tmp/" \
    github.com/kedacore/keda/v2/cmd/operator github.com/kedacore/keda/v2/cmd/adapter)
mv "$dest/tmp/operator" "$dest/keda-operator"
mv "$dest/tmp/adapter" "$dest/keda-adapter"
rmdir "$dest/tmp"
echo "built keda-operator and keda-adapter (KEDA v$KEDA_VERSION) in $(( $(date +%s) - start ))s" >&2
echo "$dest"

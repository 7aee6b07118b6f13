#!/usr/bin/env bash
# Builds a minimal OpenTelemetry Collector for the traces e2e suite (e2e/tests/traces.rs):
# main.go here, on go.opentelemetry.io/collector/otelcol with the OTLP receiver and the debug
# exporter only (the versions pinned in go.mod here and in OTELCOL_VERSION of
# e2e/control-plane/versions.env), through the Go module proxy, verified against go.sum, and
# caches it under $AIRUNWAY_CONTROL_PLANE_CACHE/.. (default $HOME/.cache/airunway) keyed by
# that version and a hash of go.mod, go.sum, main.go and this script:
#
#   otelcol-v$OTELCOL_VERSION-<hash>/otelcol
#
# Prints that directory. `--dest` prints it without building; `--cached` exits 0 when the
# binary is there. e2e/control-plane/build.sh runs this as one of its parallel groups (same
# private Go build and module caches); run alone it uses the caller's GOCACHE and GOMODCACHE.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../../control-plane/versions.env
. "$here/../../control-plane/versions.env"
cache_root="$(dirname "${AIRUNWAY_CONTROL_PLANE_CACHE:-$HOME/.cache/airunway/control-plane}")"
version="$(awk '$1 == "go.opentelemetry.io/collector/otelcol" { print $2; exit }' "$here/go.mod")"
[ "$version" = "v$OTELCOL_VERSION" ] || {
  echo "error: $here/go.mod requires go.opentelemetry.io/collector/otelcol ${version:-(none)}, versions.env says OTELCOL_VERSION=$OTELCOL_VERSION" >&2
  exit 1
}
sources="$(cat "$here/go.mod" "$here/go.sum" "$here/main.go" "$here/build.sh" | sha256sum | cut -c1-12)"
dest="$cache_root/otelcol-v$OTELCOL_VERSION-$sources"
case "${1:-}" in
  --dest) echo "$dest"; exit 0 ;;
  --cached) [ -x "$dest/otelcol" ]; exit ;;
esac
if [ -x "$dest/otelcol" ]; then
  echo "$dest"
  exit 0
fi
command -v go >/dev/null || { echo "error: the Go toolchain is required (go >= 1.26)" >&2; exit 1; }
mkdir -p "$dest"
start=$(date +%s)
(cd "$here" && CGO_ENABLED=0 GOFLAGS="-buildvcs=false -mod=readonly" GOTOOLCHAIN="${GOTOOLCHAIN:-auto}" \
  go build -trimpath -ldflags "-s -w" -o "$dest/otelcol.tmp" .)
mv "$dest/otelcol.tmp" "$dest/otelcol"
echo "built otelcol (collector v$OTELCOL_VERSION: OTLP receiver, debug exporter) in $(( $(date +%s) - start ))s" >&2
echo "$dest"

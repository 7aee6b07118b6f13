#!/usr/bin/env bash
# Builds e2e/go/kubectl (kubectl from the k8s.io/kubectl module, the version matching
# K8S_VERSION of e2e/control-plane/versions.env) through the Go module proxy, verified against
# go.sum, and caches it under $AIRUNWAY_CONTROL_PLANE_CACHE/.. (default $HOME/.cache/airunway)
# keyed by that version and a hash of the sources. Prints the binary's path.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../../control-plane/versions.env
. "$here/../../control-plane/versions.env"
cache_root="$(dirname "${AIRUNWAY_CONTROL_PLANE_CACHE:-$HOME/.cache/airunway/control-plane}")"
version="$(sed -n 's#^[[:space:]]*k8s\.io/kubectl \(v[^ ]*\).*#\1#p' "$here/go.mod" | head -n1)"
[ "$version" = "v0.${K8S_VERSION#1.}" ] || {
  echo "error: $here/go.mod requires k8s.io/kubectl $version, versions.env says Kubernetes $K8S_VERSION (v0.${K8S_VERSION#1.})" >&2
  exit 1
}
sources="$(cat "$here/go.mod" "$here/go.sum" "$here/main.go" | sha256sum | cut -c1-12)"
dest="$cache_root/kubectl-v$K8S_VERSION-$sources"
if [ -x "$dest/kubectl" ]; then
  echo "$dest/kubectl"
  exit 0
fi
command -v go >/dev/null || { echo "error: the Go toolchain is required (go >= 1.26)" >&2; exit 1; }
mkdir -p "$dest"
start=$(date +%s)
ldflags="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags="$ldflags -X $p.gitVersion=v$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$(echo "$K8S_VERSION" | cut -d. -f2)"
  ldflags="$ldflags -X $p.gitTreeState=clean -X $p.gitCommit=unknown -X $p.buildDate=1970-01-01T00:00:00Z"
done
(cd "$here" && CGO_ENABLED=0 GOFLAGS="-buildvcs=false -mod=readonly" GOTOOLCHAIN="${GOTOOLCHAIN:-auto}" \
  go build -trimpath -ldflags "$ldflags" -o "$dest/kubectl.tmp" .)
mv "$dest/kubectl.tmp" "$dest/kubectl"
echo "built kubectl v$K8S_VERSION in $(( $(date +%s) - start ))s" >&2
echo "$dest/kubectl"

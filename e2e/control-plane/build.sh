#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager (Kubernetes v$K8S_VERSION) and etcd
# (v$ETCD_VERSION) from Go modules through the Go module proxy: no git clone, no download site.
#
# Output: $AIRUNWAY_CONTROL_PLANE_CACHE/k8s-v$K8S_VERSION-etcd-v$ETCD_VERSION/{kube-apiserver,
#         kube-controller-manager,etcd} (default cache: $HOME/.cache/airunway/control-plane).
# A build whose binaries are already there is skipped. Prints the binary directory last.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
. "$here/versions.env"

cache_root="${AIRUNWAY_CONTROL_PLANE_CACHE:-$HOME/.cache/airunway/control-plane}"
dest="$cache_root/k8s-v$K8S_VERSION-etcd-v$ETCD_VERSION"
work="$cache_root/build-k8s-v$K8S_VERSION-etcd-v$ETCD_VERSION"

if [ -x "$dest/kube-apiserver" ] && [ -x "$dest/kube-controller-manager" ] && [ -x "$dest/etcd" ]; then
  echo "control plane binaries already built in $dest" >&2
  echo "$dest"
  exit 0
fi

command -v go >/dev/null || { echo "error: the Go toolchain is required (go >= 1.26)" >&2; exit 1; }

k8s_minor="$(echo "$K8S_VERSION" | cut -d. -f2)"
staging="v0.${K8S_VERSION#1.}"   # 1.36.3 -> v0.36.3

export CGO_ENABLED=0
export GOFLAGS="-buildvcs=false"
export GOTOOLCHAIN="${GOTOOLCHAIN:-auto}"
mkdir -p "$dest.tmp" "$work/k8s" "$work/etcd"

start=$(date +%s)

# The staging modules are read from k/k's own go.mod (its ./staging/src replace block), so the
# list stays right across versions. A dependency's replace directives are ignored by Go, hence
# the scratch module that pins every staging module to the matching v0.X.Y tag.
kgomod="$(cd "$work" && go mod download -json "k8s.io/kubernetes@v$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
modules="$(sed -n 's#^[[:space:]]*k8s\.io/\([a-z0-9-]*\) => \./staging/src/k8s\.io/.*#\1#p' "$kgomod" | sort -u)"
[ -n "$modules" ] || { echo "error: could not read the staging module list from $kgomod" >&2; exit 1; }

{
  printf 'module example.invalid/airunway-test-control-plane\n\ngo 1.26.0\n\n'
  printf 'require k8s.io/kubernetes v%s\n\n' "$K8S_VERSION"
  printf 'tool (\n\tk8s.io/kubernetes/cmd/kube-apiserver\n\tk8s.io/kubernetes/cmd/kube-controller-manager\n)\n\n'
  printf 'replace (\n'
  for m in $modules; do printf '\tk8s.io/%s => k8s.io/%s %s\n' "$m" "$m" "$staging"; done
  printf ')\n'
} > "$work/k8s/go.mod"

ldflags="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags="$ldflags -X $p.gitVersion=v$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$k8s_minor"
  ldflags="$ldflags -X $p.gitTreeState=clean -X $p.gitCommit=unknown -X $p.buildDate=1970-01-01T00:00:00Z"
done

echo "building kube-apiserver and kube-controller-manager v$K8S_VERSION ..." >&2
(cd "$work/k8s" && go mod tidy && go build -trimpath -ldflags "$ldflags" -o "$dest.tmp/" \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager)

# etcd gets its own scratch module: its server/go.mod carries ../api replaces of its own, and
# building it next to Kubernetes would force an untested mix of grpc/otel versions.
cat > "$work/etcd/go.mod" <<MOD
module example.invalid/airunway-test-etcd

go 1.26.0

require go.etcd.io/etcd/server/v3 v$ETCD_VERSION

tool go.etcd.io/etcd/server/v3
MOD
echo "building etcd v$ETCD_VERSION ..." >&2
(cd "$work/etcd" && go mod tidy && go build -trimpath -ldflags "-s -w" -o "$dest.tmp/etcd" go.etcd.io/etcd/server/v3)

"$dest.tmp/kube-apiserver" --version >&2
"$dest.tmp/kube-controller-manager" --version >&2
"$dest.tmp/etcd" --version >&2

rm -rf "$dest"
mv "$dest.tmp" "$dest"
echo "control plane built in $(( $(date +%s) - start ))s into $dest" >&2
echo "$dest"

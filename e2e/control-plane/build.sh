#!/usr/bin/env bash
# Builds every Go program the tests and the sandbox run, from Go modules through the Go module
# proxy (no git clone, no download site; each module is verified against go.sum / the checksum
# database by the go command):
#
#   kube-apiserver, kube-controller-manager, kube-scheduler  k8s.io/kubernetes v$K8S_VERSION
#   etcd                                                      go.etcd.io/etcd/server/v3 v$ETCD_VERSION
#   kwok                                                      sigs.k8s.io/kwok v$KWOK_VERSION
#   ray-operator (the KubeRay operator)                       github.com/ray-project/kuberay/ray-operator v$KUBERAY_VERSION
#   registry (the OCI distribution registry)                  github.com/distribution/distribution/v3 v$DISTRIBUTION_VERSION
#   epp (the Inference Extension's endpoint picker)           sigs.k8s.io/gateway-api-inference-extension v$GAIE_VERSION (cmd/epp)
#   keda-operator, keda-adapter (KEDA)                        github.com/kedacore/keda/v2 v$KEDA_VERSION (e2e/go/keda/build.sh)
#   otelcol (a minimal OpenTelemetry Collector)               go.opentelemetry.io/collector/otelcol v$OTELCOL_VERSION (e2e/go/otelcol/build.sh)
#
# Output, under $AIRUNWAY_CONTROL_PLANE_CACHE (default $HOME/.cache/airunway/control-plane),
# one directory per version:
#   k8s-v$K8S_VERSION-etcd-v$ETCD_VERSION/{kube-apiserver,kube-controller-manager,kube-scheduler,etcd}
#   kwok-v$KWOK_VERSION/kwok, kwok-v$KWOK_VERSION/stages/*.yaml (KWOK's own "fast" node and pod
#     stages and its node heartbeat, taken from the same module)
#   kuberay-v$KUBERAY_VERSION/ray-operator
#   distribution-v$DISTRIBUTION_VERSION/registry
#   epp-v$GAIE_VERSION/epp
#   ../keda-v$KEDA_VERSION-<hash>/{keda-operator,keda-adapter} (e2e/go/keda/build.sh: keyed by
#     its go.mod and go.sum too)
#   ../otelcol-v$OTELCOL_VERSION-<hash>/otelcol (e2e/go/otelcol/build.sh: keyed by its go.mod,
#     go.sum and main.go too)
# A binary already there is not built again. The groups build in parallel (logs in
# <cache>/build-logs/). Prints the control plane directory last (the harness finds the others
# from versions.env).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
. "$here/versions.env"

cache_root="${AIRUNWAY_CONTROL_PLANE_CACHE:-$HOME/.cache/airunway/control-plane}"
dest="$cache_root/k8s-v$K8S_VERSION-etcd-v$ETCD_VERSION"
work="$cache_root/build-k8s-v$K8S_VERSION-etcd-v$ETCD_VERSION"
kwok_dest="$cache_root/kwok-v$KWOK_VERSION"
kuberay_dest="$cache_root/kuberay-v$KUBERAY_VERSION"
distribution_dest="$cache_root/distribution-v$DISTRIBUTION_VERSION"
epp_dest="$cache_root/epp-v$GAIE_VERSION"
logs="$cache_root/build-logs"
keda_build="$here/../go/keda/build.sh"
otelcol_build="$here/../go/otelcol/build.sh"

have() { for f in "$@"; do [ -x "$f" ] || return 1; done; }
# Sets need_<group>=1 for each group whose binaries are not there, and missing to their count.
missing_binaries() {
  need_k8s=1; need_etcd=1; need_kwok=1; need_kuberay=1; need_distribution=1; need_epp=1; need_keda=1; need_otelcol=1
  have "$dest/kube-apiserver" "$dest/kube-controller-manager" "$dest/kube-scheduler" && need_k8s=0
  have "$dest/etcd" && need_etcd=0
  have "$kwok_dest/kwok" && [ -f "$kwok_dest/stages/pod-ready.yaml" ] && need_kwok=0
  have "$kuberay_dest/ray-operator" && need_kuberay=0
  have "$distribution_dest/registry" && need_distribution=0
  have "$epp_dest/epp" && need_epp=0
  "$keda_build" --cached && need_keda=0
  "$otelcol_build" --cached && need_otelcol=0
  missing=$((need_k8s + need_etcd + need_kwok + need_kuberay + need_distribution + need_epp + need_keda + need_otelcol))
}

if [ "${1:-}" = --cached ]; then
  missing_binaries
  [ "$missing" -eq 0 ]
  exit
fi

# One build at a time per cache: a second invocation (CI starts one in the background, then the
# test command asks for the binaries while it still builds) waits for the first, then finds the
# binaries there instead of building them again beside it.
mkdir -p "$cache_root"
exec 9>"$cache_root/.build.lock"
if ! flock -n 9; then
  echo "waiting for another build of these binaries to finish ($cache_root/.build.lock)" >&2
  wait_start=$(date +%s)
  flock 9
  echo "    waited $(( $(date +%s) - wait_start ))s" >&2
fi

missing_binaries
if [ "$missing" -eq 0 ]; then
  echo "binaries already built in $dest, $kwok_dest, $kuberay_dest, $distribution_dest, $epp_dest, $("$keda_build" --dest), $("$otelcol_build" --dest)" >&2
  echo "$dest"
  exit 0
fi

command -v go >/dev/null || { echo "error: the Go toolchain is required (go >= 1.26)" >&2; exit 1; }

export CGO_ENABLED=0
export GOFLAGS="-buildvcs=false"
export GOTOOLCHAIN="${GOTOOLCHAIN:-auto}"
# Go's build cache grows to about 6 GB for these programs and is of no use once they are built
# (the binaries are what is cached, by version): the groups share a private one, removed when
# all of them built. AIRUNWAY_GOCACHE names a cache to use and keep instead.
go_cache="${AIRUNWAY_GOCACHE:-$cache_root/go-build}"
export GOCACHE="$go_cache"
# The same for the modules they build from (about 3 GB of sources: Kubernetes and everything it
# imports): downloaded into a private module cache, removed with the build cache. It would
# otherwise stay in the user's module cache and take disk the Rust build needs later in the
# same run. AIRUNWAY_GOMODCACHE names a module cache to use and keep instead.
go_mod_cache="${AIRUNWAY_GOMODCACHE:-$cache_root/go-mod}"
export GOMODCACHE="$go_mod_cache"
mkdir -p "$dest" "$work/k8s" "$work/etcd" "$logs"

# Copies a downloaded module (verified by the go command) into a writable directory, so it is
# built as the main module with its own go.mod, go.sum and replace directives, exactly as its
# project builds it.
module_source() { # module version dir
  local src
  src="$(cd "$work" && go mod download -json "$1@$2" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')"
  [ -n "$src" ] || { echo "error: go mod download $1@$2 gave no directory" >&2; return 1; }
  rm -rf "$3"; mkdir -p "$(dirname "$3")"
  cp -r "$src" "$3"; chmod -R u+w "$3"
}

build_k8s() {
  local k8s_minor staging kgomod modules ldflags p
  k8s_minor="$(echo "$K8S_VERSION" | cut -d. -f2)"
  staging="v0.${K8S_VERSION#1.}"   # 1.36.3 -> v0.36.3
  # The staging modules are read from k/k's own go.mod (its ./staging/src replace block), so
  # the list stays right across versions. A dependency's replace directives are ignored by Go,
  # hence the scratch module that pins every staging module to the matching v0.X.Y tag.
  kgomod="$(cd "$work" && go mod download -json "k8s.io/kubernetes@v$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
  modules="$(sed -n 's#^[[:space:]]*k8s\.io/\([a-z0-9-]*\) => \./staging/src/k8s\.io/.*#\1#p' "$kgomod" | sort -u)"
  [ -n "$modules" ] || { echo "error: could not read the staging module list from $kgomod" >&2; return 1; }
  {
    printf 'module example.invalid/airunway-test-control-plane\n\ngo 1.26.0\n\n'
    printf 'require k8s.io/kubernetes v%s\n\n' "$K8S_VERSION"
    printf 'tool (\n\tk8s.io/kubernetes/cmd/kube-apiserver\n\tk8s.io/kubernetes/cmd/kube-controller-manager\n\tk8s.io/kubernetes/cmd/kube-scheduler\n)\n\n'
    printf 'replace (\n'
    for m in $modules; do printf '\tk8s.io/%s => k8s.io/%s %s\n' "$m" "$m" "$staging"; done
    printf ')\n'
  } > "$work/k8s/go.mod"
  ldflags="-s -w"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags="$ldflags -X $p.gitVersion=v$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$k8s_minor"
    ldflags="$ldflags -X $p.gitTreeState=clean -X $p.gitCommit=unknown -X $p.buildDate=1970-01-01T00:00:00Z"
  done
  (cd "$work/k8s" && go mod tidy && go build -trimpath -ldflags "$ldflags" -o "$work/out/" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler)
  for b in kube-apiserver kube-controller-manager kube-scheduler; do
    "$work/out/$b" --version
    mv "$work/out/$b" "$dest/$b"
  done
}

build_etcd() {
  # etcd gets its own scratch module: its server/go.mod carries ../api replaces of its own,
  # and building it next to Kubernetes would force an untested mix of grpc/otel versions.
  cat > "$work/etcd/go.mod" <<MOD
module example.invalid/airunway-test-etcd

go 1.26.0

require go.etcd.io/etcd/server/v3 v$ETCD_VERSION

tool go.etcd.io/etcd/server/v3
MOD
  (cd "$work/etcd" && go mod tidy && go build -trimpath -ldflags "-s -w" -o "$work/etcd/etcd" go.etcd.io/etcd/server/v3)
  "$work/etcd/etcd" --version
  mv "$work/etcd/etcd" "$dest/etcd"
}

build_kwok() {
  local src="$cache_root/build-kwok-v$KWOK_VERSION"
  module_source sigs.k8s.io/kwok "v$KWOK_VERSION" "$src"
  mkdir -p "$kwok_dest/stages"
  # The stages KWOK's own kwokctl installs by default: nodes become Ready and keep a heartbeat,
  # Pods bound to them become Running and Ready, and deleted Pods go away.
  cp "$src/kustomize/stage/node/fast/node-initialize.yaml" \
     "$src/kustomize/stage/node/heartbeat/node-heartbeat.yaml" \
     "$src/kustomize/stage/pod/fast/pod-ready.yaml" \
     "$src/kustomize/stage/pod/fast/pod-complete.yaml" \
     "$src/kustomize/stage/pod/fast/pod-delete.yaml" "$kwok_dest/stages/"
  if [ -x "$kwok_dest/kwok" ]; then return 0; fi
  (cd "$src" && go build -trimpath \
    -ldflags "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=v$KWOK_VERSION" \
    -o "$kwok_dest/kwok.tmp" ./cmd/kwok)
  mv "$kwok_dest/kwok.tmp" "$kwok_dest/kwok"
  "$kwok_dest/kwok" --version || true
}

build_kuberay() {
  local src="$cache_root/build-kuberay-v$KUBERAY_VERSION"
  module_source github.com/ray-project/kuberay/ray-operator "v$KUBERAY_VERSION" "$src"
  mkdir -p "$kuberay_dest"
  (cd "$src" && go build -trimpath -ldflags "-s -w" -o "$kuberay_dest/ray-operator.tmp" .)
  mv "$kuberay_dest/ray-operator.tmp" "$kuberay_dest/ray-operator"
}

build_distribution() {
  local src="$cache_root/build-distribution-v$DISTRIBUTION_VERSION"
  module_source github.com/distribution/distribution/v3 "v$DISTRIBUTION_VERSION" "$src"
  mkdir -p "$distribution_dest"
  (cd "$src" && go build -trimpath \
    -ldflags "-s -w -X github.com/distribution/distribution/v3/version.version=v$DISTRIBUTION_VERSION" \
    -o "$distribution_dest/registry.tmp" ./cmd/registry)
  mv "$distribution_dest/registry.tmp" "$distribution_dest/registry"
  "$distribution_dest/registry" --version
}

build_epp() {
  local src="$cache_root/build-epp-v$GAIE_VERSION"
  local version_pkg=sigs.k8s.io/gateway-api-inference-extension/version
  module_source sigs.k8s.io/gateway-api-inference-extension "v$GAIE_VERSION" "$src"
  mkdir -p "$epp_dest"
  # The module's go.work also names ./conformance, a module of its own that the module zip does
  # not hold: build the main module alone (its go.mod and go.sum), as its Dockerfile does.
  (cd "$src" && GOWORK=off go build -trimpath \
    -ldflags "-s -w -X $version_pkg.BuildRef=v$GAIE_VERSION -X $version_pkg.CommitSHA=unknown" \
    -o "$epp_dest/epp.tmp" ./cmd/epp)
  mv "$epp_dest/epp.tmp" "$epp_dest/epp"
}

# KEDA's operator and metrics server, from their own go.mod (e2e/go/keda), with the groups'
# private Go caches.
build_keda() {
  "$keda_build"
}

# The traces suite's collector, from its own go.mod (e2e/go/otelcol), with the same caches.
build_otelcol() {
  "$otelcol_build"
}

start=$(date +%s)
pids=()
names=()
run() { # name function
  local name="$1"; shift
  echo "building $name ... (log: $logs/$name.log)" >&2
  ( s=$(date +%s); "$@" > "$logs/$name.log" 2>&1 && echo "built $name in $(( $(date +%s) - s ))s" >&2 ) &
  pids+=("$!"); names+=("$name")
}
[ $need_k8s -eq 1 ] && run "kubernetes-v$K8S_VERSION" build_k8s
[ $need_etcd -eq 1 ] && run "etcd-v$ETCD_VERSION" build_etcd
[ $need_kwok -eq 1 ] && run "kwok-v$KWOK_VERSION" build_kwok
[ $need_kuberay -eq 1 ] && run "kuberay-v$KUBERAY_VERSION" build_kuberay
[ $need_distribution -eq 1 ] && run "distribution-v$DISTRIBUTION_VERSION" build_distribution
[ $need_epp -eq 1 ] && run "epp-v$GAIE_VERSION" build_epp
[ $need_keda -eq 1 ] && run "keda-v$KEDA_VERSION" build_keda
[ $need_otelcol -eq 1 ] && run "otelcol-v$OTELCOL_VERSION" build_otelcol
failed=0
for i in "${!pids[@]}"; do
  if ! wait "${pids[$i]}"; then
    echo "error: building ${names[$i]} failed; the end of $logs/${names[$i]}.log:" >&2
    tail -n 30 "$logs/${names[$i]}.log" >&2
    failed=1
  fi
done
[ $failed -eq 0 ] || exit 1
if [ -z "${AIRUNWAY_GOCACHE:-}" ]; then
  rm -rf "$go_cache"
fi
if [ -z "${AIRUNWAY_GOMODCACHE:-}" ]; then
  # Module files are read-only; the go command knows how to remove its own cache.
  go clean -modcache
fi
echo "built in $(( $(date +%s) - start ))s: $dest, $kwok_dest, $kuberay_dest, $distribution_dest, $epp_dest, $("$keda_build" --dest), $("$otelcol_build" --dest)" >&2
echo "$dest"

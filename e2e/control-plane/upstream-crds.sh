#!/usr/bin/env bash
# Puts the upstream CRDs that are served as Go modules into a cache keyed by version, taken from
# each project's Go module at the version pinned in versions.env:
#
#   kuberay-v$KUBERAY_VERSION/                github.com/ray-project/kuberay/ray-operator  config/crd/bases/*.yaml
#   gateway-api-v$GATEWAY_API_VERSION/        sigs.k8s.io/gateway-api                      config/crd/standard/*.yaml (CRDs only)
#   gateway-api-inference-extension-v$GAIE_VERSION/  sigs.k8s.io/gateway-api-inference-extension  config/crd/bases/*.yaml
#   keda-v$KEDA_VERSION/                      github.com/kedacore/keda/v2                  config/crd/bases/*.yaml
#
# `go mod download` checks each module zip against the Go checksum database (sum.golang.org)
# and the module cache, so the files are the ones the project published under that tag. Each
# cache directory gets a SHA256SUMS, checked on every later use.
# CRDs of projects whose Go module is not served (KAITO, Dynamo) and Istio's DestinationRule are
# kept in the repository instead: e2e/fixtures/upstream-crds/ (README there).
#
# Cache: $AIRUNWAY_UPSTREAM_CRDS_CACHE (default $HOME/.cache/airunway/upstream-crds). Prints one
# directory per line, the cached project directories.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
. "$here/versions.env"
cache="${AIRUNWAY_UPSTREAM_CRDS_CACHE:-$HOME/.cache/airunway/upstream-crds}"
mkdir -p "$cache"

# name  module  version  directory inside the module
entries="kuberay github.com/ray-project/kuberay/ray-operator v$KUBERAY_VERSION config/crd/bases
gateway-api sigs.k8s.io/gateway-api v$GATEWAY_API_VERSION config/crd/standard
gateway-api-inference-extension sigs.k8s.io/gateway-api-inference-extension v$GAIE_VERSION config/crd/bases
keda github.com/kedacore/keda/v2 v$KEDA_VERSION config/crd/bases"

while read -r name module version subdir; do
  dir="$cache/$name-$version"
  if [ -f "$dir/SHA256SUMS" ] && (cd "$dir" && sha256sum --quiet -c SHA256SUMS) >/dev/null 2>&1; then
    echo "$dir"
    continue
  fi
  command -v go >/dev/null || { echo "error: the Go toolchain is required to fetch $module@$version" >&2; exit 1; }
  src="$(cd "$cache" && GOFLAGS=-mod=mod go mod download -json "$module@$version" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')"
  [ -n "$src" ] && [ -d "$src/$subdir" ] || { echo "error: $module@$version has no $subdir" >&2; exit 1; }
  rm -rf "$dir.tmp"; mkdir -p "$dir.tmp"
  for f in "$src/$subdir"/*.yaml; do
    # Only CustomResourceDefinitions (gateway-api's standard channel also holds a
    # ValidatingAdmissionPolicy).
    grep -q '^kind: CustomResourceDefinition' "$f" && cp "$f" "$dir.tmp/"
  done
  (cd "$dir.tmp" && sha256sum -- *.yaml > SHA256SUMS && printf '%s@%s %s\n' "$module" "$version" "$subdir" > SOURCE)
  rm -rf "$dir"; mv "$dir.tmp" "$dir"
  echo "fetched $module@$version ($subdir) into $dir" >&2
  echo "$dir"
done <<< "$entries"

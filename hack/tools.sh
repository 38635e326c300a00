#!/usr/bin/env bash
# Installs the binaries the tests run against, built from the Go module proxy
# at pinned versions and cached outside the clone, so a second run is instant.
# Prints the directory holding them.
set -euo pipefail

KUSTOMIZE_VERSION=v5.8.2 # the CLI built on sigs.k8s.io/kustomize/api v0.21.2, our render library
CONTROLLER_GEN_VERSION=v0.23.0 # deepcopy and CRDs of api/v1alpha1 (make generate)

cache="${VECTORFLOW_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/vectorflow/tools}"
bin="$cache/bin"
mkdir -p "$bin"

install_go_tool() { # name version module
	local name=$1 version=$2 module=$3
	local stamp="$bin/.$name-$version"
	if [[ -x "$bin/$name" && -f "$stamp" ]]; then
		return
	fi
	echo "building $name $version (cached in $bin)" >&2
	GOBIN="$bin" GOFLAGS= go install "$module@$version" >&2
	rm -f "$bin/.$name-"*
	touch "$stamp"
}

install_go_tool kustomize "$KUSTOMIZE_VERSION" sigs.k8s.io/kustomize/kustomize/v5
install_go_tool controller-gen "$CONTROLLER_GEN_VERSION" sigs.k8s.io/controller-tools/cmd/controller-gen

echo "$bin"

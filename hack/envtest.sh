#!/usr/bin/env bash
# Builds the control plane the Kubernetes tests run against (envtest): a real
# kube-apiserver and etcd, from their Go modules at pinned versions, cached
# outside the clone by version, so a second run is instant. Prints the
# directory holding them, which is what KUBEBUILDER_ASSETS wants:
#
#	KUBEBUILDER_ASSETS=$(hack/envtest.sh) go test ./kube/...
#
# k8s.io/kubernetes is not meant to be a dependency: its go.mod points every
# k8s.io staging module at ./staging/src/..., a folder its module zip does not
# hold. So kube-apiserver is built as a dependency of a throwaway main module
# whose replace lines point those staging modules at their published v0.x.y,
# the same code, released from the same tag.
set -euo pipefail

KUBERNETES_VERSION=v1.37.2 # the release of k8s.io/api v0.37 that controller-runtime v0.25 is built on
ETCD_VERSION=v3.7.3        # the etcd that Kubernetes v1.37 is tested with

cache="${VECTORFLOW_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/vectorflow/tools}"
dir="$cache/envtest/$KUBERNETES_VERSION-etcd-$ETCD_VERSION"

if [[ -x "$dir/kube-apiserver" && -x "$dir/etcd" ]]; then
	echo "$dir"
	exit 0
fi

echo "building kube-apiserver $KUBERNETES_VERSION and etcd $ETCD_VERSION (cached in $dir; 6 to 15 minutes on 2 cores)" >&2
mkdir -p "$dir"

work=$(mktemp -d "${TMPDIR:-/tmp}/vectorflow-envtest-build.XXXXXX")
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT

export GOFLAGS=-mod=mod CGO_ENABLED=0 GOTOOLCHAIN="${GOTOOLCHAIN:-local}"

build() { # module-dir main-package output [ldflags]
	local mod=$1 pkg=$2 out=$3 ldflags=${4:-}
	(cd "$mod" && nice -n 10 go build -trimpath -ldflags "-s -w $ldflags" -o "$out.tmp.$$" "$pkg" >&2)
	mv "$out.tmp.$$" "$out"
}

# kube-apiserver.
k8s_dir=$(go mod download -json "k8s.io/kubernetes@$KUBERNETES_VERSION" |
	sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
if [[ -z "$k8s_dir" || ! -f "$k8s_dir/go.mod" ]]; then
	echo "envtest.sh: go mod download k8s.io/kubernetes@$KUBERNETES_VERSION gave no module folder" >&2
	exit 1
fi
staging_version="v0.${KUBERNETES_VERSION#v1.}"
mkdir -p "$work/apiserver"
{
	echo "module vectorflow.invalid/envtest/apiserver"
	echo
	sed -n 's/^go \(.*\)$/go \1/p; s/^godebug \(.*\)$/godebug \1/p' "$k8s_dir/go.mod"
	echo
	echo "require k8s.io/kubernetes $KUBERNETES_VERSION"
	echo
	echo "replace ("
	# Every staging module Kubernetes replaces with a folder, at its release.
	sed -n 's|^[[:space:]]*\(k8s\.io/[a-z0-9-]*\) => \./staging/src/.*$|\t\1 => \1 '"$staging_version"'|p' "$k8s_dir/go.mod"
	echo ")"
} >"$work/apiserver/go.mod"
if ! grep -q "k8s.io/apiserver => k8s.io/apiserver $staging_version" "$work/apiserver/go.mod"; then
	echo "envtest.sh: found no staging replace lines in $k8s_dir/go.mod; its layout changed" >&2
	exit 1
fi
minor=${KUBERNETES_VERSION#v1.}
minor=${minor%%.*}
version_pkg=k8s.io/component-base/version
build "$work/apiserver" k8s.io/kubernetes/cmd/kube-apiserver "$dir/kube-apiserver" \
	"-X $version_pkg.gitVersion=$KUBERNETES_VERSION -X $version_pkg.gitMajor=1 -X $version_pkg.gitMinor=$minor -X $version_pkg.gitTreeState=clean"

# etcd: its server module's replace lines point at sibling folders too, but
# it requires the same versions of them, so a plain dependency builds.
mkdir -p "$work/etcd"
cat >"$work/etcd/go.mod" <<EOF
module vectorflow.invalid/envtest/etcd

go 1.26.0

require go.etcd.io/etcd/server/v3 $ETCD_VERSION
EOF
build "$work/etcd" go.etcd.io/etcd/server/v3 "$dir/etcd"

echo "$dir"

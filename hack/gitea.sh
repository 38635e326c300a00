#!/usr/bin/env bash
# Builds the Gitea server the forge tests run against, from its Go module at a
# pinned version, and caches it outside the clone by version, so a second run
# is instant. Prints the path of the binary.
#
# Gitea is built as the main module from its downloaded module folder: the
# module zip has no frontend build and no generated bindata, so the embedded
# assets are generated here first. The API the tests use needs no frontend.
set -euo pipefail

GITEA_VERSION=v1.26.0 # the only release whose module builds with our Go toolchain

cache="${VECTORFLOW_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/vectorflow/tools}"
bin="$cache/bin"
target="$bin/gitea-$GITEA_VERSION"
mkdir -p "$bin"

if [[ -x "$target" ]]; then
	echo "$target"
	exit 0
fi

echo "building gitea $GITEA_VERSION (cached as $target; 10 to 20 minutes on 2 cores)" >&2

src_dir=$(GOFLAGS=-mod=mod go mod download -json "code.gitea.io/gitea@$GITEA_VERSION" |
	sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
if [[ -z "$src_dir" || ! -f "$src_dir/go.mod" ]]; then
	echo "gitea.sh: go mod download code.gitea.io/gitea@$GITEA_VERSION gave no module folder" >&2
	exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/vectorflow-gitea-build.XXXXXX")
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
cp -R "$src_dir/." "$work/"
chmod -R u+w "$work"

tags="bindata sqlite sqlite_unlock_notify"
(
	cd "$work"
	export GOFLAGS=-mod=mod CGO_ENABLED=1
	# The bindata files ship in the release tarball only; the module zip needs
	# go:generate, which sees the bindata files only with the same tags.
	nice -n 10 go generate -tags "$tags" ./modules/options ./modules/public ./modules/templates ./modules/migration >&2
	nice -n 10 go build -tags "$tags" -trimpath \
		-ldflags "-s -w -X 'main.Version=${GITEA_VERSION#v}' -X 'main.Tags=$tags'" \
		-o "$target.tmp.$$" . >&2
)
mv "$target.tmp.$$" "$target"
echo "$target"

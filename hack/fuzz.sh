#!/usr/bin/env bash
# Runs every Go fuzz target of the module for FUZZTIME each (default 30s).
# `make test` already runs their seed corpora; this explores beyond them.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${FUZZTIME:-30s}"
for pkg in $(go list ./...); do
	for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
		echo "== $pkg $target ($fuzztime)"
		go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg"
	done
done

#!/usr/bin/env bash
# Runs every Go fuzz target of the module for FUZZTIME each (default 30s).
# `make test` already runs their seed corpora; this explores beyond them.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${FUZZTIME:-30s}"
# Go minimizes every input that finds new coverage for up to 60s by default,
# reporting 0 execs/s meanwhile, and its minimizer is quadratic in the
# input's length: with a 30s run that budget can be the whole run.
minimizetime="${FUZZMINIMIZETIME:-5s}"
for pkg in $(go list ./...); do
	for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
		echo "== $pkg $target ($fuzztime)"
		go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimizetime" "$pkg"
	done
done

#!/usr/bin/env bash
# Runs every Go fuzz target of the module for FUZZTIME each (default 30s),
# or those of the packages given as arguments (./render ./source/...).
# `make test` already runs their seed corpora, which hold the alias bombs and
# wide mappings of internal/testutil.HostileYAML; this explores beyond them.
# Every target runs even when one fails; the failures are listed at the end.
set -uo pipefail
cd "$(dirname "$0")/.."
fuzztime="${FUZZTIME:-30s}"
# Go minimizes every input that finds new coverage for up to 60s by default,
# reporting 0 execs/s meanwhile, and its minimizer is quadratic in the
# input's length: with a 30s run that budget can be the whole run.
minimizetime="${FUZZMINIMIZETIME:-5s}"
failed=()
for pkg in $(go list "${@:-./...}"); do
	for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
		echo "== $pkg $target ($fuzztime)"
		if ! go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimizetime" "$pkg"; then
			failed+=("$pkg $target")
		fi
	done
done
if ((${#failed[@]})); then
	printf 'FAILED: %s\n' "${failed[@]}"
	exit 1
fi

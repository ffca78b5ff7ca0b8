#!/bin/bash
# The claims of docs/benchmarks.md ("k culprits: the bound of issue 27 ...") recomputed by
# scripts/search-bound.py: with k unknown, no search of whittle's shape meets
# ceil(log2 C(n,k)) + k (+ the original's check and the re-run) for k = 1 and 2 at 221 or
# 330 layers, one check more for pairs is enough there, and no search of any shape meets it
# at 4 layers (at 5 one does; the exhaustive and the dynamic program agree on both).
set -euo pipefail
: "${WHITTLE_SRC:?}"
. "$WHITTLE_SRC/tests/lib-e2e.sh"
sb() { /usr/bin/python3 "$WHITTLE_SRC/scripts/search-bound.py" "$@"; }
expect() { # WORDS ARGS...: the script's line ends with WORDS
	local want=$1
	shift
	local got
	got=$(sb "$@")
	if [[ "$got" == *"$want" ]]; then ok "$*: $got"; else bad "$*: $got (expected ...$want)"; fi
}
expect "not met" prefix 221 2
expect "T=0 met" prefix 221 2 0,1
expect "not met" prefix 330 2
expect "not met" prefix 221 4 0,1
expect "T=0 met" prefix 221 4 0,2
expect "T=0 met" prefix 65 2
expect "not met by any search" any 4
expect "met" any 5
expect "T=0 met" prefix 5 2
expect "not met" prefix 4 2
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

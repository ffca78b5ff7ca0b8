#!/bin/bash
# The claims of docs/benchmarks.md ("k culprits: the bound of issue 27") recomputed by
# scripts/search-bound.py. The search gets ceil(log2 C(n,k)) + k + EXTRA checks (issue 27's
# bound, the original's check counted, is EXTRA 1):
#  - with EXTRA 1, whittle's shape of search meets the bound for every k <= 4 at once at 65,
#    221 and 330 layers (reducer/search.c builds its -j 1 trees from this table);
#  - with EXTRA 0 it does not (not even k <= 2 at 221 or 330 layers), and at 4 and 6 layers
#    no search of any shape does (at 5 one does); with EXTRA 1 both shapes meet it at 4 and
#    6 (the exhaustive search and the dynamic program agree).
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
expect "T=0 met" prefix 65 4 1
expect "T=0 met" prefix 221 4 1
expect "T=0 met" prefix 330 4 1
expect "not met" prefix 221 2 0
expect "not met" prefix 330 2 0
expect "T=0 met" prefix 65 2 0
expect "not met by any search" any 4
expect "not met by any search" any 6
expect "met" any 5
expect "T=0 met" prefix 5 2
expect "not met" prefix 4 2
expect "met" any 4 1
expect "met" any 6 1
expect "T=0 met" prefix 4 2 1
expect "T=0 met" prefix 6 2 1
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

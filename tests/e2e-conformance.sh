#!/bin/bash
# The ONNX backend conformance suites (read in place from $WHITTLE_ONNX_TESTS): every case
# whose ops whittle supports must pass; unsupported cases are listed by name (in the log and
# in docs/conformance.md, regenerated with scripts/conformance-table.sh), never skipped
# silently; at least 75 % of the node cases must pass.
set -euo pipefail
: "${WHITTLE_BUILD:?}" "${WHITTLE_ONNX_TESTS:?}"
tool=$WHITTLE_BUILD/tests/tool-conformance
tmp=$(mktemp -d "${TMPDIR:-/tmp}/whittle-conformance.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
rc=0
"$tool" -q --list "$tmp/all.tsv" > "$tmp/summary.txt" || rc=$?
cat "$tmp/summary.txt"
echo "unsupported cases:"
grep '^UNSUPPORTED' "$tmp/all.tsv" | cut -f2,4 | sed 's/^/  /'
if grep -q '^FAIL' "$tmp/all.tsv"; then
	echo "failing cases:"
	grep '^FAIL' "$tmp/all.tsv" | cut -f2,4 | sed 's/^/  /'
fi
node_total=$(grep -c $'\tnode/' "$tmp/all.tsv" || true)
node_pass=$(grep -c $'^PASS\tnode/' "$tmp/all.tsv" || true)
pct=$((100 * node_pass / (node_total > 0 ? node_total : 1)))
echo "node suite: $node_pass of $node_total cases pass ($pct %)"
if [ "$pct" -lt 75 ]; then
	echo "FAIL: fewer than 75 % of the node cases pass"
	rc=1
fi
exit "$rc"

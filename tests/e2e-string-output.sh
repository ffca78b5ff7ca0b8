#!/bin/bash
# A model with a string output reduces, precision-searches, builds and triages like any
# other (issue 11, acceptance 3). The built-in check compares outputs that are not floats
# (strings, booleans, integers) exactly: equal is a pass. Before, reduce and precision
# counted a string output as "not comparable", which failed every candidate holding it:
# reduce answered with the string layer, precision refused the model.
# Fixture: tests/gen-string-output-fixture.py (y overflows fp16 at a_mul and again where
# a_scale converts it; label is a string
# output, the same at every precision).
# Environment (set by ctest): WHITTLE, WHITTLE_SRC. Needs /usr/bin/python3 with onnx, numpy.
set -euo pipefail

whittle=${WHITTLE:?set by ctest}
src=${WHITTLE_SRC:?set by ctest}
py=/usr/bin/python3
tol=(--atol 1e-2 --rtol 1e-2)

. "$(dirname "${BASH_SOURCE[0]}")/lib-e2e.sh" # $tmp (removed at exit), ok, bad, run

"$py" "$src/tests/gen-string-output-fixture.py" "$tmp/fx"
m=$tmp/fx/string_output.onnx
in=$tmp/fx/string_output

# the node names of a model, sorted, space-separated
names() {
	"$py" -c 'import onnx, sys; print(" ".join(sorted(n.name for n in onnx.load(sys.argv[1]).graph.node if n.op_type != "Constant")))' "$1"
}

# the original fails at fp16, only because of y: the string output is equal
run "$whittle" run "$m" --load-inputs "$in" --precision fp16 --compare fp32 "${tol[@]}"
if [ "$rc" = 1 ]; then ok "run: the model fails at fp16"; else bad "run: exit $rc, expected 1"; fi

# reduce: the answer is the overflowing layer, not the string layer
run "$whittle" reduce "$m" --load-inputs "$in" --precision fp16 "${tol[@]}" -o "$tmp/red.onnx"
if [ "$rc" = 0 ] && [ "$(names "$tmp/red.onnx")" = "a_mul" ]; then
	ok "reduce: the minimal failing subgraph is a_mul"
else
	bad "reduce: exit $rc, layers '$( [ -f "$tmp/red.onnx" ] && names "$tmp/red.onnx")', expected a_mul"
fi

# reduce keeping the outputs: every candidate holds the string layer; a_scale, which makes y,
# fails alone (it converts the FP32 t1, up to 409600, to fp16)
run "$whittle" reduce "$m" --load-inputs "$in" --precision fp16 "${tol[@]}" --no-reduce-outputs -o "$tmp/red2.onnx"
if [ "$rc" = 0 ] && names "$tmp/red2.onnx" | grep -qw a_scale && names "$tmp/red2.onnx" | grep -qw s_label; then
	ok "reduce --no-reduce-outputs: keeps the string layer, finds a_scale"
else
	bad "reduce --no-reduce-outputs: exit $rc"
fi

# precision: keep a_mul and a_scale in fp32, and the written file passes
run "$whittle" precision "$m" --load-inputs "$in" --precision fp16 "${tol[@]}" -o "$tmp/lp.json"
if [ "$rc" = 0 ] && [ "$(cut -f1 "$tmp/out" | tr '\n' ' ' | sed 's/ $//')" = "a_mul a_scale" ]; then
	ok "precision: keeps a_mul and a_scale in fp32"
else
	bad "precision: exit $rc, printed '$(tr '\n' ' ' <"$tmp/out")', expected a_mul a_scale"
fi
run "$whittle" run "$m" --load-inputs "$in" --precision fp16 --layer-precisions "$tmp/lp.json" --compare fp32 "${tol[@]}"
if [ "$rc" = 0 ]; then ok "run with the layer precisions found: passes"; else bad "run with $tmp/lp.json: exit $rc"; fi

# build: every build fails the same way (no string output counted against it)
run "$whittle" build "$m" --load-inputs "$in" --precision fp16 "${tol[@]}" --until 2 --artifacts-dir "$tmp/builds"
if [ "$rc" = 0 ] && grep -q "2 bad" "$tmp/out" && grep -q "output 'y'" "$tmp/builds/report.md"; then
	ok "build: both builds bad, because of y"
else
	bad "build: exit $rc: $(head -2 "$tmp/out" | tr '\n' ' ')"
fi

# triage: a single-layer failure at a_mul
run "$whittle" triage "$m" --load-inputs "$in" --precision fp16 "${tol[@]}" --builds 1 --artifacts-dir "$tmp/tri" --json
if [ "$rc" = 0 ] && "$py" -c 'import json, sys; r = json.load(open(sys.argv[1])); sys.exit(not (r["outcome"] == "single-layer" and r["keep_fp32"] == ["a_mul", "a_scale"]))' "$tmp/out"; then
	ok "triage: single-layer failure, keep a_mul and a_scale in fp32"
else
	bad "triage: exit $rc: $(head -c 300 "$tmp/out")"
fi

echo "string outputs: $pass passed, $fail failed"
[ "$fail" = 0 ]

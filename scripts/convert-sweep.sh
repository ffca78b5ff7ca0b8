#!/bin/bash
# Converts every ONNX backend node test (WHITTLE_ONNX_TESTS/node) to fp16 and to bf16 with
# `whittle convert`, runs the converted model and the emulation of the original with the
# layers the converted model keeps (`--save-layer-precisions`), and prints one line per case
# where they differ or where the converted model does not run: the differences
# docs/precision.md ("Strongly typed models") lists. Takes minutes, so it is not part of
# ctest; tests/e2e-convert.sh checks the corpus and a few node tests.
#
#   scripts/convert-sweep.sh [WHITTLE [OUT_DIR]]
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
whittle=${1:-$here/build/whittle}
out=${2:-$(mktemp -d "${TMPDIR:-/tmp}/whittle-convert-sweep.XXXXXX")}
tests=${WHITTLE_ONNX_TESTS:?set WHITTLE_ONNX_TESTS to the ONNX backend test data}/node
mkdir -p "$out"
for t in "$tests"/*/; do
	n=$(basename "$t")
	m=$t/model.onnx
	[ -f "$m" ] && [ -d "$t/test_data_set_0" ] || continue
	in=$out/in
	rm -rf "$in"
	mkdir -p "$in"
	cp "$t"/test_data_set_0/input_*.pb "$in"/ 2>/dev/null || continue
	for p in fp16 bf16; do
		o=$out/$n.$p
		if ! "$whittle" convert "$m" --precision "$p" -o "$o.onnx" --save-layer-precisions "$o.json" >"$o.conv" 2>&1; then
			echo "$n $p: convert: $(tail -1 "$o.conv")"
			continue
		fi
		if grep -q ': 0 of [0-9]* float layers in' "$o.conv"; then
			rm -f "$o".*
			continue
		fi
		a=$(timeout 60 "$whittle" run "$o.onnx" --load-inputs "$in" --hash-outputs 2>"$o.err" | grep '^xxh3')
		b=$(timeout 60 "$whittle" run "$m" --load-inputs "$in" --precision "$p" --layer-precisions "$o.json" --hash-outputs 2>/dev/null | grep '^xxh3')
		if [ -z "$a" ]; then
			echo "$n $p: the converted model does not run: $(grep -v '^output' "$o.err" | tail -1)"
		elif [ "$a" != "$b" ]; then
			echo "$n $p: differs from the emulation"
		else
			rm -f "$o".*
		fi
	done
done
rm -rf "$out/in"

#!/bin/bash
# The corpus's window-attention models (swin_hf: transformers' SwinModel, its shifted
# windows' masks built per forward from shape arithmetic; swin_timm: timm's Swin with a
# window padding that pads nothing), through the paths made for that class: cached constant
# layers skipped or placed without running (executor/runtime.c, plan_quiet), a Pad of
# nothing giving its input, bias Adds over short rows (elementwise.c, ew_periodic), softmax
# lines of 49 in registers (nn-avx512.c) and batched window products (gemm.c).
# - the output within rtol 1e-5 (atol 1e-6) of ONNX Runtime's on the same inputs;
# - bit-identical outputs at --threads 1, 2 and 3, over --repeat 3, and with --mark-all
#   (which runs every constant layer's step and fuses nothing);
# - the profile calls the shape arithmetic "constant" (hundreds of layers) and the Pads
#   cost nothing measurable (a reference to the input).
set -euo pipefail
: "${WHITTLE:?}" "${WHITTLE_SRC:?}"
. "$WHITTLE_SRC/tests/lib-e2e.sh"
corpus=$WHITTLE_SRC/fixtures/corpus

for name in swin_hf swin_timm; do
	m=$corpus/$name.onnx
	mkdir -p "$tmp/$name/in" "$tmp/$name/ort"
	run node "$WHITTLE_SRC/scripts/ort-run.js" "$m" "$tmp/$name/in" "$tmp/$name/ort" --threads 2 --seed 5
	[ "$rc" = 0 ] && ok "$name: ONNX Runtime ran" || bad "$name: ONNX Runtime ran"
	run "$WHITTLE" run "$m" --load-inputs "$tmp/$name/in" --compare "$tmp/$name/ort" --rtol 1e-5 --atol 1e-6 --repeat 3
	if [ "$rc" = 0 ] && grep -q '^PASS ' "$tmp/out"; then
		ok "$name: within rtol 1e-5 of ONNX Runtime, bit-identical over 3 runs"
	else
		cat "$tmp/out" >> "$tmp/err"
		bad "$name: within rtol 1e-5 of ONNX Runtime, bit-identical over 3 runs"
	fi
	for t in 1 2 3; do
		"$WHITTLE" run "$m" --load-inputs "$tmp/$name/in" --threads $t --hash-outputs --iterations 3 2>/dev/null |
			grep '^xxh3 ' > "$tmp/$name/h$t"
	done
	outs=$(awk '{ print $2 }' "$tmp/$name/h1")
	: > "$tmp/$name/hm"
	"$WHITTLE" run "$m" --load-inputs "$tmp/$name/in" --threads 2 --hash-outputs --mark-all 2>/dev/null > "$tmp/$name/all"
	for o in $outs; do
		grep "^xxh3 $o " "$tmp/$name/all" >> "$tmp/$name/hm" || true
	done
	if [ -s "$tmp/$name/h1" ] && cmp -s "$tmp/$name/h1" "$tmp/$name/h2" && cmp -s "$tmp/$name/h1" "$tmp/$name/h3" &&
	   cmp -s "$tmp/$name/h1" "$tmp/$name/hm"; then
		ok "$name: the same bits at 1, 2 and 3 threads and with --mark-all"
	else
		bad "$name: the bits differ across thread counts or with --mark-all"
	fi
	run "$WHITTLE" run "$m" --load-inputs "$tmp/$name/in" --profile --iterations 20
	nconst=$(awk '$4 == "constant"' "$tmp/out" | wc -l)
	[ "$nconst" -ge 500 ] && ok "$name: $nconst constant layers" || bad "$name: $nconst constant layers, expected 500 or more"
done
# swin_timm's 8 window Pads pad nothing: each is its input (a reference: well under 2.5 us each)
padms=$(awk '$3 == "Pad" { s += $5 } END { printf "%.4f", s }' "$tmp/out")
awk -v s="$padms" 'BEGIN { exit !(s < 0.02) }' && ok "swin_timm: 8 Pads of nothing take ${padms} ms" ||
	bad "swin_timm: 8 Pads of nothing take ${padms} ms, expected under 0.02"
echo "e2e-window-attention: $pass passed, $fail failed"
[ "$fail" = 0 ]

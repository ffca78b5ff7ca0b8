#!/bin/bash
# Inputs by name, strictly (issue 13, acceptance 5): a data folder whose file matches no input,
# holds an extra file, or lacks an input is one error line, exit 3, nothing run; the
# spellings exporters and runners write into file names ('/' and ':' as '_') match, and an
# ambiguous one is an error; --fill-missing generates what has no file and says so on one
# line. The same holds for --load-inputs (run, reduce, precision, triage, per-sample
# folders), --calib-data and reduce's --reference.
# Environment (set by ctest): WHITTLE, WHITTLE_SRC. Needs /usr/bin/python3 with onnx, numpy.
set -euo pipefail

whittle=${WHITTLE:?set by ctest}
py=/usr/bin/python3

. "$(dirname "${BASH_SOURCE[0]}")/lib-e2e.sh" # $tmp (removed at exit), ok, bad, run

# two models: `flat` with inputs onnx::Flatten_0 and scale (y = Relu(x) * scale), and
# `twins` whose inputs a/b and a:b both read a_b when '/' and ':' become '_'
"$py" - "$tmp" <<'PY'
import os, sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
out = sys.argv[1]
def save(name, nodes, ins):
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3]) for n in ins],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, os.path.join(out, name + ".onnx"))
save("flat", [helper.make_node("Relu", ["onnx::Flatten_0"], ["r"], name="relu"),
              helper.make_node("Mul", ["r", "scale"], ["y"], name="mul")], ["onnx::Flatten_0", "scale"])
save("twins", [helper.make_node("Add", ["a/b", "a:b"], ["y"], name="add")], ["a/b", "a:b"])
rng = np.random.default_rng(3)
x = rng.uniform(-1, 1, (2, 3)).astype(np.float32)
s = rng.uniform(1, 2, (2, 3)).astype(np.float32)
def write(folder, files):
    os.makedirs(os.path.join(out, folder), exist_ok=True)
    for fname, tname, arr in files:
        with open(os.path.join(out, folder, fname), "wb") as f:
            f.write(numpy_helper.from_array(arr, tname).SerializeToString())
write("exact", [("x.pb", "onnx::Flatten_0", x), ("scale.pb", "scale", s)])
write("sanitized", [("onnx__Flatten_0.pb", "onnx__Flatten_0", x), ("scale.pb", "scale", s)])
write("misnamed", [("onnx_Flatten_0.pb", "onnx_Flatten_0", x), ("scale.pb", "scale", s)])
write("extra", [("onnx__Flatten_0.pb", "onnx__Flatten_0", x), ("scale.pb", "scale", s), ("bias.pb", "bias", s)])
write("missing", [("onnx__Flatten_0.pb", "onnx__Flatten_0", x)])
write("samples/s0", [("onnx__Flatten_0.pb", "onnx__Flatten_0", x), ("scale.pb", "scale", s)])
write("samples/s1", [("onnx__Flatten_0.pb", "onnx__Flatten_0", x), ("scales.pb", "scales", s)])
write("ambiguous", [("a_b.pb", "a_b", x)])
# reference values of every tensor, one of them misnamed
write("ref-bad", [("onnx__Flatten_0.pb", "onnx__Flatten_0", x), ("scale.pb", "scale", s), ("relu_out.pb", "relu_out", x),
                  ("y.pb", "y", x)])
PY
m=$tmp/flat.onnx

# expect_error LABEL PATTERN CMD...: exit 3, nothing on stdout, one line 'whittle: ...' matching PATTERN
expect_error() {
	local label=$1 pattern=$2
	shift 2
	run "$@"
	if [ "$rc" -ne 3 ]; then
		bad "$label: exit $rc, 3 expected"
	elif [ "$(wc -l <"$tmp/err")" -ne 1 ] || ! grep -qE '^whittle: .+: .+ \(.+\)$' "$tmp/err"; then
		bad "$label: stderr is not one line 'whittle: <what>: <why> (<what to do>)'"
	elif ! grep -qE -- "$pattern" "$tmp/err"; then
		bad "$label: the error does not match '$pattern'"
	elif [ -s "$tmp/out" ]; then
		bad "$label: something ran (stdout not empty)"
	else
		ok "$label: $(cat "$tmp/err")"
	fi
}

# the exact name and the sanitized spelling give the same outputs, without a word on stderr
run "$whittle" run "$m" --load-inputs "$tmp/exact" --save-outputs "$tmp/o-exact"
rc1=$rc
run "$whittle" run "$m" --load-inputs "$tmp/sanitized" --save-outputs "$tmp/o-san"
if [ "$rc1" -eq 0 ] && [ "$rc" -eq 0 ] && [ ! -s "$tmp/err" ] && "$whittle" compare "$tmp/o-exact" "$tmp/o-san" --atol 0 --rtol 0 >/dev/null 2>&1; then
	ok "onnx__Flatten_0.pb is read as input onnx::Flatten_0 (same outputs as the exact name, nothing on stderr)"
else
	bad "sanitized name: exit $rc1/$rc, stderr '$(head -1 "$tmp/err")'"
fi

expect_error "misnamed file" "tensor 'onnx_Flatten_0' matches no input of the model, whose inputs are onnx::Flatten_0, scale" \
	"$whittle" run "$m" --load-inputs "$tmp/misnamed"
expect_error "extra file" "tensor 'bias' matches no input" "$whittle" run "$m" --load-inputs "$tmp/extra"
expect_error "missing input" "no file for input 'scale'.*--fill-missing" "$whittle" run "$m" --load-inputs "$tmp/missing"
expect_error "ambiguous spelling" "tensor 'a_b' could be input 'a/b' or 'a:b'" "$whittle" run "$tmp/twins.onnx" --load-inputs "$tmp/ambiguous"
expect_error "per-sample folders, one misnamed" "s1: tensor 'scales' matches no input|tensor 'scales' matches no input" \
	"$whittle" precision "$m" --load-inputs "$tmp/samples" --precision fp16
expect_error "reduce, missing input" "no file for input 'scale'" "$whittle" reduce "$m" --load-inputs "$tmp/missing" --precision fp16 -o "$tmp/r.onnx"
expect_error "triage, extra file" "tensor 'bias' matches no input" "$whittle" triage "$m" --load-inputs "$tmp/extra" --precision fp16 \
	--artifacts-dir "$tmp/tri"
expect_error "--calib-data, misnamed file" "tensor 'onnx_Flatten_0' matches no input" \
	"$whittle" run "$m" --load-inputs "$tmp/exact" --precision int8 --calib-data "$tmp/misnamed"
expect_error "--reference, a file for no tensor" "tensor 'relu_out' is no tensor of the model" \
	"$whittle" reduce "$m" --load-inputs "$tmp/exact" --reference "$tmp/ref-bad" --precision fp16 -o "$tmp/r.onnx"

# --fill-missing: runs, and one line names what was generated
run "$whittle" run "$m" --load-inputs "$tmp/missing" --fill-missing
if [ "$rc" -eq 0 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "generated random data for input 'scale'" "$tmp/err"; then
	ok "--fill-missing: runs; $(cat "$tmp/err")"
else
	bad "--fill-missing: exit $rc, stderr '$(cat "$tmp/err")'"
fi
# without --load-inputs everything is generated, as asked: no warning
run "$whittle" run "$m"
if [ "$rc" -eq 0 ] && [ ! -s "$tmp/err" ]; then ok "no --load-inputs: generated, nothing on stderr"; else bad "no --load-inputs: exit $rc, stderr '$(cat "$tmp/err")'"; fi
run "$whittle" run "$m" --fill-missing
if [ "$rc" -eq 2 ] && grep -q -- '--fill-missing' "$tmp/err"; then ok "--fill-missing without --load-inputs: exit 2"; else bad "--fill-missing alone: exit $rc"; fi

echo "e2e-inputs-by-name: $pass passed, $fail failed"
[ "$fail" -eq 0 ]

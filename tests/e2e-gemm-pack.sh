#!/bin/bash
# MatMul and Gemm with a constant B read from the engine's packed copy (executor/ops/gemm-pack.c:
# packed at the engine's second product with it), on the ONNX backend cases test_gemm* and
# test_matmul* with their B turned into an initializer (inline, and in an external-data file,
# which is mapped and whose pages are dropped after packing): every one of 3 runs (the
# first reads B as it is, the later ones the packed copy) gives the same bits (--repeat), the
# outputs match the case's expected outputs (the ONNX reference is the oracle, at the
# backend tests' tolerance), and 1 and 3 threads give the same bits.
# Environment (set by ctest): WHITTLE, WHITTLE_ONNX_TESTS.
set -euo pipefail
whittle=${WHITTLE:?set by ctest}
cases=${WHITTLE_ONNX_TESTS:?set by ctest}/node
py=/usr/bin/python3
. "$(dirname "$0")/lib-e2e.sh"

# case folder -> $tmp/<case>-<storage>/{model.onnx, in/, want/}; prints the folders made
$py - "$cases" "$tmp" <<'PY' > "$tmp/made"
import glob, os, sys
import onnx
from onnx import numpy_helper
cases, out = sys.argv[1:]
for d in sorted(glob.glob(os.path.join(cases, "test_gemm*")) + glob.glob(os.path.join(cases, "test_matmul_*"))):
    m = onnx.load(os.path.join(d, "model.onnx"))
    if m.graph.node[0].op_type not in ("Gemm", "MatMul"):
        continue
    ds = os.path.join(d, "test_data_set_0")
    ins = [numpy_helper.to_array(onnx.load_tensor(os.path.join(ds, "input_%d.pb" % k))) for k in range(len(m.graph.input))]
    outs = [numpy_helper.to_array(onnx.load_tensor(os.path.join(ds, "output_%d.pb" % k))) for k in range(len(m.graph.output))]
    if ins[1].ndim != 2 or ins[1].dtype.name != "float32":
        continue  # only a 2-d float32 B is packed
    for storage in ("inline", "external"):
        name = "%s-%s" % (os.path.basename(d), storage)
        w = os.path.join(out, name)
        os.makedirs(os.path.join(w, "in"))
        os.makedirs(os.path.join(w, "want"))
        mm = onnx.ModelProto()
        mm.CopyFrom(m)
        b_name = mm.graph.input[1].name
        mm.graph.initializer.append(numpy_helper.from_array(ins[1], b_name))
        del mm.graph.input[1]
        path = os.path.join(w, "model.onnx")
        if storage == "external":
            onnx.save_model(mm, path, save_as_external_data=True, all_tensors_to_one_file=True,
                            location="model.data", size_threshold=0)
        else:
            onnx.save_model(mm, path)
        for k, a in enumerate(ins):
            if k != 1:
                onnx.save_tensor(numpy_helper.from_array(a, m.graph.input[k].name), os.path.join(w, "in", m.graph.input[k].name + ".pb"))
        for k, a in enumerate(outs):
            onnx.save_tensor(numpy_helper.from_array(a, m.graph.output[k].name), os.path.join(w, "want", m.graph.output[k].name + ".pb"))
        print(name)
PY
[ "$(grep -c . "$tmp/made")" -ge 10 ] || { echo "FAIL: fewer than 10 Gemm/MatMul cases with a 2-d float32 B under $cases"; exit 1; }

while read -r name; do
	w=$tmp/$name
	run "$whittle" run "$w/model.onnx" --load-inputs "$w/in" --threads 1 --repeat 3 --compare "$w/want" --atol 1e-7 --rtol 1e-3
	[ "$rc" = 0 ] && ok "$name: 3 runs, same bits, match the expected outputs" || bad "$name: exit $rc"
	h1=$("$whittle" run "$w/model.onnx" --load-inputs "$w/in" --threads 1 --iterations 3 --hash-outputs 2>&1 | grep '^xxh3' || true)
	h3=$("$whittle" run "$w/model.onnx" --load-inputs "$w/in" --threads 3 --iterations 3 --hash-outputs 2>&1 | grep '^xxh3' || true)
	[ -n "$h1" ] && [ "$h1" = "$h3" ] && ok "$name: 1 and 3 threads, same bits" || bad "$name: 1 and 3 threads differ ($h1 / $h3)"
done < "$tmp/made"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]

#!/bin/bash
# Constant layers (docs/architecture.md, "Constant layers"): a layer whose inputs are all
# initializers or constant layers' outputs is computed by the first run and its outputs are
# kept for the runs after. The profile (whose timed runs follow a warm-up) must call exactly
# the expected layers "constant"; the outputs must equal numpy's, exactly, in every run of
# --repeat; Dropout (random in training mode) and layers with tactics are left to run. A widened
# weight over 4 MiB (Cast of an fp16 weight) is kept within the engine's weight-cache budget.
set -euo pipefail
: "${WHITTLE:?}" "${WHITTLE_SRC:?}"
source "$WHITTLE_SRC/tests/lib-e2e.sh"

/usr/bin/python3 - "$tmp" <<'PY'
import os, sys
import numpy as np
import onnx
from onnx import helper as h, numpy_helper as nh, TensorProto as TP

out = sys.argv[1]
rng = np.random.default_rng(3)
x = rng.standard_normal((1, 1, 6, 6)).astype(np.float32)
mask = rng.random((1, 1, 6, 6)) < 0.5
big = rng.standard_normal(1 << 20).astype(np.float16)  # Cast to float32: over 4 MiB, kept within the weight budget
big = np.concatenate([big, big[:8]])
a = rng.standard_normal((6, 6)).astype(np.float32)
inits = [nh.from_array(mask, "mask"), nh.from_array(np.array(-1e4, np.float32), "neg"),
         nh.from_array(np.array(2.0, np.float32), "two"), nh.from_array(big, "big"), nh.from_array(a, "a")]
nodes = [
    h.make_node("Where", ["mask", "neg", "two"], ["w"], name="where"),        # constant
    h.make_node("Mul", ["w", "two"], ["w2"], name="scale"),                   # constant (reads a constant)
    h.make_node("Dropout", ["w2"], ["w3"], name="dropout"),                 # random in training mode
    h.make_node("Add", ["x", "w3"], ["y"], name="add"),                      # reads the input
    h.make_node("Cast", ["big"], ["bigf"], name="widen", to=TP.FLOAT),        # constant: a widened weight
    h.make_node("ReduceMax", ["bigf"], ["bmax"], name="bigmax", keepdims=0),  # constant, small
    h.make_node("MatMul", ["a", "a"], ["aa"], name="matmul"),                 # has tactics
    h.make_node("Add", ["y", "aa"], ["y2"], name="add2"),
    h.make_node("Add", ["y2", "bmax"], ["z"], name="add3"),
]
g = h.make_graph(nodes, "constants", [h.make_tensor_value_info("x", TP.FLOAT, [1, 1, 6, 6])],
                 [h.make_tensor_value_info("z", TP.FLOAT, [1, 1, 6, 6])],
                 initializer=inits)
m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
onnx.checker.check_model(m)
onnx.save(m, f"{out}/constants.onnx")
os.makedirs(f"{out}/in")
os.makedirs(f"{out}/want")
np.save(f"{out}/in/x.npy", x)
w2 = np.where(mask, np.float32(-1e4), np.float32(2.0)) * np.float32(2.0)
z = (x + w2) + (a @ a).astype(np.float32) + big.astype(np.float32).max()
np.save(f"{out}/want/z.npy", z.astype(np.float32))
PY

m=$tmp/constants.onnx
run "$WHITTLE" run "$m" --load-inputs "$tmp/in" --profile --iterations 3
if [ "$rc" = 0 ]; then
	got=$(awk '$4 == "constant" { print $2 }' "$tmp/out" | sort | tr '\n' ' ')
	[ "$got" = "bigmax scale where widen " ] && ok "constant layers [${got% }]" || bad "constant layers [${got% }], expected [bigmax scale where widen]"
else
	bad "run --profile (exit $rc)"
fi
# the MatMul of two initializers agrees with numpy to float32 rounding, the rest is exact
run "$WHITTLE" run "$m" --load-inputs "$tmp/in" --compare "$tmp/want" --atol 1e-4 --rtol 1e-6 --repeat 3
[ "$rc" = 0 ] && ok "outputs equal numpy's, bit-identical over 3 runs" || bad "outputs (exit $rc)"
for t in 1 2; do
	"$WHITTLE" run "$m" --load-inputs "$tmp/in" --threads $t --hash-outputs --iterations 2 2>/dev/null | grep '^xxh3 z' > "$tmp/c$t"
	"$WHITTLE" run "$m" --load-inputs "$tmp/in" --threads $t --hash-outputs --mark-all 2>/dev/null | grep '^xxh3 z' > "$tmp/k$t"
	if [ -s "$tmp/c$t" ] && cmp -s "$tmp/c$t" "$tmp/k$t"; then
		ok "--threads $t: the kept constants give the bits of a single run"
	else
		bad "--threads $t: the kept constants change the output"
	fi
done
# an fp16-stored weight widened by a Cast (a constant layer kept from its second run) and read
# as a MatMul's B: packed from the kept copy at its next product (executor/ops/gemm-pack.c),
# same bits in every run and at 1 and 2 threads as a single run, and numpy's product
/usr/bin/python3 - "$tmp" <<'PY'
import os, sys
import numpy as np
import onnx
from onnx import helper as h, numpy_helper as nh, TensorProto as TP
out = sys.argv[1]
rng = np.random.default_rng(5)
w = (rng.standard_normal((1100, 1000)) * 0.05).astype(np.float16)  # widened: 4.4 MB, over 4 MiB
x = rng.standard_normal((3, 1100)).astype(np.float32)
g = h.make_graph([h.make_node("Cast", ["w"], ["wf"], name="widen", to=TP.FLOAT),
                  h.make_node("MatMul", ["x", "wf"], ["y"], name="mm")], "fp16w",
                 [h.make_tensor_value_info("x", TP.FLOAT, [3, 1100])], [h.make_tensor_value_info("y", TP.FLOAT, [3, 1000])],
                 initializer=[nh.from_array(w, "w")])
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), f"{out}/fp16w.onnx")
os.makedirs(f"{out}/in16"); os.makedirs(f"{out}/want16")
np.save(f"{out}/in16/x.npy", x)
np.save(f"{out}/want16/y.npy", (x.astype(np.float64) @ w.astype(np.float64)).astype(np.float32))
PY
m16=$tmp/fp16w.onnx
run "$WHITTLE" run "$m16" --load-inputs "$tmp/in16" --compare "$tmp/want16" --atol 1e-4 --rtol 1e-4 --repeat 6
[ "$rc" = 0 ] && ok "fp16 weight through a kept Cast: numpy's product, bit-identical over 6 runs" || bad "fp16 weight through a kept Cast (exit $rc)"
"$WHITTLE" run "$m16" --load-inputs "$tmp/in16" --hash-outputs 2>/dev/null | grep '^xxh3 y' > "$tmp/h16-once"
for t in 1 2; do
	"$WHITTLE" run "$m16" --load-inputs "$tmp/in16" --threads $t --hash-outputs --iterations 5 2>/dev/null | grep '^xxh3 y' > "$tmp/h16-$t"
	if [ -s "$tmp/h16-once" ] && cmp -s "$tmp/h16-once" "$tmp/h16-$t"; then
		ok "--threads $t: the packed copy of a kept constant gives the bits of a single run"
	else
		bad "--threads $t: the packed copy of a kept constant changes the output"
	fi
done
echo "e2e-constants: $pass passed, $fail failed"
[ "$fail" = 0 ]

#!/bin/bash
# In-place Concat (docs/architecture.md, "In-place Concat"): where every input of a Concat is
# written by a node (a fused activation's producer included) and read by the Concat alone,
# and the inputs are runs of the output (nothing but ones before the axis), the writers put
# their outputs in its slices from the second run on and the Concat copies nothing. The
# profile (timed runs after a warm-up) must say "in place" exactly for those cases, and the
# outputs must be bit-identical to the run that keeps every tensor (--mark-all: nothing is
# placed), over --repeat 3, at 1 and 2 threads. Cases that must copy: a batch of 2, an axis
# with a channel axis before it, an input read twice, a graph input, a writer that does not
# place (MaxPool).
set -euo pipefail
: "${WHITTLE:?}" "${WHITTLE_SRC:?}"
source "$WHITTLE_SRC/tests/lib-e2e.sh"

/usr/bin/python3 - "$tmp" <<'PY'
import sys
import numpy as np
import onnx
from onnx import helper as h, numpy_helper as nh, TensorProto as TP

out = sys.argv[1]
rng = np.random.default_rng(5)
F = TP.FLOAT

def conv(name, x, y, cin=3, cout=4, k=3):
    w = nh.from_array((rng.standard_normal((cout, cin, k, k)) * 0.5).astype(np.float32), name + "_w")
    return h.make_node("Conv", [x, name + "_w"], [y], name=name, pads=[k // 2] * 4), [w]

def save(case, nodes, inits, out_shape, in_shape=(1, 3, 8, 8), opset=17):
    g = h.make_graph(nodes, case, [h.make_tensor_value_info("x", F, list(in_shape))],
                     [h.make_tensor_value_info("y", F, list(out_shape))], initializer=inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    onnx.checker.check_model(m)
    onnx.save(m, f"{out}/{case}.onnx")

# a fire module: two Conv+Relu (fused) into one Concat on channels
a, ai = conv("a", "x", "va")
b, bi = conv("b", "x", "vb", cout=5, k=1)
save("fire", [a, h.make_node("Relu", ["va"], ["ra"], name="ra"), b, h.make_node("Relu", ["vb"], ["rb"], name="rb"),
              h.make_node("Concat", ["ra", "rb"], ["y"], name="cat", axis=1)], ai + bi, (1, 9, 8, 8))
# three writers, one an Add, the axis given as negative on a 2-D tensor
a, ai = conv("a", "x", "va", cout=1)
nodes = [a, h.make_node("Reshape", ["va", "s"], ["fa"], name="flat"),
         h.make_node("Add", ["fa", "fa"], ["p"], name="p"), h.make_node("Mul", ["fa", "fa"], ["q"], name="q"),
         h.make_node("Sub", ["fa", "fa"], ["r"], name="r"), h.make_node("Concat", ["p", "q", "r"], ["y"], name="cat", axis=-1)]
save("three", nodes, ai + [nh.from_array(np.array([1, 64], np.int64), "s")], (1, 192))
# copies: a batch of 2 (each input is two runs of the output)
a, ai = conv("a", "x", "va")
b, bi = conv("b", "x", "vb")
save("batch2", [a, b, h.make_node("Concat", ["va", "vb"], ["y"], name="cat", axis=1)], ai + bi, (2, 8, 8, 8),
     in_shape=(2, 3, 8, 8))
# copies: the height axis, with 4 channels before it
save("axis2", [a, b, h.make_node("Concat", ["va", "vb"], ["y"], name="cat", axis=2)], ai + bi, (1, 4, 16, 8))
# copies: an input also read by another node
save("shared", [a, b, h.make_node("Concat", ["va", "vb"], ["c"], name="cat", axis=1),
                h.make_node("ReduceSum", ["va"], ["sa"], name="sum", keepdims=1),
                h.make_node("Add", ["c", "sa"], ["y"], name="add")], ai + bi, (1, 8, 8, 8))
# copies: a graph input as one of the inputs
a, ai = conv("a", "x", "va", cout=3)
save("graph_input", [a, h.make_node("Concat", ["va", "x"], ["y"], name="cat", axis=1)], ai, (1, 6, 8, 8))
# copies: a writer that does not place (MaxPool)
a, ai = conv("a", "x", "va")
save("maxpool", [a, h.make_node("MaxPool", ["x"], ["m"], name="pool", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
                 h.make_node("Concat", ["va", "m"], ["y"], name="cat", axis=1)], ai, (1, 7, 8, 8))
PY

for c in fire:1 three:1 batch2:0 axis2:0 shared:0 graph_input:0 maxpool:0; do
	name=${c%%:*}
	want=${c#*:}
	m=$tmp/$name.onnx
	run "$WHITTLE" run "$m" --profile --iterations 3 --threads 2 --val-range -2,2
	if [ "$rc" != 0 ]; then bad "$name: run --profile (exit $rc)"; continue; fi
	got=$(awk '$2 == "cat" && $4 == "in" && $5 == "place" { n++ } END { print n + 0 }' "$tmp/out")
	[ "$got" = "$want" ] && ok "$name: Concat in place: $got" || bad "$name: Concat in place: $got, expected $want"
	for t in 1 2; do
		run "$WHITTLE" run "$m" --threads $t --val-range -2,2 --repeat 3 --hash-outputs
		grep '^xxh3 y ' "$tmp/out" > "$tmp/p$t" || true
		[ "$rc" = 0 ] || bad "$name: --threads $t: --repeat 3 (exit $rc)"
		"$WHITTLE" run "$m" --threads $t --val-range -2,2 --hash-outputs --mark-all 2>/dev/null | grep '^xxh3 y ' > "$tmp/k$t" || true
		if [ -s "$tmp/p$t" ] && cmp -s "$tmp/p$t" "$tmp/k$t"; then
			ok "$name: --threads $t: bit-identical over 3 runs and to the run that keeps every tensor"
		else
			bad "$name: --threads $t: outputs differ"
		fi
	done
done
echo "e2e-concat-in-place: $pass passed, $fail failed"
[ "$fail" = 0 ]

#!/bin/bash
# Fused activations (docs/architecture.md, "Fused activations"): an activation whose input
# only it reads runs as its producer's epilogue. For each case the profile must name
# exactly the expected layers "fused", and the outputs must be bit-identical to the run
# that keeps every tensor (--mark-all, where nothing fuses) at 1 and 2 threads. The cases
# that must not fuse: a producer whose output is also a graph output or has another reader,
# a Clip bound computed by a node, a Sigmoid read by more than its Mul, integer tensors.
# A MatMul takes its bias Add (an initializer along the last axis) and the activation after
# it into its tiles when its output has 16K elements or more; otherwise the Add runs, with
# its activation fused into it. GELU exported in its Erf form (Div or Mul, Erf, Add, two
# Muls) and QuickGELU (Mul, Sigmoid, Mul) fuse as one activation.
set -euo pipefail
: "${WHITTLE:?}" "${WHITTLE_SRC:?}"
source "$WHITTLE_SRC/tests/lib-e2e.sh"

/usr/bin/python3 - "$tmp" <<'PY'
import sys
import numpy as np
import onnx
from onnx import helper as h, numpy_helper as nh, TensorProto as TP

out = sys.argv[1]
rng = np.random.default_rng(7)
F = TP.FLOAT

def conv(name, x, y, cin=3, cout=8, k=3, group=1):
    w = nh.from_array((rng.standard_normal((cout, cin // group, k, k)) * 0.5).astype(np.float32), name + "_w")
    b = nh.from_array(rng.standard_normal(cout).astype(np.float32), name + "_b")
    return h.make_node("Conv", [x, name + "_w", name + "_b"], [y], name=name, pads=[1, 1, 1, 1], group=group), [w, b]

def save(case, nodes, inits, outputs, opset=17, in_type=F, in_shape=(1, 3, 9, 11), out_shape=(1, 8, 9, 11)):
    ins = [h.make_tensor_value_info("x", in_type, list(in_shape))]
    outs = [h.make_tensor_value_info(o, in_type, list(out_shape)) for o in outputs]
    g = h.make_graph(nodes, case, ins, outs, initializer=inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    if opset <= onnx.defs.onnx_opset_version():  # Debian's onnx may predate Gelu (opset 20)
        onnx.checker.check_model(m)
    onnx.save(m, f"{out}/{case}.onnx")

def one(case, act_nodes, act_inits=(), opset=17, outputs=("y",)):
    c, ci = conv("c", "x", "v")
    save(case, [c] + act_nodes, ci + list(act_inits), outputs, opset)

# fused: each activation after a Conv
one("relu", [h.make_node("Relu", ["v"], ["y"], name="act")])
one("leaky", [h.make_node("LeakyRelu", ["v"], ["y"], name="act", alpha=0.3)])
one("hsig", [h.make_node("HardSigmoid", ["v"], ["y"], name="act", alpha=0.25, beta=0.4)])
one("hswish", [h.make_node("HardSwish", ["v"], ["y"], name="act")])
one("tanh", [h.make_node("Tanh", ["v"], ["y"], name="act")])
one("sigmoid", [h.make_node("Sigmoid", ["v"], ["y"], name="act")])
one("gelu", [h.make_node("Gelu", ["v"], ["y"], name="act")], opset=20)
one("gelu_tanh", [h.make_node("Gelu", ["v"], ["y"], name="act", approximate="tanh")], opset=20)
one("clip6", [h.make_node("Clip", ["v"], ["y"], name="act", min=-0.5, max=1.5)], opset=6)
one("clip13", [h.make_node("Clip", ["v", "lo", "hi"], ["y"], name="act")],
    [nh.from_array(np.array(-0.25, np.float32), "lo"), nh.from_array(np.array(2.0, np.float32), "hi")], opset=13)
one("clip13_max_only", [h.make_node("Clip", ["v", "", "hi"], ["y"], name="act")],
    [nh.from_array(np.array(0.75, np.float32), "hi")], opset=13)
one("silu", [h.make_node("Sigmoid", ["v"], ["s"], name="act"), h.make_node("Mul", ["v", "s"], ["y"], name="mul")])
one("silu_swapped", [h.make_node("Sigmoid", ["v"], ["s"], name="act"), h.make_node("Mul", ["s", "v"], ["y"], name="mul")])
# fused: an elementwise producer, and a depthwise conv chain
c, ci = conv("c", "x", "v")
save("add_relu", [c, h.make_node("Add", ["v", "v"], ["a"], name="add"), h.make_node("Relu", ["a"], ["y"], name="act")], ci, ["y"])
c, ci = conv("c", "x", "v", cin=3, cout=3, group=3)
save("dw_relu6", [c, h.make_node("Clip", ["v", "lo", "hi"], ["y"], name="act")],
     ci + [nh.from_array(np.array(0, np.float32), "lo"), nh.from_array(np.array(6, np.float32), "hi")], ["y"], opset=13,
     out_shape=(1, 3, 9, 11))

# not fused: the producer's output is also a graph output
one("keep_out", [h.make_node("Relu", ["v"], ["y"], name="act")], outputs=("y", "v"))
# not fused: another reader
one("two_readers", [h.make_node("Relu", ["v"], ["r"], name="act"), h.make_node("Add", ["r", "v"], ["y"], name="add")])
# not fused: a bound computed by a node
one("clip_computed", [h.make_node("Constant", [], ["lo"], name="k", value=nh.from_array(np.array(-0.1, np.float32))),
                      h.make_node("Clip", ["v", "lo"], ["y"], name="act")], opset=13)
# not fused: the Sigmoid's output has another reader
one("silu_shared", [h.make_node("Sigmoid", ["v"], ["s"], name="act"), h.make_node("Mul", ["v", "s"], ["m"], name="mul"),
                    h.make_node("Add", ["m", "s"], ["y"], name="add")])
# not fused (the kernel does not apply it): integer Add then Relu
save("int_relu", [h.make_node("Add", ["x", "x"], ["a"], name="add"), h.make_node("Relu", ["a"], ["y"], name="act")], [], ["y"],
     in_type=TP.INT32, in_shape=(2, 5), out_shape=(2, 5))

# a MatMul's bias Add (and the activation after it) in the MatMul's tiles: outputs of 16K+
def mm(case, post, bias, in_shape=(1, 512, 64), w_shape=(64, 160), out_shape=(1, 512, 160), opset=17, extra=(),
       bias_node=None):
    w = nh.from_array((rng.standard_normal(w_shape) * 0.3).astype(np.float32), "w")
    inits = [w] + list(extra)
    nodes = [h.make_node("MatMul", ["x", "w"], ["v"], name="mm")]
    if bias_node is not None:
        nodes.append(bias_node)
    elif bias is not None:
        inits.append(nh.from_array(bias.astype(np.float32), "b"))
    save(case, nodes + post, inits, ["y"], opset, in_shape=in_shape, out_shape=out_shape)

B160 = rng.standard_normal(160)
add = lambda a, b, y="a": h.make_node("Add", [a, b], [y], name="add")
mm("mm_bias_gelu", [add("v", "b"), h.make_node("Gelu", ["a"], ["y"], name="act")], B160, opset=20)
mm("mm_bias_relu_swapped", [add("b", "v"), h.make_node("Relu", ["a"], ["y"], name="act")], B160)
mm("mm_bias", [add("v", "b", "y")], B160)
mm("mm_bias_2d", [add("v", "b", "y")], B160.reshape(1, 160), in_shape=(512, 64), out_shape=(512, 160))
# batched B (a product per batch): the tiles of every matrix
mm("mm_bias_batched", [add("v", "b"), h.make_node("Relu", ["a"], ["y"], name="act")], B160,
   in_shape=(2, 256, 64), w_shape=(2, 64, 160), out_shape=(2, 256, 160))
# the bias in the MatMul, the SiLU after it as its own layers (the Add's fusion is the
# one the MatMul declines)
mm("mm_bias_silu", [add("v", "b"), h.make_node("Sigmoid", ["a"], ["s"], name="sig"),
                    h.make_node("Mul", ["a", "s"], ["y"], name="mul")], B160)
# not in the MatMul: a small output (the Add runs, its activation fused into it)
mm("mm_small", [add("v", "b"), h.make_node("Relu", ["a"], ["y"], name="act")], rng.standard_normal(16),
   in_shape=(1, 8, 64), w_shape=(64, 16), out_shape=(1, 8, 16))
# not in the MatMul: a bias of N elements along another axis, one of a higher rank
mm("mm_bias_rows", [add("v", "b"), h.make_node("Relu", ["a"], ["y"], name="act")], rng.standard_normal((512, 1)),
   in_shape=(1, 512, 64), w_shape=(64, 512), out_shape=(1, 512, 512))
mm("mm_bias_rank", [add("v", "b"), h.make_node("Relu", ["a"], ["y"], name="act")], B160.reshape(1, 1, 160),
   in_shape=(512, 64), out_shape=(1, 512, 160))
# in the MatMul: a bias that is an Identity of an initializer (how an exporter writes a
# tensor equal to another: a fresh model's zero biases)
mm("mm_bias_identity", [add("v", "b"), h.make_node("Relu", ["a"], ["y"], name="act")], None,
   extra=[nh.from_array(B160.astype(np.float32), "b0")], bias_node=h.make_node("Identity", ["b0"], ["b"], name="idb"))
# not in the MatMul: a computed bias, a MatMul output with another reader
mm("mm_bias_computed", [add("v", "b"), h.make_node("Relu", ["a"], ["y"], name="act")], None,
   bias_node=h.make_node("Constant", [], ["b"], name="k", value=nh.from_array(B160.astype(np.float32))))
mm("mm_two_readers", [add("v", "b"), h.make_node("Mul", ["a", "v"], ["y"], name="mul")], B160)

# GELU in its Erf form: x * (1 + erf(x / c1)) * c3 (timm's export) and (x * c3) * (1 + erf(x * c1))
# (transformers'), with initializers or Constant layers as the scalars
def sc(name, v):
    return nh.from_array(np.array(v, np.float32), name)
def kn(name, v):
    return h.make_node("Constant", [], [name], name="k_" + name, value=sc(name, v))
def erf_gelu(x, y, half_first=False, mul=False):
    n = [h.make_node("Mul" if mul else "Div", [x, "c1"], ["d"], name="div"), h.make_node("Erf", ["d"], ["e"], name="erf"),
         h.make_node("Add", ["e", "c2"], ["t"], name="one")]
    if half_first:
        return n + [h.make_node("Mul", [x, "c3"], ["hx"], name="half"), h.make_node("Mul", ["hx", "t"], [y], name="mul")]
    return n + [h.make_node("Mul", ["t", x], ["m"], name="mul"), h.make_node("Mul", ["m", "c3"], [y], name="half")]
# c3 0.3, not 0.5: a product by 0.5 is exact, so a chain that multiplied in the other order
# would give the same bits
SC = [sc("c1", 1.4142135), sc("c2", 1.0), sc("c3", 0.3)]
mm("mm_bias_erf_gelu", [add("v", "b")] + erf_gelu("a", "y"), B160, extra=SC)
mm("mm_bias_erf_gelu_hf", [add("v", "b")] + erf_gelu("a", "y", half_first=True, mul=True), B160,
   extra=[sc("c1", 0.70710677), sc("c2", 1.0), sc("c3", 0.3)])
mm("mm_bias_erf_gelu_const", [add("v", "b"), kn("c1", 1.4142135), kn("c2", 1.0), kn("c3", 0.5)] + erf_gelu("a", "y"), B160)
mm("mm_small_erf_gelu", [add("v", "b")] + erf_gelu("a", "y"), rng.standard_normal(16), extra=SC,
   in_shape=(1, 8, 64), w_shape=(64, 16), out_shape=(1, 8, 16))
c, ci = conv("c", "x", "v")
save("conv_erf_gelu", [c] + erf_gelu("v", "y"), ci + SC, ["y"])
# QuickGELU (CLIP): x * sigmoid(x * 1.702), both orders of the outer Mul
def quick(x, y, swap=False):
    return [h.make_node("Mul", [x, "q"], ["qx"], name="qmul"), h.make_node("Sigmoid", ["qx"], ["qs"], name="qsig"),
            h.make_node("Mul", ["qs", x] if swap else [x, "qs"], [y], name="qout")]
mm("mm_bias_quick_gelu", [add("v", "b")] + quick("a", "y"), B160, extra=[sc("q", 1.702)])
c, ci = conv("c", "x", "v")
save("conv_quick_gelu", [c] + quick("v", "y", swap=True), ci + [sc("q", 1.702)], ["y"])
# the same after a stem-sized Conv (K = 27, 16 outputs, 64 x 64: conv.c's stem rows, which
# apply a lone Relu in registers): the chain is not taken for a Relu
c, ci = conv("c", "x", "v", cout=16)
save("stem_erf_gelu", [c] + erf_gelu("v", "y"), ci + SC, ["y"], in_shape=(1, 3, 64, 64), out_shape=(1, 16, 64, 64))
c, ci = conv("c", "x", "v", cout=16)
save("stem_quick_gelu", [c] + quick("v", "y"), ci + [sc("q", 1.702)], ["y"], in_shape=(1, 3, 64, 64),
     out_shape=(1, 16, 64, 64))
# not fused: the Sigmoid's input read by another layer
c, ci = conv("c", "x", "v")
save("quick_gelu_shared", [c] + quick("v", "g") + [h.make_node("Add", ["g", "qx"], ["y"], name="tap")],
     ci + [sc("q", 1.702)], ["y"])
# not fused: an intermediate read by another layer, a divisor that is not a scalar, x / c1 the other way round
c, ci = conv("c", "x", "v")
save("erf_gelu_shared", [c] + erf_gelu("v", "g") + [h.make_node("Add", ["g", "e"], ["y"], name="tap")], ci + SC, ["y"])
c, ci = conv("c", "x", "v")
save("erf_gelu_vector", [c] + erf_gelu("v", "y"), ci + [nh.from_array(np.full((8, 1, 1), 1.4142135, np.float32), "c1")] + SC[1:], ["y"])
c, ci = conv("c", "x", "v")
n = erf_gelu("v", "y")
n[0] = h.make_node("Div", ["c1", "v"], ["d"], name="div")
save("erf_gelu_swapped_div", [c] + n, ci + SC, ["y"])
PY

# case: the layers the profile must call fused (space separated, "-" for none)
cases="relu:act leaky:act hsig:act hswish:act tanh:act sigmoid:act gelu:act gelu_tanh:act clip6:act clip13:act clip13_max_only:act
silu:act,mul silu_swapped:act,mul add_relu:act dw_relu6:act keep_out:- two_readers:- clip_computed:- silu_shared:- int_relu:-
mm_bias_gelu:add,act mm_bias_relu_swapped:add,act mm_bias:add mm_bias_2d:add mm_bias_batched:add,act mm_bias_silu:add
mm_small:act mm_bias_rows:act mm_bias_rank:act mm_bias_computed:act mm_two_readers:- mm_bias_identity:add,act
mm_bias_erf_gelu:add,div,erf,one,mul,half mm_bias_erf_gelu_hf:add,div,erf,one,mul,half
mm_bias_erf_gelu_const:add,div,erf,one,mul,half mm_small_erf_gelu:div,erf,one,mul,half conv_erf_gelu:div,erf,one,mul,half
erf_gelu_shared:- erf_gelu_vector:- erf_gelu_swapped_div:-
mm_bias_quick_gelu:add,qmul,qsig,qout conv_quick_gelu:qmul,qsig,qout quick_gelu_shared:-
stem_erf_gelu:div,erf,one,mul,half stem_quick_gelu:qmul,qsig,qout"
for c in $cases; do
	name=${c%%:*}
	want=$(echo "${c#*:}" | tr ',' '\n' | sed '/^-$/d' | sort | tr '\n' ' ')
	m=$tmp/$name.onnx
	run "$WHITTLE" run "$m" --profile --iterations 2 --threads 2 --val-range -2,2
	if [ "$rc" != 0 ]; then bad "$name: run --profile (exit $rc)"; continue; fi
	got=$(awk '$4 == "fused" { print $2 }' "$tmp/out" | sort | tr '\n' ' ')
	[ "$got" = "$want" ] && ok "$name: fused layers [${want% }]" || bad "$name: fused layers [${got% }], expected [${want% }]"
	for t in 1 2; do
		"$WHITTLE" run "$m" --threads $t --val-range -2,2 --hash-outputs 2>/dev/null | grep '^xxh3' | sort > "$tmp/f$t"
		"$WHITTLE" run "$m" --threads $t --val-range -2,2 --hash-outputs --mark-all 2>/dev/null | grep '^xxh3' |
			grep -F -f <(awk '{ print " " $2 " " }' "$tmp/f$t") | sort > "$tmp/k$t"
		if [ -s "$tmp/f$t" ] && cmp -s "$tmp/f$t" "$tmp/k$t"; then
			ok "$name: --threads $t: outputs bit-identical to the unfused run"
		else
			bad "$name: --threads $t: outputs differ from the unfused run"
		fi
	done
done
# the MatMul's tiles add the bias and apply the activation with each ISA's own row kernels
for name in mm_bias_gelu mm_bias_batched mm_bias_erf_gelu mm_bias_erf_gelu_hf conv_erf_gelu mm_bias_quick_gelu; do
	for isa in scalar avx2; do
		a=$(WHITTLE_ISA=$isa "$WHITTLE" run "$tmp/$name.onnx" --threads 2 --val-range -2,2 --hash-outputs 2>/dev/null | grep '^xxh3 ')
		b=$(WHITTLE_ISA=$isa "$WHITTLE" run "$tmp/$name.onnx" --threads 1 --val-range -2,2 --hash-outputs --mark-all 2>/dev/null |
			grep '^xxh3 ' | grep -F " y ")
		[ -n "$a" ] && [ "$a" = "$b" ] && ok "$name: WHITTLE_ISA=$isa: fused bits are the unfused run's" ||
			bad "$name: WHITTLE_ISA=$isa: fused [$a] unfused [$b]"
	done
done
echo "e2e-fusion: $pass passed, $fail failed"
[ "$fail" = 0 ]

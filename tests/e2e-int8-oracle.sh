#!/bin/bash
# int8 emulation bit for bit against numpy: a small graph (Add of a constant, Conv with bias,
# Mul by a constant, 1x1 Conv without bias, Add of two activations, MatMul by a constant)
# run at --precision int8 with --mark-all, every tensor compared with a float32 numpy model
# of executor/precision.h's semantics: per-tensor ranges measured at run time (largest
# finite |x|, scale = range / 127), fake quantization x -> round_half_even(clamp(x / scale))
# * scale, integer Conv/MatMul on the grid values with per-output-channel weight scales and
# the bias added after rescaling. The integer sums are exact in float32 (small K), so the
# accumulation order of the kernels does not matter and the bits must match. This covers the
# ranges a layer records for its consumer (a Conv's input scale is the range of its
# producer's quantized output), the constant inputs quantized once per engine (--iterations:
# later runs read the kept copies), and every thread count.
# Environment (set by ctest): WHITTLE, WHITTLE_SRC.
set -euo pipefail

whittle=${WHITTLE:?set by ctest}
py=/usr/bin/python3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/whittle-e2e-int8-oracle.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

$py - "$tmp/m.onnx" <<'PY'
import sys
import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto
rng = np.random.default_rng(3)
f = lambda a: np.asarray(a, dtype=np.float32)
inits = [
    numpy_helper.from_array(f(rng.uniform(-1, 1, (1, 4, 1, 1))), "c"),
    numpy_helper.from_array(f(rng.uniform(-0.5, 0.5, (8, 4, 3, 3))), "w1"),
    numpy_helper.from_array(f(rng.uniform(-0.2, 0.2, (8,))), "b1"),
    numpy_helper.from_array(f([0.7]), "d"),
    numpy_helper.from_array(f(rng.uniform(-0.5, 0.5, (4, 8, 1, 1))), "w2"),
    numpy_helper.from_array(f(rng.uniform(-1, 1, (96, 5))), "w3"),
]
nodes = [
    helper.make_node("Add", ["x", "c"], ["a1"], name="add_c"),
    helper.make_node("Conv", ["a1", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
    helper.make_node("Mul", ["c1", "d"], ["m1"], name="mul_d"),
    helper.make_node("Conv", ["m1", "w2"], ["c2"], name="conv2"),
    helper.make_node("Add", ["c2", "a1"], ["a2"], name="add_res"),
    helper.make_node("MatMul", ["a2", "w3"], ["y"], name="matmul"),
]
g = helper.make_graph(nodes, "int8_oracle", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 48, 96])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 48, 5])], inits)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
onnx.checker.check_model(m)
onnx.save(m, sys.argv[1])
PY

for t in 1 2 3; do
	"$whittle" run "$tmp/m.onnx" --seed 4 --val-range -3,3 --precision int8 --threads $t --mark-all \
		--save-inputs "$tmp/in" --save-outputs "$tmp/out-$t" >/dev/null || fail "run --threads $t: exit $?"
done
"$whittle" run "$tmp/m.onnx" --seed 4 --val-range -3,3 --precision int8 --threads 2 --iterations 3 \
	--save-outputs "$tmp/out-iter" >/dev/null || fail "run --iterations 3: exit $?"

$py - "$tmp" <<'PY' || fail "int8 tensors differ from the numpy model"
import sys, glob, os
import numpy as np
import onnx
from onnx import numpy_helper
tmp = sys.argv[1]
m = onnx.load(os.path.join(tmp, "m.onnx"))
W = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
def load(path):
    t = onnx.TensorProto()
    with open(path, "rb") as fh:
        t.ParseFromString(fh.read())
    return numpy_helper.to_array(t)
x = load(glob.glob(os.path.join(tmp, "in", "*"))[0])
F = np.float32
M = F(12582912.0)

def amax(a):
    a = np.abs(a[np.isfinite(a)])
    return F(a.max()) if a.size else F(0)

def grid(a, scale):
    inv = F(1) / F(scale)
    y = (a * inv).astype(F)
    y = np.where(y > F(127), F(127), y)
    y = np.where(y < F(-127), F(-127), y)
    r = (y + M) - M  # round half to even, a zero is +0 (as the emulation does)
    return np.where(np.isnan(y), F(0), r).astype(F)

def scale_of(a):
    return F(amax(a) / F(127))

def fq(a):
    s = scale_of(a)
    return a.copy() if s <= 0 else (grid(a, s) * s).astype(F)

def weight_grid(w, axis):
    ws = np.empty(w.shape[axis], F)
    q = np.empty_like(w)
    for c in range(w.shape[axis]):
        sl = [slice(None)] * w.ndim
        sl[axis] = c
        ws[c] = F(amax(w[tuple(sl)]) / F(127))
        q[tuple(sl)] = grid(w[tuple(sl)], ws[c])
    return q, ws

def int_conv(a, w, b, pad):
    s_in = scale_of(a)
    qa = grid(a, s_in)
    qw, ws = weight_grid(w, 0)
    n, ci, h, wd = qa.shape
    co, _, kh, kw = qw.shape
    p = np.pad(qa.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = h + 2 * pad - kh + 1, wd + 2 * pad - kw + 1
    acc = np.zeros((n, co, oh, ow))
    for i in range(kh):
        for j in range(kw):
            acc += np.einsum("nchw,oc->nohw", p[:, :, i:i + oh, j:j + ow], qw[:, :, i, j].astype(np.float64))
    acc = acc.astype(F)  # exact: integers below 2^24
    out = np.empty_like(acc)
    for c in range(co):
        sc = F(s_in * ws[c])
        out[:, c] = (acc[:, c] * sc).astype(F) + (b[c] if b is not None else F(0))
    return fq(out)

def int_matmul(a, w):
    s_in = scale_of(a)
    qa = grid(a, s_in)
    qw, ws = weight_grid(w, 1)
    acc = np.matmul(qa.astype(np.float64), qw.astype(np.float64)).astype(F)
    return fq((acc * (s_in * ws).astype(F)).astype(F))

want = {}
want["a1"] = fq((fq(x) + fq(W["c"])).astype(F))
want["c1"] = int_conv(want["a1"], W["w1"], W["b1"], 1)
want["m1"] = fq((want["c1"] * fq(W["d"])).astype(F))
want["c2"] = int_conv(want["m1"], W["w2"], None, 0)
want["a2"] = fq((want["c2"] + want["a1"]).astype(F))
want["y"] = int_matmul(want["a2"], W["w3"])
bad = 0
for d in ["out-1", "out-2", "out-3", "out-iter"]:
    for name, ref in want.items():
        path = os.path.join(tmp, d, name + ".pb")
        if not os.path.exists(path):
            if d == "out-iter" and name != "y":
                continue  # without --mark-all only the graph output
            print(f"{d}/{name}: missing"); bad += 1; continue
        got = load(path)
        if got.shape != ref.shape or got.tobytes() != ref.astype(F).tobytes():
            diff = np.count_nonzero(got.view(np.uint32) != ref.astype(F).view(np.uint32)) if got.shape == ref.shape else -1
            print(f"{d}/{name}: {diff} of {ref.size} elements differ from numpy (max |d| {np.max(np.abs(got - ref)) if diff >= 0 else 'shape'})")
            bad += 1
        else:
            print(f"ok {d}/{name}: {ref.size} elements bit for bit")
sys.exit(1 if bad else 0)
PY
echo "PASS: int8 emulation matches the numpy model bit for bit"

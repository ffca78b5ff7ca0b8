#!/usr/bin/python3
"""Fixtures for tests/e2e-precision-search.sh (python3-onnx), beside those of
scripts/gen-precision-fixtures.py (layernorm_overflow, two_layers, ...).

usage: gen-precision-search-fixtures.py OUT_DIR

Writes OUT_DIR/<name>.onnx and its inputs OUT_DIR/<name>/input_<k>.pb, and prints
`expect <model> fp16 <layer>` for every layer that must stay in fp32 (the exact answer):

  three_sites   a 60-layer chain on x in [-1, 1] with three fp16 overflow sites far apart:
                `a_norm` (first quarter) divides the raw input `depth` (up to 150000) by 1e5;
                an RMSNorm (middle) squares `rms_scale` = w * h, whose largest element is
                300 (300^2 > 65504), so `rms_pow` overflows and `rms_mean` (which
                rounds its input to fp16 again) must stay in fp32 too, while the mean itself
                (below 30000) and everything after it are fine in fp16; `c_norm` (last
                quarter) multiplies the raw input `gain` (up to 130000) by 1e-5. Exactly
                a_norm, rms_pow, rms_mean, c_norm must run in fp32 for fp16 to pass
                --atol 1e-2 --rtol 1e-2; every other layer is harmless in fp16.
  anonymous     three layers without names (Tanh, Div, Mul); the second divides `depth` (up
                to 1e5) by 1e5 and overflows in fp16. The answer is that Div; since layer
                precisions name layers, the search must not confuse unnamed layers.

The generator checks its own claims in numpy (fp32 and an fp16 emulation that rounds each
layer's inputs and output, like whittle's) and exits non-zero when one does not hold.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 13
F16_MAX = 65504.0


def save_model(out_dir, name, nodes, inputs, outputs, inits):
    g = helper.make_graph(nodes, name, inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="gen-precision-search-fixtures")
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(out_dir, name + ".onnx"))


def save_inputs(folder, arrays):
    os.makedirs(folder, exist_ok=True)
    for k, (name, arr) in enumerate(arrays):
        t = numpy_helper.from_array(arr, name)
        with open(os.path.join(folder, "input_%d.pb" % k), "wb") as f:
            f.write(t.SerializeToString())


def vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def const(name, arr):
    return numpy_helper.from_array(np.asarray(arr, np.float32), name)


def h16(a):
    with np.errstate(over="ignore"):
        return np.asarray(a, np.float32).astype(np.float16).astype(np.float32)


OPS = {
    "Tanh": lambda a: np.tanh(a[0]),
    "Sigmoid": lambda a: 1 / (1 + np.exp(-a[0])),
    "Relu": lambda a: np.maximum(a[0], 0),
    "Add": lambda a: a[0] + a[1],
    "Sub": lambda a: a[0] - a[1],
    "Mul": lambda a: a[0] * a[1],
    "Div": lambda a: a[0] / a[1],
    "Pow": lambda a: a[0] ** a[1],
    "Sqrt": lambda a: np.sqrt(a[0]),
    "ReduceMean": lambda a: np.mean(a[0], axis=-1, keepdims=True),
}


def simulate(nodes, inits, feeds, fp32_layers):
    """fp16 emulation: a layer not in fp32_layers rounds its float inputs and its output."""
    env = dict(feeds)
    env.update({t.name: numpy_helper.to_array(t).astype(np.float32) for t in inits})
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        for n in nodes:
            low = fp32_layers is not None and n.name not in fp32_layers
            args = [h16(env[i]) if low else env[i] for i in n.input]
            out = OPS[n.op_type](args).astype(np.float32)
            env[n.output[0]] = h16(out) if low else out
    return env


def fails(ref, got, atol=1e-2, rtol=1e-2):
    with np.errstate(invalid="ignore"):
        d = np.abs(got.astype(np.float64) - ref.astype(np.float64))
        bad = (d > atol) & (d > rtol * np.abs(ref))
    return bool(np.any(bad | ~np.isfinite(got)))


def three_sites(out_dir, rng):
    n = 64
    mk = helper.make_node
    nodes, inits = [], []
    cur = "x"
    k = [0]

    def layer(op, ins, name=None):
        k[0] += 1
        name = name or "l%02d_%s" % (k[0], op.lower())
        out = name + "_out"
        nodes.append(mk(op, ins, [out], name=name))
        return out

    def c(val):
        nm = "c%02d" % len(inits)
        inits.append(const(nm, val))
        return nm

    benign = [("Tanh", None), ("Add", 0.25), ("Sigmoid", None), ("Mul", 1.5), ("Sub", 0.5), ("Tanh", None),
              ("Mul", 0.8), ("Add", -0.1)]

    def chain(cur, count):
        for i in range(count):
            op, v = benign[i % len(benign)]
            cur = layer(op, [cur] if v is None else [cur, c(v)])
        return cur

    cur = chain(cur, 6)
    a = layer("Div", ["depth", c(100000.0)], name="a_norm")
    cur = layer("Mul", [cur, a], name="mix_a")
    cur = chain(cur, 16)
    # RMSNorm over the last axis: y = s / sqrt(mean(s^2) + eps)
    w_name = c(np.ones((1, n), np.float32))
    s = layer("Mul", [cur, w_name], name="rms_scale")
    p = layer("Pow", [s, c(2.0)], name="rms_pow")
    m = layer("ReduceMean", [p], name="rms_mean")
    nodes[-1].attribute.extend([helper.make_attribute("axes", [-1]), helper.make_attribute("keepdims", 1)])
    e = layer("Add", [m, c(1e-5)], name="rms_eps")
    r = layer("Sqrt", [e], name="rms_sqrt")
    cur = layer("Div", [s, r], name="rms_div")
    cur = chain(cur, 16)
    g = layer("Mul", ["gain", c(1e-5)], name="c_norm")
    cur = layer("Mul", [cur, g], name="mix_c")
    cur = chain(cur, 8)
    nodes[-1].output[0] = "y"

    x = rng.uniform(-1, 1, size=(1, n)).astype(np.float32)
    depth = rng.integers(0, 150001, size=(1, n)).astype(np.float32)
    depth[0, 3] = 150000
    gain = rng.integers(70000, 130001, size=(1, n)).astype(np.float32)
    gain[0, 5] = 130000
    feeds = {"x": x, "depth": depth, "gain": gain}
    # per-channel weights of rms_scale: 100, and 300 / |h| for the largest |h|, so that one
    # square is 90000 (beyond fp16) while the mean of the squares stays small
    h = simulate(nodes, inits, feeds, None)[nodes[[nd.name for nd in nodes].index("rms_scale")].input[0]]
    w = np.full((1, n), 100.0, np.float32)
    j = int(np.argmax(np.abs(h)))
    w[0, j] = 300.0 / abs(float(h[0, j]))
    inits[[t.name for t in inits].index(w_name)].CopyFrom(const(w_name, w))
    answer = {"a_norm", "rms_pow", "rms_mean", "c_norm"}

    ref = simulate(nodes, inits, feeds, None)
    s_ref = ref["rms_scale_out"]
    assert np.max(np.abs(s_ref)) ** 2 > F16_MAX, "rms_pow must overflow fp16: max |s| %g" % np.max(np.abs(s_ref))
    assert np.max(ref["rms_mean_out"]) < F16_MAX / 2, "the mean of squares must fit fp16: %g" % np.max(ref["rms_mean_out"])
    y = ref["y"]
    assert fails(y, simulate(nodes, inits, feeds, set())["y"]), "all fp16 must fail"
    assert not fails(y, simulate(nodes, inits, feeds, answer)["y"]), "the answer must pass"
    for drop in answer:
        assert fails(y, simulate(nodes, inits, feeds, answer - {drop})["y"]), "without %s it must fail" % drop

    save_model(out_dir, "three_sites", nodes, [vi("x", [1, n]), vi("depth", [1, n]), vi("gain", [1, n])],
               [vi("y", [1, n])], inits)
    save_inputs(os.path.join(out_dir, "three_sites"), [("x", x), ("depth", depth), ("gain", gain)])
    print("three_sites: max |rms_scale| %.1f (square %.0f), largest mean of squares %.0f, %d layers"
          % (np.max(np.abs(s_ref)), np.max(np.abs(s_ref)) ** 2, np.max(ref["rms_mean_out"]), len(nodes)))
    return [("three_sites", "fp16", l) for l in sorted(answer)]


def anonymous(out_dir, rng):
    n = 8
    mk = helper.make_node
    nodes = [mk("Tanh", ["x"], ["t"]), mk("Div", ["depth", "s"], ["a"]), mk("Mul", ["t", "a"], ["y"])]
    inits = [const("s", 100000.0)]
    x = rng.uniform(-1, 1, size=(1, n)).astype(np.float32)
    depth = rng.integers(0, 100001, size=(1, n)).astype(np.float32)
    depth[0, 0] = 100000
    save_model(out_dir, "anonymous", nodes, [vi("x", [1, n]), vi("depth", [1, n])], [vi("y", [1, n])], inits)
    save_inputs(os.path.join(out_dir, "anonymous"), [("x", x), ("depth", depth)])
    # no name to print: the test expects the Div (the second layer)
    return [("anonymous", "fp16", "#1:Div")]


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen-precision-search-fixtures.py OUT_DIR")
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    expects = []
    for k, gen in enumerate([three_sites, anonymous]):
        expects += gen(out_dir, np.random.default_rng(4321 + k))
    for model, prec, layer in expects:
        print("expect %s %s %s" % (model, prec, layer))


if __name__ == "__main__":
    main()

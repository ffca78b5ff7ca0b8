#!/usr/bin/python3
"""Fixtures for tests/e2e-precision-search.sh (python3-onnx), beside those of
scripts/gen-precision-fixtures.py (layernorm_overflow, int8_outlier).

usage: gen-precision-search-fixtures.py OUT_DIR

Writes OUT_DIR/<name>.onnx and its inputs OUT_DIR/<name>/input_<k>.pb, and prints
`expect <model> fp16 <layer>` for every layer that must stay in fp32 (the exact answer).

Under whittle's precision semantics (TensorRT's) an fp16 layer converts every float input to
fp16 (a reformat in front of it, counted as part of the layer), computes, and stores its
output in fp16; so a layer must stay high exactly when its inputs or its output leave fp16's
range (65504): the layer whose output overflows AND each consumer that would convert the
out-of-range values. Each fixture has independent sites of that kind:

  two_sites     16 layers on inputs x, u, v ([1, 64]). Two RMSNorm sites far apart, one on u
                (first layers), one on v (last layers): Pow(., 2) -> ReduceMean -> Add eps ->
                Sqrt -> Div, mixed into a chain on x. u and v hold values in [-40, 40] and one
                300: one square is 90000 (inf in fp16), the mean of the squares (< 2000) fits.
                Exactly `a_pow`, `a_mean`, `b_pow` and `b_mean` must run in fp32 (each Pow
                writes the square, each ReduceMean reads it; the means fit fp16). The same
                holds for any inputs in [0, 300) (squares beyond 65504 where u > 256, means
                near 30000); on inputs in [0, 1) fp16 passes.
  three_sites   a 56-layer chain on x in [-1, 1] with three sites of three kinds: `a_div`
                (first quarter) divides the input `depth` (values in [0, 60] and one 100) by
                2^-10 (102400 > 65504), `a_scale` multiplies it back by 2^-13; `rms_pow`
                (middle) squares an RMSNorm's input, one channel of which is shifted by 300;
                `c_mul` (last quarter) multiplies the input `gain` (one 90) by 1024 and
                `c_scale` brings it back by 2^-13. Exactly a_div, a_scale, rms_pow, rms_mean,
                c_mul and c_scale (each producer and the consumer that reads its values).
  anonymous     three layers without names (Tanh, Div, Mul); the Div divides `depth` (one
                100) by 2^-10 and overflows, the Mul brings it back (times 2^-13). The answer
                is that Div and that Mul; since layer precisions name layers, the search must
                not confuse unnamed layers.

Tolerances: --atol 1e-2 --rtol 1e-2. The generator checks its claims in numpy (fp32 and an
fp16 emulation with the rule above) and exits non-zero when one does not hold.
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
    """fp32_layers None: all fp32. Otherwise an fp16 layer (not in fp32_layers) converts
    every float input (constants and activations) to fp16 and rounds its output."""
    consts = {t.name: numpy_helper.to_array(t).astype(np.float32) for t in inits}
    env = dict(feeds)
    env.update(consts)
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


def check_answer(name, nodes, inits, feeds, answer):
    ref = simulate(nodes, inits, feeds, None)
    y = ref["y"]
    assert np.all(np.isfinite(y)), "%s: fp32 output must be finite" % name
    assert fails(y, simulate(nodes, inits, feeds, set())["y"]), "%s: all fp16 must fail" % name
    assert not fails(y, simulate(nodes, inits, feeds, answer)["y"]), "%s: the answer must pass" % name
    for drop in answer:
        assert fails(y, simulate(nodes, inits, feeds, answer - {drop})["y"]), "%s: without %s it must fail" % (name, drop)
    return ref


class Builder:
    def __init__(self):
        self.nodes, self.inits, self.k = [], [], 0

    def layer(self, op, ins, name=None, **attrs):
        self.k += 1
        name = name or "l%02d_%s" % (self.k, op.lower())
        out = name + "_out"
        self.nodes.append(helper.make_node(op, ins, [out], name=name, **attrs))
        return out

    def c(self, val):
        nm = "c%02d" % len(self.inits)
        self.inits.append(const(nm, val))
        return nm

    # Exact in fp16 (so constant rounding adds nothing); no saturating op after the first,
    # so an inf or a zeroed site reaches the output.
    BENIGN = [("Add", 0.25), ("Mul", 1.5), ("Sub", 0.5), ("Mul", 0.75), ("Add", -0.125), ("Mul", 0.5)]

    def chain(self, cur, count):
        for i in range(count):
            op, v = self.BENIGN[i % len(self.BENIGN)]
            cur = self.layer(op, [cur, self.c(v)])
        return cur

    def rmsnorm(self, s, p):
        """p: the layer-name prefix; returns the normalized tensor"""
        sq = self.layer("Pow", [s, self.c(2.0)], name=p + "_pow")
        m = self.layer("ReduceMean", [sq], name=p + "_mean", axes=[-1], keepdims=1)
        e = self.layer("Add", [m, self.c(1e-3)], name=p + "_eps")
        r = self.layer("Sqrt", [e], name=p + "_sqrt")
        return self.layer("Div", [s, r], name=p + "_div")


def two_sites(out_dir, rng):
    n = 64
    b = Builder()
    cur = b.layer("Tanh", ["x"])
    a = b.rmsnorm("u", "a")
    cur = b.layer("Add", [cur, a], name="mix_a")
    cur = b.chain(cur, 4)
    bn = b.rmsnorm("v", "b")
    cur = b.layer("Add", [cur, bn], name="mix_b")
    cur = b.layer("Mul", [cur, b.c(0.5)])
    b.nodes[-1].output[0] = "y"
    answer = {"a_pow", "a_mean", "b_pow", "b_mean"}

    x = rng.uniform(-1, 1, size=(1, n)).astype(np.float32)
    u = rng.uniform(-40, 40, size=(1, n)).astype(np.float32)
    u[0, 5] = 300
    v = rng.uniform(-40, 40, size=(1, n)).astype(np.float32)
    v[0, 50] = -300
    feeds = {"x": x, "u": u, "v": v}
    ref = check_answer("two_sites", b.nodes, b.inits, feeds, answer)
    assert max(ref["a_mean_out"].max(), ref["b_mean_out"].max()) < F16_MAX / 4
    # any inputs in [0, 300) (the test's generated-input case): the same answer
    for seed in range(20):
        r2 = np.random.default_rng(seed)
        f2 = {k: r2.uniform(0, 300, size=(1, n)).astype(np.float32) for k in ("x", "u", "v")}
        check_answer("two_sites on [0, 300) seed %d" % seed, b.nodes, b.inits, f2, answer)
    f3 = {k: np.random.default_rng(1).uniform(0, 1, size=(1, n)).astype(np.float32) for k in ("x", "u", "v")}
    r3 = simulate(b.nodes, b.inits, f3, None)["y"]
    assert not fails(r3, simulate(b.nodes, b.inits, f3, set())["y"]), "two_sites on [0, 1) must pass at fp16"

    save_model(out_dir, "two_sites", b.nodes, [vi("x", [1, n]), vi("u", [1, n]), vi("v", [1, n])], [vi("y", [1, n])], b.inits)
    save_inputs(os.path.join(out_dir, "two_sites"), [("x", x), ("u", u), ("v", v)])
    print("two_sites: %d layers, largest means of squares %.0f %.0f"
          % (len(b.nodes), ref["a_mean_out"].max(), ref["b_mean_out"].max()))
    return [("two_sites", "fp16", l) for l in sorted(answer)]


def three_sites(out_dir, rng):
    n = 64
    b = Builder()
    cur = b.layer("Tanh", ["x"])
    cur = b.chain(cur, 5)
    a = b.layer("Div", ["depth", b.c(2.0 ** -10)], name="a_div")
    a = b.layer("Mul", [a, b.c(2.0 ** -13)], name="a_scale")
    cur = b.layer("Add", [cur, a], name="mix_a")
    cur = b.chain(cur, 15)
    bias = np.zeros((1, n), np.float32)
    bias[0, 7] = 300.0
    s = b.layer("Add", [cur, b.c(bias)], name="rms_shift")
    cur = b.rmsnorm(s, "rms")
    cur = b.chain(cur, 15)
    g = b.layer("Mul", ["gain", b.c(1024.0)], name="c_mul")
    g = b.layer("Mul", [g, b.c(2.0 ** -13)], name="c_scale")
    cur = b.layer("Add", [cur, g], name="mix_c")
    cur = b.chain(cur, 7)
    b.nodes[-1].output[0] = "y"
    answer = {"a_div", "a_scale", "rms_pow", "rms_mean", "c_mul", "c_scale"}

    x = rng.uniform(-1, 1, size=(1, n)).astype(np.float32)
    depth = rng.uniform(0, 60, size=(1, n)).astype(np.float32)
    depth[0, 3] = 100
    gain = rng.uniform(0, 60, size=(1, n)).astype(np.float32)
    gain[0, 9] = 90
    feeds = {"x": x, "depth": depth, "gain": gain}
    ref = check_answer("three_sites", b.nodes, b.inits, feeds, answer)
    assert ref["rms_mean_out"].max() < F16_MAX / 4

    save_model(out_dir, "three_sites", b.nodes, [vi("x", [1, n]), vi("depth", [1, n]), vi("gain", [1, n])],
               [vi("y", [1, n])], b.inits)
    save_inputs(os.path.join(out_dir, "three_sites"), [("x", x), ("depth", depth), ("gain", gain)])
    print("three_sites: %d layers, largest mean of squares %.0f" % (len(b.nodes), ref["rms_mean_out"].max()))
    return [("three_sites", "fp16", l) for l in sorted(answer)]


def anonymous(out_dir, rng):
    n = 8
    mk = helper.make_node
    nodes = [mk("Tanh", ["x"], ["t"]), mk("Div", ["depth", "s"], ["a"]), mk("Mul", ["a", "k"], ["b"]),
             mk("Add", ["t", "b"], ["y"])]
    inits = [const("s", 2.0 ** -10), const("k", 2.0 ** -13)]
    x = rng.uniform(-1, 1, size=(1, n)).astype(np.float32)
    depth = rng.uniform(0, 60, size=(1, n)).astype(np.float32)
    depth[0, 0] = 100
    save_model(out_dir, "anonymous", nodes, [vi("x", [1, n]), vi("depth", [1, n])], [vi("y", [1, n])], inits)
    save_inputs(os.path.join(out_dir, "anonymous"), [("x", x), ("depth", depth)])
    # no names to print: the test expects the Div and the Mul (the second and third layers)
    return [("anonymous", "fp16", "#1:Div"), ("anonymous", "fp16", "#2:Mul")]


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen-precision-search-fixtures.py OUT_DIR")
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    expects = []
    for k, gen in enumerate([two_sites, three_sites, anonymous]):
        expects += gen(out_dir, np.random.default_rng(4321 + k))
    for model, prec, layer in expects:
        print("expect %s %s %s" % (model, prec, layer))


if __name__ == "__main__":
    main()

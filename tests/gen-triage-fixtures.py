#!/usr/bin/python3
"""Writes the models of the triage end-to-end test, one per branch of the flowchart, and
their inputs (python3-onnx).

usage: gen-triage-fixtures.py OUT_DIR

For each model OUT_DIR/<name>.onnx the inputs are OUT_DIR/<name>/<input name>.pb. Layers
are named like PaddleOCR's exported models (p2o.<Op>.<k>).

  flaky_matmul   x[16,64] in [0,1) -> MatMul (p2o.MatMul.0) -> Relu -> MatMul (p2o.MatMul.1)
                 -> Add bias -> y. Passes at fp16 with atol/rtol 1e-2 whatever tactic each
                 MatMul uses; with WHITTLE_FAULTY_TACTIC=matmul-avx2:p2o.MatMul.1 the builds
                 that pick matmul-avx2 for p2o.MatMul.1 fail, the others pass.
  overflow       x[4,64] even integers 200..600 -> Mul 0.5 (p2o.Mul.0; exact) -> Relu ->
                 Pow 2 (p2o.Pow.0) -> ReduceMean (p2o.ReduceMean.0) -> Sqrt -> Mul 0.01 -> y.
                 The squares reach 90000 > 65504: at fp16 p2o.Pow.0 is the first failing
                 layer and fails on its own (a single-layer overflow). Its consumer
                 p2o.ReduceMean.0 converts the squares to fp16 when it runs in fp16
                 (TensorRT's semantics), so p2o.Pow.0 and p2o.ReduceMean.0 stay in fp32 (the
                 means, about 45000, fit fp16).
  two_layers     x[4,32] = 1024 + m + 0.3, xb[4,32] = 1024 + m and t[4,32] = 1024 + k (m, k
                 integers 0..1023, where fp16 values are 1 apart). Two layers each add an
                 error of 0.3 that only together exceed atol 0.5, and the values they hand on
                 are small, so converting the FP32 values to fp16 costs nothing:
                 p2o.Sub.0 = x - xb converts x to 1024 + m and outputs 0 (FP32: 0.3); seven
                 exact layers on t follow (p2o.Relu.0 ... p2o.Relu.2), then p2o.Add.2 = t7 +
                 c with the constant c = -(1024 + k) - 0.3, which fp16 stores as -(1024 + k):
                 it outputs 0 (FP32: -0.3). p2o.Sub.1 = a - b: FP32 gives 0.6, fp16 gives 0
                 (fails atol 0.5). With either source in FP32 the result is about 0.3
                 (passes); p2o.Sub.1 alone, fed the FP32 values (0.3 and -0.3, which fp16
                 holds within 1e-4), passes. So the minimal failing subgraph is p2o.Sub.0,
                 p2o.Add.2 and p2o.Sub.1 (p2o.Sub.0 nine layers before p2o.Sub.1), and
                 keeping one of the two sources in fp32 fixes it. Tolerances: atol 0.5,
                 rtol 1e-2.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 13


def save_model(out_dir, name, nodes, inputs, outputs, inits):
    g = helper.make_graph(nodes, name, inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="gen-triage-fixtures")
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(out_dir, name + ".onnx"))


def save_inputs(folder, arrays):
    os.makedirs(folder, exist_ok=True)
    for name, arr in arrays:
        t = numpy_helper.from_array(arr, name)
        with open(os.path.join(folder, name + ".pb"), "wb") as f:
            f.write(t.SerializeToString())


def vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def const(name, arr):
    return numpy_helper.from_array(np.asarray(arr, np.float32), name)


def flaky_matmul(out_dir, rng):
    x = rng.random((16, 64)).astype(np.float32)
    w1 = (rng.random((64, 64)) - 0.5).astype(np.float32) * 0.25
    w2 = (rng.random((64, 32)) - 0.5).astype(np.float32) * 0.25
    b = (rng.random((32,)) - 0.5).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h1"], name="p2o.MatMul.0"),
        helper.make_node("Relu", ["h1"], ["h2"], name="p2o.Relu.0"),
        helper.make_node("MatMul", ["h2", "w2"], ["h3"], name="p2o.MatMul.1"),
        helper.make_node("Add", ["h3", "b"], ["y"], name="p2o.Add.0"),
    ]
    save_model(out_dir, "flaky_matmul", nodes, [vi("x", [16, 64])], [vi("y", [16, 32])],
               [const("w1", w1), const("w2", w2), const("b", b)])
    save_inputs(os.path.join(out_dir, "flaky_matmul"), [("x", x)])


def overflow(out_dir, rng):
    x = (2 * rng.integers(100, 301, size=(4, 64))).astype(np.float32)
    x[:, 0] = 600.0  # every row reaches 300 after the halving: 90000 > 65504
    nodes = [
        helper.make_node("Mul", ["x", "half"], ["m0"], name="p2o.Mul.0"),
        helper.make_node("Relu", ["m0"], ["r0"], name="p2o.Relu.0"),
        helper.make_node("Pow", ["r0", "two"], ["sq"], name="p2o.Pow.0"),
        helper.make_node("ReduceMean", ["sq"], ["ms"], name="p2o.ReduceMean.0", axes=[-1], keepdims=1),
        helper.make_node("Sqrt", ["ms"], ["rms"], name="p2o.Sqrt.0"),
        helper.make_node("Mul", ["rms", "scale"], ["y"], name="p2o.Mul.1"),
    ]
    save_model(out_dir, "overflow", nodes, [vi("x", [4, 64])], [vi("y", [4, 1])],
               [const("half", 0.5), const("two", 2.0), const("scale", 0.01)])
    save_inputs(os.path.join(out_dir, "overflow"), [("x", x)])


def two_layers(out_dir, rng):
    m = rng.integers(0, 1024, size=(4, 32)).astype(np.float32)
    k = rng.integers(0, 1024, size=(4, 32)).astype(np.float32)
    x = (1024.0 + m + 0.3).astype(np.float32)
    xb = (1024.0 + m).astype(np.float32)
    t = (1024.0 + k).astype(np.float32)
    nodes = [helper.make_node("Sub", ["x", "xb"], ["a"], name="p2o.Sub.0")]
    # seven exact layers on t (integers below 2048 are exact in fp16), then the second
    # source of error: a constant that fp16 stores 0.3 off
    prev = "t"
    chain = [("Relu", "-"), ("Mul", "one"), ("Add", "zero"), ("Relu", "-"), ("Mul", "one"), ("Add", "zero"),
             ("Relu", "-"), ("Add", "negt")]
    count = {}
    for j, (op, c) in enumerate(chain):
        i = count.get(op, 0)
        count[op] = i + 1
        out = "t%d" % (j + 1)
        nodes.append(helper.make_node(op, [prev] + ([c] if c != "-" else []), [out], name="p2o.%s.%d" % (op, i)))
        prev = out
    nodes.append(helper.make_node("Sub", ["a", prev], ["d"], name="p2o.Sub.1"))
    nodes.append(helper.make_node("Relu", ["d"], ["y"], name="p2o.Relu.%d" % count["Relu"]))
    save_model(out_dir, "two_layers", nodes, [vi("x", [4, 32]), vi("xb", [4, 32]), vi("t", [4, 32])], [vi("y", [4, 32])],
               [const("one", 1.0), const("zero", 0.0), const("negt", -(1024.0 + k) - 0.3)])
    save_inputs(os.path.join(out_dir, "two_layers"), [("x", x), ("xb", xb), ("t", t)])


def two_sites(out_dir, rng):
    x = (2 * rng.integers(100, 301, size=(4, 64))).astype(np.float32)
    x[:, 0] = 600.0
    x[:, 1] = 600.0
    nodes = [
        helper.make_node("Mul", ["x", "half"], ["m0"], name="p2o.Mul.0"),
        helper.make_node("Relu", ["m0"], ["r0"], name="p2o.Relu.0"),
        helper.make_node("Pow", ["r0", "two"], ["sq0"], name="p2o.Pow.0"),
        helper.make_node("ReduceMean", ["sq0"], ["ms0"], name="p2o.ReduceMean.0", axes=[-1], keepdims=1),
        helper.make_node("Sqrt", ["ms0"], ["rms0"], name="p2o.Sqrt.0"),
        # exact layers between the two sites (values 100..300 are integers, exact in fp16)
        helper.make_node("Relu", ["r0"], ["u1"], name="p2o.Relu.1"),
        helper.make_node("Mul", ["u1", "one"], ["u2"], name="p2o.Mul.1"),
        helper.make_node("Add", ["u2", "zero"], ["u3"], name="p2o.Add.0"),
        helper.make_node("Relu", ["u3"], ["u4"], name="p2o.Relu.2"),
        helper.make_node("Mul", ["u4", "one"], ["u5"], name="p2o.Mul.2"),
        helper.make_node("Add", ["u5", "zero"], ["u6"], name="p2o.Add.1"),
        helper.make_node("Pow", ["u6", "two"], ["sq1"], name="p2o.Pow.1"),
        helper.make_node("ReduceMean", ["sq1"], ["ms1"], name="p2o.ReduceMean.1", axes=[-1], keepdims=1),
        helper.make_node("Sqrt", ["ms1"], ["rms1"], name="p2o.Sqrt.1"),
        helper.make_node("Add", ["rms0", "rms1"], ["s"], name="p2o.Add.2"),
        helper.make_node("Mul", ["s", "scale"], ["y"], name="p2o.Mul.3"),
    ]
    save_model(out_dir, "two_sites", nodes, [vi("x", [4, 64])], [vi("y", [4, 1])],
               [const("half", 0.5), const("two", 2.0), const("one", 1.0), const("zero", 0.0), const("scale", 0.01)])
    save_inputs(os.path.join(out_dir, "two_sites"), [("x", x)])


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(7)
    flaky_matmul(out, rng)
    overflow(out, rng)
    two_layers(out, rng)
    two_sites(out, rng)


if __name__ == "__main__":
    main()

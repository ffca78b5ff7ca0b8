#!/usr/bin/python3
"""Models and checks for tests/e2e-convert.sh (python3-onnx, numpy).

usage: convert-models.py write DIR         the hand-built models below, and their inputs
       convert-models.py check MODEL       onnx.checker full_check on the loaded model
                                           (never the path: python3-onnx 1.12's full_check
                                           on a path writes the inferred model back)
       convert-models.py inputs MANIFEST NAME MODEL DIR   seeded inputs of a corpus model
                                           in the MANIFEST's ranges, as DIR/<name>.pb
       convert-models.py structure MODEL KIND   asserts the converted model's structure
                                           (KIND: mixed, mixed-io, mixed-kept); prints one
                                           line per failed assertion, exit 1 if any

mixed.onnx (opset 17): x[2,4,6,6] float32 -> Conv (weights w, one value 1e6 beyond fp16, one
1e-9 below its smallest subnormal) -> Relu -> Resize (scales [1,1,2,2] initializer) ->
ReduceMean -> If(c) whose branches read `relu` and `shared` from the outer graph -> Add
`shared` -> output y; `relu` is also a graph output; Range(0, n, 1) in float32 builds a
vector added to the output z = Add(mean, Cast(Range)). `shared` is read by a Mul that the
kept test keeps in fp32 and by the Add.

typed.onnx (opset 17): a model written strongly typed by hand: x float32 -> Cast fp16 ->
Mul(fp16 const) -> Softmax -> LayerNormalization (fp16 scale/bias) -> Cast fp32 -> Add
(fp32 const) -> y. typed_bf.onnx: x -> Cast bf16 -> Mul(bf16 const) -> Sigmoid -> Cast fp32 -> y2,
with the expected output (typed_bf_out/y2.pb) computed in numpy.
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto as TP, helper as h, numpy_helper as nh


def write(d):
    rng = np.random.default_rng(5)
    w = rng.uniform(-0.5, 0.5, (4, 4, 3, 3)).astype(np.float32)
    w[0, 0, 0, 0] = 1e6
    w[0, 0, 0, 1] = 1e-9
    inits = [
        nh.from_array(w, "w"),
        nh.from_array(np.array([1, 1, 2, 2], np.float32), "scales"),
        nh.from_array(rng.uniform(-1, 1, (1, 4, 1, 1)).astype(np.float32), "shared"),
        nh.from_array(np.array(0, np.float32), "r_start"),
        nh.from_array(np.array(3, np.float32), "r_limit"),
        nh.from_array(np.array(1, np.float32), "r_delta"),
        nh.from_array(np.array(True), "c"),
    ]
    then_g = h.make_graph([h.make_node("Add", ["mean", "shared"], ["t_out"], name="then_add")], "then", [],
                          [h.make_tensor_value_info("t_out", TP.FLOAT, [2, 4, 1, 1])])
    else_g = h.make_graph([h.make_node("Sub", ["mean", "shared"], ["e_out"], name="else_sub")], "else", [],
                          [h.make_tensor_value_info("e_out", TP.FLOAT, [2, 4, 1, 1])])
    nodes = [
        h.make_node("Conv", ["x", "w"], ["conv"], name="conv", pads=[1, 1, 1, 1]),
        h.make_node("Relu", ["conv"], ["relu"], name="relu"),
        h.make_node("Resize", ["relu", "", "scales"], ["up"], name="resize", mode="nearest"),
        h.make_node("ReduceMean", ["up"], ["mean"], name="mean", axes=[2, 3], keepdims=1),
        h.make_node("Mul", ["mean", "shared"], ["scaled"], name="scale_mul"),
        h.make_node("If", ["c"], ["branch"], name="branch", then_branch=then_g, else_branch=else_g),
        h.make_node("Add", ["branch", "scaled"], ["y"], name="out_add"),
        h.make_node("Range", ["r_start", "r_limit", "r_delta"], ["rng"], name="range"),
        h.make_node("Reshape", ["mean", "flat_shape"], ["flat"], name="flatten"),
        h.make_node("Unsqueeze", ["rng", "ax0"], ["rng_row"], name="rng_row"),
        h.make_node("Add", ["flat", "rng_row"], ["z"], name="z_add"),
    ]
    inits += [nh.from_array(np.array([2, 4, 1], np.int64), "flat_shape"),
              nh.from_array(np.array([0, 1], np.int64), "ax0")]
    # z_add: flat [2,4,1] + rng_row [1,1,3] -> [2,4,3]
    g = h.make_graph(nodes, "mixed", [h.make_tensor_value_info("x", TP.FLOAT, [2, 4, 6, 6])],
                     [h.make_tensor_value_info("y", TP.FLOAT, [2, 4, 1, 1]), h.make_tensor_value_info("relu", TP.FLOAT, [2, 4, 6, 6]),
                      h.make_tensor_value_info("z", TP.FLOAT, [2, 4, 3])], inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    m = onnx.shape_inference.infer_shapes(m)
    onnx.checker.check_model(m, full_check=True)
    onnx.save(m, f"{d}/mixed.onnx")
    # the same without the out-of-range weight: the converted model equals the emulation
    for t in m.graph.initializer:
        if t.name == "w":
            w2 = w.copy()
            w2[0, 0, 0, 0] = 0.25
            t.CopyFrom(nh.from_array(w2, "w"))
    onnx.save(m, f"{d}/mixed_clean.onnx")
    x = rng.uniform(-1, 1, (2, 4, 6, 6)).astype(np.float32)
    import os
    os.makedirs(f"{d}/mixed_in", exist_ok=True)
    with open(f"{d}/mixed_in/x.pb", "wb") as f:
        f.write(nh.from_array(x, "x").SerializeToString())

    # typed.onnx
    sc = rng.uniform(0.5, 1.5, (8,)).astype(np.float16)
    bi = rng.uniform(-0.1, 0.1, (8,)).astype(np.float16)
    bf = nh.from_array(np.array([0.75], np.float32), "k_bf")
    bf.data_type = TP.BFLOAT16
    bf.raw_data = (np.array([0.75], np.float32).view(np.uint32) >> 16).astype(np.uint16).tobytes()
    nodes = [
        h.make_node("Cast", ["x"], ["xh"], name="to_fp16", to=TP.FLOAT16),
        h.make_node("Mul", ["xh", "k16"], ["m16"], name="mul16"),
        h.make_node("Softmax", ["m16"], ["s16"], name="softmax16", axis=-1),
        h.make_node("LayerNormalization", ["s16", "ln_s", "ln_b"], ["l16"], name="ln16", axis=-1),
        h.make_node("Cast", ["l16"], ["l32"], name="to_fp32", to=TP.FLOAT),
        h.make_node("Add", ["l32", "k32"], ["y"], name="add32"),
    ]
    inits = [nh.from_array(np.array([3.0], np.float16), "k16"), nh.from_array(sc, "ln_s"), nh.from_array(bi, "ln_b"),
             nh.from_array(np.array([0.5], np.float32), "k32")]
    g = h.make_graph(nodes, "typed", [h.make_tensor_value_info("x", TP.FLOAT, [4, 8])],
                     [h.make_tensor_value_info("y", TP.FLOAT, [4, 8])], inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    onnx.save(m, f"{d}/typed.onnx")
    os.makedirs(f"{d}/typed_in", exist_ok=True)
    x = rng.uniform(-2, 2, (4, 8)).astype(np.float32)
    with open(f"{d}/typed_in/x.pb", "wb") as f:
        f.write(nh.from_array(x, "x").SerializeToString())

    # typed_bf.onnx: x -> Cast bf16 -> Mul(bf16 0.75) -> Sigmoid -> Cast fp32 -> y2; ONNX
    # Runtime's CPU has no bfloat16 kernels, so the expected output is computed here: each
    # bf16 op on the widened values in float32, rounded to bf16 (nearest even)
    def bf16(a):
        u = a.astype(np.float32).view(np.uint32).astype(np.uint64)
        u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16 << 16
        return u.astype(np.uint32).view(np.float32)
    bf = nh.from_array(np.array([0.75], np.float32), "k_bf")
    bf.data_type = TP.BFLOAT16
    bf.ClearField("raw_data")
    bf.raw_data = (np.array([0.75], np.float32).view(np.uint32) >> 16).astype(np.uint16).tobytes()
    nodes = [
        h.make_node("Cast", ["x"], ["xb"], name="to_bf16", to=TP.BFLOAT16),
        h.make_node("Mul", ["xb", "k_bf"], ["mb"], name="mulbf"),
        h.make_node("Sigmoid", ["mb"], ["sb"], name="sigbf"),
        h.make_node("Cast", ["sb"], ["y2"], name="bf_to_fp32", to=TP.FLOAT),
    ]
    g = h.make_graph(nodes, "typed_bf", [h.make_tensor_value_info("x", TP.FLOAT, [4, 8])],
                     [h.make_tensor_value_info("y2", TP.FLOAT, [4, 8])], [bf])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    onnx.save(m, f"{d}/typed_bf.onnx")
    mb = bf16(bf16(x) * np.float32(0.75))
    y2 = bf16((1 / (1 + np.exp(-mb.astype(np.float32)))).astype(np.float32))
    os.makedirs(f"{d}/typed_bf_out", exist_ok=True)
    with open(f"{d}/typed_bf_out/y2.pb", "wb") as f:
        f.write(nh.from_array(y2.astype(np.float32), "y2").SerializeToString())


def check(path):
    m = onnx.load(path)
    onnx.checker.check_model(m, full_check=True)


def inputs(manifest, name, model, d):
    specs = None
    for line in open(manifest):
        p = line.split()
        if p and not line.startswith("#") and p[0] == name:
            specs = p[5:]
    if specs is None:
        sys.exit("no %s in %s" % (name, manifest))
    rng = np.random.default_rng(11)
    for s in specs:
        n, dt, dims, rg = s.split(":")
        lo, hi = (float(v) for v in rg.split(","))
        shape = [int(v) for v in dims.split("x")]
        if dt == "float32":
            a = rng.uniform(lo, hi, shape).astype(np.float32)
        else:
            a = rng.integers(int(lo), int(hi), shape).astype(np.dtype(dt))
        with open(f"{d}/{n}.pb", "wb") as f:
            f.write(nh.from_array(a, n).SerializeToString())


def structure(path, kind):
    m = onnx.load(path)
    g = m.graph
    errs = []
    types = {}
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        types[vi.name] = vi.type.tensor_type.elem_type
    for t in g.initializer:
        types[t.name] = t.data_type
    m2 = onnx.shape_inference.infer_shapes(m)
    for vi in list(m2.graph.value_info) + list(m2.graph.output):
        types.setdefault(vi.name, vi.type.tensor_type.elem_type)
    byname = {n.name: n for n in g.node}
    producer = {o: n for n in g.node for o in n.output}
    F, H = TP.FLOAT, TP.FLOAT16
    io_t = H if kind == "mixed-io" else F
    # casts: one per (producer output, type), never a same-type cast
    seen = set()
    for n in g.node:
        if n.op_type != "Cast":
            continue
        to = [a.i for a in n.attribute if a.name == "to"][0]
        key = (n.input[0], to)
        if key in seen:
            errs.append("two Casts of %s to %d" % key)
        seen.add(key)
        if types.get(n.input[0]) == to:
            errs.append("Cast %s between tensors of one type %d" % (n.name, to))
    # inputs and outputs
    if types["x"] != io_t:
        errs.append("input x is %d, %d expected" % (types["x"], io_t))
    for o in g.output:
        if o.type.tensor_type.elem_type != io_t:
            errs.append("output %s is %d, %d expected" % (o.name, o.type.tensor_type.elem_type, io_t))
    # Resize's scales stay a float32 initializer; Range keeps float32 (no fp16 type)
    rs = byname["resize"]
    if types.get(rs.input[2]) != F or rs.input[2] != "scales":
        errs.append("Resize reads scales as %s (%s), the float32 initializer expected" % (rs.input[2], types.get(rs.input[2])))
    if types.get(byname["range"].output[0]) != F:
        errs.append("Range output not float32")
    if types.get(byname["range"].input[0]) != F:
        errs.append("Range start not float32")
    # converted layers read and write fp16
    for nm in ("conv", "relu", "resize", "mean", "out_add"):
        n = byname[nm]
        if types.get(n.output[0]) != H:
            errs.append("%s writes %s, fp16 expected" % (nm, types.get(n.output[0])))
    w = [t for t in g.initializer if t.name == "w"][0]
    if w.data_type != H:
        errs.append("weight w is %d, fp16 expected" % w.data_type)
    else:
        a = nh.to_array(w)
        if a[0, 0, 0, 0] != np.float16(65504):
            errs.append("w[0,0,0,0] = %r, clamped to 65504 expected" % a[0, 0, 0, 0])
        if a[0, 0, 0, 1] != 0:
            errs.append("w[0,0,0,1] = %r, 0 expected (1e-9 rounds to zero)" % a[0, 0, 0, 1])
    # the If node and its bodies keep float32: `relu` and `shared` read by the bodies keep
    # their names and types; the If's output is float32
    if types.get("mean") != F:
        errs.append("the If's captured tensor `mean` is %s under its name, float32 expected" % types.get("mean"))
    if types.get("shared") != F:
        errs.append("`shared` (read by the If's bodies) is %s, float32 expected" % types.get("shared"))
    if types.get(byname["branch"].output[0]) != F:
        errs.append("If output not float32")
    # scale_mul: kept (fp32) in mixed-kept, else fp16 through a converted copy of `shared`
    sm = byname["scale_mul"]
    want = F if kind == "mixed-kept" else H
    if types.get(sm.output[0]) != want:
        errs.append("scale_mul writes %s, %d expected" % (types.get(sm.output[0]), want))
    if kind != "mixed-kept" and sm.input[1] == "shared":
        errs.append("scale_mul reads the float32 `shared`, a converted copy expected")
    # relu is a graph output and read by Resize: written under its own name in the output
    # type; Resize reads the fp16 one
    if types.get(rs.input[0]) != H:
        errs.append("Resize reads %s (%s), fp16 expected" % (rs.input[0], types.get(rs.input[0])))
    if kind != "mixed-io" and producer["relu"].op_type != "Cast":
        errs.append("output relu is written by %s, a Cast expected" % producer["relu"].op_type)
    for e in errs:
        print("structure:", e)
    sys.exit(1 if errs else 0)


if __name__ == "__main__":
    a = sys.argv[1:]
    if a[:1] == ["write"]:
        write(a[1])
    elif a[:1] == ["check"]:
        check(a[1])
    elif a[:1] == ["inputs"]:
        inputs(*a[1:5])
    elif a[:1] == ["structure"]:
        structure(a[1], a[2])
    else:
        sys.exit(__doc__)

#!/usr/bin/python3
"""Fixtures of tests/e2e-data-files.sh (issue 22 findings 4, 7-10, 13): small models and data
folders that a data-file reader or writer gets wrong. Usage: gen-data-fixtures.py OUTDIR"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def save(name, nodes, ins, outs=("y",), inits=(), shape=(2, 3)):
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(shape)) for n in ins],
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, list(shape)) for o in outs], list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, os.path.join(out, name + ".onnx"))
    return m


def write(folder, files):
    os.makedirs(os.path.join(out, folder), exist_ok=True)
    for fname, tname, arr in files:
        p = os.path.join(out, folder, fname)
        if fname.endswith(".npy"):
            np.save(p, arr)
            continue
        tp = numpy_helper.from_array(arr)
        if tname is not None:
            tp.name = tname
        with open(p, "wb") as f:
            f.write(tp.SerializeToString())


x = np.arange(6, dtype=np.float32).reshape(2, 3)

# 4: y = x * 1e5 overflows float16 for x in [1, 2]: all Inf against a finite reference
save("ovf", [helper.make_node("Mul", ["x", "k"], ["y"], name="mul")], ["x"],
     inits=[numpy_helper.from_array(np.array(1e5, dtype=np.float32), "k")])

# 7: inputs attention_mask and mask (one a substring of the other) and 60 more, x given
many = ["x", "attention_mask", "mask"] + ["in%03d_%s" % (i, "p" * 40) for i in range(60)]
save("many", [helper.make_node("Sum", many, ["y"], name="sum")], many)
write("many-x", [("x.pb", "x", x)])

# 8, 9: one input x; inputs literally named input_1, input_0 (in that order); inputs a, b
save("one", [helper.make_node("Relu", ["x"], ["y"], name="relu")], ["x"])
save("lit", [helper.make_node("Sub", ["input_1", "input_0"], ["y"], name="sub")], ["input_1", "input_0"])
save("ab", [helper.make_node("Sub", ["a", "b"], ["y"], name="sub")], ["a", "b"])
write("dup8", [("input_0.pb", None, x), ("x.npy", None, x)])
write("pos9", [("input_0.pb", None, x)])
write("lit9", [("input_0.pb", None, x), ("input_1.pb", None, x * 2)])
write("far9", [("input_5.pb", None, x)])

# 10: tensor names longer than a file name once escaped (300 letters; 90 '/' escape to 270
# bytes); y = -(-(x * 1.0001)) differs from FP32 at fp16 with atol/rtol 0
long_name = "L" * 300
slashes = "/" * 90 + "w"
save("long", [helper.make_node("Mul", ["x", "k"], [long_name], name="mul"),
              helper.make_node("Neg", [long_name], [slashes], name="neg"),
              helper.make_node("Neg", [slashes], ["y"], name="neg2")], ["x"],
     inits=[numpy_helper.from_array(np.array(1.0001, dtype=np.float32), "k")])
save("longin", [helper.make_node("Relu", ["I" * 300], ["y"], name="relu")], ["I" * 300])
with open(os.path.join(out, "long-names.txt"), "w") as f:
    f.write(long_name + "\n" + slashes + "\n")

# 13: external data with offset " 0", "" and a duplicated offset key
for tag, entries in (("space", [("offset", " 0")]), ("empty", [("offset", "")]),
                     ("dup", [("offset", "0"), ("offset", "4")]), ("ok", [("offset", "24"), ("length", "24")])):
    d = os.path.join(out, "ext-" + tag)
    os.makedirs(d, exist_ok=True)
    w = np.ones((2, 3), dtype=np.float32)
    with open(os.path.join(d, "w.bin"), "wb") as f:
        f.write(w.tobytes() * 2)
    t = TensorProto()
    t.name, t.data_type = "w", TensorProto.FLOAT
    t.dims.extend([2, 3])
    t.data_location = TensorProto.EXTERNAL
    for k, v in [("location", "w.bin")] + entries:
        e = t.external_data.add()
        e.key, e.value = k, v
    g = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"], name="add")], "ext",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], [t])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    with open(os.path.join(d, "model.onnx"), "wb") as f:
        f.write(m.SerializeToString())

# 13: a .npy with a byte after its data; a .pb with raw_data and float_data both
os.makedirs(os.path.join(out, "trail"), exist_ok=True)
np.save(os.path.join(out, "trail", "x.npy"), x)
with open(os.path.join(out, "trail", "x.npy"), "ab") as f:
    f.write(b"\0")
os.makedirs(os.path.join(out, "both"), exist_ok=True)
tp = numpy_helper.from_array(x, "x")
tp.float_data.extend(x.flatten().tolist())
with open(os.path.join(out, "both", "x.pb"), "wb") as f:
    f.write(tp.SerializeToString())

# 13: a layer-precisions file naming a layer twice (json.dump cannot write that)
with open(os.path.join(out, "dup-layers.json"), "w") as f:
    f.write('{"default": "fp16", "layers": {"relu": "fp32", "relu": "fp16"}}\n')

# 13: dynamic shape for a huge generated input
g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "dyn",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", "m"])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", "m"])])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 8
onnx.save(m, os.path.join(out, "dyn.onnx"))

#!/usr/bin/python3
"""Small models for tests/e2e-run.sh: one with ops whittle does not implement, one with a
fixed input shape, one producing NaN in its middle layer."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)

g = helper.make_graph(
    [helper.make_node("Relu", ["x"], ["a"], name="relu"),
     helper.make_node("FancyOpA", ["a"], ["b"], name="fa", domain="com.example"),
     helper.make_node("FancyOpB", ["b"], ["y"], name="fb", domain="com.example")],
    "unsupported", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.example", 1)])
m.ir_version = 8
onnx.save(m, os.path.join(out, "unsupported.onnx"))

g = helper.make_graph(
    [helper.make_node("Relu", ["x"], ["y"], name="relu")],
    "fixed", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 4])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 4, 4])])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 8
onnx.save(m, os.path.join(out, "fixed.onnx"))
os.makedirs(os.path.join(out, "wrong_shape"), exist_ok=True)
with open(os.path.join(out, "wrong_shape", "x.pb"), "wb") as f:
    f.write(numpy_helper.from_array(np.zeros((1, 3, 5, 5), np.float32), "x").SerializeToString())

g = helper.make_graph(
    [helper.make_node("Neg", ["x"], ["n"], name="neg"),
     helper.make_node("Sqrt", ["n"], ["s"], name="sqrt_of_negative"),
     helper.make_node("Relu", ["s"], ["y"], name="relu")],
    "nan", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 8
onnx.save(m, os.path.join(out, "nan.onnx"))

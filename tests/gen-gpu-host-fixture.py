#!/usr/bin/python3
"""Writes OUT/mixed.onnx for tests/e2e-gpu-host.sh: layers the fake CUDA module takes (MatMul,
Add, Relu, Mul, Transpose), views of their outputs (Reshape, Flatten), shape arithmetic on the
host (Shape, Gather, Concat feeding a Reshape) and layers it leaves to the CPU (Softmax, Tanh):
    gen-gpu-host-fixture.py OUT"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
rng = np.random.default_rng(3)
w1 = numpy_helper.from_array(rng.standard_normal((8, 8)).astype(np.float32), "w1")
b1 = numpy_helper.from_array(rng.standard_normal((8,)).astype(np.float32) * 0 + 0.25, "b1")
w2 = numpy_helper.from_array(rng.standard_normal((16, 4)).astype(np.float32), "w2")
scale = numpy_helper.from_array(np.array(30000.0, np.float32), "scale")
idx = numpy_helper.from_array(np.array([0], np.int64), "idx")
minus1 = numpy_helper.from_array(np.array([-1], np.int64), "minus1")
nodes = [
    helper.make_node("MatMul", ["x", "w1"], ["mm1"], name="mm1"),
    helper.make_node("Add", ["mm1", "b1"], ["add1"], name="add1"),  # b1 broadcast: the fake declines, CPU
    helper.make_node("Relu", ["add1"], ["relu1"], name="relu1"),
    helper.make_node("Transpose", ["relu1"], ["tr1"], name="tr1"),
    helper.make_node("Shape", ["tr1"], ["sh"], name="sh"),
    helper.make_node("Gather", ["sh", "idx"], ["d0"], name="d0", axis=0),
    helper.make_node("Concat", ["d0", "minus1"], ["newshape"], name="newshape", axis=0),
    helper.make_node("Reshape", ["tr1", "newshape"], ["rs1"], name="rs1"),
    helper.make_node("Flatten", ["rs1"], ["fl1"], name="fl1", axis=1),
    helper.make_node("Mul", ["fl1", "scale"], ["big"], name="big"),  # overflows fp16 where |x| > 2.2
    helper.make_node("Relu", ["big"], ["relu2"], name="relu2"),
    helper.make_node("Softmax", ["relu2"], ["sm"], name="sm", axis=1),
    helper.make_node("Tanh", ["fl1"], ["th"], name="th"),
    helper.make_node("Mul", ["th", "th"], ["th2"], name="th2"),
    helper.make_node("Reshape", ["th2", "newshape2"], ["rs2"], name="rs2"),
    helper.make_node("Identity", ["w2"], ["w2i"], name="w2i"),  # a view of a weight: still uploaded once
    helper.make_node("MatMul", ["rs2", "w2i"], ["y"], name="mm2"),
]
shape2 = numpy_helper.from_array(np.array([2, 16], np.int64), "newshape2")
g = helper.make_graph(nodes, "mixed", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4]),
                       helper.make_tensor_value_info("sm", TensorProto.FLOAT, [8, 4])],
                      [w1, b1, w2, scale, idx, minus1, shape2])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
m.ir_version = 8
onnx.checker.check_model(m)
onnx.save(m, f"{out}/mixed.onnx")

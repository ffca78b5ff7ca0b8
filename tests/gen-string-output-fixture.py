#!/usr/bin/python3
"""The fixture of tests/e2e-string-output.sh (python3-onnx): a model with a string output
beside a float output that overflows fp16 (issue 11, acceptance 3).

usage: gen-string-output-fixture.py OUT_DIR

Writes OUT_DIR/string_output.onnx and its input OUT_DIR/string_output/input_0.pb.

  x [1, 8] float, values in [0, 60) and one 100 (a unique maximum)
  pre_relu   Relu(x)                    -> x1
  a_mul      Mul(x1, 4096)              -> t1   (up to 409600: inf in fp16)
  a_scale    Mul(t1, 2^-12)             -> y    float output, back in range
  s_argmax   ArgMax(x1, axis 1)         -> idx  int64 [1, 1]: the 100, at every precision
  s_label    Cast(idx, to STRING)       -> label string output: "3"

At fp16 the output y is inf (a_mul's output overflows). a_scale converts t1 to fp16 when it
runs in fp16 (TensorRT's semantics: a layer converts its float inputs), so keeping a_mul
alone in fp32 is not enough: a_mul and a_scale in fp32 pass at --atol 1e-2 --rtol 1e-2 (the
output, at most 100, rounded to fp16 by nothing else), and a_scale alone fails too when fed
the FP32 t1. The string output is the same at every
precision: it must count as equal, so that the built-in check fails only because of y.
The generator checks these claims in numpy and exits non-zero when one does not hold.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F16_MAX = 65504.0


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(os.path.join(out, "string_output"), exist_ok=True)
    rng = np.random.default_rng(11)
    x = rng.uniform(0, 60, (1, 8)).astype(np.float32)
    x[0, 3] = 100.0
    scale, back = np.float32(4096.0), np.float32(2.0 ** -12)

    # the claims, in numpy: fp32 finite, fp16 overflows at a_mul, its consumer brings it back
    t1 = x * scale
    y = t1 * back
    assert np.all(np.isfinite(y)) and np.max(np.abs(t1)) > F16_MAX
    with np.errstate(over="ignore"):
        y16 = (t1.astype(np.float16).astype(np.float32) * back).astype(np.float16).astype(np.float32)
    assert not np.all(np.isfinite(y16)), "all fp16 must overflow"
    with np.errstate(over="ignore"):
        y_mul = (t1.astype(np.float16).astype(np.float32) * back).astype(np.float16).astype(np.float32)
    assert not np.all(np.isfinite(y_mul)), "a_mul alone in fp32 must still overflow (a_scale converts t1)"
    y_keep = t1 * back
    assert np.all(np.abs(y_keep - y) <= np.maximum(1e-2, 1e-2 * np.abs(y))), "a_mul and a_scale in fp32 must pass"
    assert int(np.argmax(x)) == 3

    nodes = [
        helper.make_node("Relu", ["x"], ["x1"], name="pre_relu"),
        helper.make_node("Mul", ["x1", "scale"], ["t1"], name="a_mul"),
        helper.make_node("Mul", ["t1", "back"], ["y"], name="a_scale"),
        helper.make_node("ArgMax", ["x1"], ["idx"], name="s_argmax", axis=1, keepdims=1),
        helper.make_node("Cast", ["idx"], ["label"], name="s_label", to=TensorProto.STRING),
    ]
    inits = [numpy_helper.from_array(np.array(scale, np.float32), "scale"),
             numpy_helper.from_array(np.array(back, np.float32), "back")]
    g = helper.make_graph(nodes, "string_output", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8]),
                           helper.make_tensor_value_info("label", TensorProto.STRING, [1, 1])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="gen-string-output-fixture")
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(out, "string_output.onnx"))
    with open(os.path.join(out, "string_output", "input_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(x, "x").SerializeToString())


if __name__ == "__main__":
    main()

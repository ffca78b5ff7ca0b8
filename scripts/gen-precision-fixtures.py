#!/usr/bin/python3
"""Writes models with known reduced-precision failures, and their inputs (python3-onnx).

usage: gen-precision-fixtures.py OUT_DIR

For each model OUT_DIR/<name>.onnx the inputs are OUT_DIR/<name>/input_<k>.pb (fixed seed,
names stored). Layers and tensors are named after their role; the layer each model plants
a failure in is printed as `expect <model> <precision> <layer>` lines:

  layernorm_overflow  a LayerNorm written out (ReduceMean, Sub, Pow, ReduceMean, Add eps,
                      Sqrt, Div, Mul, Add) on values 640 +- 260..400 (integers, a mean of
                      exactly 640): the squared deviations reach 160000 and the variance
                      itself is above 67600 > 65504 = fp16's largest value. In fp16 the Pow
                      output `ln_pow` is the first tensor that fails (inf), and it is where
                      the failure starts. With TensorRT's semantics (a layer converts each
                      float input to its own format) the variance overflows again wherever an
                      fp16 layer reads it: the layers whose inputs or outputs leave fp16's
                      range are exactly ln_pow (output), ln_var (input and output),
                      ln_add_eps (input and output) and ln_sqrt (input; its output, the
                      standard deviation <= 400, fits). Keeping those four in fp32 passes;
                      any three do not. Everything before ln_pow is exact in fp16.
  rmsnorm_overflow    an RMSNorm written out (Pow, ReduceMean, Add eps, Sqrt, Div, Mul) on
                      values +-260..400: the same four layers (rms_pow, rms_mean, rms_add_eps,
                      rms_sqrt) leave fp16's range, rms_pow first.
  long_dot            Relu -> MatMul 1x8192 . 8192x1 -> Add, values in [0.5, 1] on the fp16
                      grid: the dot product is about 4600. With FP32 accumulation (the
                      default fp16 emulation) it is within fp16 rounding of the answer; a
                      kernel that accumulates in fp16 stalls near 2048 (spacing 2 there) and
                      fails at `long_dot`.
  int8_outlier        two MatMuls on [64, 256] inputs in [-1, 1]; input `x` of `fc_outlier`
                      holds one 1000.0 (in a column whose weights are zero, so it does not
                      change the answer). With minmax calibration or the tensor's own range,
                      int8 quantizes x with scale 1000/127 and every other value becomes 0:
                      `fc_outlier` fails, `fc_clean` (earlier in order) does not. Percentile
                      calibration ignores the outlier. Calibration data: int8_outlier_calib/
                      (4 samples of the same distribution, one outlier each).
  two_layers          16 layers, two independent overflow sites far apart: `a_norm` (first
                      layer) squares the input `depth` and `b_norm` (13th) squares `gain`
                      (both integers 1..400, which fp16 holds); the squares reach 160000 >
                      65504, so the OUTPUTS of a_norm and b_norm overflow fp16, and so do the
                      INPUTS of their consumers a_scale / b_scale (x 2^-16, exact in fp16),
                      which convert the FP32 squares to fp16 when they run in fp16. In fp16
                      `a_norm` fails first; keeping a_norm, a_scale, b_norm and b_scale in
                      fp32 makes fp16 pass; a_norm and b_norm alone do not (their consumers
                      still convert the squares to inf), nor do a_scale and b_scale alone.
Tolerances the tests use: fp16 --atol 1e-2 --rtol 1e-2; int8 --atol 0.05 --rtol 0.05.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 13


def save_model(out_dir, name, nodes, inputs, outputs, inits):
    g = helper.make_graph(nodes, name, inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="gen-precision-fixtures")
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


def layernorm_overflow(out_dir, rng):
    rows, n = 4, 64
    x = np.empty((rows, n), np.float32)
    for r in range(rows):
        # symmetric integer deviations: the mean is exactly 640 in any precision; every
        # square is >= 67600 > 65504, so the variance overflows fp16 too
        d = rng.integers(260, 401, size=n // 2)
        d[0] = 400
        x[r, : n // 2] = 640 + d
        x[r, n // 2:] = 640 - d
        rng.shuffle(x[r])
    nodes = [
        helper.make_node("ReduceMean", ["x"], ["ln_mean_out"], name="ln_mean", axes=[-1], keepdims=1),
        helper.make_node("Sub", ["x", "ln_mean_out"], ["ln_sub_out"], name="ln_sub"),
        helper.make_node("Pow", ["ln_sub_out", "ln_two"], ["ln_pow_out"], name="ln_pow"),
        helper.make_node("ReduceMean", ["ln_pow_out"], ["ln_var_out"], name="ln_var", axes=[-1], keepdims=1),
        helper.make_node("Add", ["ln_var_out", "ln_eps"], ["ln_add_eps_out"], name="ln_add_eps"),
        helper.make_node("Sqrt", ["ln_add_eps_out"], ["ln_sqrt_out"], name="ln_sqrt"),
        helper.make_node("Div", ["ln_sub_out", "ln_sqrt_out"], ["ln_div_out"], name="ln_div"),
        helper.make_node("Mul", ["ln_div_out", "ln_gamma"], ["ln_mul_out"], name="ln_mul"),
        helper.make_node("Add", ["ln_mul_out", "ln_beta"], ["y"], name="ln_add"),
    ]
    gamma = (0.5 + rng.random(n)).astype(np.float32)
    beta = (rng.random(n) - 0.5).astype(np.float32)
    inits = [const("ln_two", 2.0), const("ln_eps", 1e-5), const("ln_gamma", gamma), const("ln_beta", beta)]
    save_model(out_dir, "layernorm_overflow", nodes, [vi("x", [rows, n])], [vi("y", [rows, n])], inits)
    save_inputs(os.path.join(out_dir, "layernorm_overflow"), [("x", x)])
    return [("layernorm_overflow", "fp16", "ln_pow")]


def rmsnorm_overflow(out_dir, rng):
    rows, n = 4, 64
    x = (rng.integers(260, 401, size=(rows, n)) * rng.choice([-1, 1], size=(rows, n))).astype(np.float32)
    x[:, 0] = 400
    nodes = [
        helper.make_node("Pow", ["x", "rms_two"], ["rms_pow_out"], name="rms_pow"),
        helper.make_node("ReduceMean", ["rms_pow_out"], ["rms_mean_out"], name="rms_mean", axes=[-1], keepdims=1),
        helper.make_node("Add", ["rms_mean_out", "rms_eps"], ["rms_add_eps_out"], name="rms_add_eps"),
        helper.make_node("Sqrt", ["rms_add_eps_out"], ["rms_sqrt_out"], name="rms_sqrt"),
        helper.make_node("Div", ["x", "rms_sqrt_out"], ["rms_div_out"], name="rms_div"),
        helper.make_node("Mul", ["rms_div_out", "rms_gamma"], ["y"], name="rms_mul"),
    ]
    gamma = (0.5 + rng.random(n)).astype(np.float32)
    inits = [const("rms_two", 2.0), const("rms_eps", 1e-6), const("rms_gamma", gamma)]
    save_model(out_dir, "rmsnorm_overflow", nodes, [vi("x", [rows, n])], [vi("y", [rows, n])], inits)
    save_inputs(os.path.join(out_dir, "rmsnorm_overflow"), [("x", x)])
    return [("rmsnorm_overflow", "fp16", "rms_pow")]


def fp16_grid(rng, shape):
    """Values in [0.5, 1) that fp16 holds exactly (multiples of 1/1024)."""
    return (rng.integers(512, 1024, size=shape) / 1024.0).astype(np.float32)


def long_dot(out_dir, rng):
    k = 8192
    x = fp16_grid(rng, (1, k))
    w = fp16_grid(rng, (k, 1))
    nodes = [
        helper.make_node("Relu", ["x"], ["ld_relu_out"], name="ld_relu"),
        helper.make_node("MatMul", ["ld_relu_out", "ld_w"], ["long_dot_out"], name="long_dot"),
        helper.make_node("Add", ["long_dot_out", "ld_bias"], ["y"], name="ld_bias"),
    ]
    inits = [const("ld_w", w), const("ld_bias", np.ones((1, 1), np.float32))]
    save_model(out_dir, "long_dot", nodes, [vi("x", [1, k])], [vi("y", [1, 1])], inits)
    save_inputs(os.path.join(out_dir, "long_dot"), [("x", x)])
    exact = float(np.dot(x.astype(np.float64)[0], w.astype(np.float64)[:, 0]))
    acc = np.float16(0)
    for a, b in zip(x[0].astype(np.float16), w[:, 0].astype(np.float16)):
        acc = np.float16(acc + np.float16(a * b))
    print("long_dot: exact %.3f, sequential fp16 accumulation %.3f" % (exact, float(acc)))
    return [("long_dot", "fp16_accumulate", "long_dot")]


def outlier_inputs(rng, rows, cols):
    a = rng.uniform(-1, 1, size=(rows, cols)).astype(np.float32)
    x = rng.uniform(-1, 1, size=(rows, cols)).astype(np.float32)
    x[rng.integers(0, rows), 0] = 1000.0
    return a, x


def int8_outlier(out_dir, rng):
    rows, cols, hid, outs = 64, 256, 32, 8
    wa = rng.uniform(-1, 1, size=(cols, hid)).astype(np.float32) / 16
    wx = rng.uniform(-1, 1, size=(cols, hid)).astype(np.float32) / 16
    wx[0, :] = 0  # the outlier's column feeds nothing: only its quantization hurts
    w2 = rng.uniform(-1, 1, size=(hid, outs)).astype(np.float32) / 4
    nodes = [
        helper.make_node("MatMul", ["a", "fc_clean_w"], ["fc_clean_out"], name="fc_clean"),
        helper.make_node("MatMul", ["x", "fc_outlier_w"], ["fc_outlier_out"], name="fc_outlier"),
        helper.make_node("Add", ["fc_clean_out", "fc_outlier_out"], ["merge_out"], name="merge"),
        helper.make_node("Relu", ["merge_out"], ["act_out"], name="act"),
        helper.make_node("MatMul", ["act_out", "head_w"], ["y"], name="head"),
    ]
    inits = [const("fc_clean_w", wa), const("fc_outlier_w", wx), const("head_w", w2)]
    save_model(out_dir, "int8_outlier", nodes, [vi("a", [rows, cols]), vi("x", [rows, cols])], [vi("y", [rows, outs])], inits)
    a, x = outlier_inputs(rng, rows, cols)
    save_inputs(os.path.join(out_dir, "int8_outlier"), [("a", a), ("x", x)])
    for s in range(4):
        a, x = outlier_inputs(rng, rows, cols)
        save_inputs(os.path.join(out_dir, "int8_outlier_calib", "s%02d" % s), [("a", a), ("x", x)])
    return [("int8_outlier", "int8", "fc_outlier")]


def two_layers(out_dir, rng):
    n = 64
    x = rng.uniform(-1, 1, size=(1, n)).astype(np.float32)
    # magnitudes 1..400: integers fp16 holds exactly, but their squares reach 160000 > 65504
    depth = rng.integers(1, 401, size=(1, n)).astype(np.float32)
    gain = rng.integers(1, 401, size=(1, n)).astype(np.float32)
    depth[0, 0] = 400  # a square beyond fp16's range for sure
    gain[0, 1] = 400
    mk = helper.make_node
    nodes = [
        # site a: the square overflows fp16 in a_norm's OUTPUT, and in a_scale's input when
        # a_scale runs in fp16 (it converts the square); in fp32 a_scale brings it back to <= 2.45
        mk("Pow", ["depth", "two"], ["a_norm_out"], name="a_norm"),
        mk("Mul", ["a_norm_out", "a_scale_k"], ["a_scale_out"], name="a_scale"),
        mk("Mul", ["x", "a_scale_out"], ["mix_a_out"], name="mix_a"),
        mk("Tanh", ["mix_a_out"], ["t1_out"], name="t1"),
        mk("Add", ["t1_out", "c1"], ["add1_out"], name="add1"),
        mk("Sigmoid", ["add1_out"], ["s1_out"], name="s1"),
        mk("Mul", ["s1_out", "c2"], ["m1_out"], name="m1"),
        mk("Tanh", ["m1_out"], ["t2_out"], name="t2"),
        mk("Add", ["t2_out", "c3"], ["add2_out"], name="add2"),
        mk("Relu", ["add2_out"], ["r1_out"], name="r1"),
        mk("Sigmoid", ["r1_out"], ["s2_out"], name="s2"),
        mk("Sub", ["s2_out", "c4"], ["sub1_out"], name="sub1"),
        # site b, independent of site a: same pattern on `gain`, 12 layers later
        mk("Pow", ["gain", "two"], ["b_norm_out"], name="b_norm"),
        mk("Mul", ["b_norm_out", "b_scale_k"], ["b_scale_out"], name="b_scale"),
        mk("Mul", ["sub1_out", "b_scale_out"], ["mix_b_out"], name="mix_b"),
        mk("Tanh", ["mix_b_out"], ["y"], name="t_out"),
    ]
    # 2^-16: a power of two, so fp16 stores the constant exactly (as a subnormal)
    inits = [const("two", 2.0), const("a_scale_k", 2.0 ** -16), const("b_scale_k", 2.0 ** -16),
             const("c1", 0.25), const("c2", 2.0), const("c3", -0.5), const("c4", 0.5)]
    save_model(out_dir, "two_layers", nodes, [vi("x", [1, n]), vi("depth", [1, n]), vi("gain", [1, n])],
               [vi("y", [1, n])], inits)
    save_inputs(os.path.join(out_dir, "two_layers"), [("x", x), ("depth", depth), ("gain", gain)])
    return [("two_layers", "fp16", "a_norm"), ("two_layers", "fp16", "b_norm")]


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen-precision-fixtures.py OUT_DIR")
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    expects = []
    for k, gen in enumerate([layernorm_overflow, long_dot, int8_outlier, two_layers, rmsnorm_overflow]):
        expects += gen(out_dir, np.random.default_rng(1234 + k))
    for model, prec, layer in expects:
        print("expect %s %s %s" % (model, prec, layer))


if __name__ == "__main__":
    main()

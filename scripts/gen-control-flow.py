#!/usr/bin/env python3
"""Control-flow fixtures (issue 26): networks inside an If, for reduce, precision and the
--mark-all diagnosis, which must look inside the taken branch; sanitize's folding of an If.

Usage: gen-control-flow.py OUT_DIR

Every network has one planted fp16 overflow inside the taken branch, the pattern of
gen-precision-fixtures.py's two_layers: `amp_norm` squares the input `depth` (integers
1..400 that fp16 holds; squares up to 160000 > 65504) and `amp_scale` brings the square back
(x 2^-16, exact in fp16). In fp16 amp_norm's output and amp_scale's input overflow; keeping
those two layers in fp32 passes, either alone does not. Everything else is small and fp16
noise stays inside --atol 1e-2 --rtol 1e-2.

  if_cnn          y = If(Equal(sr, 16000), then: a CNN (Conv, Relu, Conv, Relu,
                  GlobalAveragePool, Flatten, Gemm) on x scaled by the planted site; else: a
                  plain Gemm of x's average). Inputs x [1,4,8,8], depth [1,4,8,8], sr int64
                  scalar (the silero VAD layout: the network sits inside an If on the sample
                  rate). Data: if_cnn_16k/ (sr 16000: then) and if_cnn_8k/ (sr 8000: else);
                  if_cnn_mixed/ is a second 16k sample for the 8k folder's model runs.
  if_transformer  a transformer block (LayerNormalization, Q/K/V MatMuls, Softmax attention,
                  output projection, residual, Relu MLP) inside If(flag) with flag a bool
                  input; the planted site scales the block's input. Data: if_transformer_on/.
  if_nested       If(flag) whose then_branch holds If(Equal(sr, 16000)) around the CNN.
                  Data: if_nested_on/ (flag true, sr 16000).
  if_hostile      if_cnn with hostile names inside the branch: node and tensor names with an
                  ESC sequence, a newline, `|` and backticks, and branch tensors named like
                  tensors of the main graph (`h`, `cond`): the inlined model must rename them;
                  the planted Pow is named with an OSC 52 sequence.
                  Data: if_hostile_16k/.
  loop_small      a Loop with the constant trip count 3 adding a constant to a carried value,
                  then the planted site. Data: loop_small/.
  if_const        If on an initializer condition (true): sanitize --fold-constants folds it;
                  if_bound: If(Equal(sr, 16000)) with sr an input: folded when sanitize binds
                  sr with --bind-input sr=16000.
  bench_plain / bench_if
                  a small CNN of about 0.2 ms (Conv 3x3 16->16 on 32x32 x4 with Relus, a
                  GlobalAveragePool, a Gemm) and the same network inside If(flag) (else: the
                  Gemm of the average alone). Data: bench/ (flag true).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
mk = helper.make_node


def vi(name, shape, dt=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dt, shape)


def const(name, arr, dt=np.float32):
    return numpy_helper.from_array(np.asarray(arr, dt), name)


def save(out_dir, name, graph, check=True):
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="gen-control-flow")
    m.ir_version = 8
    if check:
        onnx.checker.check_model(m)
    onnx.save(m, os.path.join(out_dir, name + ".onnx"))


def save_inputs(folder, arrays):
    os.makedirs(folder, exist_ok=True)
    for k, (name, arr) in enumerate(arrays):
        t = numpy_helper.from_array(arr, name)
        with open(os.path.join(folder, "input_%d.pb" % k), "wb") as f:
            f.write(t.SerializeToString())


def fp16_grid(a):
    return a.astype(np.float16).astype(np.float32)


def planted(prefix, depth_name, out, norm_name=None):
    """amp_norm = depth^2 (overflows fp16), amp_scale = * 2^-16: the planted site."""
    nodes = [
        mk("Pow", [depth_name, prefix + "two"], [prefix + "amp_norm_out"], name=norm_name or prefix + "amp_norm"),
        mk("Mul", [prefix + "amp_norm_out", prefix + "amp_k"], [out], name=prefix + "amp_scale"),
    ]
    inits = [const(prefix + "two", 2.0), const(prefix + "amp_k", 2.0 ** -16)]
    return nodes, inits


def cnn_branch(rng, prefix, out, x="x", depth="depth", names=None):
    """The CNN: the planted site gives a gain in (0, 2.45], multiplied into x; then two convs."""
    n = names or {}
    nm = lambda k: n.get(k, prefix + k)
    nodes, inits = planted(prefix, depth, nm("gain"), n.get("amp_norm"))
    w1 = fp16_grid(rng.uniform(-0.25, 0.25, (8, 4, 3, 3)))
    w2 = fp16_grid(rng.uniform(-0.25, 0.25, (8, 8, 3, 3)))
    wf = fp16_grid(rng.uniform(-0.5, 0.5, (8, 10)))
    nodes += [
        mk("Mul", [x, nm("gain")], [nm("h")], name=nm("mix")),
        mk("Conv", [nm("h"), prefix + "w1", prefix + "b1"], [nm("c1")], name=nm("conv1"), pads=[1, 1, 1, 1]),
        mk("Relu", [nm("c1")], [nm("r1")], name=nm("relu1")),
        mk("Conv", [nm("r1"), prefix + "w2", prefix + "b2"], [nm("c2")], name=nm("conv2"), pads=[1, 1, 1, 1]),
        mk("Relu", [nm("c2")], [nm("r2")], name=nm("relu2")),
        mk("GlobalAveragePool", [nm("r2")], [nm("gap")], name=nm("pool")),
        mk("Flatten", [nm("gap")], [nm("flat")], name=nm("flatten")),
        mk("Gemm", [nm("flat"), prefix + "wf", prefix + "bf"], [out], name=nm("fc")),
    ]
    inits += [const(prefix + "w1", w1), const(prefix + "b1", np.zeros(8)), const(prefix + "w2", w2),
              const(prefix + "b2", np.zeros(8)), const(prefix + "wf", wf), const(prefix + "bf", np.zeros(10))]
    return nodes, inits


def else_gemm(rng, prefix, out, x="x", ch=4):
    w = fp16_grid(rng.uniform(-0.5, 0.5, (ch, 10)))
    nodes = [
        mk("GlobalAveragePool", [x], [prefix + "avg"], name=prefix + "avg"),
        mk("Flatten", [prefix + "avg"], [prefix + "avg_flat"], name=prefix + "avg_flat"),
        mk("MatMul", [prefix + "avg_flat", prefix + "w"], [out], name=prefix + "proj"),
    ]
    return nodes, [const(prefix + "w", w)]


def if_node(cond, then_g, else_g, outs, name):
    return mk("If", [cond], outs, name=name, then_branch=then_g, else_branch=else_g)


def branch_graph(name, nodes, inits, out, shape):
    return helper.make_graph(nodes, name, [], [vi(out, shape)], inits)


def cnn_inputs(rng):
    x = fp16_grid(rng.uniform(-1, 1, (1, 4, 8, 8)).astype(np.float32))
    depth = rng.integers(1, 401, size=(1, 4, 8, 8)).astype(np.float32)
    depth[0, 0, 0, 0] = 400
    return x, depth


def if_cnn(out_dir, rng, hostile=False):
    name = "if_hostile" if hostile else "if_cnn"
    names = None
    if hostile:
        # hostile names: an ESC sequence, a newline, a table bar, backticks; and tensors named
        # like the main graph's (h, cond)
        names = {"amp_norm": "net/amp\x1b]52;c;AA==\x07norm", "conv1": "net/conv\x1b[31m1", "relu1": "net/relu\n1", "conv2": "net/conv|2`x`",
                 "h": "h", "c1": "cond", "gain": "net/gain"}
    tn, ti = cnn_branch(rng, "net/", "y_then", names=names)
    en, ei = else_gemm(rng, "small/", "y_else")
    then_g = branch_graph("then", tn, ti, "y_then", [1, 10])
    else_g = branch_graph("else", en, ei, "y_else", [1, 10])
    nodes = [mk("Equal", ["sr", "sr16k"], ["cond"], name="is_16k")]
    main_inits = [const("sr16k", 16000, np.int64)]
    if hostile:
        # main-graph tensors the branch's names collide with
        nodes.append(mk("Identity", ["x"], ["h"], name="x_copy"))
    nodes.append(if_node("cond", then_g, else_g, ["y"], "If_0"))
    outs = [vi("y", [1, 10])]
    if hostile:
        nodes.append(mk("Identity", ["h"], ["h_out"], name="h_out"))
        outs.append(vi("h_out", [1, 4, 8, 8]))
    g = helper.make_graph(nodes, name, [vi("x", [1, 4, 8, 8]), vi("depth", [1, 4, 8, 8]), vi("sr", [], TensorProto.INT64)],
                          outs, main_inits)
    # the hostile model shadows outer names on purpose: onnx's checker refuses that
    save(out_dir, name, g, check=not hostile)
    x, depth = cnn_inputs(rng)
    if hostile:
        save_inputs(os.path.join(out_dir, "if_hostile_16k"), [("x", x), ("depth", depth), ("sr", np.array(16000, np.int64))])
        return
    save_inputs(os.path.join(out_dir, "if_cnn_16k"), [("x", x), ("depth", depth), ("sr", np.array(16000, np.int64))])
    save_inputs(os.path.join(out_dir, "if_cnn_8k"), [("x", x), ("depth", depth), ("sr", np.array(8000, np.int64))])
    x2, d2 = cnn_inputs(rng)
    save_inputs(os.path.join(out_dir, "if_cnn_mixed"), [("x", x2), ("depth", d2), ("sr", np.array(16000, np.int64))])


def if_transformer(out_dir, rng):
    T, D, F = 8, 16, 32
    p = "blk/"
    nodes, inits = planted(p, "depth", p + "gain")
    def w(name, shape, s=0.25):
        inits.append(const(p + name, fp16_grid(rng.uniform(-s, s, shape))))
        return p + name
    nodes += [
        mk("Mul", ["x", p + "gain"], [p + "xs"], name=p + "mix"),
        mk("LayerNormalization", [p + "xs", w("ln_g", [D], 1.0), w("ln_b", [D], 0.1)], [p + "ln"], name=p + "ln", axis=-1),
        mk("MatMul", [p + "ln", w("wq", [D, D])], [p + "q"], name=p + "q_proj"),
        mk("MatMul", [p + "ln", w("wk", [D, D])], [p + "k"], name=p + "k_proj"),
        mk("MatMul", [p + "ln", w("wv", [D, D])], [p + "v"], name=p + "v_proj"),
        mk("Transpose", [p + "k"], [p + "kt"], name=p + "k_t", perm=[0, 2, 1]),
        mk("MatMul", [p + "q", p + "kt"], [p + "s"], name=p + "scores"),
        mk("Mul", [p + "s", p + "scale"], [p + "ss"], name=p + "scale"),
        mk("Softmax", [p + "ss"], [p + "a"], name=p + "softmax", axis=-1),
        mk("MatMul", [p + "a", p + "v"], [p + "ctx"], name=p + "attn"),
        mk("MatMul", [p + "ctx", w("wo", [D, D])], [p + "o"], name=p + "o_proj"),
        mk("Add", [p + "xs", p + "o"], [p + "res"], name=p + "residual"),
        mk("MatMul", [p + "res", w("w1", [D, F])], [p + "m1"], name=p + "mlp_up"),
        mk("Relu", [p + "m1"], [p + "m1r"], name=p + "mlp_act"),
        mk("MatMul", [p + "m1r", w("w2", [F, D])], [p + "m2"], name=p + "mlp_down"),
        mk("Add", [p + "res", p + "m2"], ["y_then"], name=p + "residual2"),
    ]
    inits.append(const(p + "scale", 1.0 / np.sqrt(D)))
    then_g = branch_graph("then", nodes, inits, "y_then", [1, T, D])
    else_g = branch_graph("else", [mk("Identity", ["x"], ["y_else"], name="passthrough")], [], "y_else", [1, T, D])
    g = helper.make_graph([if_node("flag", then_g, else_g, ["y"], "If_block")], "if_transformer",
                          [vi("x", [1, T, D]), vi("depth", [1, T, D]), vi("flag", [], TensorProto.BOOL)], [vi("y", [1, T, D])])
    save(out_dir, "if_transformer", g)
    x = fp16_grid(rng.uniform(-1, 1, (1, T, D)).astype(np.float32))
    depth = rng.integers(1, 401, size=(1, T, D)).astype(np.float32)
    depth[0, 0, 0] = 400
    save_inputs(os.path.join(out_dir, "if_transformer_on"), [("x", x), ("depth", depth), ("flag", np.array(True))])


def if_nested(out_dir, rng):
    tn, ti = cnn_branch(rng, "net/", "y_in_then")
    en, ei = else_gemm(rng, "small/", "y_in_else")
    inner = if_node("cond16k", branch_graph("in_then", tn, ti, "y_in_then", [1, 10]),
                    branch_graph("in_else", en, ei, "y_in_else", [1, 10]), ["y_outer_then"], "If_inner")
    outer_then = branch_graph("outer_then", [mk("Equal", ["sr", "sr16k"], ["cond16k"], name="is_16k"), inner],
                              [const("sr16k", 16000, np.int64)], "y_outer_then", [1, 10])
    on, oi = else_gemm(rng, "off/", "y_outer_else")
    outer_else = branch_graph("outer_else", on, oi, "y_outer_else", [1, 10])
    g = helper.make_graph([if_node("flag", outer_then, outer_else, ["y"], "If_outer")], "if_nested",
                          [vi("x", [1, 4, 8, 8]), vi("depth", [1, 4, 8, 8]), vi("flag", [], TensorProto.BOOL),
                           vi("sr", [], TensorProto.INT64)], [vi("y", [1, 10])])
    save(out_dir, "if_nested", g)
    x, depth = cnn_inputs(rng)
    save_inputs(os.path.join(out_dir, "if_nested_on"),
                [("x", x), ("depth", depth), ("flag", np.array(True)), ("sr", np.array(16000, np.int64))])


def loop_small(out_dir, rng):
    n = 16
    body = helper.make_graph(
        [mk("Add", ["v_in", "step"], ["v_out"], name="body_add"), mk("Identity", ["cond_in"], ["cond_out"], name="body_cond")],
        "body", [vi("i", [], TensorProto.INT64), vi("cond_in", [], TensorProto.BOOL), vi("v_in", [1, n])],
        [vi("cond_out", [], TensorProto.BOOL), vi("v_out", [1, n])], [const("step", np.full((1, n), 0.5))])
    nodes, inits = planted("", "depth", "gain")
    nodes += [
        mk("Loop", ["trip", "", "x"], ["looped"], name="loop3", body=body),
        mk("Mul", ["looped", "gain"], ["y"], name="mix"),
    ]
    inits.append(const("trip", 3, np.int64))
    g = helper.make_graph(nodes, "loop_small", [vi("x", [1, n]), vi("depth", [1, n])], [vi("y", [1, n])], inits)
    save(out_dir, "loop_small", g)
    x = fp16_grid(rng.uniform(-1, 1, (1, n)).astype(np.float32))
    depth = rng.integers(1, 401, size=(1, n)).astype(np.float32)
    depth[0, 0] = 400
    save_inputs(os.path.join(out_dir, "loop_small"), [("x", x), ("depth", depth)])


def if_fold(out_dir, rng):
    then_g = branch_graph("then", [mk("Relu", ["x"], ["t_out"], name="then_relu")], [], "t_out", [1, 4])
    else_g = branch_graph("else", [mk("Neg", ["x"], ["e_out"], name="else_neg")], [], "e_out", [1, 4])
    g = helper.make_graph([if_node("c", then_g, else_g, ["y"], "If_const")], "if_const", [vi("x", [1, 4])], [vi("y", [1, 4])],
                          [numpy_helper.from_array(np.array(True), "c")])
    save(out_dir, "if_const", g)
    g = helper.make_graph([mk("Equal", ["sr", "sr16k"], ["c"], name="is_16k"), if_node("c", then_g, else_g, ["y"], "If_sr")],
                          "if_bound", [vi("x", [1, 4]), vi("sr", [], TensorProto.INT64)], [vi("y", [1, 4])],
                          [const("sr16k", 16000, np.int64)])
    save(out_dir, "if_bound", g)


def bench(out_dir, rng):
    C, H = 16, 32
    def net(p, out):
        nodes, inits = [], []
        cur = "x"
        for k in range(4):
            inits += [const(p + "w%d" % k, rng.uniform(-0.1, 0.1, (C, C, 3, 3))), const(p + "b%d" % k, np.zeros(C))]
            nodes += [mk("Conv", [cur, p + "w%d" % k, p + "b%d" % k], [p + "c%d" % k], name=p + "conv%d" % k, pads=[1, 1, 1, 1]),
                      mk("Relu", [p + "c%d" % k], [p + "r%d" % k], name=p + "relu%d" % k)]
            cur = p + "r%d" % k
        inits.append(const(p + "wf", rng.uniform(-0.1, 0.1, (C, 10))))
        nodes += [mk("GlobalAveragePool", [cur], [p + "gap"], name=p + "pool"),
                  mk("Flatten", [p + "gap"], [p + "flat"], name=p + "flatten"),
                  mk("MatMul", [p + "flat", p + "wf"], [out], name=p + "fc")]
        return nodes, inits
    nodes, inits = net("", "y")
    save(out_dir, "bench_plain", helper.make_graph(nodes, "bench_plain", [vi("x", [1, C, H, H])], [vi("y", [1, 10])], inits))
    tn, ti = net("net/", "y_then")
    en, ei = else_gemm(rng, "small/", "y_else", ch=C)
    g = helper.make_graph([if_node("flag", branch_graph("then", tn, ti, "y_then", [1, 10]),
                                   branch_graph("else", en, ei, "y_else", [1, 10]), ["y"], "If_0")],
                          "bench_if", [vi("x", [1, C, H, H]), vi("flag", [], TensorProto.BOOL)], [vi("y", [1, 10])])
    save(out_dir, "bench_if", g)
    x = rng.uniform(-1, 1, (1, C, H, H)).astype(np.float32)
    save_inputs(os.path.join(out_dir, "bench_plain"), [("x", x)])
    save_inputs(os.path.join(out_dir, "bench_if"), [("x", x), ("flag", np.array(True))])


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen-control-flow.py OUT_DIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(26)
    if_cnn(out, rng)
    if_cnn(out, rng, hostile=True)
    if_transformer(out, rng)
    if_nested(out, rng)
    loop_small(out, rng)
    if_fold(out, rng)
    bench(out, rng)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Generates a Llama-style decoder as ONNX (python3-onnx and numpy only), for the tests of
large-model handling (small sizes) and for the large-model benchmark (3 GB and more).

  gen-decoder.py OUT.onnx [--layers N] [--hidden H] [--heads NH] [--ffn F] [--seq S]
                 [--vocab V] [--dtype float32|float16] [--external-data FILE] [--seed S]

Graph (opset 17, batch 1, fixed sequence length S): input_ids int64 [1, S] -> embedding
Gather -> per layer: RMSNorm (Pow, ReduceMean, Add eps, Sqrt, Div, Mul weight), Q/K/V
MatMul, rotary embedding (precomputed cos/sin tables, rotate-half through Slice, Neg,
Concat), attention (MatMul with K transposed, scale, causal mask Add, Softmax, MatMul),
output MatMul, residual Add, RMSNorm, SwiGLU MLP (gate and up MatMul, Sigmoid, Mul, down
MatMul), residual Add -> final RMSNorm -> lm head MatMul -> logits [1, S, V].

Weights are seeded random, scaled by 1/sqrt(fan-in) so that activations stay near 1 in
every layer (float16 included). With --external-data FILE (a name relative to OUT's
folder) every weight of at least 1 KiB is written to that one file, each at an offset
aligned to 4096 bytes (64 for small ones), one tensor at a time: generating a 3 GB model
needs memory for one weight, not for the model. Without it the weights are inline (the
protobuf limit of 2 GiB applies).
"""
import argparse
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--ffn", type=int, default=0, help="MLP width (default: 8/3 hidden, multiple of 64)")
    ap.add_argument("--seq", type=int, default=8)
    ap.add_argument("--vocab", type=int, default=256)
    ap.add_argument("--dtype", choices=["float32", "float16"], default="float32")
    ap.add_argument("--external-data", metavar="FILE", default=None)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    if a.hidden % a.heads or (a.hidden // a.heads) % 2:
        sys.exit("gen-decoder.py: --hidden must be a multiple of 2 * --heads")
    ffn = a.ffn or max(64, (a.hidden * 8 // 3 + 63) // 64 * 64)
    hd = a.hidden // a.heads
    npdt = np.float16 if a.dtype == "float16" else np.float32
    tdt = TensorProto.FLOAT16 if a.dtype == "float16" else TensorProto.FLOAT
    rng = np.random.default_rng(a.seed)
    out_dir = os.path.dirname(os.path.abspath(a.out))

    ext = None
    if a.external_data:
        if os.path.isabs(a.external_data) or ".." in a.external_data.split("/"):
            sys.exit("gen-decoder.py: --external-data must be a name relative to the model's folder")
        ext = open(os.path.join(out_dir, a.external_data), "wb")

    inits, nodes = [], []

    def weight(name, arr):
        arr = np.ascontiguousarray(arr.astype(npdt) if arr.dtype.kind == "f" else arr)
        if ext is not None and arr.nbytes >= 1024:
            align = 4096 if arr.nbytes >= (1 << 20) else 64
            off = (ext.tell() + align - 1) // align * align
            ext.write(b"\0" * (off - ext.tell()))
            ext.write(arr.tobytes())
            t = TensorProto()
            t.name = name
            t.data_type = helper.np_dtype_to_tensor_dtype(arr.dtype) if hasattr(helper, "np_dtype_to_tensor_dtype") \
                else onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[arr.dtype]
            t.dims.extend(arr.shape)
            t.data_location = TensorProto.EXTERNAL
            for k, v in (("location", a.external_data), ("offset", str(off)), ("length", str(arr.nbytes))):
                e = t.external_data.add()
                e.key, e.value = k, v
            inits.append(t)
        else:
            inits.append(numpy_helper.from_array(arr, name))
        return name

    def rand(shape, fan_in):
        # uniform in [-sqrt(3), sqrt(3)) has variance 1; generated in float32 for speed
        return (rng.random(shape, dtype=np.float32) * np.float32(2 * 3 ** 0.5) - np.float32(3 ** 0.5)) \
            * np.float32(1 / fan_in ** 0.5)

    def node(op, ins, outs=None, name=None, **attrs):
        node.n += 1
        nm = name or "%s_%d" % (op.lower(), node.n)
        outs = outs or [nm + "_out"]
        nodes.append(helper.make_node(op, ins, outs, name=nm, **attrs))
        return outs[0]
    node.n = 0

    S, H = a.seq, a.hidden
    weight("two", np.array(2.0, np.float32))
    weight("eps", np.array(1e-5, np.float32))
    weight("scale", np.array(1 / hd ** 0.5, np.float32))
    weight("shape_heads", np.array([1, S, a.heads, hd], np.int64))
    weight("shape_hidden", np.array([1, S, H], np.int64))
    weight("half_lo_start", np.array([0], np.int64))
    weight("half_lo_end", np.array([hd // 2], np.int64))
    weight("half_hi_end", np.array([hd], np.int64))
    weight("axis_last", np.array([-1], np.int64))
    mask = np.triu(np.full((S, S), -10000.0, np.float32), 1)
    weight("causal_mask", mask)
    inv = 1.0 / (10000.0 ** (np.arange(0, hd, 2, dtype=np.float64) / hd))
    ang = np.outer(np.arange(S, dtype=np.float64), inv)
    ang = np.concatenate([ang, ang], axis=1)  # [S, hd]
    weight("rope_cos", np.cos(ang).astype(np.float32))
    weight("rope_sin", np.sin(ang).astype(np.float32))

    def rmsnorm(x, w, tag):
        sq = node("Pow", [x, "two"], name=tag + "_pow")
        ms = node("ReduceMean", [sq], name=tag + "_mean", axes=[-1], keepdims=1)
        ad = node("Add", [ms, "eps"], name=tag + "_addeps")
        rt = node("Sqrt", [ad], name=tag + "_sqrt")
        nx = node("Div", [x, rt], name=tag + "_div")
        return node("Mul", [nx, w], name=tag + "_mul")

    def rope(x, tag):  # x: [1, nh, S, hd]
        lo = node("Slice", [x, "half_lo_start", "half_lo_end", "axis_last"], name=tag + "_slice_lo")
        hi = node("Slice", [x, "half_lo_end", "half_hi_end", "axis_last"], name=tag + "_slice_hi")
        nh = node("Neg", [hi], name=tag + "_neg")
        rot = node("Concat", [nh, lo], name=tag + "_concat", axis=-1)
        c = node("Mul", [x, "rope_cos"], name=tag + "_mul_cos")
        s = node("Mul", [rot, "rope_sin"], name=tag + "_mul_sin")
        return node("Add", [c, s], name=tag + "_add")

    def heads(x, tag):
        r = node("Reshape", [x, "shape_heads"], name=tag + "_reshape")
        return node("Transpose", [r], name=tag + "_transpose", perm=[0, 2, 1, 3])

    x = node("Gather", [weight("embed_tokens", rand((a.vocab, H), 1)), "input_ids"], name="embed", axis=0)
    for li in range(a.layers):
        p = "layer%d" % li
        h = rmsnorm(x, weight(p + ".attn_norm", np.ones(H, np.float32)), p + "_attn_norm")
        q = node("MatMul", [h, weight(p + ".wq", rand((H, H), H))], name=p + "_q")
        k = node("MatMul", [h, weight(p + ".wk", rand((H, H), H))], name=p + "_k")
        v = node("MatMul", [h, weight(p + ".wv", rand((H, H), H))], name=p + "_v")
        q = rope(heads(q, p + "_qh"), p + "_qrope")
        k = rope(heads(k, p + "_kh"), p + "_krope")
        v = heads(v, p + "_vh")
        kt = node("Transpose", [k], name=p + "_kt", perm=[0, 1, 3, 2])
        sc = node("MatMul", [q, kt], name=p + "_scores")
        sc = node("Mul", [sc, "scale"], name=p + "_scale")
        sc = node("Add", [sc, "causal_mask"], name=p + "_mask")
        pr = node("Softmax", [sc], name=p + "_softmax", axis=-1)
        o = node("MatMul", [pr, v], name=p + "_attn")
        o = node("Transpose", [o], name=p + "_attn_transpose", perm=[0, 2, 1, 3])
        o = node("Reshape", [o, "shape_hidden"], name=p + "_attn_reshape")
        o = node("MatMul", [o, weight(p + ".wo", rand((H, H), H))], name=p + "_o")
        x = node("Add", [x, o], name=p + "_residual1")
        h = rmsnorm(x, weight(p + ".mlp_norm", np.ones(H, np.float32)), p + "_mlp_norm")
        g = node("MatMul", [h, weight(p + ".w_gate", rand((H, ffn), H))], name=p + "_gate")
        u = node("MatMul", [h, weight(p + ".w_up", rand((H, ffn), H))], name=p + "_up")
        sg = node("Sigmoid", [g], name=p + "_sigmoid")
        sl = node("Mul", [g, sg], name=p + "_silu")
        m = node("Mul", [sl, u], name=p + "_swiglu")
        d = node("MatMul", [m, weight(p + ".w_down", rand((ffn, H), ffn))], name=p + "_down")
        x = node("Add", [x, d], name=p + "_residual2")
    h = rmsnorm(x, weight("final_norm", np.ones(H, np.float32)), "final_norm")
    node("MatMul", [h, weight("lm_head", rand((H, a.vocab), H))], ["logits"], name="lm_head")

    if ext is not None:
        ext.close()
    g = helper.make_graph(nodes, "decoder",
                          [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, S])],
                          [helper.make_tensor_value_info("logits", tdt, [1, S, a.vocab])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name="gen-decoder.py")
    m.ir_version = 8
    with open(a.out, "wb") as f:
        f.write(m.SerializeToString())
    onnx.checker.check_model(a.out)


if __name__ == "__main__":
    main()

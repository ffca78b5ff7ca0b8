#!/usr/bin/python3
"""Cuts right after an Attention, an Einsum and a DFT node, extracted by whittle and checked
with ONNX Runtime (driven by tests/e2e-extract-ops.sh).

    extract-after-ops.py WORKDIR --whittle BIN --ort-run SCRIPT

For each op, a small model is built around it (a node before it, the op, a node after each
of its outputs). ONNX Runtime runs the whole model once with every tensor marked as an
output (ort-run.js --all --no-opt) on seeded inputs: the reference values. Two cuts are
extracted with `whittle extract`:
  after:  inputs = the op's outputs, outputs = the model's outputs. The op's outputs become
          graph inputs, so their types and shapes must come from shape inference: the cut
          must declare each with the reference value's element type and full shape.
  upto:   inputs = the model's inputs, outputs = the op's outputs.
Each cut must pass onnx.checker (where the installed onnx knows the opset) and have exactly the asked inputs and outputs; ONNX Runtime
runs it on the reference values of its inputs, and every output must equal the reference
value of the same tensor (the same kernels on the same values: exact, with the 1e-6
relative margin tests/extract-cuts.py explains).
Prints one line per cut and "extract-after-ops: N cuts, F failures".
"""
import argparse
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT


def model(name, nodes, inputs, outputs, opset, inits=()):
    """outputs: (name, rank); their dimensions are left for inference to find"""
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info(n, F, s) for n, s in inputs],
                          [helper.make_tensor_value_info(n, F, [None] * r) for n, r in outputs],
                          initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    check(m)
    return m


def check(m):
    """onnx.checker, where the installed onnx knows the opset (Debian's onnx 1.12 stops at
    opset 17: Attention-23 and DFT-20 are checked by ONNX Runtime alone)."""
    if max(o.version for o in m.opset_import if o.domain in ("", "ai.onnx")) <= onnx.defs.onnx_opset_version():
        onnx.checker.check_model(m)


def models():
    """(name, model, the op's outputs, input shapes for ort-run --shapes)"""
    out = []
    # Attention, 4-d with grouped heads and a past key/value: Y, present_key, present_value
    # and the QK product are all cut points.
    nodes = [
        helper.make_node("Relu", ["q0"], ["q"]),
        helper.make_node("Attention", ["q", "k", "v", "", "pk", "pv"], ["y", "present_k", "present_v", "qk"],
                         is_causal=1, qk_matmul_output_mode=1),
        helper.make_node("Tanh", ["y"], ["y_out"]),
        helper.make_node("Neg", ["present_k"], ["pk_out"]),
        helper.make_node("Neg", ["present_v"], ["pv_out"]),
        helper.make_node("Sigmoid", ["qk"], ["qk_out"]),
    ]
    ins = [("q0", [2, 4, 3, 8]), ("k", [2, 2, 5, 8]), ("v", [2, 2, 5, 6]), ("pk", [2, 2, 4, 8]), ("pv", [2, 2, 4, 6])]
    out.append(("attention4d", model("attention4d", nodes, ins, [("y_out", 4), ("pk_out", 4), ("pv_out", 4), ("qk_out", 4)], 23),
                ["y", "present_k", "present_v", "qk"]))
    # Attention, 3-d (heads as attributes)
    nodes = [
        helper.make_node("Relu", ["q0"], ["q"]),
        helper.make_node("Attention", ["q", "k", "v"], ["y"], q_num_heads=4, kv_num_heads=2),
        helper.make_node("Tanh", ["y"], ["y_out"]),
    ]
    ins = [("q0", [2, 3, 32]), ("k", [2, 5, 16]), ("v", [2, 5, 12])]
    out.append(("attention3d", model("attention3d", nodes, ins, [("y_out", 3)], 23), ["y"]))
    # Einsum: a batched contraction with a transpose, and an implicit-output one
    nodes = [
        helper.make_node("Relu", ["a0"], ["a"]),
        helper.make_node("Einsum", ["a", "b"], ["e"], equation="bij,bkj->bki"),
        helper.make_node("Einsum", ["a"], ["e2"], equation="...ij"),
        helper.make_node("Sigmoid", ["e"], ["e_out"]),
        helper.make_node("Sigmoid", ["e2"], ["e2_out"]),
    ]
    ins = [("a0", [3, 4, 5]), ("b", [3, 6, 5])]
    out.append(("einsum", model("einsum", nodes, ins, [("e_out", 3), ("e2_out", 3)], 12), ["e", "e2"]))
    # DFT at opset 20 (axis as a constant input): a one-sided forward transform and a full
    # inverse one with dft_length
    axis = numpy_helper.from_array(np.array(1, dtype=np.int64), "axis")
    length = numpy_helper.from_array(np.array(12, dtype=np.int64), "length")
    nodes = [
        helper.make_node("Relu", ["x0"], ["x"]),
        helper.make_node("DFT", ["x", "", "axis"], ["d"], onesided=1),
        helper.make_node("DFT", ["d", "length", "axis"], ["d2"], inverse=1),
        helper.make_node("Abs", ["d"], ["d_out"]),
        helper.make_node("Abs", ["d2"], ["d2_out"]),
    ]
    out.append(("dft", model("dft", nodes, [("x0", [2, 10, 3, 1])], [("d_out", 4), ("d2_out", 4)], 20, [axis, length]),
                ["d", "d2"]))
    return out


def escape(name):
    return "".join(c if c.isascii() and (c.isalnum() or c in "._-") else "".join("%%%02X" % b for b in c.encode())
                   for c in name)


def read_tensor(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return t.name, numpy_helper.to_array(t)


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True)


def check_cut(a, work, tag, src, inputs, outputs, ref):
    """None when the cut is right, else what is wrong."""
    cut = os.path.join(work, tag + ".onnx")
    p = run([a.whittle, "extract", src, "-o", cut, "--inputs", ",".join(inputs), "--outputs", ",".join(outputs)])
    if p.returncode:
        return "whittle extract exited %d: %s" % (p.returncode, p.stderr.strip())
    try:
        cm = onnx.load(cut)
        check(cm)
    except Exception as e:
        return "not valid ONNX: %s" % str(e).splitlines()[0]
    inits = {t.name for t in cm.graph.initializer}
    got_in = [i for i in cm.graph.input if i.name not in inits]
    if sorted(i.name for i in got_in) != sorted(inputs):
        return "inputs %s, expected %s" % (sorted(i.name for i in got_in), sorted(inputs))
    if sorted(o.name for o in cm.graph.output) != sorted(outputs):
        return "outputs %s, expected %s" % (sorted(o.name for o in cm.graph.output), sorted(outputs))
    for i in got_in:
        _, r = read_tensor(os.path.join(ref, escape(i.name) + ".pb"))
        tt = i.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]
        if onnx.mapping.TENSOR_TYPE_TO_NP_TYPE.get(tt.elem_type) != r.dtype or dims != list(r.shape):
            return "input %s declared %s %s, its value is %s %s" % (
                i.name, onnx.mapping.TENSOR_TYPE_TO_NP_TYPE.get(tt.elem_type) if tt.elem_type else "untyped", dims,
                r.dtype, list(r.shape))
    feed, got = os.path.join(work, tag + "-in"), os.path.join(work, tag + "-out")
    os.makedirs(feed)
    for t in inputs:
        shutil.copy(os.path.join(ref, escape(t) + ".pb"), os.path.join(feed, escape(t) + ".pb"))
    p = run(["node", a.ort_run, cut, feed, got, "--no-opt", "--threads", "1"])
    if p.returncode:
        return "ONNX Runtime cannot run it: %s" % p.stderr.strip()
    for t in outputs:
        name, y = read_tensor(os.path.join(got, escape(t) + ".pb"))
        _, r = read_tensor(os.path.join(ref, escape(t) + ".pb"))
        if name != t or y.dtype != r.dtype or y.shape != r.shape:
            return "output %s: %s %s, reference %s %s" % (t, y.dtype, y.shape, r.dtype, r.shape)
        d = np.abs(y.astype(np.float64) - r.astype(np.float64))
        bad = ~(d <= 1e-6 * np.abs(r.astype(np.float64))) & ~(np.isnan(y) & np.isnan(r))
        if np.any(bad):
            return "output %s: %d of %d values differ (max abs %.3g)" % (t, int(np.count_nonzero(bad)), y.size,
                                                                         float(np.nanmax(d)))
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("workdir")
    ap.add_argument("--whittle", required=True)
    ap.add_argument("--ort-run", required=True)
    a = ap.parse_args()
    n_cuts = failures = 0
    for name, m, op_outs in models():
        work = os.path.join(a.workdir, name)
        os.makedirs(work)
        src = os.path.join(work, "model.onnx")
        onnx.save(m, src)
        ref_in, ref = os.path.join(work, "ref-in"), os.path.join(work, "ref")
        p = run(["node", a.ort_run, src, ref_in, ref, "--all", "--no-opt", "--threads", "1", "--seed", "5"])
        if p.returncode:
            print("FAIL %s: ONNX Runtime on the whole model: %s" % (name, p.stderr.strip()))
            failures += 1
            continue
        graph_inputs = [i.name for i in m.graph.input]
        for k, i in enumerate(graph_inputs):
            shutil.copy(os.path.join(ref_in, "input_%d.pb" % k), os.path.join(ref, escape(i) + ".pb"))
        finals = [o.name for o in m.graph.output]
        for tag, ins, outs in (("after", op_outs, finals), ("upto", graph_inputs, op_outs)):
            n_cuts += 1
            problem = check_cut(a, work, tag, src, ins, outs, ref)
            line = "%s %s: inputs %s -> outputs %s" % (name, tag, ",".join(ins), ",".join(outs))
            if problem:
                failures += 1
                print("FAIL %s: %s" % (line, problem))
            else:
                print("ok   %s" % line)
    print("extract-after-ops: %d cuts, %d failures" % (n_cuts, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""The acceptance model of issue 25 (docs/gpu.md, "A real faulty tactic"): one MatMul with a
long reduction, Y = (X + offset) @ W, K = 8192 by default, whose inputs share a large common
offset, so that every partial sum grows far past each term: accumulating in fp16 (11
significant bits) loses the small terms once the running sum is large, while FP32
accumulation, split or not, stays within fp16's output rounding. On the GPU at fp16 with
--allow-reduced-precision-reduction, a build whose MatMul took an fp16-accumulating cuBLASLt
tactic ("...-acc16") fails a tolerance of 2e-2 and one with FP32 accumulation passes.

    scripts/gen-long-reduction.py OUT.onnx [--m 64] [--k 8192] [--n 256] [--offset 4] [--seed 1]

Needs python3-onnx and python3-numpy. Node names are unique (a tactic replay names layers)."""
import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--m", type=int, default=64)
    ap.add_argument("--k", type=int, default=8192)
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--offset", type=float, default=4.0)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if a.k < 4096:
        ap.error("--k must be at least 4096 (the reduction must be long)")
    rng = np.random.default_rng(a.seed)
    # positive weights of mean 1/K: each output sums to about `offset`, each term about offset/K
    w = (rng.random((a.k, a.n)) * (2.0 / a.k)).astype(np.float32)
    off = np.array(a.offset, dtype=np.float32)
    g = helper.make_graph(
        [helper.make_node("Add", ["x", "offset"], ["xo"], name="offset_add"),
         helper.make_node("MatMul", ["xo", "w"], ["y"], name="long_matmul")],
        "long_reduction",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [a.m, a.k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [a.m, a.n])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(off, "offset")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name="whittle gen-long-reduction")
    onnx.checker.check_model(m)
    onnx.save(m, a.out)


if __name__ == "__main__":
    main()

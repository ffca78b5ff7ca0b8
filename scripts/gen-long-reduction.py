#!/usr/bin/python3
"""The acceptance model of issue 25 (docs/gpu.md, "A real faulty tactic"): one MatMul with a
long reduction, Y = (X + offset) @ W, K = 8192 by default. The inputs share a large common
offset, and the weights' first half adds and second half subtracts a common weight, so that
every partial sum climbs to about 2048 before cancelling down to the output (about 10):
accumulating in fp16 (11 significant bits: a spacing of 1 at 2048) loses about 1 per output,
in one chain or in split-K chunks, while FP32 accumulation, split or not, stays within what
fp16's rounding of the inputs costs (0.07 at most). On the GPU at fp16 with
--allow-reduced-precision-reduction, a build whose MatMul took an fp16-accumulating cuBLASLt
tactic ("...-acc16") should fail --atol 0.25 --rtol 2e-2 and one with FP32 accumulation pass
(the CPU's emulation: 0.07 against 110; see docs/gpu.md for what ran on a GPU).

    scripts/gen-long-reduction.py OUT.onnx [--m 64] [--k 8192] [--n 256] [--offset 16] [--seed 1]

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
    ap.add_argument("--offset", type=float, default=16.0)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if a.k < 4096:
        ap.error("--k must be at least 4096 (the reduction must be long)")
    rng = np.random.default_rng(a.seed)
    # the first half of K adds, the second half subtracts, a common weight c: every partial
    # sum climbs to about 2048 before the second half brings it back to the output's size
    # (about 10), so an accumulator with fp16's 11 bits (ulp 1 at 2048) loses about 1 per
    # output, while FP32 accumulation (ulp 2^-13 there) stays within fp16's output rounding
    c = 2048.0 / (a.offset * (a.k // 2))
    sign = np.where(np.arange(a.k) < a.k // 2, 1.0, -1.0)[:, None]
    w = (sign * c + (rng.random((a.k, a.n)) * 2 - 1) * 0.01).astype(np.float32)
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

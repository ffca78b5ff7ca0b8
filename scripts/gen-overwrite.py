#!/usr/bin/python3
"""Writes the models of the overwrite tests (tests/e2e-overwrite.sh): models whose weights
live in external-data files with the names exporters use, and an unrelated model in another
folder whose weights file has the same name.

    /usr/bin/python3 scripts/gen-overwrite.py OUTDIR

OUTDIR/orig/model.onnx   model A: y = relu(x @ W1 + b1) @ W2 + b2 for x of 1x8, four layers
                         (MatMul, Add, Relu, MatMul, Add: named m1 a1 r1 m2 a2); W1 and b1
                         in orig/w.bin, W2 and b2 in orig/w2.bin
OUTDIR/out/other.onnx    model B: the same graph, other weights, all in out/w.bin (the name
                         of A's first weights file: extracting A into out/ must keep it)
OUTDIR/orig/w-other.bin  bytes of w.bin's size, different, for rewriting w.bin in place
Deterministic: the same bytes on every run. Uses Debian's python3-onnx: /usr/bin/python3.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def external(name, arr, location, offset):
    t = numpy_helper.from_array(arr, name)
    raw = t.raw_data
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", str(offset)), ("length", str(len(raw)))):
        e = t.external_data.add()
        e.key, e.value = k, v
    return t, raw


def write_model(folder, name, seed, files):
    """files: {location: [tensor names]}; writes folder/name and the weights files."""
    rng = np.random.default_rng(seed)
    arrays = {
        "W1": rng.standard_normal((8, 16)).astype(np.float32),
        "b1": rng.standard_normal((16,)).astype(np.float32),
        "W2": rng.standard_normal((16, 4)).astype(np.float32),
        "b2": rng.standard_normal((4,)).astype(np.float32),
    }
    inits = []
    for location, names in files.items():
        blob = b""
        for n in names:
            pad = (-len(blob)) % 64
            blob += b"\0" * pad
            t, raw = external(n, arrays[n], location, len(blob))
            blob += raw
            inits.append(t)
        with open(os.path.join(folder, location), "wb") as f:
            f.write(blob)
    nodes = [
        helper.make_node("MatMul", ["x", "W1"], ["h1"], name="m1"),
        helper.make_node("Add", ["h1", "b1"], ["h2"], name="a1"),
        helper.make_node("Relu", ["h2"], ["h3"], name="r1"),
        helper.make_node("MatMul", ["h3", "W2"], ["h4"], name="m2"),
        helper.make_node("Add", ["h4", "b2"], ["y"], name="a2"),
    ]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    with open(os.path.join(folder, name), "wb") as f:
        f.write(m.SerializeToString())


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = os.path.abspath(argv[1])
    for d in ("orig", "out"):
        os.makedirs(os.path.join(out, d), exist_ok=True)
    write_model(os.path.join(out, "orig"), "model.onnx", 1, {"w.bin": ["W1", "b1"], "w2.bin": ["W2", "b2"]})
    write_model(os.path.join(out, "out"), "other.onnx", 2, {"w.bin": ["W1", "b1", "W2", "b2"]})
    size = os.path.getsize(os.path.join(out, "orig", "w.bin"))
    with open(os.path.join(out, "orig", "w-other.bin"), "wb") as f:
        f.write(np.random.default_rng(3).standard_normal(size // 4).astype(np.float32).tobytes())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

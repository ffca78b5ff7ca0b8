#!/usr/bin/python3
"""Writes fixtures/models/initializer-*.onnx: tensors that are an initializer and also
declared (a graph input whose default value it is, a value_info, a graph output), for
tests/e2e-initializer-decl.sh and as seeds of the fuzz-model corpus (scripts/fuzz.sh seeds
every fixtures/ model under 64 KiB; fuzz-model found that such a model's saved form did not
load again).

    /usr/bin/python3 tests/gen-initializer-fixtures.py [DIR]   (default: fixtures/models)

initializer-ok-*.onnx must load and save unchanged (tests/roundtrip-compare.py compare);
initializer-bad-*.onnx declare a type or shape the initializer's data does not have, and
must be refused (exit 3, one line). Debian's python3-onnx: run with /usr/bin/python3.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T, helper as h, numpy_helper as nh


def tensor_type(elem, shape):
    """A tensor TypeProto; shape None: no shape field (any rank); elem 0: no elem_type."""
    t = onnx.TypeProto()
    t.tensor_type.SetInParent()
    if elem:
        t.tensor_type.elem_type = elem
    if shape is not None:
        t.tensor_type.shape.SetInParent()
        for d in shape:
            dim = t.tensor_type.shape.dim.add()
            if isinstance(d, str):
                dim.dim_param = d
            else:
                dim.dim_value = d
    return t


def vi(name, elem, shape):
    v = onnx.ValueInfoProto(name=name)
    v.type.CopyFrom(tensor_type(elem, shape))
    return v


def model(inputs, outputs, value_info=()):
    w = nh.from_array(np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5, "w")
    g = h.make_graph([h.make_node("Relu", ["w"], ["y"], name="relu")], "initializer_decl", list(inputs),
                     [vi("y", T.FLOAT, [2, 3])] + list(outputs), [w], value_info=list(value_info))
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    m.ir_version = 7
    return m


CASES = {
    # a graph input with the initializer as its default value (ONNX allows it)
    "ok-input-same": model([vi("w", T.FLOAT, [2, 3])], []),
    "ok-input-param": model([vi("w", T.FLOAT, ["N", 3])], []),
    "ok-input-any-shape": model([vi("w", T.FLOAT, None)], []),
    "ok-input-any-type": model([vi("w", 0, None)], []),
    # declarations after the initializers in the loader's order
    "ok-value-info": model([], [], [vi("w", T.FLOAT, ["N", 3])]),
    "ok-output": model([], [vi("w", T.FLOAT, ["rows", "cols"])]),
    "ok-input-and-output": model([vi("w", T.FLOAT, [2, 3])], [vi("w", T.FLOAT, [2, 3])]),
    # declarations the data contradicts
    "bad-input-shape": model([vi("w", T.FLOAT, [2, 3, 6, 6])], []),
    "bad-input-type": model([vi("w", T.INT64, [2, 3])], []),
    "bad-value-info": model([], [], [vi("w", T.FLOAT, [2, 3, 6, 6])]),
    "bad-output": model([], [vi("w", T.FLOAT, [3])]),
    "bad-output-of-input": model([vi("w", T.FLOAT, [2, 3])], [vi("w", T.FLOAT, [2, 3, 6, 6])]),
}


def main(argv):
    out = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "models")
    os.makedirs(out, exist_ok=True)
    for name, m in CASES.items():
        with open(os.path.join(out, "initializer-%s.onnx" % name), "wb") as f:
            f.write(m.SerializeToString())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

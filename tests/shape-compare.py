#!/usr/bin/python3
"""Compares whittle's shape inference with what ONNX Runtime produces (tests/e2e-shape-ort.sh).

    shape-compare.py LABEL INSPECT_JSON ORT_DIR MODEL INPUT_SHAPES

INSPECT_JSON: `whittle inspect --json --input-shapes ...` of MODEL. ORT_DIR: every tensor
of the model as computed by ONNX Runtime (scripts/ort-run.js --all), as TensorProto files.
Each tensor ONNX Runtime produced must be listed by whittle with the same dtype and the
same fully known shape; initializers must match the model's declared ones, and a graph
input, if whittle lists it, must have the model's dtype and the shape of INPUT_SHAPES
(NAME:1x3x640x640,...; tests/e2e-cli-basics.sh checks that inputs are listed). Prints "shape: LABEL: N tensors, M mismatches" and up to 10 mismatches.
"""
import json
import os
import sys

import onnx

DTYPE = {1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64",
         8: "string", 9: "bool", 10: "float16", 11: "float64", 12: "uint32", 13: "uint64",
         14: "complex64", 15: "complex128", 16: "bfloat16"}


def header(path):
    """Name, dtype and dims of a TensorProto file (data left unparsed is not worth skipping:
    protobuf parses the whole message anyway)."""
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return t.name, DTYPE.get(t.data_type, "type%d" % t.data_type), list(t.dims)


def main(argv):
    if len(argv) != 6:
        sys.stderr.write(__doc__)
        return 2
    label, js, ort_dir, model_path, input_shapes = argv[1:]
    given = {}
    for item in input_shapes.split(","):
        name, dims = item.rsplit(":", 1)
        given[name] = [int(d) for d in dims.split("x")] if dims else []
    with open(js) as f:
        info = json.load(f)
    tensors = {}
    for t in info.get("tensors") or []:
        tensors[t["name"]] = t
    expected = {}
    for fn in sorted(os.listdir(ort_dir)):
        name, dt, dims = header(os.path.join(ort_dir, fn))
        expected[name] = (dt, dims, "ONNX Runtime")
    g = onnx.load(model_path, load_external_data=False).graph
    for init in g.initializer:
        expected.setdefault(init.name, (DTYPE.get(init.data_type), list(init.dims), "initializer"))
    for i in g.input:
        if i.name in given and i.name in tensors and i.name not in expected:
            expected[i.name] = (DTYPE.get(i.type.tensor_type.elem_type), given[i.name], "--input-shapes")

    mismatches = []
    for name, (dt, dims, source) in expected.items():
        t = tensors.get(name)
        if t is None:
            mismatches.append("%s: missing from whittle's tensors (%s has %s %s)" % (name, source, dt, dims))
        elif t.get("dtype") != dt or t.get("shape") != dims:
            mismatches.append("%s: whittle %s %s, %s %s %s" % (name, t.get("dtype"), t.get("shape"), source, dt, dims))
    n_ort = sum(1 for v in expected.values() if v[2] == "ONNX Runtime")
    for m in mismatches[:10]:
        print("  " + m)
    if len(mismatches) > 10:
        print("  ... and %d more" % (len(mismatches) - 10))
    print("shape: %s: %d tensors (%d from ONNX Runtime), %d mismatches" % (label, len(expected), n_ort, len(mismatches)))
    return 1 if mismatches or n_ort == 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

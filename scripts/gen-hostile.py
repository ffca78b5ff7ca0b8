#!/usr/bin/python3
"""Writes hostile ONNX models: files whittle must reject with one error line and exit 3.

    /usr/bin/python3 scripts/gen-hostile.py OUTDIR

Each case is a folder OUTDIR/<case>/ holding model.onnx (and whatever the case needs);
OUTDIR/outside.bin sits outside every case folder, holding valid weights, so that a loader
which follows a path out of the model's folder would succeed and the escape is noticed.
Prints "<case> <model path> <what is wrong>" per case. Deterministic: the same bytes on
every run. Uses Debian's python3-onnx: run with /usr/bin/python3.
"""
import os
import random
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

HUGE = 1 << 62


def model_of(nodes, inputs, outputs, inits=(), opset=13):
    g = helper.make_graph(nodes, "hostile", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 7
    return m.SerializeToString()


def vi(name, dims, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, dims)


def add_model(w):
    """y = x + w, with w given (an initializer, maybe external)."""
    return model_of([helper.make_node("Add", ["x", "w"], ["y"])], [vi("x", [4])], [vi("y", [4])], [w])


def external_w(location, offset=0, length=16):
    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4])
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", str(offset)), ("length", str(length))):
        e = t.external_data.add()
        e.key, e.value = k, v
    return t


def varint(n):
    b = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            b.append(byte | 0x80)
        else:
            b.append(byte)
            return bytes(b)


def field(num, payload):
    """A length-delimited protobuf field (wire type 2): bytes, strings and messages."""
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def field_int(num, v):
    return varint(num << 3) + varint(v)


def nest(levels, inner, wrap):
    """inner wrapped `levels` times by wrap(bytes) -> bytes (written by hand: the protobuf
    library itself refuses to build or parse messages this deep)."""
    for _ in range(levels):
        inner = wrap(inner)
    return inner


def wire_model(graph):
    """ModelProto{ir_version 7, opset "" 13, graph}."""
    return field_int(1, 7) + field(8, field(1, b"") + field_int(2, 13)) + field(7, graph)


def deep_sequence_model(levels):
    """Input x of type sequence(sequence(... tensor(float) ...)), levels deep."""
    tensor = field(1, field_int(1, TensorProto.FLOAT))  # TypeProto{tensor_type{elem_type}}
    # TypeProto{sequence_type (4): Sequence{elem_type (1): TypeProto}}
    t = nest(levels, tensor, lambda inner: field(4, field(1, inner)))
    x = field(1, b"x") + field(2, t)
    node = field(1, b"x") + field(2, b"y") + field(4, b"Identity")
    return wire_model(field(1, node) + field(2, b"deep") + field(11, x) + field(12, field(1, b"y") + field(2, t)))


def deep_if_model(levels):
    """If nodes nested `levels` deep through their then_branch."""
    def if_node(body):
        attr = field(1, b"then_branch") + field(6, body) + field_int(20, 5)  # type GRAPH
        return field(1, b"c") + field(2, b"y") + field(4, b"If") + field(5, attr)
    inner = field(1, field(1, b"c") + field(2, b"y") + field(4, b"Identity")) + field(2, b"leaf") + \
        field(12, field(1, b"y"))
    g = nest(levels, inner, lambda body: field(1, if_node(body)) + field(2, b"g") + field(12, field(1, b"y")))
    c = field(1, b"c") + field(2, field(1, field_int(1, TensorProto.BOOL)))
    return wire_model(field(1, if_node(g)) + field(2, b"deep") + field(11, c) + field(12, field(1, b"y")))


def main(argv):
    if len(argv) != 2:
        sys.stderr.write(__doc__)
        return 2
    out = os.path.abspath(argv[1])
    os.makedirs(out, exist_ok=True)
    weights = np.array([1, 2, 3, 4], dtype=np.float32).tobytes()
    with open(os.path.join(out, "outside.bin"), "wb") as f:
        f.write(weights)
    cases = []

    def case(name, data, why, extra=None):
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        p = os.path.join(d, "model.onnx")
        with open(p, "wb") as f:
            f.write(data)
        if extra:
            extra(d)
        cases.append((name, p, why))

    # A valid model whose weight spans the middle of the file, cut inside the weight.
    big = helper.make_tensor("w", TensorProto.FLOAT, [1024],
                             np.linspace(-1, 1, 1024, dtype=np.float32).tobytes(), raw=True)
    whole = model_of([helper.make_node("Add", ["x", "w"], ["y"])], [vi("x", [1024])], [vi("y", [1024])], [big])
    case("truncated", whole[: len(whole) // 2], "file cut in the middle of a weight")
    case("empty", b"", "zero bytes: no graph")

    # Random bytes that protobuf itself refuses (the seed is advanced until it does).
    seed = 1
    while True:
        data = random.Random(seed).randbytes(4096)
        try:
            onnx.ModelProto().ParseFromString(data)
        except Exception:
            break
        seed += 1
    case("random-bytes", data, "4096 random bytes (seed %d)" % seed)

    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[HUGE], raw_data=weights)
    case("initializer-dim-2e62", add_model(t), "initializer of dims [2^62] holding 16 bytes")
    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[HUGE, 4])
    case("initializer-dims-overflow", add_model(t), "initializer of dims [2^62, 4]: element count overflows")
    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[2, 3], raw_data=b"\0" * 5)
    case("initializer-short-data", add_model(t), "initializer of dims [2, 3] holding 5 bytes")
    shape = helper.make_tensor("shape", TensorProto.INT64, [2], [HUGE, 4])
    case("constantofshape-2e62",
         model_of([helper.make_node("ConstantOfShape", ["shape"], ["big"]),
                   helper.make_node("Relu", ["big"], ["y"])], [], [vi("y", None)], [shape]),
         "ConstantOfShape to [2^62, 4]: element count overflows")

    case("external-dotdot", add_model(external_w("../outside.bin")), "external data at ../outside.bin")
    case("external-dotdot-inner", add_model(external_w("sub/../../outside.bin")),
         "external data at sub/../../outside.bin", lambda d: os.makedirs(os.path.join(d, "sub"), exist_ok=True))
    case("external-absolute", add_model(external_w(os.path.join(out, "outside.bin"))),
         "external data at an absolute path")
    case("external-missing", add_model(external_w("missing.bin")), "external file does not exist")
    case("external-symlink", add_model(external_w("link.bin")), "external file is a symlink out of the folder",
         lambda d: os.symlink(os.path.join("..", "outside.bin"), os.path.join(d, "link.bin")))

    def inside(d):
        with open(os.path.join(d, "weights.bin"), "wb") as f:
            f.write(weights)
    case("external-offset-2e62", add_model(external_w("weights.bin", offset=HUGE)),
         "external data at offset 2^62 of a 16-byte file", inside)
    case("external-length-2e62", add_model(external_w("weights.bin", length=HUGE)),
         "external data of length 2^62 from a 16-byte file", inside)

    case("cycle",
         model_of([helper.make_node("Add", ["x", "t2"], ["t1"]), helper.make_node("Relu", ["t1"], ["t2"])],
                  [vi("x", [4])], [vi("t2", [4])]),
         "t1 = x + t2, t2 = relu(t1)")
    case("dangling-input",
         model_of([helper.make_node("Relu", ["nowhere"], ["y"])], [vi("x", [4])], [vi("y", [4])]),
         "a node input that nothing produces")
    case("dangling-output",
         model_of([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [4])], [vi("nothing", [4])]),
         "a graph output that nothing produces")
    case("duplicate-producer",
         model_of([helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Neg", ["x"], ["y"])],
                  [vi("x", [4])], [vi("y", [4])]),
         "two nodes produce y")

    # Nesting that makes a recursive unpacker overflow its stack (34 KB and 100 KB files).
    case("nested-sequence-5000", deep_sequence_model(5000), "an input type of 5000 nested sequences")
    case("nested-if-3000", deep_if_model(3000), "3000 If nodes nested through their then_branch")

    for name, p, why in cases:
        print("%s %s %s" % (name, p, why))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

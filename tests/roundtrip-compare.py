#!/usr/bin/python3
"""Checks whittle's load -> save round trip (used by tests/e2e-roundtrip.sh).

    roundtrip-compare.py compare PAIRS_FILE [--expect-unknown MODEL=N]... [--show N]
    roundtrip-compare.py make-fixtures DIR

compare: PAIRS_FILE holds tests/tool-roundtrip's lines ("ok<TAB>saved<TAB>original" or
"error<TAB>original<TAB>why"). Every saved model must equal its original, message by
message, through the whole ModelProto: nodes with their attributes (subgraphs included),
initializers, inputs, outputs, value_info, opsets, ir_version and every metadata field of
model and graph, plus the fields that Debian's onnx.proto does not know (newer ONNX
fields in the test data, or the unknown fields of the fixtures), which protobuf keeps as
unknown fields in parse order. Two encodings are allowed to differ because whittle may
rewrite them: tensor values may move between raw_data and the typed fields (compared as
little-endian bytes of the values), and external data is saved inline (the original is
compared with its external data loaded). A scalar field left unset equals one set to its
default, except inside a oneof, where presence is meaning (dim_value 0 is not an unknown
dimension). --expect-unknown MODEL=N: the original MODEL must carry at least N unknown
fields, so the unknown-field check is not vacuous.
Prints "roundtrip: M models, D differences" and the first differences; exits 1 if any.

make-fixtures: writes models that exercise what the test data does not: unknown fields in
ModelProto, GraphProto, NodeProto, AttributeProto, TensorProto, ValueInfoProto and
TypeProto; every metadata field; typed-field (not raw_data) initializers; external data.
Prints "FILE N" per fixture, N being the number of unknown fields in it.
Debian's python3-onnx is needed: run with /usr/bin/python3.
"""
import os
import struct
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

try:
    from google.protobuf import unknown_fields as _uf

    def unknown_list(msg):
        return [(f.field_number, f.wire_type, _uf_data(f.data)) for f in _uf.UnknownFieldSet(msg)]

    def _uf_data(d):
        if isinstance(d, (bytes, int)):
            return d
        return tuple((f.field_number, f.wire_type, _uf_data(f.data)) for f in d)
except ImportError:  # older protobuf: the deprecated method
    def unknown_list(msg):
        return [(f.field_number, f.wire_type, f.data) for f in msg.UnknownFields()]


TENSOR_DATA_FIELDS = {"float_data", "int32_data", "string_data", "int64_data", "raw_data",
                      "double_data", "uint64_data", "data_location", "external_data"}
# data_type -> (typed field, little-endian numpy dtype of one stored value).
TYPED = {
    1: ("float_data", "<f4"), 2: ("int32_data", "<u1"), 3: ("int32_data", "<i1"),
    4: ("int32_data", "<u2"), 5: ("int32_data", "<i2"), 6: ("int32_data", "<i4"),
    7: ("int64_data", "<i8"), 9: ("int32_data", "<u1"), 10: ("int32_data", "<u2"),
    11: ("double_data", "<f8"), 12: ("uint64_data", "<u4"), 13: ("uint64_data", "<u8"),
    14: ("float_data", "<f4"), 15: ("double_data", "<f8"), 16: ("int32_data", "<u2"),
}


def tensor_bytes(t):
    """The tensor's values as canonical bytes (or a tuple for strings)."""
    if t.data_type == TensorProto.STRING:
        return ("strings", tuple(t.string_data))
    if t.HasField("raw_data"):
        return bytes(t.raw_data)
    if t.data_type in TYPED:
        field, dt = TYPED[t.data_type]
        vals = getattr(t, field)
        if dt in ("<f4", "<f8"):
            return np.array(vals, dtype=dt).tobytes()
        # Integers wrap like the C types; fp16/bf16 are stored as bit patterns.
        return np.array(vals, dtype=np.int64 if field != "uint64_data" else np.uint64).astype(dt).tobytes()
    # Newer types (float8, 4-bit, 2-bit, e8m0): one byte, or one packed byte, per int32.
    return np.array(t.int32_data, dtype=np.int64).astype("<u1").tobytes()


def same_scalar(x, y):
    if isinstance(x, float) and isinstance(y, float):
        return struct.pack("<d", x) == struct.pack("<d", y) or (x != x and y != y)
    return x == y


def describe(v):
    s = repr(v)
    return s if len(s) <= 80 else s[:77] + "..."


class Comparer:
    def __init__(self):
        self.diffs = []

    def diff(self, path, what):
        self.diffs.append("%s: %s" % (path, what))

    def message(self, a, b, path):
        if len(self.diffs) > 20:
            return
        desc = a.DESCRIPTOR
        is_tensor = desc.full_name == "onnx.TensorProto"
        for fd in desc.fields:
            if is_tensor and fd.name in TENSOR_DATA_FIELDS:
                continue
            p = "%s.%s" % (path, fd.name)
            va, vb = getattr(a, fd.name), getattr(b, fd.name)
            if fd.label == fd.LABEL_REPEATED:
                if len(va) != len(vb):
                    self.diff(p, "%d entries vs %d" % (len(va), len(vb)))
                    continue
                for i, (x, y) in enumerate(zip(va, vb)):
                    if fd.type == fd.TYPE_MESSAGE:
                        self.message(x, y, "%s[%d]" % (p, i))
                    elif not same_scalar(x, y):
                        self.diff("%s[%d]" % (p, i), "%s vs %s" % (describe(x), describe(y)))
            elif fd.type == fd.TYPE_MESSAGE:
                ha, hb = a.HasField(fd.name), b.HasField(fd.name)
                if ha != hb:
                    self.diff(p, "present %s vs %s" % (ha, hb))
                elif ha:
                    self.message(va, vb, p)
            else:
                if fd.containing_oneof is not None and a.HasField(fd.name) != b.HasField(fd.name):
                    self.diff(p, "present %s vs %s" % (a.HasField(fd.name), b.HasField(fd.name)))
                elif not same_scalar(va, vb):
                    self.diff(p, "%s vs %s" % (describe(va), describe(vb)))
        if is_tensor:
            if b.data_location == TensorProto.EXTERNAL:
                self.diff(path, "saved with external data")
            ca, cb = tensor_bytes(a), tensor_bytes(b)
            if ca != cb:
                self.diff(path + ".<values>", "differ (%d vs %d bytes)" % (len(ca), len(cb)))
        ua, ub = unknown_list(a), unknown_list(b)
        if ua != ub:
            self.diff(path + ".<unknown fields>", "%s vs %s" % (describe(ua), describe(ub)))


def count_unknown(msg):
    n = len(unknown_list(msg))
    for fd, v in msg.ListFields():
        if fd.type != fd.TYPE_MESSAGE:
            continue
        for x in (v if fd.label == fd.LABEL_REPEATED else [v]):
            n += count_unknown(x)
    return n


def load(path):
    with open(path, "rb") as f:
        m = onnx.ModelProto()
        m.ParseFromString(f.read())
    onnx.external_data_helper.load_external_data_for_model(m, os.path.dirname(os.path.abspath(path)))
    return m


def compare(argv):
    pairs_file = argv[0]
    expect = {}
    show = 10
    i = 1
    while i < len(argv):
        if argv[i] == "--expect-unknown":
            k, v = argv[i + 1].rsplit("=", 1)
            expect[os.path.abspath(k)] = int(v)
            i += 2
        elif argv[i] == "--show":
            show = int(argv[i + 1])
            i += 2
        else:
            sys.stderr.write("roundtrip-compare: unknown argument %s\n" % argv[i])
            return 2
    models = bad = unknown_total = 0
    report = []
    seen_expect = set()
    with open(pairs_file, encoding="utf-8", errors="surrogateescape") as f:
        lines = [ln.rstrip("\n") for ln in f if ln.strip()]
    for ln in lines:
        parts = ln.split("\t")
        models += 1
        if parts[0] != "ok" or len(parts) != 3:
            bad += 1
            report.append("%s: whittle could not round-trip it: %s" % (
                parts[1] if len(parts) > 1 else ln, parts[2] if len(parts) > 2 else "?"))
            continue
        saved, orig = parts[1], parts[2]
        try:
            a = load(orig)
        except Exception as e:  # the original itself: not whittle's fault, but say so
            bad += 1
            report.append("%s: python onnx cannot load the original: %s" % (orig, e))
            continue
        try:
            b = load(saved)
        except Exception as e:
            bad += 1
            report.append("%s: the saved model does not parse: %s" % (orig, e))
            continue
        c = Comparer()
        c.message(a, b, "model")
        n_unknown = count_unknown(a)
        unknown_total += n_unknown
        key = os.path.abspath(orig)
        if key in expect:
            seen_expect.add(key)
            if n_unknown < expect[key]:
                c.diff("model", "fixture carries %d unknown fields, %d expected (fixture broken)"
                       % (n_unknown, expect[key]))
        if c.diffs:
            bad += 1
            report.append("%s:\n    %s" % (orig, "\n    ".join(c.diffs[:5])))
    for k in expect:
        if k not in seen_expect:
            bad += 1
            report.append("%s: expected fixture was not round-tripped" % k)
    for r in report[:show]:
        print("  " + r)
    if len(report) > show:
        print("  ... and %d more" % (len(report) - show))
    print("roundtrip: %d models, %d differences (%d unknown fields carried)" % (models, bad, unknown_total))
    return 1 if bad or models == 0 else 0


# ---- fixtures ----

def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def with_unknown(msg, tag, value):
    """msg re-parsed with an extra varint field `tag` (unknown to onnx.proto) appended."""
    data = msg.SerializeToString() + varint(tag << 3) + varint(value)
    out = type(msg)()
    out.ParseFromString(data)
    return out


def with_unknown_bytes(msg, tag, payload):
    data = msg.SerializeToString() + varint((tag << 3) | 2) + varint(len(payload)) + payload
    out = type(msg)()
    out.ParseFromString(data)
    return out


def make_fixtures(outdir):
    os.makedirs(outdir, exist_ok=True)
    # 1. unknown fields everywhere, every metadata field, typed-field weights.
    w = helper.make_tensor("w", TensorProto.FLOAT, [2, 3], [0.5, -1.0, 2.0, 3.25, -0.0, 1e-30])
    w.doc_string = "weight doc"
    w = with_unknown(w, 1000, 11)
    shape_c = helper.make_tensor("shape_c", TensorProto.INT64, [2], [3, 2])
    node_c = helper.make_node("Constant", [], ["shape"], name="c0", value=shape_c)
    node_c.attribute[0].doc_string = "attr doc"
    attr = with_unknown(node_c.attribute[0], 1000, 12)
    del node_c.attribute[:]
    node_c.attribute.add().CopyFrom(attr)
    mm = helper.make_node("MatMul", ["x", "w"], ["y0"], name="mm", doc_string="node doc")
    mm = with_unknown(mm, 1000, 13)
    rs = helper.make_node("Reshape", ["y0", "shape"], ["y"], name="rs")
    rs = with_unknown_bytes(rs, 1001, b"\x01\x02opaque")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2])
    x = with_unknown(x, 1000, 14)
    x.type.CopyFrom(with_unknown(x.type, 1000, 15))
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 2])
    vi = helper.make_tensor_value_info("y0", TensorProto.FLOAT, [1, 3])
    g = helper.make_graph([node_c, mm, rs], "fixture_graph", [x], [y], [w], doc_string="graph doc",
                          value_info=[vi])
    g = with_unknown(g, 1000, 16)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.example", 1)],
                          producer_name="whittle-fixture", producer_version="1.2.3", domain="org.example",
                          model_version=42, doc_string="model doc")
    m.ir_version = 7
    helper.set_model_props(m, {"author": "roundtrip-compare.py", "purpose": "unknown fields"})
    m = with_unknown(m, 1000, 17)
    m = with_unknown_bytes(m, 1001, b"model-level opaque bytes")
    onnx.checker.check_model(m)
    paths = []
    p = os.path.join(outdir, "unknown-fields.onnx")
    with open(p, "wb") as f:
        f.write(m.SerializeToString())
    paths.append((p, count_unknown(m)))

    # 2. external data: the saved model carries the same values inline.
    ext_dir = os.path.join(outdir, "external")
    os.makedirs(ext_dir, exist_ok=True)
    vals = np.arange(24, dtype=np.float32).reshape(2, 3, 4) * 0.25
    blob = b"\0" * 16 + vals.tobytes()
    with open(os.path.join(ext_dir, "weights.bin"), "wb") as f:
        f.write(blob)
    t = TensorProto(name="b", data_type=TensorProto.FLOAT, dims=[2, 3, 4])
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "weights.bin"), ("offset", "16"), ("length", str(vals.nbytes))):
        e = t.external_data.add()
        e.key, e.value = k, v
    add = helper.make_node("Add", ["x", "b"], ["y"])
    g = helper.make_graph([add], "external", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 4])], [t])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    p = os.path.join(ext_dir, "model.onnx")
    with open(p, "wb") as f:
        f.write(m.SerializeToString())
    paths.append((p, 0))
    for p, n in paths:
        print("%s %d" % (p, n))
    return 0


def main(argv):
    if len(argv) >= 3 and argv[1] == "compare":
        return compare(argv[2:])
    if len(argv) == 3 and argv[1] == "make-fixtures":
        return make_fixtures(argv[2])
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))

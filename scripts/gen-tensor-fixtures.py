#!/usr/bin/python3
"""Writes fixtures/tensors/: small .npy files made by numpy and .pb files made by onnx,
each with a .txt holding the expected contents, for tests/check-tensor-file.c.

Run with Debian's python3 (numpy + python3-onnx): /usr/bin/python3 scripts/gen-tensor-fixtures.py

<stem>.txt format (written here, parsed by the Check suite):
  line 1: <onnx data type number> <rank> <dim>...
  then either one line "x:<hex>" holding the elements as whittle keeps them in memory
  (little-endian; 4-bit types one byte per element, int4 sign-extended; bool 0/1),
  or, for strings, one line "s:<hex of the utf-8 bytes>" per element.
Files named bad-*.npy / bad-*.pb have no .txt: the suite expects them to be rejected.
"""
import os
import struct
import sys

import numpy as np
import onnx
from onnx import numpy_helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "tensors")

# numpy dtype -> ONNX TensorProto data type number
ONNX_TYPE = {
    "bool": 9, "int8": 3, "uint8": 2, "int16": 5, "uint16": 4, "int32": 6, "uint32": 12,
    "int64": 7, "uint64": 13, "float16": 10, "float32": 1, "float64": 11,
    "complex64": 14, "complex128": 15,
}


def path(name):
    return os.path.join(OUT, name)


def expect(stem, dtype_num, shape, payload_lines):
    with open(path(stem + ".txt"), "w") as f:
        f.write(" ".join(str(x) for x in [dtype_num, len(shape)] + list(shape)) + "\n")
        for line in payload_lines:
            f.write(line + "\n")


def expect_array(stem, a):
    """Expected in-memory bytes of a numpy array, little-endian, C order."""
    le = np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<"))
    expect(stem, ONNX_TYPE[a.dtype.name], a.shape, ["x:" + le.tobytes().hex()])


def sample(dt):
    """A 2x3 array of dt including the type's extremes."""
    if dt == "bool":
        return np.array([[True, False, True], [False, False, True]])
    if dt.startswith("int") or dt.startswith("uint"):
        info = np.iinfo(dt)
        vals = [info.min, info.max, 0, 1, info.max // 3, info.min // 2 if info.min else 7]
        return np.array(vals, dtype=dt).reshape(2, 3)
    if dt.startswith("float"):
        info = np.finfo(dt)
        return np.array([1.5, -0.0, np.inf, info.tiny, -info.max, 0.1], dtype=dt).reshape(2, 3)
    if dt.startswith("complex"):
        return np.array([1 + 2j, -3.5j, 0, np.inf, 1e-3 - 4j, -1], dtype=dt).reshape(2, 3)
    raise ValueError(dt)


def save_pb(name, tp):
    with open(path(name), "wb") as f:
        f.write(tp.SerializeToString())


def raw_pb(stem, dtype_num, shape, raw, name=None):
    """A TensorProto built field by field, for types this onnx release has no enum for."""
    tp = onnx.TensorProto()
    tp.dims.extend(shape)
    tp.data_type = dtype_num
    tp.raw_data = raw
    if name:
        tp.name = name
    save_pb(stem + ".pb", tp)


def main():
    os.makedirs(OUT, exist_ok=True)
    for old in os.listdir(OUT):
        if old.endswith((".npy", ".pb", ".txt")):
            os.remove(path(old))

    # every numpy type: np.save, onnx numpy_helper (raw_data), and the expected bytes
    for dt in ONNX_TYPE:
        a = sample(dt)
        np.save(path(dt + ".npy"), a)
        save_pb(dt + ".pb", numpy_helper.from_array(a, name="t_" + dt))
        expect_array(dt, a)

    # byte order, format versions, odd shapes
    for dt in ["float32", "int64", "complex64", "uint16"]:
        a = sample(dt)
        np.save(path("be-" + dt + ".npy"), a.astype(a.dtype.newbyteorder(">")))
        expect_array("be-" + dt, a)
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 8
    for v in [(2, 0), (3, 0)]:
        stem = "v%d-float32" % v[0]
        with open(path(stem + ".npy"), "wb") as f:
            np.lib.format.write_array(f, a, version=v)
        expect_array(stem, a)
    a = np.array(2.25, dtype=np.float64)
    np.save(path("scalar-float64.npy"), a)
    expect_array("scalar-float64", a)
    save_pb("scalar-float64.pb", numpy_helper.from_array(a, name="s"))
    a = np.zeros((0, 3), dtype=np.int32)
    np.save(path("empty-int32.npy"), a)
    expect_array("empty-int32", a)
    save_pb("empty-int32.pb", numpy_helper.from_array(a, name="e"))
    a = np.arange(5, dtype=np.int16)
    np.save(path("fortran1d-int16.npy"), np.asfortranarray(a))
    expect_array("fortran1d-int16", a)
    # a Python 2 header ("3L"), written by hand
    a = np.array([7, -8, 9], dtype=np.int32)
    hdr = "{'descr': '<i4', 'fortran_order': False, 'shape': (3L,), }"
    hdr += " " * (64 - (10 + len(hdr) + 1) % 64) + "\n"
    with open(path("py2-int32.npy"), "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode() + a.tobytes())
    expect_array("py2-int32", a)

    # .npy files whittle must refuse
    np.save(path("bad-fortran.npy"), np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3)))
    np.save(path("bad-unicode.npy"), np.array(["ab", "c"]))
    np.save(path("bad-void2.npy"), np.zeros(3, dtype="V2"))  # what bfloat16 looks like to numpy
    np.save(path("bad-struct.npy"), np.zeros(2, dtype=[("a", "<f4"), ("b", "<i4")]))
    np.save(path("bad-f16.npy"), np.zeros(2, dtype=np.longdouble))
    with open(path("float32.npy"), "rb") as f:
        whole = f.read()
    with open(path("bad-truncated.npy"), "wb") as f:
        f.write(whole[:-5])

    # .pb files in the typed fields instead of raw_data
    a = np.array([[1.5, -2.0], [3.25, 1e-30]], dtype=np.float32)
    save_pb("typed-float32.pb", onnx.helper.make_tensor("tf", 1, a.shape, a.flatten().tolist()))
    expect_array("typed-float32", a)
    a = np.array([1.0, -0.5, 65504.0], dtype=np.float16)
    tp = onnx.TensorProto()
    tp.name = "th"
    tp.data_type = 10
    tp.dims.extend(a.shape)
    tp.int32_data.extend(a.view(np.uint16).astype(np.int32).tolist())
    save_pb("typed-float16.pb", tp)
    expect_array("typed-float16", a)
    a = np.array([-(2**63), 2**63 - 1, 5], dtype=np.int64)
    save_pb("typed-int64.pb", onnx.helper.make_tensor("ti", 7, a.shape, a.tolist()))
    expect_array("typed-int64", a)

    # strings: empty, UTF-8, spaces
    strs = [b"hello", b"", "gr\u00fc\u00dfe \u2713".encode(), b"a b\tc"]
    save_pb("string.pb", onnx.helper.make_tensor("names", 8, [2, 2], strs))
    expect("string", 8, [2, 2], ["s:" + s.hex() for s in strs])

    # types this onnx release cannot name: raw bytes by hand
    int4 = [-8, -1, 0, 7, 3]
    packed = bytes([(int4[0] & 15) | (int4[1] & 15) << 4, (int4[2] & 15) | (int4[3] & 15) << 4, int4[4] & 15])
    raw_pb("int4", 22, [5], packed, "q")
    expect("int4", 22, [5], ["x:" + bytes(v & 0xFF for v in int4).hex()])
    uint4 = [15, 0, 9, 1]
    raw_pb("uint4", 21, [2, 2], bytes([uint4[0] | uint4[1] << 4, uint4[2] | uint4[3] << 4]))
    expect("uint4", 21, [2, 2], ["x:" + bytes(uint4).hex()])
    int2 = [-2, -1, 0, 1, 1, -2]
    packed = bytes([sum((v & 3) << (2 * i) for i, v in enumerate(int2[:4])),
                    sum((v & 3) << (2 * i) for i, v in enumerate(int2[4:]))])
    raw_pb("int2", 26, [2, 3], packed, "i2")
    expect("int2", 26, [2, 3], ["x:" + bytes(v & 0xFF for v in int2).hex()])
    uint2 = [3, 2, 1, 0, 3]
    packed = bytes([sum(v << (2 * i) for i, v in enumerate(uint2[:4])), uint2[4]])
    raw_pb("uint2", 25, [5], packed)
    expect("uint2", 25, [5], ["x:" + bytes(uint2).hex()])
    bf16 = bytes.fromhex("803f0040c07f0080")  # 1.0, 2.0, nan, -0.0
    raw_pb("bfloat16", 16, [4], bf16, "b")
    expect("bfloat16", 16, [4], ["x:" + bf16.hex()])
    f8 = bytes([0x38, 0xB8, 0x7E, 0x00, 0x01, 0x7F])
    raw_pb("float8e4m3fn", 17, [3, 2], f8)
    expect("float8e4m3fn", 17, [3, 2], ["x:" + f8.hex()])

    # .pb files whittle must refuse
    raw_pb("bad-rawsize", 1, [2, 3], b"\0" * 20)
    raw_pb("bad-type", 99, [2], b"\0\0")
    raw_pb("bad-negdim", 1, [-1, 3], b"")
    raw_pb("bad-hugedim", 1, [2**62, 4], b"\0" * 16)
    with open(path("float32.pb"), "rb") as f:
        whole = f.read()
    with open(path("bad-truncated.pb"), "wb") as f:
        f.write(whole[:-7])
    print("wrote", len(os.listdir(OUT)), "files to", os.path.normpath(OUT))


if __name__ == "__main__":
    sys.exit(main())

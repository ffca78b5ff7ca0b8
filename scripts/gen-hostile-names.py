#!/usr/bin/python3
"""Writes a small model whose names attack terminals and Markdown reports (issue 22).

    /usr/bin/python3 scripts/gen-hostile-names.py OUT.onnx

Layer, tensor, input, output and weight names hold backticks, `|`, `<script>`,
`<img src=x onerror=alert(1)>`, newlines that would start a heading or a table row, ESC
sequences (CSI 2J clears the screen, OSC 52 sets the clipboard), C1 control characters
(U+009B, a one-character CSI), DEL, bytes that are not UTF-8 and a 300-byte name. Every
hostile name holds the marker "PWN", so a test can tell whether a name reached a report
outside a code span. The model runs: x (values 0..1 by default) goes through MatMul with an
identity, Mul by 300, Pow 2 (overflows fp16's 65504: the model fails at --precision fp16
and passes at fp32), ReduceMean and Add; MatMul has a choice of tactics.
Deterministic; uses Debian's python3-onnx (run with /usr/bin/python3).
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# Names protobuf cannot hold as Python strings (not UTF-8) are written as placeholders of
# the same length and patched in the serialized bytes.
RAW = {
    "QQQQ-PWN": b"\xff\xfe\xc0\xaf-PWN",  # not UTF-8: invalid bytes, an overlong '/'
}

INPUT = "in`put|<script>alert(1)</script>PWN"
WEIGHT = "w``|<b>bold</b>PWN"
T_MM = "t\x1b[2J\x1b[HPASS PWN"                     # CSI 2J: clears the screen
T_MUL = "m|`x`|\x1b]52;c;UFdO\x07PWN"                # OSC 52: sets the clipboard
T_POW = "sq\u009b31mPWN\u0085"                       # C1: CSI, NEL
T_MEAN = "mean\x7fPWN\r"                             # DEL, CR
OUTPUT = "out|`PWN`|\n| fake | row |\n# PWN heading"
N_MM = "mm\x7f\u0090|<u>PWN`"
N_MUL = "mul\n# PWNED heading\n<img src=x onerror=alert(1)>"
N_POW = "pow\x1b]52;c;UFdO\x07<script>alert('PWN')</script>"
N_MEAN = "long-PWN-" + "`|<i>\x1b[1m" * 31 + "-end-padding"  # 300 bytes
N_ADD = "`add` | <a href=javascript:alert(1)>x</a> QQQQ-PWN"
C300 = "c300"
C2 = "c2"

assert len(N_MEAN.encode()) == 300, len(N_MEAN.encode())


def main():
    out = sys.argv[1]
    nodes = [
        helper.make_node("MatMul", [INPUT, WEIGHT], [T_MM], name=N_MM),
        helper.make_node("Mul", [T_MM, C300], [T_MUL], name=N_MUL),
        helper.make_node("Pow", [T_MUL, C2], [T_POW], name=N_POW),
        helper.make_node("ReduceMean", [T_POW], [T_MEAN], name=N_MEAN, axes=[1], keepdims=1),
        helper.make_node("Add", [T_MEAN, INPUT], [OUTPUT], name=N_ADD),
    ]
    inits = [
        numpy_helper.from_array(np.eye(4, dtype=np.float32), WEIGHT),
        numpy_helper.from_array(np.array(300, dtype=np.float32), C300),
        numpy_helper.from_array(np.array(2, dtype=np.float32), C2),
    ]
    g = helper.make_graph(nodes, "hostile`names|<script>PWN", [helper.make_tensor_value_info(INPUT, TensorProto.FLOAT, [1, 4])],
                          [helper.make_tensor_value_info(OUTPUT, TensorProto.FLOAT, [1, 4])], inits)
    g.doc_string = "doc\x1b[2J<script>PWN</script>"
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="gen-hostile-names")
    m.ir_version = 7
    onnx.checker.check_model(m)
    data = m.SerializeToString()
    for k, v in RAW.items():
        assert len(k.encode()) == len(v) and data.count(k.encode()) >= 1
        data = data.replace(k.encode(), v)
    with open(out, "wb") as f:
        f.write(data)


if __name__ == "__main__":
    main()

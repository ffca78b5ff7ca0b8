#!/usr/bin/python3
"""A model whose precision answer is 60 layers, named like an exporter names them, for
tests/e2e-precision-report.sh (issue 23, acceptance 4: a long answer reported readably).

usage: gen-many-layers-fixture.py OUT_DIR

Writes OUT_DIR/sixty.onnx and its inputs OUT_DIR/sixty/input_<k>.pb, and prints
`expect sixty fp16 <layer>` for every layer of the answer (names printed with Python's
ascii(), since two of them hold control characters).

sixty: 91 layers on inputs x and gain ([1, 16]; gain holds one 90). A Tanh on x, then 30
sites, 5 in each of 6 "decoder layers": site k multiplies gain by 1024 (92160, beyond fp16's
65504), multiplies that by 2^-13 (back to 11.25) and adds it into the chain. Under whittle's
precision semantics (tests/gen-precision-search-fixtures.py) both Muls of every site must run
in fp32 and nothing else: the answer is those 60 layers, 1-minimal. The generator checks that
in numpy (fp32, and the fp16 emulation) and exits non-zero when it does not hold.

Names follow an exporter's module scopes: /m/model/layers.<L>/<self_attn|mlp>/<proj>/Mul,
.../Mul_1 (the two of the answer) and .../Add. The scope of the last decoder layer is hostile:
`layers.5` followed by an ESC sequence that clears a terminal, a '|' and a backtick, so that a
report that does not escape names shows it.
"""
import importlib.util
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("psf", os.path.join(HERE, "gen-precision-search-fixtures.py"))
psf = importlib.util.module_from_spec(spec)
spec.loader.exec_module(psf)

HOSTILE = "layers.5\x1b[2J|`"
PROJ = ["q_proj", "k_proj", "v_proj", "up_proj", "down_proj"]


def scope(k):
    layer = k // 5
    part = "self_attn" if k % 5 < 3 else "mlp"
    name = HOSTILE if layer == 5 else "layers.%d" % layer
    return "/m/model/%s/%s/%s" % (name, part, PROJ[k % 5])


def sixty(out_dir, rng):
    n = 16
    b = psf.Builder()
    cur = b.layer("Tanh", ["x"], name="/m/model/embed/Tanh")
    answer = set()
    for k in range(30):
        s = scope(k)
        g = b.layer("Mul", ["gain", b.c(1024.0)], name=s + "/Mul")
        g = b.layer("Mul", [g, b.c(2.0 ** -13)], name=s + "/Mul_1")
        cur = b.layer("Add", [cur, g], name=s + "/Add")
        answer |= {s + "/Mul", s + "/Mul_1"}
    b.nodes[-1].output[0] = "y"
    x = rng.uniform(-1, 1, size=(1, n)).astype(np.float32)
    gain = rng.uniform(0, 60, size=(1, n)).astype(np.float32)
    gain[0, 9] = 90
    feeds = {"x": x, "gain": gain}
    psf.check_answer("sixty", b.nodes, b.inits, feeds, answer)
    psf.save_model(out_dir, "sixty", b.nodes, [psf.vi("x", [1, n]), psf.vi("gain", [1, n])], [psf.vi("y", [1, n])], b.inits)
    psf.save_inputs(os.path.join(out_dir, "sixty"), [("x", x), ("gain", gain)])
    return sorted(answer)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen-many-layers-fixture.py OUT_DIR")
    os.makedirs(sys.argv[1], exist_ok=True)
    for layer in sixty(sys.argv[1], np.random.default_rng(60)):
        print("expect sixty fp16 %s" % ascii(layer))


if __name__ == "__main__":
    main()

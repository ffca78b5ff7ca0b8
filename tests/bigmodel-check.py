#!/usr/bin/python3
"""Loads a model written by whittle as the onnx package and ONNX Runtime would, and checks
its outputs against reference values.

  bigmodel-check.py MODEL INPUTS_DIR REF_DIR [--log FILE] [--fail-if-node NAME] [--ort-run JS]

1. onnx.load with its external data, and onnx.checker on the path (which follows the
   external data of models over 2 GiB as well);
2. ONNX Runtime (scripts/ort-run.js) runs MODEL on INPUTS_DIR; each output must match
   REF_DIR/<name>.pb (rtol 1e-4, atol 1e-4; float16 1e-2).
Without --log, a problem is one line on stderr and exit 1. With --log (the mode of an
external reduce check), the verdict line "OK MODEL" or "BAD MODEL: why" is appended to FILE
and the exit status is the check's: 1 when MODEL holds a node named --fail-if-node, else 0.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper


def escape(name):
    """ort-run.js's file name for a tensor: bytes outside [A-Za-z0-9._-] become %XX."""
    return "".join(chr(b) if (b < 128 and chr(b).isalnum()) or chr(b) in "._-" else "%%%02X" % b
                   for b in name.encode())


def check(a):
    m = onnx.load(a.model, load_external_data=True)
    onnx.checker.check_model(a.model)
    for t in m.graph.initializer:
        if t.data_location == onnx.TensorProto.EXTERNAL:
            return "initializer %s kept external after load_external_data" % t.name
    with tempfile.TemporaryDirectory() as out:
        r = subprocess.run(["node", a.ort_run, a.model, a.inputs, out], capture_output=True, text=True)
        if r.returncode:
            return "ONNX Runtime: " + (r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1]
        for o in m.graph.output:
            got = os.path.join(out, escape(o.name) + ".pb")
            ref = os.path.join(a.ref, escape(o.name) + ".pb")
            if not os.path.exists(ref):
                return "no reference for output %s" % o.name
            x = numpy_helper.to_array(onnx.load_tensor(got)).astype(np.float64)
            y = numpy_helper.to_array(onnx.load_tensor(ref)).astype(np.float64)
            tol = 1e-2 if o.type.tensor_type.elem_type == onnx.TensorProto.FLOAT16 else 1e-4
            if x.shape != y.shape or not np.allclose(x, y, rtol=tol, atol=tol):
                return "output %s differs from the reference (max %g)" % (
                    o.name, np.abs(x - y).max() if x.shape == y.shape else float("inf"))
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("inputs")
    ap.add_argument("ref")
    ap.add_argument("--log")
    ap.add_argument("--fail-if-node")
    ap.add_argument("--ort-run", default=os.path.join(os.path.dirname(__file__), "..", "scripts", "ort-run.js"))
    a = ap.parse_args()
    try:
        why = check(a)
    except Exception as e:  # any failure to load is the finding
        why = "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    if not a.log:
        if why:
            sys.exit("bigmodel-check: %s: %s" % (a.model, why))
        return
    with open(a.log, "a") as f:
        f.write(("BAD %s: %s\n" % (a.model, why)) if why else ("OK %s\n" % a.model))
    names = {n.name for n in onnx.load(a.model, load_external_data=False).graph.node}
    sys.exit(1 if a.fail_if_node in names else 0)


if __name__ == "__main__":
    main()

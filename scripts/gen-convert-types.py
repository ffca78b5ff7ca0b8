#!/usr/bin/python3
"""Writes graph/convert-types.inc: for every op of the default ONNX domain and every version of
its schema, whether the op can compute in float16 and bfloat16 and which inputs and outputs
follow that type (python3-onnx's onnx.defs). `whittle convert` reads it (graph/convert.c): the
C tool cannot use Python, so the table is generated once and committed; tests/e2e-convert.sh
runs this script with --check to compare the committed table with onnx.defs.

usage: gen-convert-types.py [--check] OUT.inc

The "converted" type variable of a schema is the type variable of its first output whose
allowed types include tensor(float); when no output has one (ArgMax, Less, IsNaN), that of
its first input. An input or output bound to that variable takes the new type; every other
input and output keeps its own (Resize's roi and scales, LayerNormalization's Mean and
InvStdDev, Range bounds used as shapes, indices, axes, Q/DQ scales...). fp16/bf16: whether
the variable admits tensor(float16) / tensor(bfloat16). Ops with an input or output that is
only ever a sequence, map or optional keep their types (their element types follow the
tensors'); an op that takes tensors or sequences (Identity, If) converts only tensors
(graph/convert.c checks each value).

Ops whose output type is an attribute (Cast's `to` is handled by the converter; the others:
ConstantOfShape, EyeLike, the Random* ops, Constant, Multinomial, Bernoulli, the window
functions and MelWeightMatrix: `output_datatype`) and Q/DQ
(kept in FP32 by design: TensorRT keeps their scales in FP32) are written with fp16 = bf16 =
0, so they keep FP32 and get Casts around them.

onnx.defs of python3-onnx 1.12 knows opsets up to 17; the rows for newer schema versions
that matter to the converter are written below by hand from the ONNX operator docs
(EXTRA). A model whose opset is newer than a row uses the latest row at or below it.
"""
import sys

import onnx.defs

ATTR_TYPED = {"ConstantOfShape", "EyeLike", "RandomNormal", "RandomUniform", "RandomNormalLike",
              "RandomUniformLike", "Constant", "Multinomial", "Bernoulli",
              "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear",
              "BlackmanWindow", "HammingWindow", "HannWindow", "MelWeightMatrix"}

# (op, since_version, fp16, bf16, input mask, last input variadic, output mask[, extra fp16
# inputs, extra bf16 inputs]): schema
# versions after onnx 1.12 (opset 17), from https://onnx.ai/onnx/operators/ (type constraints).
EXTRA = [
    ("Gelu", 20, 1, 1, 0x1, 0, 0x1),
    ("GroupNormalization", 18, 1, 1, 0x7, 0, 0x1),
    ("GroupNormalization", 21, 1, 1, 0x7, 0, 0x1),
    ("Col2Im", 18, 1, 1, 0x1, 0, 0x1),
    ("AffineGrid", 20, 1, 1, 0x1, 0, 0x1),
    ("IsInf", 20, 1, 1, 0x1, 0, 0x0),
    ("IsNaN", 20, 1, 1, 0x1, 0, 0x0),
    ("ReduceMax", 20, 1, 1, 0x1, 0, 0x1),
    ("ReduceMin", 20, 1, 1, 0x1, 0, 0x1),
    ("ReduceMean", 18, 1, 1, 0x1, 0, 0x1),
    ("ReduceSum", 13, 1, 1, 0x1, 0, 0x1),
    ("ReduceL1", 18, 1, 1, 0x1, 0, 0x1),
    ("ReduceL2", 18, 1, 1, 0x1, 0, 0x1),
    ("ReduceLogSum", 18, 1, 1, 0x1, 0, 0x1),
    ("ReduceLogSumExp", 18, 1, 1, 0x1, 0, 0x1),
    ("ReduceMax", 18, 1, 1, 0x1, 0, 0x1),
    ("ReduceMin", 18, 1, 1, 0x1, 0, 0x1),
    ("ReduceProd", 18, 1, 1, 0x1, 0, 0x1),
    ("ReduceSumSquare", 18, 1, 1, 0x1, 0, 0x1),
    ("Pad", 18, 1, 1, 0x5, 0, 0x1),
    ("Pad", 19, 1, 1, 0x5, 0, 0x1),
    ("Pad", 21, 1, 1, 0x5, 0, 0x1),
    ("Resize", 18, 1, 1, 0x1, 0, 0x1),
    ("Resize", 19, 1, 1, 0x1, 0, 0x1),
    ("Split", 18, 1, 1, 0x1, 0, 0xffffffff),
    ("ScatterND", 18, 1, 1, 0x5, 0, 0x1),
    ("ScatterElements", 18, 1, 1, 0x5, 0, 0x1),
    ("LpPool", 18, 1, 1, 0x1, 0, 0x1),
    ("AveragePool", 19, 1, 1, 0x1, 0, 0x1),
    ("Equal", 19, 1, 1, 0x3, 0, 0x0),
    ("Identity", 19, 1, 1, 0x1, 0, 0x1),
    ("Identity", 21, 1, 1, 0x1, 0, 0x1),
    ("Reshape", 19, 1, 1, 0x1, 0, 0x1),
    ("Reshape", 21, 1, 1, 0x1, 0, 0x1),
    ("Cast", 19, 1, 1, 0x0, 0, 0x1),
    ("Cast", 21, 1, 1, 0x0, 0, 0x1),
    ("CastLike", 19, 1, 1, 0x2, 0, 0x1),
    ("CastLike", 21, 1, 1, 0x2, 0, 0x1),
    ("DeformConv", 19, 1, 1, 0x1f, 0, 0x1),
    ("GridSample", 20, 1, 1, 0x1, 0, 0x1, 0x2, 0x2),  # grid (T2) converted too
    ("Transpose", 21, 1, 1, 0x1, 0, 0x1),
    ("Squeeze", 21, 1, 1, 0x1, 0, 0x1),
    ("Unsqueeze", 21, 1, 1, 0x1, 0, 0x1),
    ("Flatten", 21, 1, 1, 0x1, 0, 0x1),
    ("If", 19, 0, 0, 0x0, 0, 0x0),
    ("If", 21, 0, 0, 0x0, 0, 0x0),
    ("Loop", 19, 0, 0, 0x0, 0, 0x0),
    ("Loop", 21, 0, 0, 0x0, 0, 0x0),
    ("Scan", 19, 0, 0, 0x0, 0, 0x0),
    ("Scan", 21, 0, 0, 0x0, 0, 0x0),
    ("QuantizeLinear", 19, 0, 0, 0x0, 0, 0x0),
    ("QuantizeLinear", 21, 0, 0, 0x0, 0, 0x0),
    ("DequantizeLinear", 19, 0, 0, 0x0, 0, 0x0),
    ("DequantizeLinear", 21, 0, 0, 0x0, 0, 0x0),
    ("ConstantOfShape", 20, 0, 0, 0x0, 0, 0x0),
    ("ConstantOfShape", 21, 0, 0, 0x0, 0, 0x0),
    ("Constant", 19, 0, 0, 0x0, 0, 0x0),
    ("Constant", 21, 0, 0, 0x0, 0, 0x0),
]

FLOAT_T = "tensor(float)"


# inputs that parameterise an op rather than carry its data: never converted, as the
# emulation never rounds them (executor/precision.h)
# Cast and CastLike convert their input themselves (an fp16 -> fp16 Cast trips ONNX
# Runtime's cast insertion, and a float32 -> fp16 Cast is the conversion the model needs)
PARAMS = {"Resize": {1, 2}, "Upsample": {1}, "Dropout": {1}, "Cast": {0}, "CastLike": {0}}


def extra(s, tc, var, dt):
    """Inputs typed by another variable that admits dt: converted too (Pow's exponent,
    BatchNormalization's statistics, GridSample's grid), but for PARAMS."""
    m = 0
    for k, i in enumerate(s.inputs[:32]):
        allowed = tc.get(i.typeStr, ())
        if i.typeStr != var and "tensor(float)" in allowed and dt in allowed and k not in PARAMS.get(s.name, ()):
            m |= 1 << k
    return m


def row(s):
    """(fp16, bf16, input mask, variadic, output mask, extra fp16 inputs, extra bf16 inputs)."""
    tc = {t.type_param_str: set(t.allowed_type_strs) for t in s.type_constraints}
    if s.name in ATTR_TYPED:
        return (0, 0, 0, 0, 0, 0, 0)
    # sequences, maps and optionals: their element types follow the tensors', and a Cast
    # cannot convert them, so these ops keep their types
    for prm in list(s.inputs) + list(s.outputs):
        allowed = tc.get(prm.typeStr, {prm.typeStr})
        if allowed and all(t.startswith(("seq(", "map(", "optional(")) for t in allowed):
            return (0, 0, 0, 0, 0, 0, 0)
    var = None
    for o in s.outputs:
        if FLOAT_T in tc.get(o.typeStr, ()):
            var = o.typeStr
            break
    if var is None:
        for i in s.inputs:
            if FLOAT_T in tc.get(i.typeStr, ()):
                var = i.typeStr
                break
    if var is None:
        return (0, 0, 0, 0, 0, 0, 0)
    fp16 = int("tensor(float16)" in tc[var])
    bf16 = int("tensor(bfloat16)" in tc[var])
    im = 0
    for k, i in enumerate(s.inputs[:32]):
        if i.typeStr == var:
            im |= 1 << k
    om = 0
    for k, o in enumerate(s.outputs[:32]):
        if o.typeStr == var:
            om |= 1 << k
    variadic_in = int(bool(s.inputs) and s.inputs[-1].option == onnx.defs.OpSchema.FormalParameterOption.Variadic
                      and s.inputs[-1].typeStr == var)
    if s.outputs and s.outputs[-1].option == onnx.defs.OpSchema.FormalParameterOption.Variadic \
            and s.outputs[-1].typeStr == var:
        om |= ~((1 << (len(s.outputs) - 1)) - 1) & 0xffffffff
    if s.name in ("If", "Loop", "Scan"):
        return (0, 0, 0, 0, 0, 0, 0)
    return (fp16, bf16, im, variadic_in, om, extra(s, tc, var, "tensor(float16)"), extra(s, tc, var, "tensor(bfloat16)"))


# schemas python3-onnx 1.12 gets wrong, as the ONNX operator pages give them:
# GridSample-16 types X and grid with T1 and Y with T2; the spec has X, Y: T1, grid: T2
OVERRIDE = {("GridSample", 16): (1, 0, 0x1, 0, 0x1, 0x2, 0x0)}


def generated():
    rows = {}
    for s in onnx.defs.get_all_schemas_with_history():
        if s.domain != "" or s.deprecated:
            continue
        rows[(s.name, s.since_version)] = OVERRIDE.get((s.name, s.since_version)) or row(s)
    return rows


def main():
    args = sys.argv[1:]
    check = False
    if args and args[0] == "--check":
        check = True
        args = args[1:]
    if len(args) != 1:
        sys.exit(__doc__)
    rows = generated()
    if check:
        # every generated row must be in the committed table, with the same values
        text = open(args[0]).read()
        bad = 0
        for (name, ver), r in sorted(rows.items()):
            line = '{"%s", %d, %d, %d, 0x%xu, %d, 0x%xu, 0x%xu, 0x%xu},' % ((name, ver) + tuple(r))
            if line not in text:
                print("convert-types: missing or different: %s" % line)
                bad += 1
        sys.exit(1 if bad else 0)
    for e in EXTRA:
        rows.setdefault((e[0], e[1]), tuple(e[2:]) + (() if len(e) == 9 else (0, 0)))
    with open(args[0], "w") as f:
        f.write("/* Generated by scripts/gen-convert-types.py from python3-onnx %s (opsets <= %d) and the\n"
                " * hand-written rows for newer schema versions in that script; do not edit. One row per\n"
                " * schema version: op, since_version, fp16, bf16, inputs that follow the converted type\n"
                " * (bit k: input k), whether the last input is variadic of that type, outputs that\n"
                " * follow it, inputs of another type variable that admits fp16 (then bf16) and are\n"
                " * converted too. Sorted by op name, then version. */\n"
                % (onnx.__version__, onnx.defs.onnx_opset_version()))
        for (name, ver), r in sorted(rows.items()):
            f.write('{"%s", %d, %d, %d, 0x%xu, %d, 0x%xu, 0x%xu, 0x%xu},\n' % ((name, ver) + tuple(r)))


if __name__ == "__main__":
    main()

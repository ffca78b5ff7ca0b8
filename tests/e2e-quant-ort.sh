#!/bin/bash
# Quantized models in the three layouts ONNX Runtime's quantizer writes (a CNN at 224x224 from
# scripts/gen-quant-models.py: quantize_dynamic's DynamicQuantizeLinear + ConvInteger /
# MatMulInteger + Cast + Mul, quantize_static's QDQ pairs and its QOperator QLinearConv /
# QLinearMatMul) against ONNX Runtime on a seeded input:
# - dynamic: every tensor bit-identical to ONNX Runtime's (integer products are exact; the
#   quantization and the float Mul are the same operations);
# - QOperator, every tensor of ONNX Runtime's unoptimized run: the uint8 activations within
#   2 units (ONNX Runtime requantizes float(acc) * scale in float32, whittle in double as the
#   ONNX reference does: one unit apart at a rounding boundary, and a unit in one layer can
#   move the next by one more);
# - QDQ, every tensor of the unoptimized run within 2 units: whittle runs each QDQ Conv on
#   the integer GEMM (exact sums, then the scales in float32: tactic conv-qdq-int8, executor/
#   qdq.h), ONNX Runtime's unoptimized run a float Conv on the dequantized tensors (rounded
#   sums): a quantized activation moves by a unit at a rounding boundary, the next by one
#   more; every QDQ Conv is reported with that tactic by `run --profile`, and none where
#   the layer is emulated at fp16 (--precision: the float path on the dequantized tensors);
# - the logits of ONNX Runtime's optimized runs (QDQ fused into its integer kernels) within 2
#   steps of the classifier's output quantization (0.0063): the format's error (the
#   quantized models are 0.009-0.018 from the float model);
# - outputs bit-identical between --threads 1 and 2, run to run (the packed-weight cache),
#   and under every ISA cap;
# - ONNX Runtime's quantized contrib ops (com.microsoft QLinearAdd, QLinearMul,
#   QLinearGlobalAveragePool, QLinearSoftmax, QGemm): the two QOperator corpus models and one
#   model per op (below).
set -euo pipefail
: "${WHITTLE:?}" "${WHITTLE_SRC:?}"
. "$WHITTLE_SRC/tests/lib-e2e.sh"

/usr/bin/python3 "$WHITTLE_SRC/scripts/gen-quant-models.py" "$tmp/m"
ortrun() { node "$WHITTLE_SRC/scripts/ort-run.js" "$@" --threads 2 --seed 7 > /dev/null; }

for m in dynamic qlinear qdq; do
	model=$tmp/m/quant-cnn-$m.onnx
	d=$tmp/$m
	mkdir -p "$d/in" "$d/all" "$d/opt"
	ortrun "$model" "$d/in" "$d/all" --all --no-opt
	ortrun "$model" "$d/in" "$d/opt"
	case $m in
	dynamic) atol=0 ;;
	qlinear) atol=2 ;;
	qdq) atol=2 ;;
	esac
	run "$WHITTLE" run "$model" --load-inputs "$d/in" --mark-all --compare "$d/all" --atol $atol --rtol 0
	n=$(grep -c '^PASS ' "$tmp/out" || true)
	if [ "$rc" = 0 ] && [ "$n" -ge 15 ]; then
		ok "$m: $n tensors of ONNX Runtime's unoptimized run within $atol (units of the 8-bit tensors)"
	else
		bad "$m: every tensor within $atol of ONNX Runtime's (rc $rc, $n passed)"
		grep '^FAIL' "$tmp/out" | head -3
	fi
	[ $m = dynamic ] && atol=0 || atol=0.0126
	run "$WHITTLE" run "$model" --load-inputs "$d/in" --compare "$d/opt" --atol $atol --rtol 0
	if [ "$rc" = 0 ] && grep -q '^PASS logits' "$tmp/out"; then
		ok "$m: logits within $atol of ONNX Runtime's optimized run"
	else
		bad "$m: logits within $atol of ONNX Runtime's optimized run"
		grep '^FAIL' "$tmp/out" | head -3
	fi
	# determinism: thread counts, and ISAs (the work is integer; QDQ's Convs too)
	all=
	for isa in scalar avx2 avx512; do
		h1=$(WHITTLE_ISA=$isa "$WHITTLE" run "$model" --load-inputs "$d/in" --threads 1 --hash-outputs | grep '^xxh3')
		# three runs of one engine: from the second, constant MatMulInteger / QLinearMatMul
		# weights come packed from the engine's cache (--repeat fails on any difference)
		h2=$(WHITTLE_ISA=$isa "$WHITTLE" run "$model" --load-inputs "$d/in" --threads 2 --repeat 3 --hash-outputs | grep '^xxh3') ||
			bad "$m: outputs differ run to run under $isa"
		[ "$h1" = "$h2" ] || { bad "$m: outputs differ between --threads 1 and 2 under $isa"; continue; }
		all="$all$h1"$'\n'
	done
	if [ $m = qdq ]; then
		# the float classifier (MatMul) sums in each ISA's order: the last Conv's float
		# output instead, which the integer path makes the same for every ISA
		all=$(for isa in scalar avx2 avx512; do
			WHITTLE_ISA=$isa "$WHITTLE" run "$model" --load-inputs "$d/in" --mark-all --hash-outputs | grep '^xxh3 conv6 '
		done)
		[ "$(printf '%s\n' "$all" | grep -c .)" = 3 ] || all=missing
	fi
	if [ "$(printf '%s' "$all" | sort -u | wc -l)" = 1 ]; then
		ok "$m: outputs bit-identical for every ISA cap and --threads 1 and 2"
	else
		bad "$m: outputs differ between ISA caps"
		printf '%s' "$all"
	fi
done

# QDQ Convs on the integer path, from the graph alone: all 7 with and without --mark-all,
# none when emulated at fp16 (the float path), and the same outputs with --mark-all.
model=$tmp/m/quant-cnn-qdq.onnx
prof() { "$WHITTLE" run "$model" --load-inputs "$tmp/qdq/in" --profile "$@" 2>&1 | grep -c ' Conv  *conv-qdq-int8 ' || true; }
n1=$(prof)
n2=$(prof --mark-all)
n3=$(prof --precision fp16)
if [ "$n1" = 7 ] && [ "$n2" = 7 ] && [ "$n3" = 0 ]; then
	ok "qdq: 7 Convs run conv-qdq-int8 (with --mark-all too), none at --precision fp16"
else
	bad "qdq: Convs on conv-qdq-int8: $n1 (want 7), with --mark-all $n2 (want 7), at fp16 $n3 (want 0)"
fi
# the QuantizeLinear after each Conv + Relu is written by the Conv itself, and the
# DequantizeLinear before each is not run (the Conv reads its 8-bit input), except where every
# tensor is reported (--mark-all: the Convs' and Relus' float outputs are there; the same bits
# either way: below)
q1=$("$WHITTLE" run "$model" --load-inputs "$tmp/qdq/in" --profile 2>&1 | grep -c 'QuantizeLinear  *fused ' || true)
q2=$("$WHITTLE" run "$model" --load-inputs "$tmp/qdq/in" --mark-all --hash-outputs | grep -c '^xxh3 \(conv\|relu\)[0-6] ' || true)
d1=$("$WHITTLE" run "$model" --load-inputs "$tmp/qdq/in" --profile 2>&1 | grep -c 'DequantizeLinear  *fused ' || true)
if [ "$q1" = 7 ] && [ "$d1" = 7 ] && [ "$q2" = 14 ]; then
	ok "qdq: 7 QuantizeLinears fused into their Convs, 7 DequantizeLinears not run (the Convs read their 8-bit inputs); with --mark-all the 14 float tensors are reported"
else
	bad "qdq: fused QuantizeLinears: $q1 (want 7), skipped DequantizeLinears $d1 (want 7); float tensors with --mark-all $q2 (want 14)"
fi
h1=$("$WHITTLE" run "$model" --load-inputs "$tmp/qdq/in" --hash-outputs | grep '^xxh3')
h2=$("$WHITTLE" run "$model" --load-inputs "$tmp/qdq/in" --mark-all --hash-outputs | grep '^xxh3 logits ')
if [ -n "$h1" ] && [ "$h1" = "$h2" ]; then
	ok "qdq: the logits are bit-identical with and without --mark-all"
else
	bad "qdq: the logits differ with --mark-all ($h1 / $h2)"
fi

# The fp16-stored CNN (float16 weights, each widened by a Cast): ONNX Runtime's logits within
# 1e-5, and the 16 Casts are constant layers from the first run on (their widened weights are
# kept, and the Convs pack the kept tensor as they would an initializer: const_inputs).
model=$tmp/m/quant-cnn-fp16.onnx
mkdir -p "$tmp/fp16/in" "$tmp/fp16/opt"
ortrun "$model" "$tmp/fp16/in" "$tmp/fp16/opt"
run "$WHITTLE" run "$model" --load-inputs "$tmp/fp16/in" --compare "$tmp/fp16/opt" --atol 1e-5 --rtol 1e-5
if [ "$rc" = 0 ] && grep -q '^PASS logits' "$tmp/out"; then
	ok "fp16: logits within 1e-5 of ONNX Runtime's"
else
	bad "fp16: logits within 1e-5 of ONNX Runtime's"
fi
n=$("$WHITTLE" run "$model" --load-inputs "$tmp/fp16/in" --profile 2>&1 | grep -c ' Cast  *constant ' || true)
[ "$n" = 16 ] && ok "fp16: 16 Casts of weights are constant layers" || bad "fp16: $n of 16 Casts are constant layers"

# A test that cannot fail is a defect: a wrong zero point on one weight must be caught.
/usr/bin/python3 - "$tmp/m/quant-cnn-dynamic.onnx" "$tmp/broken.onnx" <<'PY'
import sys
import onnx
from onnx import numpy_helper
m = onnx.load(sys.argv[1])
for t in m.graph.initializer:
    if t.name == 'w2_zero_point':
        a = numpy_helper.to_array(t)
        t.CopyFrom(numpy_helper.from_array((a + 1).astype(a.dtype), t.name))
onnx.save(m, sys.argv[2])
PY
run "$WHITTLE" run "$tmp/broken.onnx" --load-inputs "$tmp/dynamic/in" --compare "$tmp/dynamic/opt" --atol 0.0126 --rtol 0
if [ "$rc" != 0 ] && grep -q '^FAIL logits' "$tmp/out"; then
	ok "a weight zero point off by one fails the comparison"
else
	bad "a weight zero point off by one passed the comparison"
fi

# ONNX Runtime's quantized contrib ops (com.microsoft; executor/ops/qlinear-contrib.c), as its
# static quantizer writes them in QOperator format:
# - the two corpus models that use them (QLinearAdd, QLinearGlobalAveragePool and QGemm in
#   the ResNet; QLinearAdd, QLinearMul and QLinearSoftmax in the BERT): every tensor of ONNX
#   Runtime's unoptimized run within 1e-5 absolute and relative, so each 8-bit tensor is
#   identical (a unit off is more than 1e-5 + 1e-5 * 255), the float ones (LayerNorm, Erf)
#   within float rounding;
# - one model per op, int8 and uint8, with broadcasting, both layouts of
#   QLinearGlobalAveragePool (channels_last), QLinearSoftmax's opset 11 (flattened at axis)
#   and 13 (one axis), QGemm with per-column B scales and zero points, an int32 bias, alpha,
#   transA, transB and both a quantized and a float output: within one unit of ONNX
#   Runtime's (its vectorized QLinearAdd rounds a tie now and then the other way), and the
#   count of exact models reported;
# - a QLinearSoftmax whose opset attribute says 11 instead of 13 must fail the comparison.
for m in q_qop_resnet18 q_qop_bert; do
	d=$tmp/$m
	mkdir -p "$d/in" "$d/all"
	ortrun "$WHITTLE_SRC/fixtures/corpus/$m.onnx" "$d/in" "$d/all" --all --no-opt
	run "$WHITTLE" run "$WHITTLE_SRC/fixtures/corpus/$m.onnx" --load-inputs "$d/in" --mark-all --compare "$d/all" --atol 1e-5 --rtol 1e-5
	n=$(grep -c '^PASS ' "$tmp/out" || true)
	if [ "$rc" = 0 ] && [ "$n" -ge 30 ]; then
		ok "$m: $n tensors of ONNX Runtime's unoptimized run within 1e-5 (the 8-bit ones identical)"
	else
		bad "$m: every tensor within 1e-5 of ONNX Runtime's (rc $rc, $n passed)"
		grep '^FAIL' "$tmp/out" | head -3 || true
	fi
done
mkdir -p "$tmp/contrib"
/usr/bin/python3 - "$tmp/contrib" <<'PY'
import sys
import numpy as np
import onnx
from onnx import helper, TensorProto, numpy_helper
out = sys.argv[1]
# ONNX Runtime's quantized contrib ops, one per model, int8 and uint8, with inputs over the
# 8-bit range written to <model>/in (test-data convention)
rng = np.random.default_rng(3)
def init(name, v):
    return numpy_helper.from_array(np.asarray(v), name)
def save(name, nodes, inputs, outputs, inits):
    import os
    os.makedirs(f'{out}/{name}/in', exist_ok=True)
    for k, v in enumerate(inputs):
        t = v.type.tensor_type
        shape = [d.dim_value for d in t.shape.dim]
        lo, hi = (0, 256) if t.elem_type == TensorProto.UINT8 else (-128, 128)
        a = rng.integers(lo, hi, shape).astype(np.uint8 if lo == 0 else np.int8)
        if name.startswith('QLinearSoftmax'):
            a = (a // 4 + (40 if lo == 0 else 0)).astype(a.dtype)  # logits within a few units of each other
        with open(f'{out}/{name}/in/input_{k}.pb', 'wb') as f:
            f.write(numpy_helper.from_array(a, v.name).SerializeToString())
    g = helper.make_graph(nodes, name, inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid('', 17), helper.make_opsetid('com.microsoft', 1)])
    m.ir_version = 8
    onnx.save(m, f'{out}/{name}.onnx')
def vi(name, t, shape):
    return helper.make_tensor_value_info(name, t, shape)
for dt, npdt, tp in (('u8', np.uint8, TensorProto.UINT8), ('s8', np.int8, TensorProto.INT8)):
    z = lambda v: np.array(v, npdt)
    zp = (3, 130, 121) if dt == 'u8' else (-5, 2, 9)
    # QLinearAdd / QLinearMul with broadcasting (1x3x4x5 and 3x1x5)
    for op in ('QLinearAdd', 'QLinearMul'):
        q = [init('as', np.float32(0.031)), init('az', z(zp[0])), init('bs', np.float32(0.047)),
             init('bz', z(zp[1])), init('cs', np.float32(0.09 if op == 'QLinearAdd' else 0.5)), init('cz', z(zp[2]))]
        save(f'{op}_{dt}', [helper.make_node(op, ['a', 'as', 'az', 'b', 'bs', 'bz', 'cs', 'cz'], ['y'], domain='com.microsoft')],
             [vi('a', tp, [1, 3, 4, 5]), vi('b', tp, [3, 1, 5])], [vi('y', tp, None)], q)
    # QLinearGlobalAveragePool, both layouts
    for last in (0, 1):
        q = [init('xs', np.float32(0.02)), init('xz', z(zp[0])), init('ys', np.float32(0.013)), init('yz', z(zp[0]))]
        save(f'QLinearGlobalAveragePool{last}_{dt}',
             [helper.make_node('QLinearGlobalAveragePool', ['x', 'xs', 'xz', 'ys', 'yz'], ['y'], domain='com.microsoft', channels_last=last)],
             [vi('x', tp, [2, 7, 5, 6])], [vi('y', tp, None)], q)
    # QLinearSoftmax: opset 13 (one axis) and 11 (flattened at axis 1)
    for ops, axis in ((13, -1), (11, 1), (13, 1)):
        yzp = 0 if dt == 'u8' else -128
        q = [init('xs', np.float32(0.05)), init('xz', z(zp[0])), init('ys', np.float32(1 / 256)), init('yz', z(yzp))]
        save(f'QLinearSoftmax{ops}a{axis & 7}_{dt}',
             [helper.make_node('QLinearSoftmax', ['x', 'xs', 'xz', 'ys', 'yz'], ['y'], domain='com.microsoft', opset=ops, axis=axis)],
             [vi('x', tp, [2, 3, 8])], [vi('y', tp, None)], q)
    # QGemm: per-column B scale and zero point, bias, alpha, transA; quantized and float output
    K, M, N = 12, 4, 6
    B = rng.integers(-100, 100, (N, K)).astype(np.int8) if dt == 's8' else rng.integers(0, 255, (N, K)).astype(np.uint8)
    for quant in (1, 0):
        q = [init('as', np.float32(0.02)), init('az', z(zp[0])), init('B', B),
             init('bs', (rng.random(N) * 0.01 + 0.002).astype(np.float32)),
             init('bz', np.zeros(N, npdt) if dt == 's8' else rng.integers(100, 150, N).astype(np.uint8)),
             init('C', rng.integers(-3000, 3000, N).astype(np.int32))]
        ins = ['A', 'as', 'az', 'B', 'bs', 'bz', 'C']
        if quant:
            q += [init('ys', np.float32(0.07)), init('yz', z(zp[2]))]
            ins += ['ys', 'yz']
        save(f'QGemm{quant}_{dt}', [helper.make_node('QGemm', ins, ['y'], domain='com.microsoft', alpha=0.75, transA=1, transB=1)],
             [vi('A', tp, [K, M])], [vi('y', tp if quant else TensorProto.FLOAT, None)], q)
PY
total=0 exact=0
for f in "$tmp"/contrib/*.onnx; do
	b=$(basename "$f" .onnx)
	d=$tmp/contrib/$b
	mkdir -p "$d/out"
	node "$WHITTLE_SRC/scripts/ort-run.js" "$f" "$d/in" "$d/out" --threads 1 > /dev/null
	total=$((total + 1))
	run "$WHITTLE" run "$f" --load-inputs "$d/in" --compare "$d/out" --atol 1 --rtol 0
	if [ "$rc" = 0 ] && grep -q '^PASS y' "$tmp/out"; then
		grep -q '^PASS y: max_abs 0 ' "$tmp/out" && exact=$((exact + 1))
	else
		bad "$b: within one unit of ONNX Runtime's"
		grep '^FAIL' "$tmp/out" | head -3 || true
	fi
done
if [ "$total" = 18 ] && [ "$exact" -ge 16 ]; then
	ok "contrib ops: $total models within one unit of ONNX Runtime's, $exact identical"
else
	bad "contrib ops: $exact of $total models identical to ONNX Runtime's (want 18 models, 16 or more identical)"
fi
/usr/bin/python3 - "$tmp/contrib/QLinearSoftmax13a1_u8.onnx" "$tmp/softmax11.onnx" <<'PY'
import sys
import onnx
m = onnx.load(sys.argv[1])
for a in m.graph.node[0].attribute:
    if a.name == 'opset':
        a.i = 11
onnx.save(m, sys.argv[2])
PY
run "$WHITTLE" run "$tmp/softmax11.onnx" --load-inputs "$tmp/contrib/QLinearSoftmax13a1_u8/in" --compare "$tmp/contrib/QLinearSoftmax13a1_u8/out" --atol 1 --rtol 0
if [ "$rc" != 0 ] && grep -q '^FAIL y' "$tmp/out"; then
	ok "a QLinearSoftmax read at the wrong opset (flattened at axis 1) fails the comparison"
else
	bad "a QLinearSoftmax read at the wrong opset passed the comparison"
fi

echo "passed $pass, failed $fail"
[ "$fail" = 0 ]

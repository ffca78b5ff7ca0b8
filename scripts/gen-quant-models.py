#!/usr/bin/python3
"""Writes a small CNN at 224x224 in the three layouts ONNX Runtime's quantizer writes, for
tests/e2e-quant-ort.sh and the quantized rows of docs/benchmarks.md:

  quant-cnn-f32.onnx      the float model (7 convs: a stride-2 stem, 3x3 and 1x1 convs, a
                          depthwise 3x3, global average pool, a MatMul classifier)
  quant-cnn-dynamic.onnx  as onnxruntime.quantization.quantize_dynamic writes it: every
                          Conv becomes DynamicQuantizeLinear + ConvInteger + Cast + Mul (the
                          scales' product) + Add (bias), every MatMul DynamicQuantizeLinear +
                          MatMulInteger + Cast + Mul; int8 weights, symmetric, per tensor
  quant-cnn-qdq.onnx      as quantize_static(quant_format=QDQ) writes it: QuantizeLinear /
                          DequantizeLinear pairs on activations (uint8), DequantizeLinear on
                          the int8 weights (per output channel) and the int32 biases
  quant-cnn-fp16.onnx     the float model with its weights stored in float16, each widened
                          by a Cast to float32 before its Conv / MatMul / Add, as exporters
                          write half-precision weights (the U-Net of issue 26)
  quant-cnn-qlinear.onnx  as quantize_static(quant_format=QOperator) writes it: QLinearConv
                          (ReLU folded into the output range), QLinearMatMul, DequantizeLinear
                          around the float GlobalAveragePool (ORT's QLinearGlobalAveragePool
                          is a com.microsoft op)

Weights are random (seeded); activation ranges are calibrated on seeded inputs with a
numpy forward pass, as the static quantizer's MinMax calibration does.

  python3 scripts/gen-quant-models.py OUT_DIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 13
# (out channels, kernel, stride, group) per conv; every conv is followed by ReLU
LAYERS = [
    (32, 3, 2, 1),
    (64, 3, 1, 1),
    (64, 3, 2, 1),
    (64, 3, 1, 64),
    (128, 1, 1, 1),
    (128, 3, 2, 1),
    (256, 1, 1, 1),
]
CLASSES = 10


def conv_np(x, w, b, stride, group):
    n, c, h, wd = x.shape
    m, cg, k, _ = w.shape
    p = k // 2
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
    oh = (h + 2 * p - k) // stride + 1
    ow = (wd + 2 * p - k) // stride + 1
    y = np.zeros((n, m, oh, ow), np.float32)
    mg = m // group
    for g in range(group):
        xs = xp[:, g * cg:(g + 1) * cg]
        cols = np.empty((n, cg, k, k, oh, ow), np.float32)
        for i in range(k):
            for j in range(k):
                cols[:, :, i, j] = xs[:, :, i:i + stride * oh:stride, j:j + stride * ow:stride]
        wg = w[g * mg:(g + 1) * mg].reshape(mg, -1)
        y[:, g * mg:(g + 1) * mg] = np.einsum('mk,nkhw->nmhw', wg, cols.reshape(n, cg * k * k, oh, ow))
    return y + b.reshape(1, -1, 1, 1)


def make_weights(rng):
    params = []
    c = 3
    for m, k, s, g in LAYERS:
        fan = c // g * k * k
        w = (rng.standard_normal((m, c // g, k, k)) * np.sqrt(2.0 / fan)).astype(np.float32)
        b = (rng.standard_normal(m) * 0.05).astype(np.float32)
        params.append((w, b, s, g))
        c = m
    fw = (rng.standard_normal((c, CLASSES)) * np.sqrt(1.0 / c)).astype(np.float32)
    fb = (rng.standard_normal(CLASSES) * 0.05).astype(np.float32)
    return params, fw, fb


def forward(x, params, fw, fb):
    """Returns the float activations: the input, every ReLU output, the pooled vector, the logits."""
    acts = [x]
    for w, b, s, g in params:
        x = np.maximum(conv_np(x, w, b, s, g), 0)
        acts.append(x)
    pooled = x.mean(axis=(2, 3)).reshape(x.shape[0], -1)
    acts.append(pooled)
    acts.append(pooled @ fw)  # the classifier before its bias (QLinearMatMul's output)
    return acts


def q_params_u8(lo, hi):
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    scale = np.float32((hi - lo) / 255.0 if hi > lo else 1.0)
    zp = int(np.clip(np.round(-lo / scale), 0, 255))
    return scale, zp


def sym_s8(w, axis=None):
    """Symmetric int8 weights: per tensor (axis None) or per output channel (axis 0)."""
    if axis is None:
        amax = np.abs(w).max()
        scale = np.float32(amax / 127.0 if amax > 0 else 1.0)
        return np.clip(np.round(w / scale), -127, 127).astype(np.int8), scale
    amax = np.abs(w.reshape(w.shape[0], -1)).max(axis=1)
    scale = np.where(amax > 0, amax / 127.0, 1.0).astype(np.float32)
    q = np.clip(np.round(w / scale.reshape(-1, *([1] * (w.ndim - 1)))), -127, 127).astype(np.int8)
    return q, scale


def finish(nodes, inits, name, out_name, out_shape):
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info('x', TensorProto.FLOAT, [1, 3, 224, 224])],
        [helper.make_tensor_value_info(out_name, TensorProto.FLOAT, out_shape)],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', OPSET)],
                              producer_name='whittle gen-quant-models.py')
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def float_model(params, fw, fb):
    nodes, inits = [], []
    cur = 'x'
    for i, (w, b, s, g) in enumerate(params):
        k = w.shape[2]
        inits += [numpy_helper.from_array(w, f'w{i}'), numpy_helper.from_array(b, f'b{i}')]
        nodes.append(helper.make_node('Conv', [cur, f'w{i}', f'b{i}'], [f'conv{i}'], name=f'conv{i}',
                                      kernel_shape=[k, k], strides=[s, s], pads=[k // 2] * 4, group=g))
        nodes.append(helper.make_node('Relu', [f'conv{i}'], [f'relu{i}'], name=f'relu{i}'))
        cur = f'relu{i}'
    nodes += [helper.make_node('GlobalAveragePool', [cur], ['gap'], name='gap'),
              helper.make_node('Flatten', ['gap'], ['flat'], name='flatten'),
              helper.make_node('MatMul', ['flat', 'fw'], ['fc'], name='fc'),
              helper.make_node('Add', ['fc', 'fb'], ['logits'], name='fc_bias')]
    inits += [numpy_helper.from_array(fw, 'fw'), numpy_helper.from_array(fb, 'fb')]
    return finish(nodes, inits, 'quant_cnn_f32', 'logits', [1, CLASSES])


def fp16_model(params, fw, fb):
    """float_model with every weight stored as float16 and a Cast to float32 in front of it."""
    nodes, inits = [], []

    def half(arr, name):
        inits.append(numpy_helper.from_array(arr.astype(np.float16), f'{name}_fp16'))
        nodes.append(helper.make_node('Cast', [f'{name}_fp16'], [name], name=f'{name}_cast', to=TensorProto.FLOAT))
        return name

    cur = 'x'
    for i, (w, b, s, g) in enumerate(params):
        k = w.shape[2]
        nodes.append(helper.make_node('Conv', [cur, half(w, f'w{i}'), half(b, f'b{i}')], [f'conv{i}'], name=f'conv{i}',
                                      kernel_shape=[k, k], strides=[s, s], pads=[k // 2] * 4, group=g))
        nodes.append(helper.make_node('Relu', [f'conv{i}'], [f'relu{i}'], name=f'relu{i}'))
        cur = f'relu{i}'
    nodes += [helper.make_node('GlobalAveragePool', [cur], ['gap'], name='gap'),
              helper.make_node('Flatten', ['gap'], ['flat'], name='flatten'),
              helper.make_node('MatMul', ['flat', half(fw, 'fw')], ['fc'], name='fc'),
              helper.make_node('Add', ['fc', half(fb, 'fb')], ['logits'], name='fc_bias')]
    return finish(nodes, inits, 'quant_cnn_fp16', 'logits', [1, CLASSES])


def dynamic_model(params, fw, fb):
    """quantize_dynamic's layout (onnxruntime/python/tools/quantization/operators/conv.py,
    ConvInteger; matmul.py, MatMulInteger): names as ORT writes them."""
    nodes, inits = [], []
    cur = 'x'

    def dq_input(src):
        nodes.append(helper.make_node('DynamicQuantizeLinear', [src],
                                      [f'{src}_quantized', f'{src}_scale', f'{src}_zero_point'],
                                      name=f'{src}_QuantizeLinear'))
        return f'{src}_quantized', f'{src}_scale', f'{src}_zero_point'

    for i, (w, b, s, g) in enumerate(params):
        k = w.shape[2]
        wq, ws = sym_s8(w)
        inits += [numpy_helper.from_array(wq, f'w{i}_quantized'),
                  numpy_helper.from_array(np.array(ws, np.float32), f'w{i}_scale'),
                  numpy_helper.from_array(np.array(0, np.int8), f'w{i}_zero_point'),
                  numpy_helper.from_array(b.reshape(1, -1, 1, 1), f'b{i}_reshaped')]
        xq, xs, xz = dq_input(cur)
        nodes.append(helper.make_node('ConvInteger', [xq, f'w{i}_quantized', xz, f'w{i}_zero_point'],
                                      [f'conv{i}_output_quantized'], name=f'conv{i}_quant',
                                      kernel_shape=[k, k], strides=[s, s], pads=[k // 2] * 4, group=g))
        nodes.append(helper.make_node('Cast', [f'conv{i}_output_quantized'], [f'conv{i}_output_cast'],
                                      name=f'conv{i}_output_quantized_cast', to=TensorProto.FLOAT))
        nodes.append(helper.make_node('Mul', [xs, f'w{i}_scale'], [f'conv{i}_scales_mul'],
                                      name=f'conv{i}_scales_mul'))
        nodes.append(helper.make_node('Mul', [f'conv{i}_output_cast', f'conv{i}_scales_mul'],
                                      [f'conv{i}_output_scaled'], name=f'conv{i}_output_scale_mul'))
        nodes.append(helper.make_node('Add', [f'conv{i}_output_scaled', f'b{i}_reshaped'], [f'conv{i}'],
                                      name=f'conv{i}_bias_add'))
        nodes.append(helper.make_node('Relu', [f'conv{i}'], [f'relu{i}'], name=f'relu{i}'))
        cur = f'relu{i}'
    nodes += [helper.make_node('GlobalAveragePool', [cur], ['gap'], name='gap'),
              helper.make_node('Flatten', ['gap'], ['flat'], name='flatten')]
    fq, fs = sym_s8(fw)
    inits += [numpy_helper.from_array(fq, 'fw_quantized'),
              numpy_helper.from_array(np.array(fs, np.float32), 'fw_scale'),
              numpy_helper.from_array(np.array(0, np.int8), 'fw_zero_point'),
              numpy_helper.from_array(fb, 'fb')]
    xq, xs, xz = dq_input('flat')
    nodes += [helper.make_node('MatMulInteger', [xq, 'fw_quantized', xz, 'fw_zero_point'], ['fc_output_quantized'],
                               name='fc_quant'),
              helper.make_node('Cast', ['fc_output_quantized'], ['fc_output_cast'], name='fc_cast',
                               to=TensorProto.FLOAT),
              helper.make_node('Mul', [xs, 'fw_scale'], ['fc_scales_mul'], name='fc_scales_mul'),
              helper.make_node('Mul', ['fc_output_cast', 'fc_scales_mul'], ['fc'], name='fc_scale_mul'),
              helper.make_node('Add', ['fc', 'fb'], ['logits'], name='fc_bias')]
    return finish(nodes, inits, 'quant_cnn_dynamic', 'logits', [1, CLASSES])


def static_ranges(params, fw, fb, rng):
    lo = None
    for _ in range(4):
        x = rng.uniform(-1, 1, (1, 3, 224, 224)).astype(np.float32)
        acts = forward(x, params, fw, fb)
        mins = [float(a.min()) for a in acts]
        maxs = [float(a.max()) for a in acts]
        if lo is None:
            lo, hi = mins, maxs
        else:
            lo = [min(a, b) for a, b in zip(lo, mins)]
            hi = [max(a, b) for a, b in zip(hi, maxs)]
    return [q_params_u8(a, b) for a, b in zip(lo, hi)]


def qdq_model(params, fw, fb, qp):
    nodes, inits = [], []

    def const(arr, name):
        inits.append(numpy_helper.from_array(arr, name))
        return name

    def qdq(src, idx):
        s, z = qp[idx]
        const(np.array(s, np.float32), f'{src}_scale')
        const(np.array(z, np.uint8), f'{src}_zero_point')
        nodes.append(helper.make_node('QuantizeLinear', [src, f'{src}_scale', f'{src}_zero_point'],
                                      [f'{src}_QuantizeLinear_Output'], name=f'{src}_QuantizeLinear'))
        nodes.append(helper.make_node('DequantizeLinear', [f'{src}_QuantizeLinear_Output', f'{src}_scale',
                                                           f'{src}_zero_point'],
                                      [f'{src}_DequantizeLinear_Output'], name=f'{src}_DequantizeLinear'))
        return f'{src}_DequantizeLinear_Output'

    cur = qdq('x', 0)
    for i, (w, b, s, g) in enumerate(params):
        k = w.shape[2]
        wq, ws = sym_s8(w, axis=0)
        xs = qp[i][0]
        bs = (np.float32(xs) * ws).astype(np.float32)
        bq = np.round(b / bs).astype(np.int32)
        const(wq, f'w{i}_quantized')
        const(ws, f'w{i}_scale')
        const(np.zeros(ws.shape, np.int8), f'w{i}_zero_point')
        const(bq, f'b{i}_quantized')
        const(bs, f'b{i}_quantized_scale')
        const(np.zeros(bs.shape, np.int32), f'b{i}_quantized_zero_point')
        nodes.append(helper.make_node('DequantizeLinear', [f'w{i}_quantized', f'w{i}_scale', f'w{i}_zero_point'],
                                      [f'w{i}_DequantizeLinear_Output'], name=f'w{i}_DequantizeLinear', axis=0))
        nodes.append(helper.make_node('DequantizeLinear', [f'b{i}_quantized', f'b{i}_quantized_scale',
                                                           f'b{i}_quantized_zero_point'],
                                      [f'b{i}_DequantizeLinear_Output'], name=f'b{i}_DequantizeLinear', axis=0))
        nodes.append(helper.make_node('Conv', [cur, f'w{i}_DequantizeLinear_Output', f'b{i}_DequantizeLinear_Output'],
                                      [f'conv{i}'], name=f'conv{i}', kernel_shape=[k, k], strides=[s, s],
                                      pads=[k // 2] * 4, group=g))
        nodes.append(helper.make_node('Relu', [f'conv{i}'], [f'relu{i}'], name=f'relu{i}'))
        cur = qdq(f'relu{i}', i + 1)
    nodes.append(helper.make_node('GlobalAveragePool', [cur], ['gap'], name='gap'))
    cur = qdq('gap', len(params) + 1)
    nodes.append(helper.make_node('Flatten', [cur], ['flat'], name='flatten'))
    fq, fs = sym_s8(fw)
    const(fq, 'fw_quantized')
    const(np.array(fs, np.float32), 'fw_scale')
    const(np.array(0, np.int8), 'fw_zero_point')
    const(fb, 'fb')
    nodes += [helper.make_node('DequantizeLinear', ['fw_quantized', 'fw_scale', 'fw_zero_point'],
                               ['fw_DequantizeLinear_Output'], name='fw_DequantizeLinear'),
              helper.make_node('MatMul', ['flat', 'fw_DequantizeLinear_Output'], ['fc'], name='fc'),
              helper.make_node('Add', ['fc', 'fb'], ['logits'], name='fc_bias')]
    return finish(nodes, inits, 'quant_cnn_qdq', 'logits', [1, CLASSES])


def qlinear_model(params, fw, fb, qp):
    nodes, inits = [], []

    def const(arr, name):
        inits.append(numpy_helper.from_array(arr, name))
        return name

    def qparams(name, idx):
        s, z = qp[idx]
        return const(np.array(s, np.float32), f'{name}_scale'), const(np.array(z, np.uint8), f'{name}_zero_point')

    xs_n, xz_n = qparams('x', 0)
    nodes.append(helper.make_node('QuantizeLinear', ['x', xs_n, xz_n], ['x_quantized'], name='x_QuantizeLinear'))
    cur, cur_s, cur_z = 'x_quantized', xs_n, xz_n
    for i, (w, b, s, g) in enumerate(params):
        k = w.shape[2]
        wq, ws = sym_s8(w, axis=0)
        bs = (np.float32(qp[i][0]) * ws).astype(np.float32)
        bq = np.round(b / bs).astype(np.int32)
        const(wq, f'w{i}_quantized')
        const(ws, f'w{i}_scale')
        const(np.zeros(ws.shape, np.int8), f'w{i}_zero_point')
        const(bq, f'b{i}_quantized')
        ys_n, yz_n = qparams(f'relu{i}', i + 1)
        nodes.append(helper.make_node('QLinearConv', [cur, cur_s, cur_z, f'w{i}_quantized', f'w{i}_scale',
                                                      f'w{i}_zero_point', ys_n, yz_n, f'b{i}_quantized'],
                                      [f'relu{i}_quantized'], name=f'conv{i}_quant', kernel_shape=[k, k],
                                      strides=[s, s], pads=[k // 2] * 4, group=g))
        cur, cur_s, cur_z = f'relu{i}_quantized', ys_n, yz_n
    nodes.append(helper.make_node('DequantizeLinear', [cur, cur_s, cur_z], ['gap_input'], name='gap_DequantizeLinear'))
    nodes.append(helper.make_node('GlobalAveragePool', ['gap_input'], ['gap'], name='gap'))
    nodes.append(helper.make_node('Flatten', ['gap'], ['flat'], name='flatten'))
    gs_n, gz_n = qparams('gap', len(params) + 1)
    nodes.append(helper.make_node('QuantizeLinear', ['flat', gs_n, gz_n], ['flat_quantized'], name='flat_QuantizeLinear'))
    fq, fs = sym_s8(fw)
    const(fq, 'fw_quantized')
    const(np.array(fs, np.float32), 'fw_scale')
    const(np.array(0, np.int8), 'fw_zero_point')
    ls_n, lz_n = qparams('fc', len(params) + 2)
    const(fb, 'fb')
    nodes += [helper.make_node('QLinearMatMul', ['flat_quantized', gs_n, gz_n, 'fw_quantized', 'fw_scale',
                                                 'fw_zero_point', ls_n, lz_n], ['fc_quantized'], name='fc_quant'),
              helper.make_node('DequantizeLinear', ['fc_quantized', ls_n, lz_n], ['fc'], name='fc_DequantizeLinear'),
              helper.make_node('Add', ['fc', 'fb'], ['logits'], name='fc_bias')]
    return finish(nodes, inits, 'quant_cnn_qlinear', 'logits', [1, CLASSES])


def main():
    if len(sys.argv) != 2:
        sys.exit('usage: gen-quant-models.py OUT_DIR')
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(2026)
    params, fw, fb = make_weights(rng)
    qp = static_ranges(params, fw, fb, rng)
    for name, model in [('f32', float_model(params, fw, fb)), ('fp16', fp16_model(params, fw, fb)), ('dynamic', dynamic_model(params, fw, fb)),
                        ('qdq', qdq_model(params, fw, fb, qp)), ('qlinear', qlinear_model(params, fw, fb, qp))]:
        onnx.save(model, os.path.join(out, f'quant-cnn-{name}.onnx'))


if __name__ == '__main__':
    main()

#!/bin/bash
# The corpus's audio models whose ops have their own fast paths (issue 17): kws_gru (a GRU,
# executor/ops/rnn.c) and mel_stft (STFT of a 2-D [batch][length] signal, as PyTorch's
# TorchScript exporter writes torch.stft, executor/ops/signal.c).
# - kws_gru: every tensor within rtol 1e-4, atol 1e-5 of ONNX Runtime's; the GRU's fast path
#   against the scalar reference (WHITTLE_ISA=scalar) within 1e-5; bit-identical outputs
#   with --threads 1 and 2.
# - mel_stft: runs (it was refused); the STFT output within 1e-5 of numpy's float64 rfft of
#   the same windowed frames; the log-mel output within atol 1e-3 of ONNX Runtime's. ORT is
#   not the tight oracle here: for a length that is not a power of two (400) its STFT is a
#   float32 direct DFT whose twiddles are cos/sin of (float)(k n) * (float)(-2 pi / N), so
#   phases are off by up to ~1e-4 rad (its STFT output is 8e-4 away from numpy's where
#   whittle's is 1e-6 away).
set -euo pipefail
: "${WHITTLE:?}" "${WHITTLE_SRC:?}"
. "$WHITTLE_SRC/tests/lib-e2e.sh"
corpus=$WHITTLE_SRC/fixtures/corpus

# kws_gru
m=$corpus/kws_gru.onnx
mkdir -p "$tmp/kin" "$tmp/kort"
run node "$WHITTLE_SRC/scripts/ort-run.js" "$m" "$tmp/kin" "$tmp/kort" --all --no-opt --threads 2 --seed 5
[ "$rc" = 0 ] && ok "kws_gru: ONNX Runtime ran" || bad "kws_gru: ONNX Runtime ran"
run "$WHITTLE" run "$m" --load-inputs "$tmp/kin" --mark-all --compare "$tmp/kort" --atol 1e-5 --rtol 1e-4
if [ "$rc" = 0 ] && grep -q '^PASS /gru/GRU_output_0' "$tmp/out"; then
	ok "kws_gru: every tensor within rtol 1e-4 atol 1e-5 of ONNX Runtime"
else
	cat "$tmp/out" >> "$tmp/err"
	bad "kws_gru: every tensor within rtol 1e-4 atol 1e-5 of ONNX Runtime"
fi
run "$WHITTLE" run "$m" --load-inputs "$tmp/kin" --mark-all --save-outputs "$tmp/kfast"
run env WHITTLE_ISA=scalar "$WHITTLE" run "$m" --load-inputs "$tmp/kin" --mark-all --save-outputs "$tmp/kref"
run "$WHITTLE" compare "$tmp/kfast" "$tmp/kref" --atol 1e-5 --rtol 1e-5
if [ "$rc" = 0 ] && grep -q '^PASS /gru/GRU_output_0' "$tmp/out"; then
	ok "kws_gru: the fast path within 1e-5 of the scalar reference"
else
	cat "$tmp/out" >> "$tmp/err"
	bad "kws_gru: the fast path within 1e-5 of the scalar reference"
fi
run "$WHITTLE" run "$m" --load-inputs "$tmp/kin" --mark-all --threads 1 --hash-outputs
grep '^xxh3' "$tmp/out" > "$tmp/h1" || true
run "$WHITTLE" run "$m" --load-inputs "$tmp/kin" --mark-all --threads 2 --hash-outputs
grep '^xxh3' "$tmp/out" > "$tmp/h2" || true
if [ -s "$tmp/h1" ] && cmp -s "$tmp/h1" "$tmp/h2"; then
	ok "kws_gru: every tensor bit-identical with --threads 1 and 2"
else
	bad "kws_gru: every tensor bit-identical with --threads 1 and 2"
fi

# mel_stft
m=$corpus/mel_stft.onnx
mkdir -p "$tmp/min" "$tmp/mort"
run node "$WHITTLE_SRC/scripts/ort-run.js" "$m" "$tmp/min" "$tmp/mort" --threads 2 --seed 5
[ "$rc" = 0 ] && ok "mel_stft: ONNX Runtime ran" || bad "mel_stft: ONNX Runtime ran"
run "$WHITTLE" run "$m" --load-inputs "$tmp/min" --mark-all --save-outputs "$tmp/mwh"
[ "$rc" = 0 ] && ok "mel_stft: whittle runs the 2-D STFT" || bad "mel_stft: whittle runs the 2-D STFT"
cat > "$tmp/stft-ref.py" <<'EOF'
import glob, sys
import numpy as np
import onnx
from onnx import numpy_helper as nh
model, ind, whd = sys.argv[1:]
g = onnx.load(model).graph
vals = {i.name: nh.to_array(i) for i in g.initializer}
for n in g.node:
    if n.op_type == 'Constant':
        vals[n.output[0]] = nh.to_array(n.attribute[0].t)
stft = next(n for n in g.node if n.op_type == 'STFT')
x = nh.to_array(onnx.load_tensor(glob.glob(ind + '/*.pb')[0])).astype(np.float64)
assert x.ndim == 2, x.shape
step, win, fl = int(vals[stft.input[1]]), vals[stft.input[2]].astype(np.float64), int(vals[stft.input[3]])
frames = 1 + (x.shape[1] - fl) // step
fr = np.stack([x[:, f * step:f * step + fl] * win for f in range(frames)], 1)
spec = np.fft.rfft(fr, axis=2)
ref = np.stack([spec.real, spec.imag], -1)
y = nh.to_array(onnx.load_tensor(glob.glob(whd + '/*STFT_output_0.pb')[0])).astype(np.float64)
assert y.shape == ref.shape, (y.shape, ref.shape)
err = np.abs(y - ref).max()
print('STFT max abs error against numpy float64: %.3g (values up to %.3g)' % (err, np.abs(ref).max()))
sys.exit(0 if err < 1e-5 else 1)
EOF
run /usr/bin/python3 "$tmp/stft-ref.py" "$m" "$tmp/min" "$tmp/mwh"
[ "$rc" = 0 ] && ok "mel_stft: $(cat "$tmp/out")" || bad "mel_stft: STFT against numpy's rfft: $(cat "$tmp/out")"
run "$WHITTLE" compare "$tmp/mwh" "$tmp/mort" --atol 1e-3 --rtol 1e-4
if [ "$rc" = 0 ] && grep -q '^PASS logmel' "$tmp/out"; then
	ok "mel_stft: log-mel within atol 1e-3 of ONNX Runtime"
else
	cat "$tmp/out" >> "$tmp/err"
	bad "mel_stft: log-mel within atol 1e-3 of ONNX Runtime"
fi

echo "e2e-audio-corpus: $pass passed, $fail failed"
[ "$fail" = 0 ]

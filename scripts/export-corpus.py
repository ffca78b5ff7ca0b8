#!/usr/bin/env python3
"""whittle's benchmark corpus (issue 17): models from real exporters, random weights.

  export-corpus.py export OUTDIR [NAME...]
      Builds each model with PyTorch, torchvision and transformers (random weights, small
      widths: no download), exports it with PyTorch's TorchScript exporter
      (torch.onnx.export(..., dynamo=False)) or its dynamo exporter (dynamo=True, weights kept
      inside the file), checks it in ONNX Runtime when onnxruntime is importable, and writes
      OUTDIR/<name>.onnx and OUTDIR/MANIFEST. A model that fails to build or export is named
      in OUTDIR/export.log and left out; the others are still written.
  export-corpus.py inputs MANIFEST DIR [NAME...]
      Writes the inputs of each model of MANIFEST as DIR/<name>/<input>.pb (ONNX TensorProto):
      numpy's PCG64 seeded from the model's name, uniform in the manifest's range (integers
      in [LO, HI), so token ids are valid ids). Needs numpy and onnx only.

MANIFEST: '#' lines are comments (the first one names the library versions; one before each
model says how it was built); every other line is
  NAME FILE EXPORTER OPSET BYTES INPUT...
with each INPUT as NAME:DTYPE:DIMS:LO,HI (DIMS joined by x). scripts/bench-corpus.sh reads it.
"""
import os
import sys
import zlib

FLOAT_IMAGE = ('float32', (1, 3, 224, 224), -1.0, 1.0)
VOCAB = 512
SEQ = 32
TOKENS = ('int64', (1, SEQ), 0, VOCAB)


# ---- the models (torch is imported only by `export`) ----

def models():
    """[(name, exporter, what, build)], build() -> (module, [(input name, spec)], [output names])."""
    import torch
    from torch import nn
    import torchvision.models as tvm

    def image(m):
        return m, [('x', FLOAT_IMAGE)], ['y']

    # Sizes: each file under 4 MB and the corpus under 20 MB, hence 10 classes for the CNNs
    # (their heads are most of their weights otherwise) and hidden 96 for the transformers.

    def convnext():
        from torchvision.models.convnext import ConvNeXt, CNBlockConfig
        cfg = [CNBlockConfig(16, 32, 1), CNBlockConfig(32, 64, 1), CNBlockConfig(64, 128, 3), CNBlockConfig(128, None, 1)]
        return image(ConvNeXt(cfg, num_classes=10))

    def efficientnet():
        from torchvision.models.efficientnet import EfficientNet, _efficientnet_conf
        setting, last = _efficientnet_conf('efficientnet_b0', width_mult=0.5, depth_mult=0.5)
        return image(EfficientNet(setting, dropout=0.2, last_channel=last, num_classes=10))

    class Field(nn.Module):
        """A transformers model called with the inputs named in args, returning one field of its output."""

        def __init__(self, m, args, field, **kw):
            super().__init__()
            self.m, self.args, self.field, self.kw = m, args, field, kw

        def forward(self, *xs):
            return getattr(self.m(**dict(zip(self.args, xs)), **self.kw), self.field)

    def bert():
        from transformers import BertConfig, BertModel
        c = BertConfig(vocab_size=VOCAB, hidden_size=96, num_hidden_layers=2, num_attention_heads=2,
                       intermediate_size=256, max_position_embeddings=64, attn_implementation='eager')
        return Field(BertModel(c, add_pooling_layer=False), ['input_ids'], 'last_hidden_state'), [('input_ids', TOKENS)], ['hidden']

    def gpt2():
        from transformers import GPT2Config, GPT2LMHeadModel
        c = GPT2Config(vocab_size=VOCAB, n_positions=64, n_embd=96, n_layer=2, n_head=2, n_inner=256,
                       attn_implementation='eager')
        # with an attention mask, as exported for serving (and without one, transformers'
        # packed-sequence detection calls aten::diff, which the TorchScript exporter lacks)
        return (Field(GPT2LMHeadModel(c), ['input_ids', 'attention_mask'], 'logits', use_cache=False),
                [('input_ids', TOKENS), ('attention_mask', ('int64', (1, SEQ), 1, 2))], ['logits'])

    def vit():
        from transformers import ViTConfig, ViTModel
        c = ViTConfig(image_size=224, patch_size=16, hidden_size=96, num_hidden_layers=2, num_attention_heads=2,
                      intermediate_size=256, attn_implementation='eager')
        return Field(ViTModel(c, add_pooling_layer=False), ['pixel_values'], 'last_hidden_state'), [('pixel_values', FLOAT_IMAGE)], ['hidden']

    def whisper():
        from transformers import WhisperConfig
        from transformers.models.whisper.modeling_whisper import WhisperEncoder
        c = WhisperConfig(vocab_size=VOCAB, num_mel_bins=80, d_model=96, encoder_layers=2, encoder_attention_heads=2,
                          encoder_ffn_dim=256, decoder_layers=1, decoder_attention_heads=2, decoder_ffn_dim=256,
                          max_source_positions=100, max_target_positions=64, attn_implementation='eager')
        return (Field(WhisperEncoder(c), ['input_features'], 'last_hidden_state'),
                [('input_features', ('float32', (1, 80, 200), -1.0, 1.0))], ['hidden'])

    def llama():
        from transformers import LlamaConfig, LlamaForCausalLM
        c = LlamaConfig(vocab_size=VOCAB, hidden_size=96, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                        num_key_value_heads=2, max_position_embeddings=64, attn_implementation='eager')
        return Field(LlamaForCausalLM(c), ['input_ids'], 'logits', use_cache=False), [('input_ids', TOKENS)], ['logits']

    class KwsGru(nn.Module):
        """Keyword spotting on 40 MFCCs x 98 frames: conv1d front, GRU, 12 classes."""

        def __init__(self):
            super().__init__()
            self.conv = nn.Conv1d(40, 64, 3, padding=1)
            self.bn = nn.BatchNorm1d(64)
            self.gru = nn.GRU(64, 64, batch_first=True)
            self.fc = nn.Linear(64, 12)

        def forward(self, x):
            y = torch.relu(self.bn(self.conv(x))).transpose(1, 2)
            y, _ = self.gru(y)
            return torch.softmax(self.fc(y[:, -1]), -1)

    def dwsep(cin, cout, stride):
        return [nn.Conv2d(cin, cin, 3, stride, 1, groups=cin, bias=False), nn.BatchNorm2d(cin), nn.ReLU(),
                nn.Conv2d(cin, cout, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU()]

    class KwsDsCnn(nn.Module):
        """DS-CNN keyword spotting (Zhang et al., "Hello Edge") on 49 frames x 10 MFCCs."""

        def __init__(self):
            super().__init__()
            layers = [nn.Conv2d(1, 64, (10, 4), (2, 2), (5, 1), bias=False), nn.BatchNorm2d(64), nn.ReLU()]
            for _ in range(4):
                layers += dwsep(64, 64, 1)
            self.body = nn.Sequential(*layers)
            self.fc = nn.Linear(64, 12)

        def forward(self, x):
            return self.fc(self.body(x).mean((2, 3)))

    class AudioEmbed(nn.Module):
        """YAMNet-style: MobileNetV1 (width 1/8) on a 96x64 log-mel patch; embedding and 521 scores."""

        def __init__(self):
            super().__init__()
            w = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2)] + [(512, 1)] * 5 + [(1024, 2), (1024, 1)]
            layers = [nn.Conv2d(1, 4, 3, 2, 1, bias=False), nn.BatchNorm2d(4), nn.ReLU()]
            cin = 4
            for c, s in w:
                layers += dwsep(cin, c // 8, s)
                cin = c // 8
            self.body = nn.Sequential(*layers)
            self.fc = nn.Linear(cin, 521)

        def forward(self, x):
            e = self.body(x).mean((2, 3))
            return e, torch.sigmoid(self.fc(e))

    def mel_filters(n_freq, n_mels, sr=16000):
        import numpy as np
        hz = lambda m: 700 * (10 ** (m / 2595) - 1)
        mel = lambda f: 2595 * np.log10(1 + f / 700)
        pts = hz(np.linspace(0, mel(sr / 2), n_mels + 2))
        f = np.linspace(0, sr / 2, n_freq)
        fb = np.zeros((n_mels, n_freq), np.float32)
        for i in range(n_mels):
            lo, mid, hi = pts[i], pts[i + 1], pts[i + 2]
            fb[i] = np.maximum(0, np.minimum((f - lo) / (mid - lo), (hi - f) / (hi - mid)))
        return torch.from_numpy(fb)

    class MelStft(nn.Module):
        """Log-mel front end on one second of 16 kHz audio: STFT 400/160, 80 mel bands."""

        def __init__(self):
            super().__init__()
            self.register_buffer('window', torch.hann_window(400))
            self.register_buffer('fb', mel_filters(201, 80))

        def forward(self, wav):
            s = torch.stft(wav, 400, 160, window=self.window, center=False, return_complex=False)
            power = s.pow(2).sum(-1)
            return torch.log(torch.matmul(self.fb, power) + 1e-6)

    class MelConv(nn.Module):
        """The same front end as a strided conv1d with cos/sin kernels, as deployed models often do."""

        def __init__(self):
            super().__init__()
            n = torch.arange(400, dtype=torch.float64)
            k = torch.arange(201, dtype=torch.float64)[:, None]
            win = torch.hann_window(400, dtype=torch.float64)
            ang = 2 * torch.pi * k * n / 400
            w = torch.cat([torch.cos(ang) * win, -torch.sin(ang) * win])[:, None, :].float()
            self.register_buffer('w', w)
            self.register_buffer('fb', mel_filters(201, 80))

        def forward(self, wav):
            s = torch.nn.functional.conv1d(wav[:, None, :], self.w, stride=160)
            re, im = s[:, :201], s[:, 201:]
            return torch.log(torch.matmul(self.fb, re * re + im * im) + 1e-6)

    mfcc = ('float32', (1, 40, 98), -1.0, 1.0)
    wav = ('float32', (1, 16000), -1.0, 1.0)
    T, D = 'torchscript', 'dynamo'
    return [
        ('mobilenet_v3_small', T, 'torchvision mobilenet_v3_small(width_mult=0.5, num_classes=10)',
         lambda: image(tvm.mobilenet_v3_small(weights=None, width_mult=0.5, num_classes=10))),
        # mnasnet0_5's body alone is 3.8 MB; the paper's smallest width keeps the corpus in budget
        ('mnasnet0_35', T, 'torchvision MNASNet(alpha=0.35, num_classes=10) (the mnasnet0_5 architecture at width 0.35)',
         lambda: image(tvm.MNASNet(0.35, num_classes=10))),
        ('shufflenet_v2_x0_5', T, 'torchvision shufflenet_v2_x0_5(num_classes=10)',
         lambda: image(tvm.shufflenet_v2_x0_5(weights=None, num_classes=10))),
        ('squeezenet1_1', T, 'torchvision squeezenet1_1(num_classes=10)',
         lambda: image(tvm.squeezenet1_1(weights=None, num_classes=10))),
        ('efficientnet_b0_w05', T, 'torchvision EfficientNet, efficientnet_b0 config with width_mult=0.5 depth_mult=0.5, 10 classes',
         efficientnet),
        ('convnext_pico', D, 'torchvision ConvNeXt, dims 16/32/64/128, depths 1/1/3/1 (ConvNeXt-T ratios), 10 classes', convnext),
        ('bert', T, 'transformers BertModel, 2 layers, hidden 96, 2 heads, ffn 256, vocab 512', bert),
        ('gpt2', T, 'transformers GPT2LMHeadModel, 2 layers, n_embd 96, 2 heads, ffn 256, vocab 512, attention mask of ones', gpt2),
        ('vit', D, 'transformers ViTModel, 224x224 patch 16, 2 layers, hidden 96, 2 heads, ffn 256', vit),
        ('whisper_encoder', D, 'transformers WhisperEncoder, 80 mels x 200 frames, 2 layers, d_model 96, 2 heads, ffn 256', whisper),
        ('llama', D, 'transformers LlamaForCausalLM, 2 layers, hidden 96, 4 heads (2 kv), ffn 256, vocab 512', llama),
        ('kws_gru', T, 'keyword spotting: conv1d + GRU(64) + linear, 40 MFCC x 98 frames, 12 classes',
         lambda: (KwsGru(), [('mfcc', mfcc)], ['scores'])),
        ('kws_dscnn', D, 'DS-CNN keyword spotting, 64 channels, 4 depthwise-separable blocks, 49x10 MFCC',
         lambda: (KwsDsCnn(), [('mfcc', ('float32', (1, 1, 49, 10), -1.0, 1.0))], ['logits'])),
        ('audio_embed', T, 'YAMNet-style MobileNetV1 (width 1/8, 27 convs) on a 96x64 log-mel patch, 521 classes',
         lambda: (AudioEmbed(), [('patch', ('float32', (1, 1, 96, 64), -1.0, 1.0))], ['embedding', 'scores'])),
        ('mel_stft', T, 'log-mel front end: torch.stft 400/160 (ONNX STFT), 80 mels, 1 s of 16 kHz audio',
         lambda: (MelStft(), [('wav', wav)], ['logmel'])),
        ('mel_conv', D, 'log-mel front end as conv1d with cos/sin kernels, 80 mels, 1 s of 16 kHz audio',
         lambda: (MelConv(), [('wav', wav)], ['logmel'])),
    ]


def example(spec, rng):
    import torch
    dtype, dims, lo, hi = spec
    if dtype == 'int64':
        return torch.from_numpy(rng.integers(int(lo), int(hi), size=dims, dtype='int64'))
    return torch.from_numpy(rng.uniform(lo, hi, size=dims).astype(dtype))


def spec_text(name, spec):
    dtype, dims, lo, hi = spec
    r = f'{int(lo)},{int(hi)}' if dtype == 'int64' else f'{lo:g},{hi:g}'
    return f"{name}:{dtype}:{'x'.join(map(str, dims))}:{r}"


def export(outdir, only):
    import numpy as np
    import torch
    import torchvision
    import transformers
    import onnx
    try:
        import onnxruntime as ort
    except ImportError:
        ort = None
    os.makedirs(outdir, exist_ok=True)
    versions = (f'torch {torch.__version__}, torchvision {torchvision.__version__}, transformers {transformers.__version__}, '
                f'onnx {onnx.__version__}' + (f', checked in onnxruntime {ort.__version__}' if ort else ''))
    lines = [f'# whittle benchmark corpus (issue 17), written by scripts/export-corpus.py export: {versions}',
             '# NAME FILE EXPORTER OPSET BYTES INPUT... (INPUT = NAME:DTYPE:DIMS:LO,HI; integers in [LO, HI))']
    log = open(os.path.join(outdir, 'export.log'), 'w')
    total = 0
    for name, exporter, what, build in models():
        if only and name not in only:
            continue
        path = os.path.join(outdir, name + '.onnx')
        try:
            torch.manual_seed(zlib.crc32(name.encode()))
            module, inputs, outputs = build()
            module.eval()
            rng = np.random.default_rng(zlib.crc32(name.encode()))
            args = tuple(example(s, rng) for _, s in inputs)
            names = [n for n, _ in inputs]
            with torch.no_grad():
                ref = module(*args)
                if exporter == 'torchscript':
                    torch.onnx.export(module, args, path, input_names=names, output_names=outputs, opset_version=17,
                                      dynamo=False)
                else:
                    torch.onnx.export(module, args, path, input_names=names, output_names=outputs, dynamo=True,
                                      external_data=False)
            m = onnx.load(path)
            onnx.checker.check_model(m)
            if any(os.path.exists(os.path.join(outdir, f)) for f in (name + '.onnx.data', name + '.onnx_data')):
                raise RuntimeError('the exporter wrote external data')
            size = os.path.getsize(path)
            if size >= 4 << 20:
                raise RuntimeError(f'{size} bytes, over 4 MiB')
            opset = next(o.version for o in m.opset_import if o.domain in ('', 'ai.onnx'))
            note = ''
            if ort:
                s = ort.InferenceSession(path, providers=['CPUExecutionProvider'])
                got = s.run(None, {n: a.numpy() for n, a in zip(names, args)})
                refs = ref if isinstance(ref, tuple) else (ref,)
                err = max(float(np.max(np.abs(g - r.numpy()))) for g, r in zip(got, refs))
                note = f' ort-vs-torch max_abs {err:.3g}'
            total += size
            ops = sorted({n.op_type for n in m.graph.node})
            lines.append(f'# {name}: {what}')
            lines.append(' '.join([name, name + '.onnx', exporter, str(opset), str(size)] + [spec_text(n, s) for n, s in inputs]))
            print(f'ok {name} {exporter} opset {opset} {size} bytes{note} ops {" ".join(ops)}', file=log, flush=True)
        except Exception as e:  # one model's failure must not lose the others
            first = str(e).strip().split('\n')[0][:400]
            print(f'FAIL {name} {exporter}: {type(e).__name__}: {first}', file=log, flush=True)
            if os.path.exists(path):
                os.remove(path)
    with open(os.path.join(outdir, 'MANIFEST'), 'w') as f:
        f.write('\n'.join(lines) + '\n')
    print(f'total {total} bytes', file=log)
    log.close()


def parse_manifest(path):
    out = []
    for line in open(path):
        if line.startswith('#') or not line.strip():
            continue
        f = line.split()
        ins = []
        for item in f[5:]:
            n, dtype, dims, rng = item.split(':')
            lo, hi = rng.split(',')
            ins.append((n, dtype, tuple(int(d) for d in dims.split('x')), float(lo), float(hi)))
        out.append((f[0], f[1], ins))
    return out


def inputs(manifest, outdir, only):
    import numpy as np
    from onnx import numpy_helper
    for name, _, ins in parse_manifest(manifest):
        if only and name not in only:
            continue
        rng = np.random.default_rng(zlib.crc32(name.encode()))
        d = os.path.join(outdir, name)
        os.makedirs(d, exist_ok=True)
        for n, dtype, dims, lo, hi in ins:
            if dtype == 'int64':
                a = rng.integers(int(lo), int(hi), size=dims, dtype=np.int64)
            else:
                a = rng.uniform(lo, hi, size=dims).astype(dtype)
            with open(os.path.join(d, n + '.pb'), 'wb') as f:
                f.write(numpy_helper.from_array(a, n).SerializeToString())


def main(argv):
    if len(argv) >= 2 and argv[0] == 'export':
        export(argv[1], set(argv[2:]))
    elif len(argv) >= 3 and argv[0] == 'inputs':
        inputs(argv[1], argv[2], set(argv[3:]))
    else:
        sys.stderr.write('usage: export-corpus.py export OUTDIR [NAME...] | inputs MANIFEST DIR [NAME...]\n')
        return 2
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
"""whittle's benchmark corpus (issues 17 and 26): models from real exporters, random weights.

  export-corpus.py export OUTDIR [NAME...]
      Builds each model with PyTorch, torchvision, timm and transformers (random weights, small
      widths, configs built in code: no download), exports it with PyTorch's TorchScript exporter
      (torch.onnx.export(..., dynamo=False)) or its dynamo exporter (dynamo=True, weights kept
      inside the file), checks it in ONNX Runtime when onnxruntime is importable, and writes
      OUTDIR/<name>.onnx and OUTDIR/MANIFEST. A model that fails to build or export is named
      in OUTDIR/export.log and left out; the others are still written. Derived models come
      after the float ones they are made from: onnxruntime.quantization's quantize_dynamic and
      quantize_static (QDQ, QOperator) of a CNN and a transformer (EXPORTER quantize_dynamic
      or quantize_static), and float16-stored weights with a Cast after each (narrow_fp16).
      --issue N exports only the models added by issue N (17: the first 16; 26: the classes of
      issue 26, quantized and fp16-weight models included); --jobs J exports J models at once,
      each in its own process (a model whose export outlasts --timeout S seconds is left out).
      A model with several size variants takes the first whose file fits its size cap (each
      class's structure kept, widths and depths smaller).
  export-corpus.py names [--issue N]
      Prints the names of the models, in MANIFEST order.
  export-corpus.py export-one OUTDIR NAME
      What each of export's processes runs: one model, its result as OUTDIR/NAME.entry (JSON).
  export-corpus.py variants OUTDIR [--exporters torchscript,dynamo] [--jobs J] [--timeout S] [--deadline S] NAME...
      Exports every size variant of each named model, whatever its size (with each exporter listed, the
      model's own by default), J at once, none past S seconds from the start (--deadline), as
      OUTDIR/NAME/vK-EXPORTER/NAME.onnx; OUTDIR/variants.txt has one JSON line per variant: its MANIFEST
      lines and where its bytes are (initializers, node metadata). For choosing variants and caps:
      `export` builds the same model from a variant (the seed is the model's name), so its file has
      the size `variants` gave (the fixtures' Swin, FastViT and LeViT files are variants' files).
  export-corpus.py variant-one OUTDIR NAME K EXPORTER
      What each of variants' processes runs (K counts from 0).
  export-corpus.py inputs MANIFEST DIR [NAME...]
      Writes the inputs of each model of MANIFEST as DIR/<name>/<input>.pb (ONNX TensorProto):
      numpy's PCG64 seeded from the model's name, uniform in the manifest's range (integers
      in [LO, HI), so token ids are valid ids). Needs numpy and onnx only.

MANIFEST: '#' lines are comments (the first one names the library versions; one before each
model says how it was built, as "# NAME [CLASS]: what", CLASS the family that
scripts/bench-corpus.sh groups by); every other line is
  NAME FILE EXPORTER OPSET BYTES INPUT...
with each INPUT as NAME:DTYPE:DIMS:LO,HI (DIMS joined by x). scripts/bench-corpus.sh reads it.
"""
import os
import sys
import zlib

# The MANIFEST line before the first model of issue 26: tests that run every corpus model stop
# there unless WHITTLE_CORPUS_ALL=1 (CI's time).
MARK_26 = '# ---- issue 26 (tests that run every model stop here unless WHITTLE_CORPUS_ALL=1) ----'
FLOAT_IMAGE = ('float32', (1, 3, 224, 224), -1.0, 1.0)
VOCAB = 512
SEQ = 32
TOKENS = ('int64', (1, SEQ), 0, VOCAB)


# ---- the models (torch is imported only by `export`) ----

def models():
    """[dict(name, exporter, cls, issue, variants=[(what, build)], cap, ...)], build() -> (module,
    [(input name, spec)], [output names]); quantized models name their source and arguments."""
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
    issue17 = [
        ('mobilenet_v3_small', T, 'mobile-cnn', 'torchvision mobilenet_v3_small(width_mult=0.5, num_classes=10)',
         lambda: image(tvm.mobilenet_v3_small(weights=None, width_mult=0.5, num_classes=10))),
        # mnasnet0_5's body alone is 3.8 MB; the paper's smallest width keeps the corpus in budget
        ('mnasnet0_35', T, 'mobile-cnn', 'torchvision MNASNet(alpha=0.35, num_classes=10) (the mnasnet0_5 architecture at width 0.35)',
         lambda: image(tvm.MNASNet(0.35, num_classes=10))),
        ('shufflenet_v2_x0_5', T, 'mobile-cnn', 'torchvision shufflenet_v2_x0_5(num_classes=10)',
         lambda: image(tvm.shufflenet_v2_x0_5(weights=None, num_classes=10))),
        ('squeezenet1_1', T, 'mobile-cnn', 'torchvision squeezenet1_1(num_classes=10)',
         lambda: image(tvm.squeezenet1_1(weights=None, num_classes=10))),
        ('efficientnet_b0_w05', T, 'mobile-cnn', 'torchvision EfficientNet, efficientnet_b0 config with width_mult=0.5 depth_mult=0.5, 10 classes',
         efficientnet),
        ('convnext_pico', D, 'convnext', 'torchvision ConvNeXt, dims 16/32/64/128, depths 1/1/3/1 (ConvNeXt-T ratios), 10 classes', convnext),
        ('bert', T, 'text-encoder', 'transformers BertModel, 2 layers, hidden 96, 2 heads, ffn 256, vocab 512', bert),
        ('gpt2', T, 'decoder-llm', 'transformers GPT2LMHeadModel, 2 layers, n_embd 96, 2 heads, ffn 256, vocab 512, attention mask of ones', gpt2),
        ('vit', D, 'vit', 'transformers ViTModel, 224x224 patch 16, 2 layers, hidden 96, 2 heads, ffn 256', vit),
        ('whisper_encoder', D, 'audio-transformer', 'transformers WhisperEncoder, 80 mels x 200 frames, 2 layers, d_model 96, 2 heads, ffn 256', whisper),
        ('llama', D, 'decoder-llm', 'transformers LlamaForCausalLM, 2 layers, hidden 96, 4 heads (2 kv), ffn 256, vocab 512', llama),
        ('kws_gru', T, 'audio-small', 'keyword spotting: conv1d + GRU(64) + linear, 40 MFCC x 98 frames, 12 classes',
         lambda: (KwsGru(), [('mfcc', mfcc)], ['scores'])),
        ('kws_dscnn', D, 'audio-small', 'DS-CNN keyword spotting, 64 channels, 4 depthwise-separable blocks, 49x10 MFCC',
         lambda: (KwsDsCnn(), [('mfcc', ('float32', (1, 1, 49, 10), -1.0, 1.0))], ['logits'])),
        ('audio_embed', T, 'audio-small', 'YAMNet-style MobileNetV1 (width 1/8, 27 convs) on a 96x64 log-mel patch, 521 classes',
         lambda: (AudioEmbed(), [('patch', ('float32', (1, 1, 96, 64), -1.0, 1.0))], ['embedding', 'scores'])),
        ('mel_stft', T, 'audio-frontend', 'log-mel front end: torch.stft 400/160 (ONNX STFT), 80 mels, 1 s of 16 kHz audio',
         lambda: (MelStft(), [('wav', wav)], ['logmel'])),
        ('mel_conv', D, 'audio-frontend', 'log-mel front end as conv1d with cos/sin kernels, 80 mels, 1 s of 16 kHz audio',
         lambda: (MelConv(), [('wav', wav)], ['logmel'])),
    ]
    out = [dict(name=n, exporter=e, cls=c, issue=17, variants=[(w, b)], cap=4 << 20) for n, e, c, w, b in issue17]

    # ---- issue 26: the classes users bring (timm and transformers, both exporters) ----
    # Each file at most CAP bytes so that ~35 models add under 21 MB: the first variant that fits is
    # kept (same class structure, smaller widths or depths), the MANIFEST says which.
    CAP = 850_000

    def timm_image(name, size=224, reparam=False, **kw):
        def build():
            import timm
            m = timm.create_model(name, pretrained=False, num_classes=10, **kw)
            if reparam:
                m.eval()
                m = reparameterized(m)
            return m, [('x', ('float32', (1, 3, size, size), -1.0, 1.0))], ['y']
        return build

    def reparameterized(m):
        """timm.utils.model.reparameterize_model: fuse() / reparameterize() / switch_to_deploy()."""
        try:
            from timm.utils.model import reparameterize_model
            return reparameterize_model(m)
        except ImportError:
            def fuse(p):
                for n, c in p.named_children():
                    if hasattr(c, 'fuse'):
                        setattr(p, n, c.fuse())
                    elif hasattr(c, 'reparameterize'):
                        c.reparameterize()
                    elif hasattr(c, 'switch_to_deploy'):
                        c.switch_to_deploy()
                    fuse(c)
            fuse(m)
            return m

    def kws(d):
        return ', '.join(f'{k}={v}' for k, v in d.items())

    def tv(name, size=224, reparam=False, **kw):
        """(what, build) of a timm model with overridden arguments."""
        return (f'timm {name}(pretrained=False, {kws(kw)}, num_classes=10){", reparameterized" if reparam else ""}, {size}x{size}',
                timm_image(name, size, reparam, **kw))

    class HrnetSeg(nn.Module):
        """timm HighResolutionNet (no classification head) with HRNet-seg's head: every branch
        resized to the first's resolution, concatenated, 1x1 conv to 10 classes."""

        def __init__(self, ch):
            super().__init__()
            import copy
            from timm.models.hrnet import HighResolutionNet, cfg_cls
            cfg = copy.deepcopy(cfg_cls['hrnet_w18_small'])
            cfg['stage1']['num_channels'] = (ch[0] * 2,)
            cfg['stage2']['num_channels'] = tuple(ch[:2])
            cfg['stage3']['num_channels'] = tuple(ch[:3])
            cfg['stage4']['num_channels'] = tuple(ch)
            self.net = HighResolutionNet(cfg, head='')
            self.cls = nn.Conv2d(sum(ch), 10, 1)

        def forward(self, x):
            ys = self.net(x)
            h, w = ys[0].shape[2:]
            ys = [ys[0]] + [nn.functional.interpolate(y, size=(h, w), mode='bilinear', align_corners=False) for y in ys[1:]]
            return self.cls(torch.cat(ys, 1))

    def hrnet(ch):
        return (f'timm HighResolutionNet, hrnet_w18_small layout, branch widths {"/".join(map(str, ch))}, '
                'HRNet-seg head (branches resized bilinearly, concatenated, 1x1 conv to 10 classes), 224x224',
                lambda: image(HrnetSeg(ch)))

    def regnet(kind, **kw):
        def build():
            from timm.models.regnet import RegNet, RegNetCfg
            return image(RegNet(RegNetCfg(**kw), num_classes=10))
        return f'timm RegNet(RegNetCfg({kws(kw)})) ({kind}), 10 classes, 224x224', build

    def tv_densenet(growth, blocks, init):
        return (f'torchvision DenseNet(growth_rate={growth}, block_config={blocks}, num_init_features={init}, num_classes=10)',
                lambda: image(tvm.DenseNet(growth, blocks, init, num_classes=10)))

    def hf_vision(kind, make, size=224, field='last_hidden_state', out='hidden', **cfg):
        def build():
            import transformers
            c = getattr(transformers, kind + 'Config')(**cfg)
            return (Field(make(transformers, c), ['pixel_values'], field), [('pixel_values', ('float32', (1, 3, size, size), -1.0, 1.0))],
                    [out])
        return f'transformers {kind} ({kws(cfg)}), {size}x{size}', build

    def hf_audio(kind, **cfg):
        def build():
            import transformers
            c = getattr(transformers, kind + 'Config')(**cfg)
            return Field(getattr(transformers, kind + 'Model')(c), ['input_values'], 'last_hidden_state'), [('input_values', wav)], ['hidden']
        return f'transformers {kind}Model ({kws(cfg)}), 1 s of 16 kHz audio', build

    def causal_lm(kind, mask, **cfg):
        def build():
            import transformers
            c = getattr(transformers, kind + 'Config')(vocab_size=VOCAB, attn_implementation='eager', **cfg)
            m = getattr(transformers, kind + 'ForCausalLM')(c)
            if mask:
                return (Field(m, ['input_ids', 'attention_mask'], 'logits', use_cache=False),
                        [('input_ids', TOKENS), ('attention_mask', ('int64', (1, SEQ), 1, 2))], ['logits'])
            return Field(m, ['input_ids'], 'logits', use_cache=False), [('input_ids', TOKENS)], ['logits']
        return (f'transformers {kind}ForCausalLM ({kws(cfg)}), vocab {VOCAB}, {SEQ} tokens'
                + (', attention mask of ones' if mask else '')), build

    E = lambda name, exporter, cls, *variants, cap=CAP, **kw: dict(name=name, exporter=exporter, cls=cls, issue=26,
                                                                     variants=list(variants), cap=cap, **kw)
    llm = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
               max_position_embeddings=64)
    hf = dict(attn_implementation='eager')
    # (embed_dim, depths, num_heads) of the Swin variants, largest first
    swin_sizes = [(8, (2, 2, 2), (1, 2, 4)), (12, (2, 2), (1, 2)), (8, (2, 2), (1, 2))]
    out += [
        # at 224 the shifted windows' attention masks alone take 0.8 MB: 112x112, window 7 (stage 1: 28x28
        # tokens in 4x4 windows, stage 2: 14x14 in 2x2, stage 3: 7x7 in one window, unshifted). The masks and
        # relative-position biases (timm: constants; transformers: the masks built on every run) are about
        # 0.45 MB (timm) whatever the widths, and the dynamo exporter's node metadata (1.6-2.1 kB a node)
        # 0.35-0.64 MB more, hence embed 8 and the TorchScript exporter for both (`variants` gave timm
        # 767 kB TorchScript / 1.05 MB dynamo, transformers 502 kB / 1.19 MB).
        E('swin_timm', T, 'swin', *[tv('swin_tiny_patch4_window7_224', 112, img_size=112, embed_dim=c, depths=d, num_heads=h)
                                    for c, d, h in swin_sizes]),
        E('swin_hf', T, 'swin', *[hf_vision('Swin', lambda t, c: t.SwinModel(c, add_pooling_layer=False), size=112, embed_dim=c,
                                            depths=list(d), num_heads=list(h), window_size=7, patch_size=4, image_size=112, **hf)
                                  for c, d, h in swin_sizes]),
        E('resnet18_s', T, 'resnet', tv('resnet18', channels=(16, 32, 48, 64)), tv('resnet18', channels=(16, 24, 32, 48)),
          tv('resnet18', layers=(1, 1, 1, 1), channels=(16, 32, 48, 64))),
        E('resnet34_s', D, 'resnet', tv('resnet34', channels=(8, 16, 32, 48)), tv('resnet34', channels=(8, 16, 24, 32))),
        # fastvit_sa12's layout (3 RepMixer stages, an attention stage with its conditional positional encoding,
        # reparameterized): each width must divide the next (7x7 downsampling convs grouped by input channel)
        # and the last be a multiple of 32 (its attention heads are 32 wide); the weights dominate the file
        # (the dynamo exporter's metadata adds 145 kB), hence a cap of 900 kB (`variants`: 987 / 871 / 517 kB)
        E('fastvit_s', D, 'reparam-hybrid', tv('fastvit_sa12', reparam=True, layers=(1, 1, 2, 1), embed_dims=(12, 24, 48, 96)),
          tv('fastvit_sa12', reparam=True, layers=(1, 1, 2, 1), embed_dims=(12, 24, 48, 96), mlp_ratios=(3, 3, 3, 3)),
          tv('fastvit_sa12', reparam=True, layers=(1, 1, 2, 1), embed_dims=(8, 16, 32, 64), mlp_ratios=(3, 3, 3, 3)), cap=900_000),
        E('repvit_s', D, 'reparam-hybrid', tv('repvit_m0_9', reparam=True, embed_dim=(16, 32, 64, 128), depth=(1, 1, 2, 1)),
          tv('repvit_m0_9', reparam=True, embed_dim=(16, 32, 48, 96), depth=(1, 1, 2, 1))),
        E('wav2vec2', T, 'wav2vec2', hf_audio('Wav2Vec2', hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128,
                                               conv_dim=(32,) * 7, num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4,
                                               feat_extract_norm='group', **hf)),
        E('hubert', D, 'wav2vec2', hf_audio('Hubert', hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128,
                                             conv_dim=(32,) * 7, num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4,
                                             feat_extract_norm='group', **hf)),
        E('densenet121_s', T, 'densenet', tv('densenet121', growth_rate=6, block_config=(6, 12, 24, 16)),
          tv('densenet121', growth_rate=8, block_config=(3, 6, 12, 8))),
        E('densenet_tv', D, 'densenet', tv_densenet(8, (3, 6, 12, 8), 16), tv_densenet(6, (3, 6, 12, 8), 12)),
        E('vit_timm', T, 'vit', tv('vit_tiny_patch16_224', embed_dim=64, depth=3, num_heads=2),
          tv('vit_tiny_patch16_224', embed_dim=64, depth=2, num_heads=2)),
        E('clip_vision', D, 'vit', hf_vision('CLIPVision', lambda t, c: t.CLIPVisionModel(c), hidden_size=64, intermediate_size=192,
                                             num_hidden_layers=2, num_attention_heads=2, image_size=224, patch_size=16, **hf)),
        E('dinov2', T, 'vit', hf_vision('Dinov2', lambda t, c: t.Dinov2Model(c), hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                                        mlp_ratio=3, image_size=224, patch_size=14, **hf)),
        E('hrnet_s', T, 'hrnet', hrnet((8, 16, 32, 64)), hrnet((6, 12, 24, 48)), hrnet((4, 8, 16, 32))),
        E('convnextv2_s', D, 'convnext', tv('convnextv2_atto', depths=(1, 1, 2, 1), dims=(16, 32, 64, 128)),
          tv('convnextv2_atto', depths=(1, 1, 2, 1), dims=(16, 32, 48, 96)), tv('convnextv2_atto', depths=(1, 1, 2, 1), dims=(16, 32, 48, 80))),
        E('edgenext_s', T, 'edgenext', tv('edgenext_xx_small', depths=(1, 1, 3, 1), dims=(16, 32, 48, 96)),
          tv('edgenext_xx_small', depths=(1, 1, 2, 1), dims=(16, 32, 48, 96)), tv('edgenext_xx_small', depths=(1, 1, 2, 1), dims=(16, 32, 48, 80))),
        E('mobilevit_s', T, 'mobilevit', *[hf_vision('MobileViT', lambda t, c: t.MobileViTForImageClassification(c), size=256, field='logits',
                                                     out='logits', hidden_sizes=h, neck_hidden_sizes=n, num_attention_heads=2,
                                                     expand_ratio=2.0, num_labels=10, **hf)
                                           for h, n in (([32, 40, 48], [8, 8, 12, 24, 32, 40, 160]), ([24, 32, 40], [8, 8, 12, 16, 24, 32, 128]),
                                                        ([16, 24, 32], [8, 8, 12, 16, 16, 24, 96]))]),
        # at 224 the attention biases (heads x 196 x 196 per block) dominate the file: 160x160 and 128x128. The
        # dynamo exporter's node metadata is 0.33-0.39 MB more on LeViT's many small nodes, hence TorchScript
        # (`variants`: 829 / 765 / 639 / 459 kB; dynamo 1.21 / 1.15 / 0.97 / 0.82 MB); a cap of 800 kB keeps
        # the four of Swin, FastViT and LeViT under 2.95 MB (the corpus under 40 MB)
        E('levit_s', T, 'levit', tv('levit_128s', 160, img_size=160, embed_dim=(32, 48, 64), num_heads=(2, 2, 2), depth=(1, 1, 2)),
          tv('levit_128s', 128, img_size=128, embed_dim=(32, 48, 64), num_heads=(2, 2, 2), depth=(1, 1, 2)),
          tv('levit_128s', 128, img_size=128, embed_dim=(32, 48, 64), num_heads=(2, 2, 2), depth=(1, 1, 1)),
          tv('levit_128s', 128, img_size=128, embed_dim=(16, 32, 48), num_heads=(1, 2, 2), depth=(1, 1, 2)), cap=800_000),
        # 4 stages (widths 16/32/64/128, depths 1/1/3/3), as RegNetX/Y-200MF's 24/56/152/368
        E('regnetx_s', T, 'regnet', regnet('RegNetX', w0=16, wa=16.0, wm=2.0, group_size=8, depth=8),
          regnet('RegNetX', w0=8, wa=8.0, wm=2.0, group_size=8, depth=10)),
        E('regnety_s', D, 'regnet', regnet('RegNetY', w0=16, wa=16.0, wm=2.0, group_size=8, depth=8, se_ratio=0.25),
          regnet('RegNetY', w0=8, wa=8.0, wm=2.0, group_size=8, depth=10, se_ratio=0.25)),
        E('qwen2', D, 'decoder-llm', causal_lm('Qwen2', False, **llm)),
        E('mistral', T, 'decoder-llm', causal_lm('Mistral', True, **llm)),
        E('falcon', D, 'decoder-llm', causal_lm('Falcon', False, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                                 ffn_hidden_size=128, max_position_embeddings=64)),
        E('phi3', T, 'decoder-llm', causal_lm('Phi3', True, original_max_position_embeddings=64, pad_token_id=0, bos_token_id=1,
                                               eos_token_id=2, **llm)),
        E('gemma', D, 'decoder-llm', causal_lm('Gemma', False, head_dim=16, **llm)),
        E('bloom', T, 'decoder-llm', causal_lm('Bloom', True, hidden_size=64, n_layer=2, n_head=4)),
        E('gpt_neox', D, 'decoder-llm', causal_lm('GPTNeoX', False, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                                   intermediate_size=128, max_position_embeddings=64)),
        # fp16-stored weights: a float16 initializer widened by a Cast before use. (Exporting a module whose
        # parameters are float16 parametrizations widened on use fails in torch 2.11: register_parametrization
        # refuses a right_inverse that changes the dtype, unsafe or not.) So the float export is narrowed.
        E('fp16w_resnet18', 'narrow_fp16', 'fp16-weights', ('resnet18_s with every float initializer of 2 or more dims (values within float16) stored as '
                                                           'float16, a Cast to float after each', None), source='resnet18_s'),
        E('fp16w_qwen2', 'narrow_fp16', 'fp16-weights', ('qwen2 with every float initializer of 2 or more dims (values within float16) stored as '
                                                        'float16, a Cast to float after each', None), source='qwen2'),
        # onnxruntime.quantization of two models above (the source is exported first)
        E('q_dyn_resnet18', 'quantize_dynamic', 'quantized', ('resnet18_s, onnxruntime.quantization.quantize_dynamic, weights uint8 '
                                                             '(ConvInteger takes uint8 weights in ONNX Runtime)', None),
          source='resnet18_s', qargs=dict(weight_type='QUInt8')),
        E('q_dyn_bert', 'quantize_dynamic', 'quantized', ('bert (issue 17), onnxruntime.quantization.quantize_dynamic, weights int8', None),
          source='bert', qargs=dict(weight_type='QInt8')),
        E('q_qdq_resnet18', 'quantize_static', 'quantized', ('resnet18_s, onnxruntime.quantization.quantize_static, QDQ format, '
                                                            '8 random calibration inputs, defaults otherwise', None),
          source='resnet18_s', qargs=dict(quant_format='QDQ')),
        E('q_qop_resnet18', 'quantize_static', 'quantized', ('resnet18_s, onnxruntime.quantization.quantize_static, QOperator format '
                                                            '(QLinearConv...), 8 random calibration inputs, defaults otherwise', None),
          source='resnet18_s', qargs=dict(quant_format='QOperator')),
        E('q_qdq_bert', 'quantize_static', 'quantized', ('bert (issue 17), onnxruntime.quantization.quantize_static, QDQ format, '
                                                        '8 random calibration inputs, defaults otherwise', None),
          source='bert', qargs=dict(quant_format='QDQ')),
        E('q_qop_bert', 'quantize_static', 'quantized', ('bert (issue 17), onnxruntime.quantization.quantize_static, QOperator format, '
                                                        '8 random calibration inputs, defaults otherwise', None),
          source='bert', qargs=dict(quant_format='QOperator')),
    ]
    return out


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


def first_line(e):
    return f'{type(e).__name__}: ' + (str(e).strip().split('\n')[0][:400] if str(e).strip() else '')


def widen_initializers(m):
    """Stores every float initializer of 2 or more dims as float16, widened by a Cast on use (the
    layout of a model kept in half precision and run in float32). Returns how many."""
    import numpy as np
    from onnx import helper, numpy_helper, TensorProto
    casts = []
    for i, t in enumerate(m.graph.initializer):
        if t.data_type == TensorProto.FLOAT and len(t.dims) >= 2:
            a = numpy_helper.to_array(t)
            if a.size and float(np.max(np.abs(a))) > 65504:  # a mask constant, not a weight
                continue
            name = t.name
            m.graph.initializer[i].CopyFrom(numpy_helper.from_array(a.astype(np.float16), name + '_fp16'))
            casts.append(helper.make_node('Cast', [name + '_fp16'], [name], to=TensorProto.FLOAT, name=name + '_widen'))
    nodes = casts + list(m.graph.node)
    del m.graph.node[:]
    m.graph.node.extend(nodes)
    return len(casts)


def export_float(entry, outdir):
    """Exports one model (the first variant that fits its cap); returns (what, inputs, note)."""
    path = os.path.join(outdir, entry['name'] + '.onnx')
    notes = []
    for k, (what, build) in enumerate(entry['variants']):
        try:
            return export_variant(entry, outdir, what, build, notes)
        except Exception as e:
            if os.path.exists(path):
                os.remove(path)
            notes.append(f'variant {k + 1}: {first_line(e)}')
    raise RuntimeError('no variant fits: ' + '; '.join(notes))


def export_variant(entry, outdir, what, build, notes):
    import numpy as np
    import torch
    import onnx
    try:
        import onnxruntime as ort
    except ImportError:
        ort = None
    name, exporter = entry['name'], entry['exporter']
    path = os.path.join(outdir, name + '.onnx')
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
    if any(os.path.exists(os.path.join(outdir, f)) for f in (name + '.onnx.data', name + '.onnx_data')):
        raise RuntimeError('the exporter wrote external data')
    onnx.checker.check_model(m)
    size = os.path.getsize(path)
    if size > entry['cap']:
        raise RuntimeError(f'{size} bytes, over the cap {entry["cap"]}')
    if ort:
        s = ort.InferenceSession(path, providers=['CPUExecutionProvider'])
        got = s.run(None, {n: a.numpy() for n, a in zip(names, args)})
        refs = ref if isinstance(ref, (tuple, list)) else (ref,)
        err = max(float(np.max(np.abs(g - r.numpy()))) for g, r in zip(got, refs))
        notes.append(f'ort-vs-torch max_abs {err:.3g}')
    return what, inputs, '; '.join(notes)


def find_source(outdir, name):
    """A quantized model's source: this export's file and MANIFEST entry, else fixtures/corpus's."""
    p = os.path.join(outdir, name + '.entry')
    if os.path.exists(p):
        import json
        e = json.load(open(p))
        if e['ok']:
            return os.path.join(outdir, name + '.onnx'), e['line'].split()[5:]
    corpus = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'fixtures', 'corpus')
    for n, f, _ in parse_manifest(os.path.join(corpus, 'MANIFEST')) if os.path.exists(os.path.join(corpus, 'MANIFEST')) else []:
        if n == name:
            line = next(l for l in open(os.path.join(corpus, 'MANIFEST')) if l.startswith(name + ' '))
            return os.path.join(corpus, f), line.split()[5:]
    raise RuntimeError(f'source model {name} was not exported')


def parse_spec(item):
    n, dtype, dims, rng = item.split(':')
    lo, hi = rng.split(',')
    return n, (dtype, tuple(int(d) for d in dims.split('x')), float(lo), float(hi))


def export_narrowed(entry, outdir):
    """A float model of this export with its weights stored as float16 (widen_initializers)."""
    import onnx
    src, items = find_source(outdir, entry['source'])
    m = onnx.load(src)
    n = widen_initializers(m)
    if m.ir_version <= onnx.IR_VERSION:  # an older onnx than the exporter's cannot check it
        onnx.checker.check_model(m)
    onnx.save(m, os.path.join(outdir, entry['name'] + '.onnx'))
    return entry['variants'][0][0], items, f'{n} initializers narrowed'


def export_quantized(entry, outdir):
    import numpy as np
    import onnxruntime as ort
    from onnxruntime import quantization as q
    name = entry['name']
    what = entry['variants'][0][0]
    src, items = find_source(outdir, entry['source'])
    inputs = [parse_spec(i) for i in items]
    path = os.path.join(outdir, name + '.onnx')
    pre = os.path.join(outdir, name + '.pre.onnx')
    notes = []
    try:
        from onnxruntime.quantization.shape_inference import quant_pre_process
        quant_pre_process(src, pre)
        what += ', after quant_pre_process'
    except Exception as e:
        notes.append(f'quant_pre_process failed ({first_line(e)}): quantized without it')
        pre = src
    rng = np.random.default_rng(zlib.crc32(name.encode()))

    def sample():
        return {n: (rng.integers(int(lo), int(hi), size=dims, dtype=np.int64) if dtype == 'int64'
                    else rng.uniform(lo, hi, size=dims).astype(dtype)) for n, (dtype, dims, lo, hi) in inputs}

    qa = entry['qargs']

    def quantize(model):
        if entry['exporter'] == 'quantize_dynamic':
            q.quantize_dynamic(model, path, weight_type=q.QuantType[qa['weight_type']])
        else:
            class Reader(q.CalibrationDataReader):
                def __init__(self):
                    self.left = [sample() for _ in range(8)]

                def get_next(self):
                    return self.left.pop() if self.left else None

            q.quantize_static(model, path, Reader(), quant_format=q.QuantFormat[qa['quant_format']])
        import onnx
        onnx.checker.check_model(onnx.load(path))
        ort.InferenceSession(path, providers=['CPUExecutionProvider'])

    try:
        quantize(pre)
    except Exception as e:
        if pre == src:
            raise
        notes.append(f'the pre-processed model quantized to an invalid one ({first_line(e)}): quantized without quant_pre_process')
        what = what.replace(', after quant_pre_process', '')
        quantize(src)
    if pre != src and os.path.exists(pre):
        os.remove(pre)
    feed = sample()
    a = ort.InferenceSession(src, providers=['CPUExecutionProvider']).run(None, feed)
    b = ort.InferenceSession(path, providers=['CPUExecutionProvider']).run(None, feed)
    err = max(float(np.max(np.abs(x - y)) / max(float(np.max(np.abs(x))), 1e-30)) for x, y in zip(a, b))
    notes.append(f'ort quantized-vs-float max_abs/max|float| {err:.3g}')
    return what, inputs, '; '.join(notes)


def entry_result(entry, path, what, inputs, note):
    """export_one's answer for a written model: its MANIFEST comment and line and its export.log line."""
    import onnx
    name = entry['name']
    m = onnx.load(path)
    opset = next(o.version for o in m.opset_import if o.domain in ('', 'ai.onnx'))
    size = os.path.getsize(path)
    ops = sorted({(n.domain + '.' if n.domain not in ('', 'ai.onnx') else '') + n.op_type for n in m.graph.node})
    items = [i if isinstance(i, str) else spec_text(*i) for i in inputs]
    return dict(ok=True, comment=f'# {name} [{entry["cls"]}]: {what}',
                line=' '.join([name, name + '.onnx', entry['exporter'], str(opset), str(size)] + items),
                log=f'ok {name} {entry["exporter"]} opset {opset} {size} bytes {note} ops {" ".join(ops)}')


def file_sizes(path):
    """Where a model file's bytes are: initializers (the largest 6 named), nodes (the dynamo exporter's
    metadata_props among them), Constant nodes."""
    import onnx
    m = onnx.load(path)
    g = m.graph
    inits = sorted(((t.ByteSize(), t.name, list(t.dims), t.data_type) for t in g.initializer), reverse=True)
    meta = sum(sum(len(p.key) + len(p.value) for p in getattr(n, 'metadata_props', [])) for n in g.node)
    return dict(bytes=os.path.getsize(path), nodes=len(g.node), node_bytes=sum(n.ByteSize() for n in g.node), metadata_bytes=meta,
                constant_bytes=sum(n.ByteSize() for n in g.node if n.op_type == 'Constant'),
                initializer_bytes=sum(b for b, *_ in inits), largest=inits[:6])


def variant_one(outdir, name, k, exporter):
    """One variant of one float model with the given exporter, whatever its size, into
    OUTDIR/NAME/vK-EXPORTER/NAME.onnx; its result (export_one's, with file_sizes) as result.json there."""
    import json
    import time
    import torch
    torch.set_num_threads(2)
    entry = dict(next(e for e in models() if e['name'] == name), exporter=exporter, cap=1 << 40)
    d = os.path.join(outdir, name, f'v{k + 1}-{exporter}')
    os.makedirs(d, exist_ok=True)
    what, build = entry['variants'][k]
    t0 = time.time()
    try:
        what, inputs, note = export_variant(entry, d, what, build, [])
        res = entry_result(entry, os.path.join(d, name + '.onnx'), what, inputs, note)
        res.update(file_sizes(os.path.join(d, name + '.onnx')))
    except Exception as e:
        res = dict(ok=False, log=f'FAIL {name} variant {k + 1} {exporter}: {first_line(e)}')
    res.update(name=name, variant=k + 1, exporter=exporter, seconds=round(time.time() - t0, 1))
    with open(os.path.join(d, 'result.json'), 'w') as f:
        json.dump(res, f)


def variants(outdir, only, exporters, jobs=1, timeout=600, deadline=None):
    """Every variant of the named float models with each exporter (the model's own when none is given),
    JOBS at once, none left running past DEADLINE seconds; a summary in OUTDIR/variants.txt, largest
    first per model. For choosing the variants and caps of models(): sizes do not depend on the order."""
    import json
    import subprocess
    import time
    start = time.time()
    os.makedirs(outdir, exist_ok=True)
    todo = [(e['name'], k, x) for k in range(max(len(e['variants']) for e in models()))
            for e in selected(only, None) if 'source' not in e and k < len(e['variants'])
            for x in (exporters or [e['exporter']])]
    running = {}
    while todo or running:
        late = deadline is not None and time.time() - start > deadline
        while todo and len(running) < jobs and not late:
            n, k, x = todo.pop(0)
            running[(n, k, x)] = (subprocess.Popen([sys.executable, os.path.abspath(__file__), 'variant-one', outdir, n, str(k), x]),
                                  time.time())
        if late:
            todo = []
        time.sleep(0.5)
        for key, (proc, t0) in list(running.items()):
            if proc.poll() is None and (time.time() - t0 > timeout or (deadline is not None and time.time() - start > deadline)):
                proc.kill()
            if proc.poll() is not None:
                del running[key]
                print(f'done {key} {time.time() - t0:.0f} s', file=sys.stderr, flush=True)
    rows = []
    for e in selected(only, None):
        for root, _, files in sorted(os.walk(os.path.join(outdir, e['name']))):
            if 'result.json' in files:
                rows.append(json.load(open(os.path.join(root, 'result.json'))))
    with open(os.path.join(outdir, 'variants.txt'), 'w') as f:
        for r in rows:
            print(json.dumps(r), file=f)


def export_one(outdir, name):
    """Exports one model in this process; writes OUTDIR/NAME.entry (JSON)."""
    import json
    import onnx
    entry = next(e for e in models() if e['name'] == name)
    path = os.path.join(outdir, name + '.onnx')
    try:
        if entry['exporter'].startswith('quantize'):
            what, inputs, note = export_quantized(entry, outdir)
        elif entry['exporter'] == 'narrow_fp16':
            what, inputs, note = export_narrowed(entry, outdir)
        else:
            import torch
            torch.set_num_threads(2)
            what, inputs, note = export_float(entry, outdir)
        res = entry_result(entry, path, what, inputs, note)
    except Exception as e:  # one model's failure must not lose the others
        res = dict(ok=False, log=f'FAIL {name} {entry["exporter"]}: {first_line(e)}')
        if os.path.exists(path):
            os.remove(path)
    with open(os.path.join(outdir, name + '.entry'), 'w') as f:
        json.dump(res, f)


def selected(only, issue):
    return [e for e in models() if (not only or e['name'] in only) and (issue is None or e['issue'] == issue)]


def export(outdir, only, issue=None, jobs=1, timeout=600):
    import json
    import subprocess
    import time
    os.makedirs(outdir, exist_ok=True)
    todo = selected(only, issue)
    log = open(os.path.join(outdir, 'export.log'), 'w')
    # quantized and narrowed models after the float ones they are made from
    for phase in (False, True):
        queue = [e['name'] for e in todo if ('source' in e) == phase]
        running = {}
        while queue or running:
            while queue and len(running) < jobs:
                n = queue.pop(0)
                p = os.path.join(outdir, n + '.entry')
                if os.path.exists(p):
                    os.remove(p)
                running[n] = (subprocess.Popen([sys.executable, os.path.abspath(__file__), 'export-one', outdir, n]), time.time())
            time.sleep(0.5)
            for n, (proc, t0) in list(running.items()):
                if proc.poll() is None and time.time() - t0 > timeout:
                    proc.kill()
                    proc.wait()
                    with open(os.path.join(outdir, n + '.entry'), 'w') as f:
                        json.dump(dict(ok=False, log=f'FAIL {n}: export outlasted {timeout} s'), f)
                if proc.poll() is not None:
                    del running[n]
                    print(f'done {n} {time.time() - t0:.0f} s', file=sys.stderr, flush=True)
    import torch
    import torchvision
    import transformers
    import onnx
    try:
        import onnxruntime as ort
    except ImportError:
        ort = None
    try:
        import timm
        tv = f', timm {timm.__version__}'
    except ImportError:
        tv = ''
    versions = (f'torch {torch.__version__}, torchvision {torchvision.__version__}{tv}, transformers {transformers.__version__}, '
                f'onnx {onnx.__version__}' + (f', checked in onnxruntime {ort.__version__}' if ort else ''))
    lines = [f'# whittle benchmark corpus (issues 17, 26), written by scripts/export-corpus.py export: {versions}',
             '# NAME FILE EXPORTER OPSET BYTES INPUT... (INPUT = NAME:DTYPE:DIMS:LO,HI; integers in [LO, HI))']
    total = 0
    marked = False
    for e in todo:
        if e['issue'] == 26 and not marked:
            lines.append(MARK_26)
            marked = True
        p = os.path.join(outdir, e['name'] + '.entry')
        r = json.load(open(p)) if os.path.exists(p) else dict(ok=False, log=f'FAIL {e["name"]}: the exporting process wrote nothing')
        print(r['log'], file=log, flush=True)
        if r['ok']:
            lines += [r['comment'], r['line']]
            total += int(r['line'].split()[4])
        if os.path.exists(p):
            os.remove(p)
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
    opts = dict(issue=None, jobs=1, timeout=600, deadline=None, exporters=None)
    rest = []
    it = iter(argv[1:])
    for a in it:
        if a in ('--issue', '--jobs', '--timeout', '--deadline'):
            opts[a[2:]] = int(next(it))
        elif a == '--exporters':
            opts['exporters'] = next(it)
        else:
            rest.append(a)
    if argv[:1] == ['export'] and rest:
        export(rest[0], set(rest[1:]), **opts)
    elif argv[:1] == ['variants'] and rest:
        variants(rest[0], set(rest[1:]), opts['exporters'].split(',') if opts['exporters'] else None, opts['jobs'], opts['timeout'],
                 opts['deadline'])
    elif argv[:1] == ['variant-one'] and len(rest) == 4:
        variant_one(rest[0], rest[1], int(rest[2]), rest[3])
    elif argv[:1] == ['export-one'] and len(rest) == 2:
        export_one(rest[0], rest[1])
    elif argv[:1] == ['names']:
        print('\n'.join(e['name'] for e in selected(set(rest), opts['issue'])))
    elif argv[:1] == ['inputs'] and len(rest) >= 2:
        inputs(rest[0], rest[1], set(rest[2:]))
    else:
        sys.stderr.write('usage: export-corpus.py export OUTDIR [--issue N] [--jobs J] [--timeout S] [NAME...] | names [--issue N] '
                         '| variants OUTDIR [--exporters torchscript,dynamo] [--jobs J] [--timeout S] [--deadline S] NAME... '
                         '| inputs MANIFEST DIR [NAME...]\n')
        return 2
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))

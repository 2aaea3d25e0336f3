#!/usr/bin/python3
"""Export the model suite (issue 26) to ONNX, each with a reference input and PyTorch's output.

For every model NAME this writes DIR/NAME/NAME.onnx (one input 'input', one output 'output'),
DIR/NAME/input.npy, DIR/NAME/reference.npy and DIR/NAME/reference.float64.npy (the same model
and input evaluated in float64: what a float64 conversion is checked against), or
DIR/NAME/export_error.txt when the export fails. Weights are seeded and random: no downloads.
Run with Debian's interpreter (/usr/bin/python3: PyTorch 1.13, torchvision 0.14).
"""
import argparse
import os
import sys
import time
import warnings

import numpy as np
import torch
import torchvision.models as tvm
import torchvision.models.segmentation as seg


class SegmentationOut(torch.nn.Module):
    """A segmentation model's 'out' head only (the models return a dict)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)["out"]


class Encoder(torch.nn.Module):
    """4 encoder layers, d=256, 4 heads, GELU; a linear head on the first token."""

    def __init__(self):
        super().__init__()
        # Sequence-first: batch_first would take PyTorch's fused fast path, which cannot export.
        layer = torch.nn.TransformerEncoderLayer(256, 4, dim_feedforward=1024, activation="gelu")
        self.encoder = torch.nn.TransformerEncoder(layer, num_layers=4)
        self.head = torch.nn.Linear(256, 10)

    def forward(self, x):  # [128, 1, 256]
        return self.head(self.encoder(x)[0])


class Gru(torch.nn.Module):
    """A two-layer GRU, 64 -> 128, with a linear head on the last step."""

    def __init__(self):
        super().__init__()
        self.gru = torch.nn.GRU(64, 128, num_layers=2)
        self.head = torch.nn.Linear(128, 10)

    def forward(self, x):  # [50, 1, 64]
        return self.head(self.gru(x)[0][-1])


def image(size=224):
    return (1, 3, size, size)


# name: (constructor, input shape, opset). Opset 17 where LayerNorm appears (its ONNX op).
MODELS = {
    "alexnet": (lambda: tvm.alexnet(weights=None), image(), 13),
    "vgg11_bn": (lambda: tvm.vgg11_bn(weights=None), image(), 13),
    "resnet50": (lambda: tvm.resnet50(weights=None), image(), 13),
    "resnext50_32x4d": (lambda: tvm.resnext50_32x4d(weights=None), image(), 13),
    "densenet121": (lambda: tvm.densenet121(weights=None), image(), 13),
    "squeezenet1_1": (lambda: tvm.squeezenet1_1(weights=None), image(), 13),
    "googlenet": (lambda: tvm.googlenet(weights=None, aux_logits=False, init_weights=True),
                  image(), 13),
    "inception_v3": (lambda: tvm.inception_v3(weights=None, aux_logits=False, init_weights=True),
                     image(299), 13),
    "mobilenet_v2": (lambda: tvm.mobilenet_v2(weights=None), image(), 13),
    "mobilenet_v3_large": (lambda: tvm.mobilenet_v3_large(weights=None), image(), 13),
    "mobilenet_v3_small": (lambda: tvm.mobilenet_v3_small(weights=None), image(), 13),
    "efficientnet_b0": (lambda: tvm.efficientnet_b0(weights=None), image(), 13),
    "efficientnet_v2_s": (lambda: tvm.efficientnet_v2_s(weights=None), image(), 13),
    "regnet_x_400mf": (lambda: tvm.regnet_x_400mf(weights=None), image(), 13),
    "regnet_y_400mf": (lambda: tvm.regnet_y_400mf(weights=None), image(), 13),
    "shufflenet_v2_x1_0": (lambda: tvm.shufflenet_v2_x1_0(weights=None), image(), 13),
    "mnasnet1_0": (lambda: tvm.mnasnet1_0(weights=None), image(), 13),
    "convnext_tiny": (lambda: tvm.convnext_tiny(weights=None), image(), 17),
    "swin_t": (lambda: tvm.swin_t(weights=None), image(), 17),
    "vit_b_16": (lambda: tvm.vit_b_16(weights=None), image(), 17),
    "lraspp_mobilenet_v3_large": (lambda: SegmentationOut(seg.lraspp_mobilenet_v3_large(
        weights=None, weights_backbone=None)), image(), 13),
    "deeplabv3_mobilenet_v3_large": (lambda: SegmentationOut(seg.deeplabv3_mobilenet_v3_large(
        weights=None, weights_backbone=None)), image(), 13),
    "fcn_resnet50": (lambda: SegmentationOut(seg.fcn_resnet50(
        weights=None, weights_backbone=None)), image(), 13),
    "transformer": (Encoder, (128, 1, 256), 17),
    "gru": (Gru, (50, 1, 64), 13),
}


def prepare(model, shape):
    """Redraws all-zero parameters and sets batch-norm statistics from the data, so that the
    output neither vanishes nor is exactly 0 (with the default init a comparison proves nothing).
    """
    with torch.no_grad():
        for p in model.parameters():
            if p.is_floating_point() and not p.any():
                p.normal_(0, 0.02)
    norms = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if norms:
        for m in norms:
            m.reset_running_stats()
            m.momentum = None  # a cumulative average over the passes below
        model.train()
        # Batch 2 (only image models have batch norm): training-mode batch norm rejects one
        # value per channel (the pooled 1x1 branches of the segmentation heads).
        with torch.no_grad():
            for _ in range(3):
                model(torch.randn((2,) + shape[1:]))
    model.eval()


def export(name, out_dir):
    make, shape, opset = MODELS[name]
    torch.manual_seed(0)
    model = make()
    prepare(model, shape)
    x = torch.randn(shape)
    with torch.no_grad():
        ref = model(x)
    d = os.path.join(out_dir, name)
    onnx_file = os.path.join(d, name + ".onnx")
    torch.onnx.export(model, x, onnx_file + ".tmp", opset_version=opset,
                      input_names=["input"], output_names=["output"])
    np.save(os.path.join(d, "input.npy"), x.numpy())
    np.save(os.path.join(d, "reference.npy"), ref.numpy())
    with torch.no_grad():
        np.save(os.path.join(d, "reference.float64.npy"), model.double()(x.double()).numpy())
    os.replace(onnx_file + ".tmp", onnx_file)  # last: a complete ONNX file means a complete export
    return ref


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out_dir", nargs="?", default="build/models")
    p.add_argument("--only", help="comma-separated model names (default: all 25)")
    p.add_argument("--force", action="store_true", help="export again models already exported")
    p.add_argument("--list", action="store_true", help="print the model names and exit")
    a = p.parse_args()
    if a.list:
        print("\n".join(MODELS))
        return 0
    names = a.only.split(",") if a.only else list(MODELS)
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        p.error("unknown model(s) " + ", ".join(unknown) + " (known: " + ", ".join(MODELS) + ")")
    torch.set_num_threads(os.cpu_count() or 1)
    warnings.filterwarnings("ignore")  # the exporter's tracer warnings, dozens per model
    failed = []
    for name in names:
        done = [os.path.join(a.out_dir, name, f) for f in (name + ".onnx", "reference.float64.npy")]
        if not a.force and all(map(os.path.exists, done)):
            print(f"{name}: already exported")
            continue
        start = time.time()
        os.makedirs(os.path.join(a.out_dir, name), exist_ok=True)
        error = os.path.join(a.out_dir, name, "export_error.txt")  # run.py's row shows it
        try:
            ref = export(name, a.out_dir)
        except Exception as e:  # noqa: BLE001 (one model's failure must not stop the others)
            message = f"{type(e).__name__}: {e}".strip().splitlines()[0][:300]
            print(f"{name}: FAILED: {message}", flush=True)
            with open(error, "w") as f:
                f.write(message + "\n")
            failed.append(name)
            continue
        if os.path.exists(error):
            os.remove(error)
        r = ref.abs()
        print(f"{name}: exported in {time.time() - start:.1f} s, output {list(ref.shape)}, "
              f"max |ref| {r.max():.3g}, mean |ref| {r.mean():.3g}", flush=True)
    if failed:
        print("failed: " + ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

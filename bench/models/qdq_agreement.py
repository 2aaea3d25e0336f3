#!/usr/bin/python3
"""How closely Anvil and ONNX Runtime follow ONNX's definition of a QDQ model.

Evaluates the model independently (each node as ONNX defines it: QuantizeLinear rounding halves to
even and saturating, DequantizeLinear, convolutions and products summed in float64 by PyTorch),
then compares it with the outputs each runtime wrote for the same inputs. The differences are
given in steps of the output's quantization scale (the DequantizeLinear that produces the model's
output), the unit ONNX Runtime's and Anvil's results can differ by when a value at a rounding tie
goes one way in one and the other way in the other.

    qdq_agreement.py MODEL.onnx INPUT_DIR ANVIL_DIR ORT_DIR

INPUT_DIR holds x00.npy, x01.npy, ... (the model's one input); ANVIL_DIR/a<k>/<output>.npy and
ORT_DIR/o<k>/output_0.npy are the runtimes' outputs for input k (as `anvil run --output-dir` and
the bench worker of ONNX Runtime write them). Covers the operators `anvil quantize` and ONNX
Runtime's quantizer put in image classifiers: Q/DQ, Conv (grouped too), Relu, Clip, MaxPool, Add,
GlobalAveragePool, Flatten, Gemm.
"""
import argparse
import glob
import os

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import numpy_helper


def attr(n, name, default):
    for a in n.attribute:
        if a.name == name:
            return onnx.helper.get_attribute_value(a)
    return default


def evaluate(m, inits, x):
    env = dict(inits)
    env[m.graph.input[0].name] = x
    for n in m.graph.node:
        i = [env[k] if k else None for k in n.input]
        op = n.op_type
        if op == "QuantizeLinear":
            z = i[2].astype(np.float32)
            y = np.clip(np.rint(i[0] / np.float32(i[1])) + z, 0, 255).astype(np.uint8)
        elif op == "DequantizeLinear":
            s = i[1]
            z = i[2] if len(i) > 2 and i[2] is not None else np.zeros_like(s)
            if s.ndim == 1:
                shape = [1] * i[0].ndim
                shape[attr(n, "axis", 1)] = -1
                s, z = s.reshape(shape), z.reshape(shape)
            y = ((i[0].astype(np.int32) - z.astype(np.int32)).astype(np.float32) * s)
            y = y.astype(np.float32)
        elif op == "Conv":
            p = attr(n, "pads", [0, 0, 0, 0])
            b = torch.from_numpy(i[2].astype(np.float64)) if len(i) > 2 else None
            xp = F.pad(torch.from_numpy(i[0].astype(np.float64)), (p[1], p[3], p[0], p[2]))
            y = F.conv2d(xp, torch.from_numpy(i[1].astype(np.float64)), b,
                         stride=attr(n, "strides", [1, 1]), dilation=attr(n, "dilations", [1, 1]),
                         groups=attr(n, "group", 1)).numpy().astype(np.float32)
        elif op == "Relu":
            y = np.maximum(i[0], 0)
        elif op == "Clip":
            lo = i[1] if len(i) > 1 and i[1] is not None else attr(n, "min", -np.inf)
            hi = i[2] if len(i) > 2 and i[2] is not None else attr(n, "max", np.inf)
            y = np.clip(i[0], np.float32(lo), np.float32(hi)).astype(np.float32)
        elif op == "MaxPool":
            p = attr(n, "pads", [0, 0, 0, 0])
            xp = F.pad(torch.from_numpy(i[0]), (p[1], p[3], p[0], p[2]), value=-np.inf)
            y = F.max_pool2d(xp, attr(n, "kernel_shape", None), attr(n, "strides", [1, 1])).numpy()
        elif op == "Add":
            y = (i[0] + i[1]).astype(np.float32)
        elif op == "GlobalAveragePool":
            y = i[0].astype(np.float64).mean(axis=(2, 3), keepdims=True).astype(np.float32)
        elif op == "Flatten":
            y = i[0].reshape(i[0].shape[0], -1)
        elif op == "Gemm":
            b = i[1].T if attr(n, "transB", 0) else i[1]
            c = i[2] if len(i) > 2 and i[2] is not None else 0
            y = (i[0].astype(np.float64) @ b.astype(np.float64) + c).astype(np.float32)
        else:
            raise SystemExit("qdq_agreement: no evaluation of %s" % op)
        env[n.output[0]] = y
    return env[m.graph.output[0].name]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("inputs")
    ap.add_argument("anvil")
    ap.add_argument("ort")
    a = ap.parse_args()
    m = onnx.load(a.model)
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    out = m.graph.output[0].name
    producer = [n for n in m.graph.node if out in n.output][0]
    scale = float(inits[producer.input[1]]) if producer.op_type == "DequantizeLinear" else None
    unit = scale if scale else 1.0
    worst = {"anvil": 0.0, "ort": 0.0, "anvil-ort": 0.0}
    differ = {"anvil": 0, "ort": 0, "anvil-ort": 0}
    files = sorted(glob.glob(os.path.join(a.inputs, "x*.npy")))
    for f in files:
        k = os.path.basename(f)[1:-4]
        ref = evaluate(m, inits, np.load(f))
        got = {"anvil": np.load(os.path.join(a.anvil, "a" + k, out + ".npy")),
               "ort": np.load(os.path.join(a.ort, "o" + k, "output_0.npy"))}
        for name, d in (("anvil", got["anvil"] - ref), ("ort", got["ort"] - ref),
                        ("anvil-ort", got["anvil"] - got["ort"])):
            worst[name] = max(worst[name], float(np.abs(d).max()))
            differ[name] += int(np.abs(d).max() > 1e-6 * (1 + np.abs(ref).max()))
    print("%d inputs; output scale %s" % (len(files), scale))
    for name in worst:
        print("%-10s max |difference| %.4g = %.2f output steps; inputs that differ: %d" %
              (name, worst[name], worst[name] / unit, differ[name]))


if __name__ == "__main__":
    main()

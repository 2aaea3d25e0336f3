#!/usr/bin/python3
"""Write one 3x3 convolution layer twice, float32 and quantized, for timing the int8 convolution
against the float one and against ONNX Runtime on the same file.

The quantized form is ONNX's operator format: QuantizeLinear of the float input (uint8, scale and
zero point fixed from the input's expected range), QLinearConv with int8 weights (symmetric per
output channel, zero point 0) and an int32 bias, DequantizeLinear of its uint8 output. Weights are
seeded and random. --reduce-range gives the weights 7 bits ([-63, 63]), as ONNX Runtime's
quantizer does for CPUs whose int8 instruction (AVX2's vpmaddubsw) saturates pairs of products.

    int8_conv.py OUT_DIR [--channels 64] [--size 56] [--stride 1] [--reduce-range]

writes OUT_DIR/conv_f32.onnx and OUT_DIR/conv_int8.onnx (input 'x' [1, channels, size, size]).
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def model(c, size, stride, int8, limit, seed=0):
    rng = np.random.default_rng(seed)
    w = (rng.standard_normal((c, c, 3, 3)) / np.sqrt(9 * c)).astype(np.float32)
    b = (rng.standard_normal(c) * 0.1).astype(np.float32)
    out = (size - 1) // stride + 1
    attrs = dict(pads=[1, 1, 1, 1], strides=[stride, stride], kernel_shape=[3, 3])
    if not int8:
        inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")]
        nodes = [helper.make_node("Conv", ["x", "w", "b"], ["y"], **attrs)]
    else:
        sx, zx = np.float32(2.0 / 255), np.uint8(128)  # inputs in [-1, 1]
        sy, zy = np.float32(8.0 / 255), np.uint8(128)  # outputs in [-4, 4]
        sw = (np.abs(w).reshape(c, -1).max(axis=1) / limit).astype(np.float32)
        wq = np.clip(np.rint(w / sw[:, None, None, None]), -limit, limit).astype(np.int8)
        bq = np.rint(b / (sx * sw)).astype(np.int32)
        inits = [numpy_helper.from_array(np.array(sx), "sx"),
                 numpy_helper.from_array(np.array(zx), "zx"),
                 numpy_helper.from_array(wq, "wq"), numpy_helper.from_array(sw, "sw"),
                 numpy_helper.from_array(np.zeros(c, np.int8), "zw"),
                 numpy_helper.from_array(np.array(sy), "sy"),
                 numpy_helper.from_array(np.array(zy), "zy"), numpy_helper.from_array(bq, "bq")]
        nodes = [helper.make_node("QuantizeLinear", ["x", "sx", "zx"], ["xq"]),
                 helper.make_node("QLinearConv", ["xq", "sx", "zx", "wq", "sw", "zw", "sy", "zy",
                                                  "bq"], ["yq"], **attrs),
                 helper.make_node("DequantizeLinear", ["yq", "sy", "zy"], ["y"])]
    graph = helper.make_graph(
        nodes, "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, size, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c, out, out])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    onnx.checker.check_model(m)
    return m


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--channels", type=int, default=64)
    ap.add_argument("--size", type=int, default=56)
    ap.add_argument("--stride", type=int, default=1)
    ap.add_argument("--reduce-range", action="store_true", help="7-bit weights")
    a = ap.parse_args()
    os.makedirs(a.out_dir, exist_ok=True)
    for int8, file in ((False, "conv_f32.onnx"), (True, "conv_int8.onnx")):
        m = model(a.channels, a.size, a.stride, int8, 63 if a.reduce_range else 127)
        onnx.save(m, os.path.join(a.out_dir, file))
        print("wrote", os.path.join(a.out_dir, file))


if __name__ == "__main__":
    main()

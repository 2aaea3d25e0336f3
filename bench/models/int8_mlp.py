#!/usr/bin/python3
"""Write a two-layer perceptron twice, float32 and dynamically quantized, for timing int8 products
against float ones and against ONNX Runtime on the same file.

The quantized form is what ONNX Runtime's quantize_dynamic writes for MatMul: the activation
through DynamicQuantizeLinear (uint8, scale and zero point from its range), the weight stored as
int8, symmetric per tensor (zero point 0), MatMulInteger with the activation's zero point, then
Cast to float and Mul by scale_x * scale_w. Weights are seeded and random. With --reduce-range
the weights take 7 bits ([-63, 63]), as quantize_dynamic's reduce_range does for CPUs whose int8
instruction (AVX2's vpmaddubsw) saturates pairs of products beyond int16.

    int8_mlp.py OUT_DIR [--rows 1] [--width 1024] [--hidden 4096] [--reduce-range]

writes OUT_DIR/mlp_f32.onnx and OUT_DIR/mlp_int8.onnx (input 'x' [rows, width]).
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def weights(rng, k, n):
    return (rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32)


def quantized(w, limit):
    scale = np.float32(np.abs(w).max() / limit)
    q = np.clip(np.rint(w / scale), -limit, limit).astype(np.int8)
    return q, scale


def model(name, rows, width, hidden, int8, limit=127, seed=0):
    rng = np.random.default_rng(seed)
    w1, w2 = weights(rng, width, hidden), weights(rng, hidden, width)
    nodes, inits = [], []

    def matmul(x, w, tag):
        if not int8:
            inits.append(numpy_helper.from_array(w, tag + "_w"))
            nodes.append(helper.make_node("MatMul", [x, tag + "_w"], [tag + "_y"]))
            return tag + "_y"
        q, scale = quantized(w, limit)
        inits.append(numpy_helper.from_array(q, tag + "_wq"))
        inits.append(numpy_helper.from_array(np.array(scale, np.float32), tag + "_ws"))
        nodes.append(helper.make_node("DynamicQuantizeLinear", [x],
                                      [tag + "_xq", tag + "_xs", tag + "_xz"]))
        nodes.append(helper.make_node("MatMulInteger", [tag + "_xq", tag + "_wq", tag + "_xz"],
                                      [tag + "_acc"]))
        nodes.append(helper.make_node("Cast", [tag + "_acc"], [tag + "_accf"],
                                      to=TensorProto.FLOAT))
        nodes.append(helper.make_node("Mul", [tag + "_xs", tag + "_ws"], [tag + "_s"]))
        nodes.append(helper.make_node("Mul", [tag + "_accf", tag + "_s"], [tag + "_y"]))
        return tag + "_y"

    h = matmul("x", w1, "fc1")
    nodes.append(helper.make_node("Relu", [h], ["fc1_relu"]))
    y = matmul("fc1_relu", w2, "fc2")
    nodes.append(helper.make_node("Identity", [y], ["y"]))
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, width])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, width])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    onnx.checker.check_model(m)
    return m


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--rows", type=int, default=1)
    ap.add_argument("--width", type=int, default=1024)
    ap.add_argument("--hidden", type=int, default=4096)
    ap.add_argument("--reduce-range", action="store_true", help="7-bit weights")
    a = ap.parse_args()
    os.makedirs(a.out_dir, exist_ok=True)
    for int8, file in ((False, "mlp_f32.onnx"), (True, "mlp_int8.onnx")):
        m = model("mlp", a.rows, a.width, a.hidden, int8, 63 if a.reduce_range else 127)
        onnx.save(m, os.path.join(a.out_dir, file))
        print("wrote", os.path.join(a.out_dir, file))


if __name__ == "__main__":
    main()

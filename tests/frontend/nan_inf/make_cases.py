#!/usr/bin/env python3
"""Writes the NaN/Inf cases of tests/frontend/onnx_nan_inf_test.cc: one folder per case, in the
layout of the ONNX backend tests (model.onnx, test_data_set_0/input_N.pb and output_N.pb).

Each expected output is computed with NumPy by the formula the ONNX backend tests give for the
operator (onnx/backend/test/case/node/*.py in ONNX 1.12: Relu is np.clip(x, 0, inf), Max is
np.maximum, ReduceMax is np.maximum.reduce, Softmax is exp(x - max) / sum, ...), so a NaN in the
inputs propagates exactly as those definitions say. Pooling is left out for NaN: the backend
tests' pool reference marks padding with NaN and skips NaN values, so it defines nothing for a
NaN input; pooling is covered with infinities only.

Needs python3-onnx and python3-numpy (Debian). Run from anywhere:
  python3 tests/frontend/nan_inf/make_cases.py
The output is committed; the script is kept to show where every expected value comes from.
"""
import os
import shutil

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

HERE = os.path.dirname(os.path.abspath(__file__))
NAN, INF = np.nan, np.inf
f32 = np.float32

# Every special value and its neighbours: NaN, both infinities, negative, zero, positive.
X = np.array([[NAN, INF, -INF, -2.0], [-0.5, 0.0, 0.5, 3.0]], dtype=f32)
# Paired with X element by element: inf - inf, inf * 0, 0 / 0, -2 / 0, NaN against a number.
Y = np.array([[1.0, INF, -INF, 0.0], [NAN, 0.0, 2.0, -INF]], dtype=f32)

cases = []


def case(name, op, inputs, outputs, attrs=None, initializers=None):
    """One node `op` over graph inputs `inputs` (name -> array) and `initializers`, expected
    `outputs` (name -> array)."""
    cases.append((name, op, inputs, outputs, attrs or {}, initializers or {}))


def unary(name, op, fn, **attrs):
    with np.errstate(all="ignore"):
        case(name, op, {"x": X}, {"y": fn(X).astype(X.dtype)}, attrs)


def binary(name, op, fn):
    with np.errstate(all="ignore"):
        out = fn(X, Y)
    case(name, op, {"x": X, "y": Y}, {"z": out})


# Element-wise, with the backend tests' formulas.
unary("relu", "Relu", lambda x: np.clip(x, 0, np.inf))
unary("leakyrelu", "LeakyRelu", lambda x: np.clip(x, 0, np.inf) + np.clip(x, -np.inf, 0) * 0.1,
      alpha=0.1)
unary("sigmoid", "Sigmoid", lambda x: 1.0 / (1.0 + np.exp(np.negative(x))))
unary("tanh", "Tanh", np.tanh)
unary("exp", "Exp", np.exp)
unary("log", "Log", np.log)
unary("sqrt", "Sqrt", np.sqrt)
unary("abs", "Abs", np.abs)
unary("neg", "Neg", np.negative)
unary("reciprocal", "Reciprocal", np.reciprocal)
unary("floor", "Floor", np.floor)
unary("ceil", "Ceil", np.ceil)
unary("hardsigmoid", "HardSigmoid", lambda x: np.clip(x * 0.2 + 0.5, 0, 1))
unary("hardswish", "HardSwish", lambda x: x * np.maximum(0, np.minimum(1, x / 6 + 0.5)))
binary("add", "Add", np.add)
binary("sub", "Sub", np.subtract)
binary("mul", "Mul", np.multiply)
binary("div", "Div", np.divide)
binary("max", "Max", np.maximum)
binary("min", "Min", np.minimum)
binary("pow", "Pow", np.power)
binary("equal", "Equal", np.equal)
binary("less", "Less", np.less)
binary("greater", "Greater", np.greater)

# Clip (opset 13: bounds as inputs) is np.clip: NaN stays NaN.
case("clip", "Clip", {"x": X}, {"y": np.clip(X, f32(-1), f32(1))},
     initializers={"lo": np.array(-1, dtype=f32), "hi": np.array(1, dtype=f32)})
# Where picks element by element; a NaN it picks is kept, one it does not pick is gone.
cond = np.array([[True, False, True, False], [False, True, True, False]])
case("where", "Where", {"c": cond, "x": X, "y": Y}, {"z": np.where(cond, X, Y)})
case("sum3", "Sum", {"a": X, "b": Y, "c": X}, {"s": X + Y + X})
case("transpose", "Transpose", {"x": X}, {"y": X.T.copy()}, {"perm": [1, 0]})

# Reductions over the last axis: NaN wins max and min (np.maximum.reduce), inf + -inf is NaN.
R = np.array([[1.0, NAN, 3.0, -1.0], [INF, -INF, 0.0, 1.0], [INF, 2.0, 5.0, 1.0],
              [-INF, -2.0, -INF, 0.0]], dtype=f32)
with np.errstate(all="ignore"):
    for op, fn in [("ReduceMax", np.maximum.reduce), ("ReduceMin", np.minimum.reduce),
                   ("ReduceMean", np.mean)]:
        case(op.lower(), op, {"x": R}, {"y": fn(R, axis=1, keepdims=True).astype(f32)},
             {"axes": [1], "keepdims": 1})
    # ReduceSum takes its axes as an input from opset 13.
    case("reducesum", "ReduceSum", {"x": R}, {"y": np.add.reduce(R, axis=1, keepdims=True)},
         {"keepdims": 1}, initializers={"axes": np.array([1], dtype=np.int64)})
    # Softmax (opset 13, last axis): exp(x - max) / sum exp(x - max).
    m = np.max(R, axis=1, keepdims=True)
    e = np.exp(R - m)
    case("softmax", "Softmax", {"x": R}, {"y": (e / np.sum(e, axis=1, keepdims=True)).astype(f32)},
         {"axis": -1})
    # MatMul and Gemm: a NaN or an infinity times zero spreads along its row and column.
    B = np.array([[1.0, 0.0, 2.0], [0.0, 1.0, 0.0], [1.0, 1.0, 1.0], [0.5, 0.0, -1.0]],
                 dtype=f32)
    case("matmul", "MatMul", {"x": R, "w": B}, {"y": np.matmul(R, B).astype(f32)})
    bias = np.array([0.0, 1.0, -INF], dtype=f32)
    case("gemm", "Gemm", {"x": R}, {"y": (np.matmul(R, B) + bias).astype(f32)},
         initializers={"w": B, "b": bias})

# A 3x3 convolution (no padding) over a 4x4 image with one NaN and one infinity: every output
# whose window holds the NaN is NaN; the infinity gives inf, or NaN against a zero weight.
img = np.arange(16, dtype=f32).reshape(1, 1, 4, 4) / 4
img[0, 0, 0, 0] = NAN
img[0, 0, 3, 3] = INF
kern = np.array([[1.0, 0.0, -1.0], [2.0, 0.5, 0.0], [1.0, 1.0, 1.0]], dtype=f32).reshape(1, 1, 3, 3)
with np.errstate(all="ignore"):
    conv = np.zeros((1, 1, 2, 2), dtype=f32)
    for i in range(2):
        for j in range(2):
            conv[0, 0, i, j] = np.sum(img[0, 0, i:i + 3, j:j + 3] * kern[0, 0])
case("conv", "Conv", {"x": img}, {"y": conv}, initializers={"w": kern})

# Pooling with infinities (no NaN: see the docstring). 2x2 windows, stride 2, over 4x4.
P = np.array([[INF, 1.0, -INF, 2.0], [0.0, 3.0, -INF, -1.0], [INF, -INF, 5.0, 6.0],
              [1.0, 2.0, 7.0, 8.0]], dtype=f32).reshape(1, 1, 4, 4)
blocks = P.reshape(1, 1, 2, 2, 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(1, 1, 2, 2, 4)
with np.errstate(all="ignore"):
    case("maxpool_inf", "MaxPool", {"x": P}, {"y": blocks.max(axis=-1).astype(f32)},
         {"kernel_shape": [2, 2], "strides": [2, 2]})
    case("averagepool_inf", "AveragePool", {"x": P}, {"y": blocks.mean(axis=-1).astype(f32)},
         {"kernel_shape": [2, 2], "strides": [2, 2]})
    # Global average pooling: a channel with inf and -inf averages to NaN, a NaN channel is NaN.
    G = np.stack([P[0, 0], np.where(np.isinf(P[0, 0]), 1.0, P[0, 0]),
                  np.where(P[0, 0] == 7.0, NAN, np.abs(P[0, 0]))]).astype(f32)[None]
    case("globalaveragepool", "GlobalAveragePool", {"x": G},
         {"y": G.mean(axis=(2, 3), keepdims=True).astype(f32)})
    # Batch normalization (inference): (x - mean) / sqrt(var + eps) * scale + bias per channel.
    scale, bn_bias = np.array([1.0, 0.0, 2.0], f32), np.array([0.0, 1.0, -1.0], f32)
    mean, var = np.array([0.5, 0.0, 1.0], f32), np.array([1.0, 4.0, 0.25], f32)
    def per_channel(v):
        return v.reshape(1, 3, 1, 1)
    bn = (G - per_channel(mean)) / np.sqrt(per_channel(var) + f32(1e-5)) * per_channel(scale) \
        + per_channel(bn_bias)
    case("batchnorm", "BatchNormalization", {"x": G}, {"y": bn.astype(f32)},
         {"epsilon": 1e-5},
         initializers={"scale": scale, "bias": bn_bias, "mean": mean, "var": var})


def tensor_type(a):
    return helper.np_dtype_to_tensor_dtype(a.dtype) if hasattr(helper, "np_dtype_to_tensor_dtype") \
        else {np.dtype("float32"): TensorProto.FLOAT, np.dtype("bool"): TensorProto.BOOL}[a.dtype]


def write(name, op, inputs, outputs, attrs, initializers):
    folder = os.path.join(HERE, name)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(os.path.join(folder, "test_data_set_0"))
    node = helper.make_node(op, list(inputs) + list(initializers), list(outputs), **attrs)
    graph = helper.make_graph(
        [node], "nan_inf_" + name,
        [helper.make_tensor_value_info(k, tensor_type(v), v.shape) for k, v in inputs.items()],
        [helper.make_tensor_value_info(k, tensor_type(v), v.shape) for k, v in outputs.items()],
        [numpy_helper.from_array(v, k) for k, v in initializers.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    save(model, os.path.join(folder, "model.onnx"))
    for prefix, values in (("input", inputs), ("output", outputs)):
        for i, (k, v) in enumerate(values.items()):
            path = os.path.join(folder, "test_data_set_0", f"{prefix}_{i}.pb")
            with open(path, "wb") as f:
                f.write(numpy_helper.from_array(np.ascontiguousarray(v), k).SerializeToString())


for c in cases:
    write(*c)
print(f"wrote {len(cases)} cases under {HERE}")

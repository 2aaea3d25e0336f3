# Makes model.onnx, a small network in ONNX Runtime's QDQ conventions (what its quantize_static
# writes): every quantized tensor as QuantizeLinear -> DequantizeLinear, activations uint8
# asymmetric per tensor, weights int8 symmetric per output channel (zero point 0, axis 0 for Conv,
# axis 1 for the MatMul-style Gemm weight [K, N]), biases int32 through DequantizeLinear with
# scale x_scale * w_scale, and a residual Add and a global average pool between them in float.
# x<k>.npy -> y<k>.npy are its outputs evaluated here with numpy, step by step as ONNX defines
# each operator (round half to even, saturate), which
# tests/frontend/onnx_quantize_test.cc checks Anvil's compiled model against. The script asserts
# that no value it quantizes lies within 1e-4 of a quantization step from a rounding tie
# (drawing another input otherwise), so that an implementation summing in another order cannot
# round it the other way. Run with Debian's python3:
# /usr/bin/python3 generate.py. The test needs only the committed files.
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(7)
C, H, W, K = 8, 6, 6, 5
nodes, inits = [], []


def init(name, a):
    inits.append(numpy_helper.from_array(a, name))
    return name


def qdq(x, scale, zp, name):
    """x -> QuantizeLinear -> DequantizeLinear, uint8 per tensor."""
    s, z = init(name + "_s", np.float32(scale)), init(name + "_z", np.uint8(zp))
    nodes.append(helper.make_node("QuantizeLinear", [x, s, z], [name + "_q"]))
    nodes.append(helper.make_node("DequantizeLinear", [name + "_q", s, z], [name + "_dq"]))
    return name + "_dq"


def weight(name, w, axis):
    """An int8 weight symmetric along `axis`, through DequantizeLinear."""
    other = tuple(i for i in range(w.ndim) if i != axis)
    scale = (np.abs(w).max(axis=other) / 127).astype(np.float32)
    shape = [1] * w.ndim
    shape[axis] = -1
    q = np.clip(np.rint(w / scale.reshape(shape)), -127, 127).astype(np.int8)
    init(name + "_q", q)
    init(name + "_s", scale)
    init(name + "_z", np.zeros(scale.shape, np.int8))
    nodes.append(helper.make_node("DequantizeLinear", [name + "_q", name + "_s", name + "_z"],
                                  [name + "_dq"], axis=axis))
    return name + "_dq", q, scale


def bias(name, b, x_scale, w_scale):
    """An int32 bias with scale x_scale * w_scale, through DequantizeLinear."""
    s = (np.float32(x_scale) * w_scale).astype(np.float32)
    q = np.rint(b / s).astype(np.int32)
    init(name + "_q", q)
    init(name + "_s", s)
    init(name + "_z", np.zeros(s.shape, np.int32))
    nodes.append(helper.make_node("DequantizeLinear", [name + "_q", name + "_s", name + "_z"],
                                  [name + "_dq"], axis=0))
    return name + "_dq"


# Scales and zero points: fixed ranges, as a calibration would give them.
xs, xz = 2.0 / 255, 128      # the input in [-1, 1]
a1s, a1z = 3.0 / 255, 0      # conv1's output after Relu in [0, 3]
a2s, a2z = 4.0 / 255, 128    # conv2's output in [-2, 2]
w1 = (rng.standard_normal((C, C, 3, 3)) * 0.2).astype(np.float32)
w2 = (rng.standard_normal((C, C, 3, 3)) * 0.15).astype(np.float32)
w3 = (rng.standard_normal((C, K)) * 0.5).astype(np.float32)
b1 = (rng.standard_normal(C) * 0.1).astype(np.float32)
b3 = (rng.standard_normal(K) * 0.1).astype(np.float32)

x = qdq("x", xs, xz, "x")
w1dq, w1q, w1s = weight("w1", w1, 0)
nodes.append(helper.make_node("Conv", [x, w1dq, bias("b1", b1, xs, w1s)], ["c1"],
                              pads=[1, 1, 1, 1]))
nodes.append(helper.make_node("Relu", ["c1"], ["r1"]))
r1 = qdq("r1", a1s, a1z, "r1")
w2dq, w2q, w2s = weight("w2", w2, 0)
nodes.append(helper.make_node("Conv", [r1, w2dq], ["c2"], pads=[1, 1, 1, 1]))
c2 = qdq("c2", a2s, a2z, "c2")
nodes.append(helper.make_node("Add", [c2, x], ["sum"]))
nodes.append(helper.make_node("GlobalAveragePool", ["sum"], ["pool"]))
nodes.append(helper.make_node("Flatten", ["pool"], ["flat"]))
flat = qdq("flat", a2s, a2z, "flat")
w3dq, w3q, w3s = weight("w3", w3, 1)
nodes.append(helper.make_node("Gemm", [flat, w3dq, bias("b3", b3, a2s, w3s)], ["y"]))
graph = helper.make_graph(
    nodes, "qdq_ort_style", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, C, H, W])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, K])], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 7
onnx.checker.check_model(model)
onnx.save(model, "model.onnx")

# The reference: each operator as ONNX defines it, float32 values (the convolutions' sums in
# float64, then float32: any summation order gives these to float32 rounding).
I = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}


class Tie(Exception):
    pass


def quantize(v, s, z):
    t = v / np.float32(s)
    if np.abs(t - np.floor(t) - 0.5).min() < 1e-4:
        raise Tie()
    return np.clip(np.rint(t) + z, 0, 255).astype(np.uint8)


def dequantize(q, s, z):
    return ((q.astype(np.int32) - z).astype(np.float32) * np.float32(s)).astype(np.float32)


def conv(v, w, b=None):
    vp = np.pad(v.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((1, w.shape[0], H, W))
    for ky in range(3):
        for kx in range(3):
            out += np.einsum("nchw,oc->nohw", vp[:, :, ky:ky + H, kx:kx + W],
                             w[:, :, ky, kx].astype(np.float64))
    if b is not None:
        out += b.reshape(1, -1, 1, 1)
    return out.astype(np.float32)


def wdq(name, axis):
    shape = [1] * I[name + "_q"].ndim
    shape[axis] = -1
    return (I[name + "_q"].astype(np.float32) * I[name + "_s"].reshape(shape)).astype(np.float32)


def run(xin):
    xd = dequantize(quantize(xin, xs, xz), xs, xz)
    b1d = (I["b1_q"].astype(np.float32) * I["b1_s"]).astype(np.float32)
    r = np.maximum(conv(xd, wdq("w1", 0), b1d), 0)
    rd = dequantize(quantize(r, a1s, a1z), a1s, a1z)
    c = conv(rd, wdq("w2", 0))
    cd = dequantize(quantize(c, a2s, a2z), a2s, a2z)
    pool = (cd + xd).astype(np.float32).mean(axis=(2, 3), dtype=np.float64).astype(np.float32)
    fd = dequantize(quantize(pool, a2s, a2z), a2s, a2z)
    b3d = (I["b3_q"].astype(np.float32) * I["b3_s"]).astype(np.float32)
    return ((fd.astype(np.float64) @ wdq("w3", 1).astype(np.float64)) + b3d).astype(np.float32)


k = 0
while k < 3:
    xin = rng.uniform(-1, 1, (1, C, H, W)).astype(np.float32)
    try:
        y = run(xin)
    except Tie:
        continue
    np.save("x%d.npy" % k, xin)
    np.save("y%d.npy" % k, y)
    k += 1
print("wrote model.onnx and 3 cases")

"""The PyTorch baselines of `anvil bench`: eager, jit, eager on CUDA, CUDA graph.

A worker that speaks the protocol of tools/anvil/bench.h (one JSON object per line on stdin and
stdout). It reads an ONNX file and runs the same architecture with the same weights as the
PyTorch module a PyTorch user would write: ONNX nodes become nn.Conv2d, nn.BatchNorm2d, nn.Linear,
nn.LSTM, ... and torch functions. --mode eager runs that module under torch.inference_mode();
--mode jit traces it, freezes it and runs torch.jit.optimize_for_inference on it.
On an NVIDIA GPU (fp32, TF32 off, cuDNN's autotuner on): --mode eager_cuda runs the module on the
GPU; --mode cuda_graph captures one run as a CUDA graph and replays it. Inputs stay on the GPU;
a timed run ends when the GPU has finished it.

Usage: /usr/bin/python3 tools/bench/torch_worker.py --mode eager|jit|eager_cuda|cuda_graph
(Debian's python3-torch, python3-onnx and python3-numpy live under /usr/bin/python3; anvil runs
$ANVIL_BENCH_PYTHON instead when it is set.)
"""

import argparse
import json
import os
import re
import sys
import time

# stdout carries the protocol alone: keep a private copy of it, then send fd 1 (and Python's
# sys.stdout) to stderr so that prints and warnings of any library cannot corrupt the protocol.
_protocol = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)
sys.stdout = sys.stderr

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from onnx import numpy_helper  # noqa: E402
from torch import nn  # noqa: E402


class Unsupported(Exception):
    """A node this worker cannot express in PyTorch (the reason is optional detail)."""


class OnnxModule(nn.Module):
    """Runs an ONNX graph's nodes in order; each step is a torch module or function."""

    def __init__(self, input_names, output_names):
        super().__init__()
        self.input_names = list(input_names)
        self.output_names = list(output_names)
        self.layers = nn.ModuleDict()
        self.steps = []  # (callable, input value names ("" = absent), output value names)
        self.constants = {}  # ONNX value name -> buffer name, for initializers used as values

    def forward(self, *inputs):
        env = dict(zip(self.input_names, inputs))
        for name, buffer in self.constants.items():
            env[name] = getattr(self, buffer)
        for fn, ins, outs in self.steps:
            result = fn(*[env[n] if n else None for n in ins])
            if len(outs) == 1:
                env[outs[0]] = result
            else:
                for name, value in zip(outs, result):
                    if name:
                        env[name] = value
        return tuple(env[n] for n in self.output_names)


def _key(index, name):
    # ModuleDict and buffer names may not contain '.'.
    return "n%d_%s" % (index, re.sub(r"\W", "_", name))


class Builder:
    """Turns the nodes of an ONNX graph into the steps of an OnnxModule."""

    def __init__(self, model):
        graph = model.graph
        self.opset = next(
            (o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 13)
        self.init = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
        inputs = [i.name for i in graph.input if i.name not in self.init]
        self.module = OnnxModule(inputs, [o.name for o in graph.output])
        self.nodes = list(graph.node)

    def const(self, name, what):
        if name not in self.init:
            raise Unsupported("its %s '%s' is not a constant" % (what, name))
        return self.init[name]

    def tensor(self, name, what):
        return torch.from_numpy(np.array(self.const(name, what)))

    def value(self, name):
        # A run-time value; an initializer used as one becomes a buffer of the module.
        if name in self.init and name not in self.module.constants:
            buffer = "c%d" % len(self.module.constants)
            self.module.register_buffer(buffer, torch.from_numpy(np.array(self.init[name])))
            self.module.constants[name] = buffer
        return name

    def add(self, fn, ins, outs, index=None, node=None):
        if isinstance(fn, nn.Module):
            self.module.layers[_key(index, node.name or node.op_type)] = fn
        self.module.steps.append((fn, [self.value(n) if n else "" for n in ins], list(outs)))

    # Ops that are one torch function of their inputs, without attributes.
    ELEMENTWISE = {"Relu": torch.relu, "Tanh": torch.tanh, "Sigmoid": torch.sigmoid,
                   "Add": torch.add, "Sub": torch.sub, "Mul": torch.mul}

    def op_elementwise(self, node, attrs, index):
        self.only(attrs, set())
        self.add(self.ELEMENTWISE[node.op_type], node.input, node.output)

    def build(self):
        for index, node in enumerate(self.nodes):
            attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
            handler = getattr(self, "op_" + node.op_type, None)
            if node.op_type in self.ELEMENTWISE:
                handler = self.op_elementwise
            if node.domain not in ("", "ai.onnx"):
                handler = None  # another domain's op of the same name is another op
            try:
                if handler is None:
                    raise Unsupported()
                handler(node, attrs, index)
            except Unsupported as e:
                raise Unsupported(
                    "ONNX node '%s' (op %s) is not supported by this worker%s"
                    % (node.name or "#%d" % index, node.op_type, ": %s" % e if str(e) else ""))
        for name in self.module.output_names:
            self.value(name)  # a graph output that is an initializer
        return self.module

    # ---- helpers for attributes ----

    @staticmethod
    def only(attrs, allowed):
        for name, value in attrs.items():
            if name not in allowed:
                raise Unsupported("attribute %s=%r" % (name, value))

    @staticmethod
    def no_auto_pad(attrs):
        auto_pad = attrs.get("auto_pad", b"NOTSET")
        if auto_pad not in (b"NOTSET", "NOTSET"):
            raise Unsupported("auto_pad %s" % auto_pad.decode())

    @staticmethod
    def symmetric_pads(attrs, rank):
        pads = list(attrs.get("pads", [0] * 2 * rank))
        if pads[:rank] != pads[rank:]:
            raise Unsupported("asymmetric pads %s" % pads)
        return tuple(pads[:rank])

    # ---- the ops ----

    def op_Constant(self, node, attrs, index):
        if "value" not in attrs:
            raise Unsupported("a Constant without a 'value' tensor")
        self.init[node.output[0]] = numpy_helper.to_array(attrs["value"])

    def conv_weight(self, node, attrs, extra):
        """A 2-D convolution's checks: its weight and whether it has a bias."""
        self.only(attrs, {"group", "strides", "pads", "dilations", "kernel_shape", "auto_pad"}
                  | extra)
        self.no_auto_pad(attrs)
        w = self.tensor(node.input[1], "weight")
        if w.dim() != 4:
            raise Unsupported("a %d-D weight (only 2-D convolutions)" % (w.dim() - 2))
        return w, len(node.input) > 2 and node.input[2] != ""

    def add_conv(self, layer, w, bias, node, index):
        with torch.no_grad():
            layer.weight.copy_(w)
            if bias:
                layer.bias.copy_(self.tensor(node.input[2], "bias"))
        self.add(layer, node.input[:1], node.output, index, node)

    def op_Conv(self, node, attrs, index):
        w, bias = self.conv_weight(node, attrs, set())
        group = attrs.get("group", 1)
        conv = nn.Conv2d(w.shape[1] * group, w.shape[0], tuple(w.shape[2:]),
                         stride=tuple(attrs.get("strides", [1, 1])),
                         padding=self.symmetric_pads(attrs, 2),
                         dilation=tuple(attrs.get("dilations", [1, 1])), groups=group, bias=bias)
        self.add_conv(conv, w, bias, node, index)

    def op_ConvTranspose(self, node, attrs, index):
        w, bias = self.conv_weight(node, attrs, {"output_padding"})
        group = attrs.get("group", 1)
        deconv = nn.ConvTranspose2d(w.shape[0], w.shape[1] * group, tuple(w.shape[2:]),
                                    stride=tuple(attrs.get("strides", [1, 1])),
                                    padding=self.symmetric_pads(attrs, 2),
                                    output_padding=tuple(attrs.get("output_padding", [0, 0])),
                                    groups=group, bias=bias,
                                    dilation=tuple(attrs.get("dilations", [1, 1])))
        self.add_conv(deconv, w, bias, node, index)

    def op_BatchNormalization(self, node, attrs, index):
        self.only(attrs, {"epsilon", "momentum", "training_mode", "spatial"})
        training = attrs.get("training_mode", 0) != 0 or len(node.output) > 1
        if training or attrs.get("spatial", 1) != 1:
            raise Unsupported("training mode")
        scale = self.tensor(node.input[1], "scale")
        bn = nn.BatchNorm2d(scale.shape[0], eps=attrs.get("epsilon", 1e-5))
        with torch.no_grad():
            bn.weight.copy_(scale)
            bn.bias.copy_(self.tensor(node.input[2], "B"))
            bn.running_mean.copy_(self.tensor(node.input[3], "mean"))
            bn.running_var.copy_(self.tensor(node.input[4], "var"))
        bn.eval()
        self.add(bn, node.input[:1], node.output, index, node)

    def op_Clip(self, node, attrs, index):
        self.only(attrs, {"min", "max"})
        lo, hi = attrs.get("min", float("-inf")), attrs.get("max", float("inf"))
        if len(node.input) > 1 and node.input[1]:
            lo = float(self.const(node.input[1], "min"))
        if len(node.input) > 2 and node.input[2]:
            hi = float(self.const(node.input[2], "max"))
        if (lo, hi) == (0.0, 6.0):
            fn = F.relu6
        elif np.isfinite(lo) and np.isfinite(hi):
            fn = lambda x: F.hardtanh(x, lo, hi)  # noqa: E731
        else:
            fn = lambda x: torch.clamp(x, min=lo, max=hi)  # noqa: E731
        self.add(fn, node.input[:1], node.output)

    def pool_args(self, node, attrs):
        self.no_auto_pad(attrs)
        kernel = tuple(attrs["kernel_shape"])
        if len(kernel) != 2:
            raise Unsupported("a %d-D kernel (only 2-D pooling)" % len(kernel))
        if len(node.output) > 1:
            raise Unsupported("the Indices output")
        return dict(kernel_size=kernel, stride=tuple(attrs.get("strides", [1, 1])),
                    padding=self.symmetric_pads(attrs, 2),
                    ceil_mode=bool(attrs.get("ceil_mode", 0)))

    def op_MaxPool(self, node, attrs, index):
        self.only(attrs, {"kernel_shape", "strides", "pads", "ceil_mode", "dilations", "auto_pad",
                          "storage_order"})
        if attrs.get("storage_order", 0) != 0:
            raise Unsupported("storage_order 1")
        pool = nn.MaxPool2d(dilation=tuple(attrs.get("dilations", [1, 1])),
                            **self.pool_args(node, attrs))
        self.add(pool, node.input, node.output, index, node)

    def op_AveragePool(self, node, attrs, index):
        self.only(attrs, {"kernel_shape", "strides", "pads", "ceil_mode", "count_include_pad",
                          "auto_pad"})
        pool = nn.AvgPool2d(count_include_pad=bool(attrs.get("count_include_pad", 0)),
                            **self.pool_args(node, attrs))
        self.add(pool, node.input, node.output, index, node)

    def op_GlobalAveragePool(self, node, attrs, index):
        self.only(attrs, set())
        self.add(lambda x: F.adaptive_avg_pool2d(x, 1), node.input, node.output)

    def op_Flatten(self, node, attrs, index):
        self.only(attrs, {"axis"})
        axis = attrs.get("axis", 1)

        def flatten(x):
            a = axis + x.dim() if axis < 0 else axis
            if a == 1:
                return torch.flatten(x, 1)
            return x.reshape(int(np.prod(x.shape[:a])), -1)
        self.add(flatten, node.input, node.output)

    def op_Gemm(self, node, attrs, index):
        self.only(attrs, {"alpha", "beta", "transA", "transB"})
        alpha, beta = attrs.get("alpha", 1.0), attrs.get("beta", 1.0)
        trans_a, trans_b = attrs.get("transA", 0), attrs.get("transB", 0)
        has_c = len(node.input) > 2 and node.input[2] != ""
        b_const = node.input[1] in self.init
        c_vector = has_c and node.input[2] in self.init and self.init[node.input[2]].ndim == 1
        if b_const and not trans_a and alpha == 1.0 and (not has_c or (c_vector and beta == 1.0)):
            w = self.tensor(node.input[1], "B")
            if not trans_b:
                w = w.t()
            linear = nn.Linear(w.shape[1], w.shape[0], bias=has_c)
            with torch.no_grad():
                linear.weight.copy_(w)
                if has_c:
                    linear.bias.copy_(self.tensor(node.input[2], "C"))
            self.add(linear, node.input[:1], node.output, index, node)
            return

        def gemm(a, b, c=None):
            y = torch.matmul(a.t() if trans_a else a, b.t() if trans_b else b)
            if alpha != 1.0:
                y = y * alpha
            if c is not None:
                y = y + (c * beta if beta != 1.0 else c)
            return y
        self.add(gemm, node.input, node.output)

    def op_MatMul(self, node, attrs, index):
        self.add(torch.matmul, node.input, node.output)

    def op_Div(self, node, attrs, index):
        self.only(attrs, set())

        def div(a, b):
            # ONNX divides integers with truncation.
            if a.is_floating_point():
                return torch.div(a, b)
            return torch.div(a, b, rounding_mode="trunc")
        self.add(div, node.input, node.output)

    def op_Reshape(self, node, attrs, index):
        self.only(attrs, {"allowzero"})
        if attrs.get("allowzero", 0):
            raise Unsupported("allowzero 1")
        shape = [int(s) for s in self.const(node.input[1], "shape")]

        def reshape(x):
            # ONNX: 0 copies the input's dimension, -1 is inferred.
            return x.reshape([x.shape[i] if s == 0 else s for i, s in enumerate(shape)])
        self.add(reshape, node.input[:1], node.output)

    def op_Transpose(self, node, attrs, index):
        self.only(attrs, {"perm"})
        perm = attrs.get("perm")
        def transpose(x):
            return x.permute(perm if perm is not None else list(range(x.dim() - 1, -1, -1)))
        self.add(transpose, node.input, node.output)

    def op_Concat(self, node, attrs, index):
        self.only(attrs, {"axis"})
        axis = attrs["axis"]
        self.add(lambda *xs: torch.cat(xs, dim=axis), node.input, node.output)

    def op_Softmax(self, node, attrs, index):
        self.only(attrs, {"axis"})
        if self.opset >= 13:
            axis = attrs.get("axis", -1)
            self.add(lambda x: torch.softmax(x, axis), node.input, node.output)
            return
        axis = attrs.get("axis", 1)

        def softmax(x):
            # Before opset 13: the input is seen as 2-D, split at `axis`.
            a = axis + x.dim() if axis < 0 else axis
            return torch.softmax(x.reshape(int(np.prod(x.shape[:a])), -1), 1).reshape(x.shape)
        self.add(softmax, node.input, node.output)

    def op_Gather(self, node, attrs, index):
        self.only(attrs, {"axis"})
        if attrs.get("axis", 0) != 0:
            raise Unsupported("axis %d (only 0, an embedding)" % attrs["axis"])
        table = self.tensor(node.input[0], "data")
        if table.dim() != 2:
            raise Unsupported("a %d-D table (only 2-D, an embedding)" % table.dim())
        embedding = nn.Embedding(table.shape[0], table.shape[1], _weight=table)
        self.add(embedding, node.input[1:2], node.output, index, node)

    def op_LSTM(self, node, attrs, index):
        self.only(attrs, {"hidden_size", "direction", "layout", "activations"})
        if attrs.get("direction", b"forward") != b"forward":
            raise Unsupported("direction %s (only forward)" % attrs["direction"].decode())
        if attrs.get("layout", 0) != 0:
            raise Unsupported("layout 1")
        if [a.lower() for a in attrs.get("activations", [b"sigmoid", b"tanh", b"tanh"])] != \
                [b"sigmoid", b"tanh", b"tanh"]:
            raise Unsupported("activations other than Sigmoid, Tanh, Tanh")
        if any(n for n in node.input[4:]):
            raise Unsupported("sequence_lens, initial states or peepholes")
        hidden = attrs["hidden_size"]
        w = self.tensor(node.input[1], "W")[0]
        r = self.tensor(node.input[2], "R")[0]
        if len(node.input) > 3 and node.input[3]:
            b = self.tensor(node.input[3], "B")[0]
        else:
            b = torch.zeros(8 * hidden, dtype=w.dtype)

        def gates(t):
            # ONNX stacks the gates as i, o, f, c; PyTorch as i, f, g(=c), o.
            i, o, f, c = torch.chunk(t, 4, 0)
            return torch.cat([i, f, c, o], 0)
        lstm = nn.LSTM(w.shape[1], hidden)
        with torch.no_grad():
            lstm.weight_ih_l0.copy_(gates(w))
            lstm.weight_hh_l0.copy_(gates(r))
            lstm.bias_ih_l0.copy_(gates(b[:4 * hidden]))
            lstm.bias_hh_l0.copy_(gates(b[4 * hidden:]))
        result = "%s/lstm" % node.output[0]  # PyTorch's (y, (h, c)), before it becomes ONNX's
        self.add(lstm, node.input[:1], [result], index, node)

        def outputs(result):
            y, (h, c) = result
            # ONNX's Y is [seq, num_directions, batch, hidden]; Y_h and Y_c match PyTorch's.
            return y.unsqueeze(1), h, c
        self.add(outputs, [result], list(node.output) + [""] * (3 - len(node.output)))


def build_module(model):
    return Builder(model).build()


CUDA_MODES = ("eager_cuda", "cuda_graph")


def use_cuda():
    """Makes PyTorch compute fp32 as fp32 on the GPU, or says why there is no GPU."""
    if not torch.cuda.is_available():
        raise ValueError("no CUDA device: torch.cuda.is_available() is False (PyTorch %s, "
                         "built for CUDA %s)" % (torch.__version__, torch.version.cuda))
    if hasattr(torch.backends.cudnn, "fp32_precision"):  # PyTorch 2.9 on; the flags below warn
        torch.backends.cuda.matmul.fp32_precision = "ieee"
        torch.backends.cudnn.fp32_precision = "ieee"
    else:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True  # what a user timing a fixed shape turns on


class Worker:
    def __init__(self, mode):
        self.mode = mode
        self.name = "torch_" + mode
        self.device = "cuda" if mode in CUDA_MODES else "cpu"
        self.module = None
        self.inputs = None
        self.graph = None  # cuda_graph: the captured run, and the outputs its replays write
        self.graph_outputs = None

    def version(self):
        if self.device == "cuda" and torch.cuda.is_available():
            return "%s (%s, CUDA %s)" % (torch.__version__, torch.cuda.get_device_name(),
                                         torch.version.cuda)
        return torch.__version__

    def load(self, req):
        model_path = os.path.abspath(require_str(req, "model"))
        threads = req.get("threads")
        if not isinstance(threads, int) or isinstance(threads, bool) or threads < 1:
            raise ValueError('"threads" must be a positive integer')
        files = req.get("inputs")
        if not isinstance(files, dict):
            raise ValueError('"inputs" must be an object of input name -> .npy file')
        self.module = self.inputs = self.graph = self.graph_outputs = None
        torch.set_num_threads(threads)
        if self.device == "cuda":
            try:
                use_cuda()
            except ValueError as e:
                raise ValueError("%s: %s" % (self.name, e))
        try:
            model = onnx.load(model_path)
        except Exception as e:
            raise ValueError("cannot load %s: %s" % (model_path, e))
        try:
            module = build_module(model)
        except Unsupported as e:
            raise ValueError("%s: %s" % (self.name, e))
        names = module.input_names
        expected = "(%s takes %s)" % (model_path, ", ".join("'%s'" % n for n in names))
        for n in names:
            if n not in files:
                raise ValueError("missing input '%s' %s" % (n, expected))
        for n in files:
            if n not in names:
                raise ValueError("unknown input '%s' %s" % (n, expected))
        inputs = []
        for n in names:
            path = os.path.abspath(files[n])
            inputs.append(read_npy(path))
            try:
                check_input(model, n, inputs[-1], path, model_path)
            except ValueError:
                raise
            except Exception as e:  # a library that has changed under us, say
                raise ValueError("%s: %s cannot check input '%s': %s"
                                 % (model_path, self.name, n, e))
        inputs = tuple(inputs)
        module.eval()
        try:
            if self.device == "cuda":
                module = module.to(self.device)
                inputs = tuple(t.to(self.device) for t in inputs)
            if self.mode == "cuda_graph":
                self.graph, self.graph_outputs = capture(module, inputs)
            if self.mode == "jit":
                with torch.no_grad():
                    traced = torch.jit.trace(module, inputs)
                    module = torch.jit.optimize_for_inference(torch.jit.freeze(traced.eval()))
            self.module, self.inputs = module, inputs
            # Run now so that a model that cannot run fails its load, and the JIT's first
            # (profiling) runs are out of the way.
            for _ in range(2):
                self.call()
        except Exception as e:
            self.module = self.inputs = self.graph = self.graph_outputs = None
            raise ValueError("%s: %s cannot run it: %s" % (model_path, self.name, e))
        return {}

    def call(self):
        if self.module is None:
            raise ValueError('no model is loaded (send "load" first)')
        if self.mode == "cuda_graph":
            self.graph.replay()
            torch.cuda.synchronize()
            return self.graph_outputs
        if self.mode == "jit":
            with torch.no_grad():
                return self.module(*self.inputs)
        with torch.inference_mode():
            results = self.module(*self.inputs)
        if self.device == "cuda":
            torch.cuda.synchronize()
        return results

    def run(self, req):
        out_dir = os.path.abspath(require_str(req, "outputs_dir"))
        results = self.call()
        if isinstance(results, torch.Tensor):
            results = (results,)
        os.makedirs(out_dir, exist_ok=True)
        paths = []
        for i, t in enumerate(results):
            path = os.path.join(out_dir, "output_%d.npy" % i)
            np.save(path, t.detach().cpu().contiguous().numpy())
            paths.append(path)
        return {"outputs": paths}

    def time(self, req):
        runs = req.get("runs")
        if not isinstance(runs, int) or isinstance(runs, bool) or runs < 1:
            raise ValueError('"runs" must be a positive integer')
        if self.module is None:
            raise ValueError('no model is loaded (send "load" first)')
        ms = []
        for _ in range(runs):
            start = time.perf_counter_ns()
            self.call()
            ms.append((time.perf_counter_ns() - start) / 1e6)
        return {"ms": ms}


def capture(module, inputs):
    """One run of `module` captured as a CUDA graph, after warm-up runs on a side stream (what
    torch.cuda.graphs asks for); returns the graph and the output tensors its replays write."""
    with torch.inference_mode():
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                module(*inputs)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            outputs = module(*inputs)
    torch.cuda.synchronize()
    return graph, outputs


def require_str(req, field):
    value = req.get(field)
    if not isinstance(value, str) or not value:
        raise ValueError('"%s" must be a path' % field)
    return value


def read_npy(path):
    try:
        array = np.load(path, allow_pickle=False)
    except Exception as e:
        raise ValueError("%s: %s" % (path, e))
    if array.dtype not in (np.float32, np.float64, np.int32, np.int64, np.bool_):
        raise ValueError("%s: dtype %s is not supported (float32, float64, int32, int64 or bool)"
                         % (path, array.dtype))
    return torch.from_numpy(np.ascontiguousarray(array))


def numpy_type(elem_type):
    """The NumPy dtype of an ONNX element type, None if it has none. onnx 1.13 added
    tensor_dtype_to_np_dtype and 1.19 removed onnx.mapping; Debian 12 has 1.12."""
    to_numpy = getattr(onnx.helper, "tensor_dtype_to_np_dtype", None)
    if to_numpy is None:
        return onnx.mapping.TENSOR_TYPE_TO_NP_TYPE.get(elem_type)
    try:
        return np.dtype(to_numpy(elem_type))
    except (KeyError, ValueError, TypeError):
        return None


def check_input(model, name, tensor, path, model_path):
    """Fails the load, rather than every run, when an input's type or shape is not the model's."""
    info = next(i for i in model.graph.input if i.name == name)
    if not info.type.HasField("tensor_type"):
        return
    want_type = numpy_type(info.type.tensor_type.elem_type)
    # A dimension without a value (symbolic or unknown) accepts any size.
    want_shape = [d.dim_value if d.HasField("dim_value") else None
                  for d in info.type.tensor_type.shape.dim]
    have_type = tensor.numpy().dtype
    fits = (want_type is None or want_type == have_type) and (
        not info.type.tensor_type.HasField("shape") or
        (len(want_shape) == tensor.dim() and
         all(w is None or w == h for w, h in zip(want_shape, tensor.shape))))
    if not fits:
        raise ValueError("input '%s' from %s is %s%s; %s takes %s%s" % (
            name, path, have_type, list(tensor.shape), model_path,
            want_type and np.dtype(want_type), want_shape))


def send(answer):
    _protocol.write(json.dumps(answer) + "\n")
    _protocol.flush()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=["eager", "jit"] + list(CUDA_MODES), required=True)
    args = parser.parse_args()
    torch.set_num_interop_threads(1)
    worker = Worker(args.mode)
    send({"ok": True, "name": worker.name, "version": worker.version()})
    # One request at a time, in order.
    while True:
        line = sys.stdin.readline()
        if not line:
            return  # stdin closed: anvil has gone
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            if not isinstance(req, dict):
                raise ValueError("the request must be a JSON object")
            op = req.get("op")
            if op == "quit":
                return
            handlers = {"load": worker.load, "run": worker.run, "time": worker.time}
            if op not in handlers:
                raise ValueError("unknown op %s (load, run, time or quit)" % json.dumps(op))
            send(dict(ok=True, **handlers[op](req)))
        except json.JSONDecodeError as e:
            send({"ok": False, "error": "the request is not JSON: %s" % e})
        except Exception as e:  # any failure answers the request; the worker keeps serving
            send({"ok": False, "error": str(e) or type(e).__name__})


if __name__ == "__main__":
    main()

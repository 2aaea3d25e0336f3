#!/usr/bin/python3
"""Convert a float32 ONNX model to float16 or float64: every float32 tensor of the graph (inputs,
outputs, intermediate types, initializers, constants, Cast targets) takes the new type, except
the operands the ONNX spec keeps float32 whatever the data's type (Resize's and Upsample's
scales). What a user converting an exported model would do; no rounding tricks.

    cast_model.py IN.onnx OUT.onnx --to float16|float64
"""
import argparse
import sys

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

TYPES = {"float16": (TensorProto.FLOAT16, np.float16), "float64": (TensorProto.DOUBLE, np.float64)}

# (op, input index) whose type the spec fixes at float32.
FLOAT32_OPERANDS = {("Resize", 2), ("Upsample", 1)}


def cast_tensor(t, to_np):
    """A TensorProto of float32 data, converted (its name kept)."""
    return numpy_helper.from_array(numpy_helper.to_array(t).astype(to_np), t.name)


def cast_graph(graph, to_proto, to_np):
    kept = {n.input[i] for n in graph.node for (op, i) in FLOAT32_OPERANDS
            if n.op_type == op and i < len(n.input) and n.input[i]}
    for i, t in enumerate(graph.initializer):
        if t.data_type == TensorProto.FLOAT and t.name not in kept:
            graph.initializer[i].CopyFrom(cast_tensor(t, to_np))
    for info in list(graph.input) + list(graph.output) + list(graph.value_info):
        tt = info.type.tensor_type
        if tt.elem_type == TensorProto.FLOAT and info.name not in kept:
            tt.elem_type = to_proto
    for n in graph.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.TENSOR and a.t.data_type == TensorProto.FLOAT:
                if not (n.op_type == "Constant" and set(n.output) & kept):
                    a.t.CopyFrom(cast_tensor(a.t, to_np))
            elif a.type == onnx.AttributeProto.GRAPH:
                cast_graph(a.g, to_proto, to_np)
            if n.op_type == "Cast" and a.name == "to" and a.i == TensorProto.FLOAT:
                a.i = to_proto


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("input")
    p.add_argument("output")
    p.add_argument("--to", required=True, choices=sorted(TYPES))
    a = p.parse_args()
    model = onnx.load(a.input)
    cast_graph(model.graph, *TYPES[a.to])
    onnx.checker.check_model(model)
    onnx.save(model, a.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())

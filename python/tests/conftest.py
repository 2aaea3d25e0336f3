"""Shared fixtures: small ONNX models built with ONNX's helper API, and their NumPy references."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper


def dense_relu_model(n_in=64, n_out=32, seed=0):
    """y = relu(x @ W + b) for x of [1, n_in], and the reference function."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((n_in, n_out)).astype(np.float32) / np.sqrt(n_in)
    b = rng.standard_normal(n_out).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["xw"]),
         helper.make_node("Add", ["xw", "b"], ["pre"]),
         helper.make_node("Relu", ["pre"], ["y"])],
        "dense_relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, n_in])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, n_out])],
        [numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model, lambda x: np.maximum(x @ w + b, 0)


def two_output_model():
    """sum = a + b and prod = a * b on float32[2, 8]."""
    graph = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["sum"]), helper.make_node("Mul", ["a", "b"], ["prod"])],
        "two_outputs",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 8]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("sum", TensorProto.FLOAT, [2, 8]),
         helper.make_tensor_value_info("prod", TensorProto.FLOAT, [2, 8])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def gather_model():
    """rows = table[idx]: an index out of range fails while the model runs."""
    table = np.arange(12, dtype=np.float32).reshape(4, 3)
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "idx"], ["rows"], axis=0)],
        "gather",
        [helper.make_tensor_value_info("idx", TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("rows", TensorProto.FLOAT, [2, 3])],
        [numpy_helper.from_array(table, "table")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model, table


@pytest.fixture(scope="session")
def dense():
    return dense_relu_model()


@pytest.fixture(scope="session")
def dense_module(dense):
    import anvil
    return anvil.compile(dense[0])


@pytest.fixture(scope="session")
def dense_file(tmp_path_factory, dense):
    path = tmp_path_factory.mktemp("models") / "dense_relu.onnx"
    onnx.save(dense[0], str(path))
    return path

"""anvil.InferenceSession: ONNX Runtime's calling convention, checked against ONNX Runtime itself
where the bench dependencies (onnxruntime-node, scripts/setup_bench.sh) are installed."""

import json
import os
import shutil
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pytest

import anvil
from conftest import two_output_model

REPO = Path(__file__).resolve().parents[2]


def test_the_onnx_runtime_convention(dense, dense_file):
    model, reference = dense
    sess = anvil.InferenceSession(str(dense_file), providers=["CPUExecutionProvider"])
    (inp,) = sess.get_inputs()
    (out,) = sess.get_outputs()
    assert (inp.name, inp.shape, inp.type) == ("x", [1, 64], "tensor(float)")
    assert (out.name, out.shape, out.type) == ("y", [1, 32], "tensor(float)")
    assert sess.get_providers() == ["CPUExecutionProvider"]
    x = np.random.default_rng(4).standard_normal((1, 64)).astype(np.float32)
    for names in (None, ["y"]):
        (y,) = sess.run(names, {"x": x})
        np.testing.assert_allclose(y, reference(x), rtol=1e-5, atol=1e-5)
    with pytest.raises(anvil.BadInputError, match="no output 'z'"):
        sess.run(["z"], {"x": x})
    # Bytes, as ONNX Runtime takes them too.
    (y,) = anvil.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    np.testing.assert_allclose(y, reference(x), rtol=1e-5, atol=1e-5)


def test_output_names_pick_and_order():
    sess = anvil.InferenceSession(two_output_model().SerializeToString())
    a = np.full((2, 8), 2.0, np.float32)
    b = np.full((2, 8), 5.0, np.float32)
    prod, total = sess.run(["prod", "sum"], {"a": a, "b": b})
    np.testing.assert_array_equal(prod, a * b)
    np.testing.assert_array_equal(total, a + b)


class FakeSessionOptions:
    """What ONNX Runtime's SessionOptions exposes, for the options Anvil reads."""

    intra_op_num_threads = 1
    enable_profiling = True
    graph_optimization_level = "GraphOptimizationLevel.ORT_DISABLE_ALL"


def test_options_anvil_does_not_do_are_warned_about(dense_file):
    before = anvil.get_num_threads()
    try:
        with pytest.warns(UserWarning) as record:
            anvil.InferenceSession(str(dense_file), sess_options=FakeSessionOptions(),
                                   providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
        messages = " | ".join(str(w.message) for w in record)
        assert "provider 'CUDAExecutionProvider' is not supported" in messages
        assert "profiling" in messages and "cannot be disabled" in messages
        assert anvil.get_num_threads() == 1  # intra_op_num_threads applied
    finally:
        anvil.set_num_threads(0)
    assert anvil.get_num_threads() == before
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        anvil.InferenceSession(str(dense_file), providers=[("CPUExecutionProvider", {})])


def onnxruntime_node():
    deps = Path(os.environ.get("ANVIL_BENCH_DEPS", REPO / "build" / "bench-deps"))
    module = deps / "node_modules" / "onnxruntime-node"
    if not module.is_dir() or shutil.which("node") is None:
        return None
    return module


ORT_SCRIPT = """
const ort = require(process.argv[1]);
const [model, input, dims] = [process.argv[2], JSON.parse(process.argv[3]),
                              JSON.parse(process.argv[4])];
ort.InferenceSession.create(model).then(async (s) => {
  const feed = {}; feed[s.inputNames[0]] = new ort.Tensor('float32', Float32Array.from(input), dims);
  const r = await s.run(feed);
  console.log(JSON.stringify(Array.from(r[s.outputNames[0]].data)));
}).catch((e) => { console.error(e); process.exit(1); });
"""


def test_against_onnx_runtime(dense_file):
    module = onnxruntime_node()
    if module is None:
        pytest.skip("ONNX Runtime is not installed (make bench-setup installs onnxruntime-node)")
    x = np.random.default_rng(5).standard_normal((1, 64)).astype(np.float32)
    result = subprocess.run(
        ["node", "-e", ORT_SCRIPT, str(module), str(dense_file), json.dumps(x.ravel().tolist()),
         json.dumps(list(x.shape))], capture_output=True, text=True, timeout=120, check=True)
    expected = np.array(json.loads(result.stdout), np.float32).reshape(1, 32)
    (y,) = anvil.InferenceSession(str(dense_file)).run(None, {"x": x})
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-5)

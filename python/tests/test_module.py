"""anvil.compile, anvil.load and Module: every way in, the results against NumPy, the errors."""

import re
import threading
import warnings

import numpy as np
import pytest

import anvil
from conftest import gather_model, two_output_model


def test_version_and_help():
    assert re.fullmatch(r"\d+\.\d+(\.\d+)?", anvil.__version__)
    assert "resnet18" in anvil.compile.__doc__ and "BadInputError" in anvil.compile.__doc__
    assert anvil.Module.run.__doc__ and anvil.InferenceSession.__doc__


def test_every_way_to_give_the_model_compiles_the_same(dense, dense_file):
    model, reference = dense
    x = np.random.default_rng(1).standard_normal((1, 64)).astype(np.float32)
    expected = reference(x)
    for source in (model, model.SerializeToString(), str(dense_file), dense_file):
        m = anvil.compile(source)
        (y,) = m.run(x)
        assert y.dtype == np.float32 and y.shape == (1, 32)
        np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-5)


def test_inputs_outputs_and_named_runs():
    m = anvil.compile(two_output_model())
    assert m.inputs == [anvil.TensorSpec("a", (2, 8), "float32"),
                        anvil.TensorSpec("b", (2, 8), "float32")]
    assert [o.name for o in m.outputs] == ["sum", "prod"]
    rng = np.random.default_rng(2)
    a, b = (rng.standard_normal((2, 8)).astype(np.float32) for _ in range(2))
    for results in (m.run(a, b), m.run(b=b, a=a), m.run(a, b=b), m(a, b)):
        np.testing.assert_array_equal(results[0], a + b)
        np.testing.assert_array_equal(results[1], a * b)
    assert repr(m).startswith("<anvil.Module (a: float32[2, 8], b: float32[2, 8]) -> (sum: ")


def test_zoo_model_compiles_and_runs():
    m = anvil.compile("zoo:dqn")
    (state,) = m.inputs
    assert state.shape == (1, 4, 84, 84)
    (q,) = m.run(np.zeros(state.shape, np.float32))
    assert q.shape == (1, 18) and np.all(np.isfinite(q))


def test_save_and_load_round_trip(dense, tmp_path):
    model, reference = dense
    x = np.ones((1, 64), np.float32)
    m = anvil.compile(model)
    m.save(tmp_path / "m.so")
    loaded = anvil.load(tmp_path / "m.so")
    assert loaded.inputs == m.inputs and loaded.outputs == m.outputs
    np.testing.assert_array_equal(loaded.run(x)[0], m.run(x)[0])
    # A loaded module saves its artifact again, onto itself too.
    loaded.save(tmp_path / "again.so")
    np.testing.assert_array_equal(anvil.load(tmp_path / "again.so").run(x)[0], m.run(x)[0])
    loaded.save(tmp_path / "m.so")
    np.testing.assert_array_equal(anvil.load(tmp_path / "m.so").run(x)[0], m.run(x)[0])


def test_symbolic_dimensions_are_bound_at_compile_time():
    from onnx import TensorProto, helper
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "dynamic",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    with pytest.raises(anvil.BadInputError, match=r"symbolic.*input_shapes="):
        anvil.compile(model)
    m = anvil.compile(model, input_shapes={"x": (3, 4)})
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(m.run(x)[0], np.maximum(x, 0))
    sess = anvil.InferenceSession(model.SerializeToString(), input_shapes={"x": [3, 4]})
    np.testing.assert_array_equal(sess.run(None, {"x": x})[0], np.maximum(x, 0))


def test_profile_times_every_kernel(dense_module):
    kernels = dense_module.profile(np.ones((1, 64), np.float32), repeat=3)
    assert len(kernels) == dense_module.num_kernels
    for k in kernels:
        assert k["kernel"] and k["median_ms"] > 0


def test_bad_inputs_say_what_was_expected(dense_module):
    with pytest.raises(anvil.BadInputError, match=r"input 'x': expected float32\[1, 64\], got "
                                                  r"float64\[1, 64\]"):
        dense_module.run(np.ones((1, 64)))
    with pytest.raises(anvil.BadInputError, match=r"expected float32\[1, 64\], got "
                                                  r"float32\[2, 64\]"):
        dense_module.run(np.ones((2, 64), np.float32))
    with pytest.raises(anvil.BadInputError, match="'x'.*is not given"):
        dense_module.run()
    with pytest.raises(anvil.BadInputError, match="no input 'z'"):
        dense_module.run(z=np.ones((1, 64), np.float32))
    with pytest.raises(anvil.BadInputError, match="takes 1 input"):
        dense_module.run(np.ones((1, 64), np.float32), np.ones((1, 64), np.float32))
    with pytest.raises(anvil.BadInputError) as e:
        dense_module.run(np.ones((1, 64), np.float32), out=[np.zeros((1, 32), np.float64)])
    assert "output 'y'" in str(e.value) and e.value.exit_code == 2
    # A list goes through numpy.asarray: Python floats are float64, not the model's float32.
    with pytest.raises(anvil.BadInputError, match="got float64"):
        dense_module.run([[1.0] * 64])


def test_bad_models_and_files(tmp_path):
    with pytest.raises(anvil.BadInputError, match="unknown zoo model 'resnet99'.*resnet18"):
        anvil.compile("zoo:resnet99")
    with pytest.raises(anvil.BadInputError):
        anvil.compile(b"this is not an ONNX model")
    with pytest.raises(anvil.BadInputError, match="missing.onnx"):
        anvil.compile(tmp_path / "missing.onnx")
    (tmp_path / "junk.so").write_bytes(b"\x7fELF not really a model at all, but long enough" * 4)
    with pytest.raises(anvil.BadInputError):
        anvil.load(tmp_path / "junk.so")
    with pytest.raises(anvil.BadInputError, match="target"):
        anvil.compile("zoo:dqn", target="nosuchtarget")
    with pytest.raises(anvil.BadInputError, match="expected a path"):
        anvil.compile(42)
    assert issubclass(anvil.BadInputError, ValueError)


def test_a_kernel_that_fails_is_a_run_error():
    model, table = gather_model()
    m = anvil.compile(model)
    np.testing.assert_array_equal(m.run(np.array([3, 1]))[0], table[[3, 1]])
    with pytest.raises(anvil.RunError) as e:
        m.run(np.array([0, 7]))
    assert e.value.exit_code == 4 and isinstance(e.value, RuntimeError)


def test_one_module_runs_from_many_threads(dense, dense_module):
    _, reference = dense
    rng = np.random.default_rng(3)
    xs = [rng.standard_normal((1, 64)).astype(np.float32) for _ in range(8)]
    failures = []

    def work(x):
        for _ in range(25):
            (y,) = dense_module.run(x)
            if not np.allclose(y, reference(x), rtol=1e-5, atol=1e-5):
                failures.append(x)

    threads = [threading.Thread(target=work, args=(x,)) for x in xs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures


def test_threads_setting():
    before = anvil.get_num_threads()
    anvil.set_num_threads(1)
    assert anvil.get_num_threads() == 1
    anvil.set_num_threads(0)
    assert anvil.get_num_threads() == before


def test_compile_runs_without_the_gil(dense):
    # Another Python thread keeps running while a model compiles.
    ticks = []
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(1)
            stop.wait(0.001)

    t = threading.Thread(target=ticker)
    t.start()
    anvil.compile("zoo:dqn")
    stop.set()
    t.join()
    assert len(ticks) > 10


def test_no_warning_for_a_model_that_keeps_its_schedules(dense):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        anvil.compile(dense[0], strict=True)

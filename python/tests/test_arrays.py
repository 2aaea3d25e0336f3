"""Arrays in and out without copies: NumPy and PyTorch through DLPack or the buffer protocol, checked
by address, and the copies (strided, misaligned) said by a CopyWarning."""

import warnings

import numpy as np
import pytest

import anvil
from conftest import two_output_model

torch = pytest.importorskip("torch", reason="PyTorch (python3-torch) is not installed")


@pytest.fixture(scope="module")
def pair():
    return anvil.compile(two_output_model())


def aligned(shape, dtype=np.float32, offset=0):
    """A C-contiguous array whose data starts `offset` bytes past a 64-byte boundary."""
    itemsize = np.dtype(dtype).itemsize
    n = int(np.prod(shape))
    raw = np.zeros(n * itemsize + 64 + offset, np.uint8)
    start = (-raw.ctypes.data) % 64 + offset
    return raw[start:start + n * itemsize].view(dtype).reshape(shape)


def test_numpy_inputs_are_read_in_place(pair):
    a = aligned((2, 8), offset=16)  # 16-byte aligned, as NumPy's allocations are
    b = np.ones((2, 8), np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error", anvil.CopyWarning)
        assert pair._native.input_addresses([a, b]) == [a.ctypes.data, b.ctypes.data]
        pair.run(a, b)


def test_torch_inputs_are_read_in_place_through_dlpack(pair):
    a = torch.arange(16, dtype=torch.float32).reshape(2, 8)
    b = torch.full((2, 8), 2.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", anvil.CopyWarning)
        assert pair._native.input_addresses([a, b]) == [a.data_ptr(), b.data_ptr()]
        total, product = pair.run(a, b)
    np.testing.assert_array_equal(total, (a + b).numpy())
    np.testing.assert_array_equal(product, (a * b).numpy())


def test_strided_and_misaligned_inputs_are_copied_with_a_warning(pair):
    base = np.arange(64, dtype=np.float32).reshape(2, 32)
    strided = base[:, ::4]  # [2, 8], not contiguous
    misaligned = aligned((2, 8), offset=4)
    misaligned[:] = 3
    with pytest.warns(anvil.CopyWarning, match="input 'a': its elements are not compact"):
        total, _ = pair.run(strided, misaligned)
    np.testing.assert_array_equal(total, strided + 3)
    with pytest.warns(anvil.CopyWarning, match="input 'b': its data is 4-byte aligned, not 16"):
        pair.run(strided.copy(), misaligned)
    # A transposed PyTorch tensor comes through DLPack with its strides, and is copied.
    t = torch.arange(16, dtype=torch.float32).reshape(8, 2).t()
    with pytest.warns(anvil.CopyWarning, match="input 'a'"):
        total, _ = pair.run(t, np.zeros((2, 8), np.float32))
    np.testing.assert_array_equal(total, t.numpy())


def test_outputs_are_numpy_arrays_that_torch_shares(pair):
    a = np.full((2, 8), 1.5, np.float32)
    total, product = pair.run(a, a)
    assert isinstance(total, np.ndarray) and total.flags.c_contiguous
    shared = torch.from_dlpack(total)
    assert shared.data_ptr() == total.ctypes.data
    shared[0, 0] = 7  # one memory: the NumPy array sees the write
    assert total[0, 0] == 7


def test_outputs_into_preallocated_arrays(pair):
    a = np.full((2, 8), 2.0, np.float32)
    b = np.full((2, 8), 3.0, np.float32)
    out_sum = np.empty((2, 8), np.float32)
    out_prod = torch.empty((2, 8))
    with warnings.catch_warnings():
        warnings.simplefilter("error", anvil.CopyWarning)
        results = pair.run(a, b, out=[out_sum, out_prod])
    assert results[0] is out_sum and results[1] is out_prod
    np.testing.assert_array_equal(out_sum, a + b)
    np.testing.assert_array_equal(out_prod.numpy(), a * b)
    # A misaligned output is computed aside and copied in, with a warning.
    odd = aligned((2, 8), offset=8)
    with pytest.warns(anvil.CopyWarning, match="output 'sum': its data is 8-byte aligned"):
        pair.run(a, b, out=[odd, out_prod])
    np.testing.assert_array_equal(odd, a + b)


def test_output_errors(pair):
    a = np.ones((2, 8), np.float32)
    readonly = np.zeros((2, 8), np.float32)
    readonly.flags.writeable = False
    with pytest.raises(anvil.BadInputError, match="output 'sum': expected writable memory"):
        pair.run(a, a, out=[readonly, np.zeros((2, 8), np.float32)])
    with pytest.raises(anvil.BadInputError, match="compact"):
        pair.run(a, a, out=[np.zeros((2, 16), np.float32)[:, ::2], np.zeros((2, 8), np.float32)])
    with pytest.raises(anvil.BadInputError, match="output 'sum' overlaps input 'a'"):
        pair.run(a, a.copy(), out=[a, np.zeros((2, 8), np.float32)])
    with pytest.raises(anvil.BadInputError, match="2 output"):
        pair.run(a, a, out=[np.zeros((2, 8), np.float32)])


def test_a_tensor_that_requires_grad_or_lives_elsewhere_is_refused(pair):
    a = torch.ones((2, 8), requires_grad=True)
    with pytest.raises(anvil.BadInputError, match="input 'a': could not take it through DLPack"):
        pair.run(a, np.ones((2, 8), np.float32))
    with pytest.raises(anvil.BadInputError, match="input 'a'"):
        pair.run(torch.ones((2, 8), dtype=torch.float64), np.ones((2, 8), np.float32))

"""The errors anvil raises: each says whose fault it was, as the command line's exit codes do."""


class Error(Exception):
    """Any error anvil raises. ``exit_code`` is the ``anvil`` command line's code for its kind."""

    exit_code = 1


class BadInputError(Error, ValueError):
    """The model, a file or an array given is not what it should be (exit code 2): a file that is
    not ONNX, an unknown built-in model, an input of the wrong dtype or shape."""

    exit_code = 2


class CompileError(Error):
    """The model is valid but could not be compiled or saved (exit code 3)."""

    exit_code = 3


class RunError(Error, RuntimeError):
    """A kernel failed while the model ran (exit code 4)."""

    exit_code = 4


class CopyWarning(UserWarning):
    """An array was copied on its way in or out: it was strided or not 16-byte aligned. Arrays
    that are C-contiguous and 16-byte aligned (NumPy's and PyTorch's own allocations) are read and
    written in place."""

"""Anvil, a deep-learning compiler: compile an ONNX model (or a built-in one) for this CPU and run it.

    import anvil, numpy as np
    m = anvil.compile("resnet18.onnx")           # or bytes, an onnx.ModelProto, "zoo:resnet18"
    logits, = m.run(np.zeros((1, 3, 224, 224), np.float32))
    m.save("resnet18.so")                        # anvil.load("resnet18.so") runs it again

Arrays go in as any object with ``__dlpack__`` (NumPy, PyTorch) or the buffer protocol and are read
in place when C-contiguous and 16-byte aligned (otherwise copied, with a ``CopyWarning``); outputs
come back as NumPy arrays over Anvil's memory, or are written into ``out=`` arrays. A model runs
with the GIL released: several threads may run one module at once.

Code written for ONNX Runtime runs on Anvil by changing its import: ``anvil.InferenceSession``.
"""

import os as _os
import warnings as _warnings
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

from anvil import _anvil
from anvil.errors import BadInputError, CompileError, CopyWarning, Error, RunError

__version__ = _anvil.__version__

__all__ = [
    "BadInputError", "CompileError", "CopyWarning", "Error", "InferenceSession", "Module",
    "RunError", "TensorSpec", "compile", "get_num_threads", "load", "set_num_threads", "tune",
]


class TensorSpec(NamedTuple):
    """A model input or output: its name, shape and NumPy dtype name ("float32")."""

    name: str
    shape: Tuple[int, ...]
    dtype: str


class Module:
    """A compiled model. Make one with :func:`compile` or :func:`load`."""

    def __init__(self, native: "_anvil.Module"):
        self._native = native
        self._inputs = [TensorSpec(*t) for t in native.inputs]
        self._outputs = [TensorSpec(*t) for t in native.outputs]
        self._input_index = {t.name: i for i, t in enumerate(self._inputs)}

    @property
    def inputs(self) -> List[TensorSpec]:
        """The inputs, in the order :meth:`run` takes them positionally."""
        return list(self._inputs)

    @property
    def outputs(self) -> List[TensorSpec]:
        """The outputs, in the order :meth:`run` returns them."""
        return list(self._outputs)

    @property
    def target(self) -> str:
        """The target the kernels were compiled for ("llvm", "llvm -mcpu=znver3")."""
        return self._native.target

    @property
    def num_kernels(self) -> int:
        return self._native.num_kernels

    @property
    def warnings(self) -> List[str]:
        """Kernels that lost their schedule in a build that was not strict (one line each)."""
        return list(self._native.warnings)

    def _ordered(self, arrays: Sequence[Any], named: Dict[str, Any]) -> List[Any]:
        n = len(self._inputs)
        if len(arrays) > n:
            raise BadInputError(f"the model takes {n} input(s), got {len(arrays)} positionally")
        ordered: List[Any] = list(arrays) + [None] * (n - len(arrays))
        for name, value in named.items():
            i = self._input_index.get(name)
            if i is None:
                known = ", ".join(repr(t.name) for t in self._inputs)
                raise BadInputError(f"the model has no input {name!r} (its inputs: {known})")
            if i < len(arrays):
                raise BadInputError(f"input {name!r} is given both positionally and by name")
            ordered[i] = value
        missing = [self._inputs[i] for i, a in enumerate(ordered) if a is None]
        if missing:
            t = missing[0]
            raise BadInputError(f"input {t.name!r} ({t.dtype}{list(t.shape)}) is not given")
        return ordered

    def run(self, *arrays: Any, out: Optional[Sequence[Any]] = None, **named: Any) -> List[Any]:
        """Runs the model: inputs positionally (in the order of :attr:`inputs`) and/or by name.

        Returns the outputs as NumPy arrays (in the order of :attr:`outputs`). With ``out``, a
        sequence of writable C-contiguous arrays (NumPy, PyTorch) of the outputs' dtypes and
        shapes, the outputs are written into them and they are returned. Raises
        :class:`BadInputError` for an input of another dtype or shape (saying what was expected),
        :class:`RunError` when a kernel fails.
        """
        return self._run(self._ordered(arrays, named), out)

    __call__ = run

    def _run(self, ordered: List[Any], out: Optional[Sequence[Any]]) -> List[Any]:
        copies: List[str] = []
        results = self._native.run(ordered, out, copies)
        if copies:
            _warnings.warn("anvil copied " + "; ".join(copies), CopyWarning, stacklevel=3)
        return results

    def profile(self, *arrays: Any, repeat: int = 10, **named: Any) -> List[Dict[str, Any]]:
        """Times every kernel: one warm-up run, then ``repeat`` runs. Returns one dict per kernel
        call in program order: ``kernel``, ``nodes``, ``median_ms`` and ``gflops`` (per call)."""
        if repeat < 1:
            raise BadInputError(f"repeat must be at least 1, got {repeat}")
        return self._native.profile(self._ordered(arrays, named), repeat)

    def save(self, path: "os.PathLike[str] | str") -> None:
        """Writes the compiled model as one artifact (a shared library) that :func:`load`, the
        ``anvil`` command line and the C runtime run."""
        self._native.save(_os.fspath(path))

    def summary(self) -> str:
        """The kernels with their ops and schedules, and the memory totals."""
        return self._native.summary()

    def __repr__(self) -> str:
        ins = ", ".join(f"{t.name}: {t.dtype}{list(t.shape)}" for t in self._inputs)
        outs = ", ".join(f"{t.name}: {t.dtype}{list(t.shape)}" for t in self._outputs)
        return f"<anvil.Module ({ins}) -> ({outs}), {self.num_kernels} kernels, {self.target!r}>"


def _model_source(model: Any) -> Any:
    """A path (str) or serialized ONNX bytes for the native compile."""
    if isinstance(model, (bytes, bytearray, memoryview)):
        return bytes(model)
    if isinstance(model, (str, _os.PathLike)):
        return _os.fspath(model)
    if hasattr(model, "SerializeToString"):  # an onnx.ModelProto
        return model.SerializeToString()
    raise BadInputError(
        "model: expected a path, ONNX bytes, an onnx.ModelProto or 'zoo:NAME', got "
        + type(model).__name__)


def compile(model: Any, target: str = "llvm",
            input_shapes: Optional[Dict[str, Sequence[int]]] = None,
            tuning_records: "Optional[os.PathLike[str] | str]" = None, fuse: bool = True,
            layout: bool = True, strict: bool = False, records_any_cpu: bool = False) -> Module:
    """Compiles a model for ``target`` and returns the :class:`Module` that runs it here.

    ``model`` is an ONNX file's path, its bytes, an ``onnx.ModelProto``, or ``"zoo:NAME"`` for a
    built-in model (resnet18, mobilenet_v1, mobilenet_v2, lstm_lm, dqn, dcgan). ``input_shapes``
    binds inputs with symbolic dimensions (``{"data": (1, 3, 224, 224)}``). ``tuning_records`` is
    a file that ``anvil tune`` wrote: each kernel takes its best recorded configuration (records of
    other CPUs only with ``records_any_cpu``). ``fuse`` and ``layout`` switch operator fusion and
    the blocked convolution layout off for comparison. ``strict``: a kernel that loses its
    schedule is an error rather than a warning (see :attr:`Module.warnings`).

    Raises :class:`BadInputError` for a model that does not load, :class:`CompileError` for one
    that does not compile.
    """
    shapes = {name: [int(d) for d in dims] for name, dims in (input_shapes or {}).items()}
    records = _os.fspath(tuning_records) if tuning_records is not None else None
    try:
        native = _anvil.compile(_model_source(model), target, shapes, records, records_any_cpu,
                                fuse, layout, strict)
    except BadInputError as e:
        # The importer's messages name the command line's option.
        if "--input-shape" not in str(e):
            raise
        raise BadInputError(f"{e} (from Python: anvil.compile(..., input_shapes={{NAME: "
                            "(DIMS)}))") from None
    for line in native.warnings:
        _warnings.warn("anvil: " + line, stacklevel=2)
    return Module(native)


def load(path: "os.PathLike[str] | str") -> Module:
    """Loads a compiled model (a file :meth:`Module.save` or ``anvil compile`` wrote). Raises
    :class:`BadInputError` for a file that is not a valid artifact or was built for a CPU with
    extensions this one lacks."""
    return Module(_anvil.load(_os.fspath(path)))


def set_num_threads(n: int) -> None:
    """Sets the threads every model of this process runs on (0 or less: the default, the cores
    available to the process or ANVIL_NUM_THREADS)."""
    _anvil.set_num_threads(int(n))


def get_num_threads() -> int:
    """The threads models run on."""
    return _anvil.get_num_threads()


from anvil.session import InferenceSession  # noqa: E402  (uses Module and compile above)
from anvil.tuning import tune  # noqa: E402

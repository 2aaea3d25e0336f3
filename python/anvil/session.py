"""anvil.InferenceSession: ONNX Runtime's calling convention over an Anvil module, so that code
written for ONNX Runtime runs on Anvil by changing one line::

    import anvil as ort                      # was: import onnxruntime as ort
    sess = ort.InferenceSession("model.onnx", providers=["CPUExecutionProvider"])
    y, = sess.run(None, {sess.get_inputs()[0].name: x})
"""

import warnings
from typing import Any, Dict, List, Optional, Sequence

from anvil import Module, compile, set_num_threads
from anvil.errors import BadInputError

# ONNX's tensor type names, as ONNX Runtime's NodeArg.type gives them.
_ONNX_TYPES = {
    "float32": "tensor(float)", "float64": "tensor(double)", "float16": "tensor(float16)",
    "int8": "tensor(int8)", "int16": "tensor(int16)", "int32": "tensor(int32)",
    "int64": "tensor(int64)", "uint8": "tensor(uint8)", "uint16": "tensor(uint16)",
    "uint32": "tensor(uint32)", "uint64": "tensor(uint64)", "bool": "tensor(bool)",
}

_CPU = "CPUExecutionProvider"


class NodeArg:
    """An input or output as ONNX Runtime describes it: ``name``, ``shape`` (a list of ints) and
    ``type`` (``"tensor(float)"``)."""

    def __init__(self, name: str, shape: Sequence[int], dtype: str):
        self.name = name
        self.shape = list(shape)
        self.type = _ONNX_TYPES.get(dtype, f"tensor({dtype})")

    def __repr__(self) -> str:
        return f"NodeArg(name={self.name!r}, type={self.type!r}, shape={self.shape})"


def _provider_name(p: Any) -> str:
    return p[0] if isinstance(p, (tuple, list)) else str(p)


class InferenceSession:
    """Compiles ``path_or_bytes`` (an ONNX file or its bytes) for this CPU and runs it with ONNX
    Runtime's calling convention.

    Shapes are bound when the model compiles: an input with a symbolic dimension (a dynamic batch)
    needs ``input_shapes={"x": (1, 3, 224, 224)}``, and runs take that shape only.

    ``providers`` and ``sess_options`` are accepted as ONNX Runtime takes them. Anvil runs on the
    CPU: a provider other than ``CPUExecutionProvider`` is ignored with a warning, and of the
    session options only ``intra_op_num_threads`` applies (as ``threads``); an option that asks
    for something else Anvil does not do (profiling, disabled optimizations) is warned about.
    Threads are a setting of the process: they apply to every model it runs.
    """

    def __init__(self, path_or_bytes: Any, sess_options: Any = None,
                 providers: Optional[Sequence[Any]] = None, provider_options: Any = None,
                 threads: Optional[int] = None, target: str = "llvm",
                 input_shapes: Optional[Dict[str, Sequence[int]]] = None, **kwargs: Any):
        for p in providers or []:
            if _provider_name(p) != _CPU:
                warnings.warn(f"anvil: provider {_provider_name(p)!r} is not supported; "
                              "running on the CPU", stacklevel=2)
        if provider_options:
            warnings.warn("anvil: provider_options are ignored", stacklevel=2)
        for key in kwargs:
            warnings.warn(f"anvil: InferenceSession argument {key!r} is ignored", stacklevel=2)
        if sess_options is not None:
            n = getattr(sess_options, "intra_op_num_threads", 0) or 0
            if threads is None and n > 0:
                threads = n
            if getattr(sess_options, "enable_profiling", False):
                warnings.warn("anvil: session profiling is not supported (use Module.profile)",
                              stacklevel=2)
            level = getattr(sess_options, "graph_optimization_level", None)
            if level is not None and "DISABLE_ALL" in str(level):
                warnings.warn("anvil: graph optimizations cannot be disabled; the model is "
                              "compiled", stacklevel=2)
        if threads is not None:
            set_num_threads(threads)
        self._module: Module = compile(path_or_bytes, target=target, input_shapes=input_shapes)
        self._inputs = [NodeArg(*t) for t in self._module.inputs]
        self._outputs = [NodeArg(*t) for t in self._module.outputs]
        self._output_index = {o.name: i for i, o in enumerate(self._outputs)}

    @property
    def module(self) -> Module:
        """The compiled :class:`anvil.Module` behind the session."""
        return self._module

    def get_inputs(self) -> List[NodeArg]:
        return list(self._inputs)

    def get_outputs(self) -> List[NodeArg]:
        return list(self._outputs)

    def get_providers(self) -> List[str]:
        return [_CPU]

    def run(self, output_names: Optional[Sequence[str]], input_feed: Dict[str, Any],
            run_options: Any = None) -> List[Any]:
        """Runs the model on ``input_feed`` (input name -> array) and returns the outputs named
        by ``output_names`` (all of them, in order, for None) as NumPy arrays."""
        module = self._module
        results = module._run(module._ordered((), input_feed), None)
        if not output_names:
            return results
        picked = []
        for name in output_names:
            i = self._output_index.get(name)
            if i is None:
                known = ", ".join(repr(o.name) for o in self._outputs)
                raise BadInputError(f"the model has no output {name!r} (its outputs: {known})")
            picked.append(results[i])
        return picked

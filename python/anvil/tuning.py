"""anvil.tune: the kernels of a model tuned on this CPU, as ``anvil tune`` does."""

import os
import sys
import time
from typing import Any, Dict, Optional, Sequence

from anvil import _anvil


def _progress_line(task: Dict[str, Any], left_s: float) -> str:
    width = 20
    share = max(1, task["share"])
    filled = min(width, task["measured"] * width // share)
    left = f"{left_s:.0f} s" if left_s < 90 else f"{left_s / 60:.1f} min"
    best, default = task["best_gflops"], task["default_gflops"]
    return (f"[{task['index'] + 1}/{task['count']}] {task['op']} |{'#' * filled}"
            f"{'.' * (width - filled)}| {task['measured']}/{share} trials, best {best:.1f} "
            f"GFLOP/s (default {default:.1f}), ~{left} left")


def tune(model: Any, trials: int = 20, time_budget: Optional[float] = None,
         records: "os.PathLike[str] | str" = "anvil_records.json", target: str = "llvm",
         input_shapes: Optional[Dict[str, Sequence[int]]] = None, tuner: str = "xgb",
         records_any_cpu: bool = False, progress: bool = True) -> Dict[str, Any]:
    """Tunes the kernels of ``model`` (as :func:`anvil.compile` takes it) on this CPU.

    ``trials`` is the budget per task on average; ``time_budget`` (seconds) stops starting new
    trials after that long. Every trial is appended to ``records`` as it is measured, so an
    interrupted session leaves a valid file and a later call resumes from it; pass the file to
    ``anvil.compile(..., tuning_records=records)``. With ``progress``, a progress line per batch is
    written to stderr (redrawn in place on a terminal).

    Returns a summary: ``trials`` measured now, ``seconds``, ``records`` and ``tasks``, one dict
    per task (``op``, ``task``, ``best_gflops``, ``default_gflops``, ``measured_now``,
    ``failed``, ...).
    """
    from anvil import _model_source

    records = os.fspath(records)
    shapes = {name: [int(d) for d in dims] for name, dims in (input_shapes or {}).items()}
    # The measure worker: this interpreter, importing this same package.
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    worker = [sys.executable, "-c",
              f"import sys; sys.path.append({package_root!r}); "
              "from anvil import _anvil; _anvil.measure_worker()"]
    progress = progress and sys.stderr is not None
    live = progress and sys.stderr.isatty()
    state = {"width": 0}

    def on_batch(task: Dict[str, Any], left_s: float) -> None:
        if not progress:
            return
        line = _progress_line(task, left_s)
        if live:
            sys.stderr.write("\r" + line.ljust(state["width"]))
            state["width"] = len(line)
        else:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()

    def on_note(line: str) -> None:
        if progress:
            sys.stderr.write(("\n" if live and state["width"] else "") + line + "\n")
            state["width"] = 0

    started = time.monotonic()
    summary = _anvil.tune(_model_source(model), target, shapes, records, int(trials),
                          (time_budget or 0) / 60.0, tuner, records_any_cpu, worker, on_batch,
                          on_note)
    if progress and live and state["width"]:
        sys.stderr.write("\n")
    summary["wall_seconds"] = time.monotonic() - started
    return summary

#!/usr/bin/python3
"""Compile, check and time the model suite that export.py wrote (issue 26).

For each model: `anvil compile --strict` (wall time and the compiler's peak RSS), the artifact's
output against PyTorch's on the same input (max abs error over max |reference|), the kernels that
hold a layout transform, and `anvil bench` against ONNX Runtime (median over --processes fresh
processes per side). One table, the geometric-mean speedups, and a summary JSON.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import time

import numpy as np

# Models not expected to compile yet: "pending" fails no run. (Swin-T was, until its ONNX ops
# Mod, Range and ScatterND existed.)
PENDING = set()


def suite():
    """The model names, in export.py's order. Asked of a child: with PyTorch imported here, this
    process's memory would count as each compile's peak (a vfork child's RSS before exec is its
    parent's)."""
    export = os.path.join(os.path.dirname(os.path.abspath(__file__)), "export.py")
    return subprocess.check_output([sys.executable, export, "--list"], text=True).split()


def run_measured(cmd, log, timeout):
    """Runs cmd with its output in `log`; returns (exit code, wall s, peak RSS MiB); the exit
    code is None when it ran past `timeout` seconds and was killed."""
    start = time.monotonic()
    with open(log, "w") as f:
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT)
    # wait4, not wait: its rusage is this child's own, whose ru_maxrss is the peak (KiB).
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() - start > timeout:
            proc.kill()
            _, status, usage = os.wait4(proc.pid, 0)
            pid = None
            break
        time.sleep(0.02)
    proc.returncode = os.waitstatus_to_exitcode(status)  # so Popen does not wait on it again
    return (proc.returncode if pid else None), time.monotonic() - start, usage.ru_maxrss / 1024


def last_error(log):
    """The log's last error line, with the head of each indented line after it (the list it
    names, as "unsupported operators (3): Mod, Range, ScatterND")."""
    lines = [l.rstrip() for l in open(log, errors="replace") if l.strip()] or ["(no output)"]
    at = max([i for i, l in enumerate(lines) if "error" in l.lower()] or [len(lines) - 1])
    heads = [l.split(":")[0].strip() for l in lines[at + 1:] if l.startswith("  ")]
    return (lines[at].strip() + " " + ", ".join(heads)).strip()[:300]


def layout_transforms(log):
    """Kernels of `anvil compile -v`'s list ("  NAME: op, op  [schedule]") with a layout
    transform among their ops."""
    count = 0
    for line in open(log, errors="replace"):
        if line.startswith("  ") and ": " in line and "[" in line:
            ops = line.split(": ", 1)[1].split("  [")[0].split(", ")
            count += "layout_transform" in ops
    return count


def relative_error(got, d, reference):
    """max |got - ref| / max |ref| for d/reference, or None when it was not written."""
    path = os.path.join(d, reference)
    if not os.path.exists(path):
        return None
    ref = np.load(path).astype(np.float64)
    if got.shape != ref.shape:
        raise ValueError(f"output shape {got.shape}, {reference} {ref.shape}")
    return float(np.max(np.abs(got - ref)) / max(np.max(np.abs(ref)), 1e-30))


def check(a, so, d, tolerance, suffix):
    """Runs the artifact on the reference input (in the model's element type); returns (max
    relative error against PyTorch's float32 output, the same against PyTorch's float64 output
    (None when export.py did not write it), error message). A float64 model is judged against
    PyTorch in float64: PyTorch's float32 output can itself be further than 1e-5 from it
    (ResNet-50's is 2.3e-5)."""
    out = os.path.join(d, "out" + suffix)
    x = os.path.join(d, "input.npy")
    if suffix:
        x = os.path.join(d, "input" + suffix + ".npy")
        np.save(x, np.load(os.path.join(d, "input.npy")).astype(a.dtype))
    r = subprocess.run([a.anvil, "run", so, "--input", "input=" + x,
                        "--output-dir", out], capture_output=True, text=True)
    if r.returncode != 0:
        return None, None, "run: " + (r.stderr or r.stdout).strip()[-300:]
    got = np.load(os.path.join(out, "output.npy")).astype(np.float64)
    try:
        err32 = relative_error(got, d, "reference.npy")
        err64 = relative_error(got, d, "reference.float64.npy")
    except ValueError as e:
        return None, None, str(e)
    against64 = a.dtype == "float64" and err64 is not None
    err = err64 if against64 else err32
    if err <= tolerance:
        return err32, err64, None
    return err32, err64, (f"max error {err:.2e}" + (" against PyTorch's float64 output"
                                                    if against64 else "") + f" > {tolerance:g}")


def bench(a, name, onnx, d, suffix):
    """anvil bench against ONNX Runtime; returns ({threads: figures}, error message)."""
    summary = os.path.join(d, "bench" + suffix + ".json")
    if os.path.exists(summary):
        os.remove(summary)
    log = os.path.join(d, "bench" + suffix + ".log")
    name += suffix  # the row's name: the ONNX file's
    with open(log, "w") as f:
        rc = subprocess.call([a.anvil, "bench", onnx, "--threads", a.threads, "--processes",
                              str(a.processes), "--baselines", "onnxruntime", "--strict",
                              "--summary-json", summary], stdout=f, stderr=subprocess.STDOUT)
    if not os.path.exists(summary):
        return {}, f"bench exited {rc}: {last_error(log)}"
    times, errors = {}, []
    for row in json.load(open(summary))["rows"]:
        if row["name"] != name or row.get("baseline") != "onnxruntime":
            continue
        if row.get("error") or row.get("speedup") is None:
            errors.append(row.get("error") or row.get("note") or "no baseline time")
            continue
        times[str(row["threads"])] = {"anvil_ms": row["anvil_ms"], "ort_ms": row["baseline_ms"],
                                      "speedup": row["speedup"],
                                      "contended": row.get("contended", False)}
    if not times and not errors:
        errors.append(f"bench exited {rc} without rows: {last_error(log)}")
    return times, "; ".join(errors) or None


def run_model(a, name):
    d = os.path.join(a.models_dir, name)
    onnx = os.path.join(d, name + ".onnx")
    suffix = "" if a.dtype == "float32" else "." + a.dtype  # the converted model's files
    m = {"name": name, "dtype": a.dtype, "compiles": False, "matches": False, "max_error": None,
         "max_error_vs_float64": None,
         "layout_transforms": None, "compile_s": None, "compile_peak_mib": None, "bench": {},
         "error": None, "pending": name in PENDING}
    if not os.path.exists(onnx):
        error = os.path.join(d, "export_error.txt")
        m["error"] = ("export: " + open(error).read().strip() if os.path.exists(error)
                      else "not exported (bench/models/export.py)")
        return m
    if suffix:
        converted = os.path.join(d, name + suffix + ".onnx")
        cast = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cast_model.py")
        subprocess.check_call([sys.executable, cast, onnx, converted, "--to", a.dtype])
        onnx = converted
    so = os.path.join(d, name + suffix + ".so")
    log = os.path.join(d, "compile" + suffix + ".log")
    rc, seconds, peak = run_measured([a.anvil, "compile", onnx, "--strict", "-v", "-o", so], log,
                                     a.timeout)
    m["compile_s"], m["compile_peak_mib"] = round(seconds, 2), round(peak, 1)
    if rc is None:
        m["error"] = f"compile ran past --timeout {a.timeout:g} s"
        return m
    if rc != 0:
        m["error"] = f"compile exited {rc}: {last_error(log)}"
        return m
    m["compiles"] = True
    m["pending"] = False  # a pending model that compiles is measured as any other
    m["layout_transforms"] = layout_transforms(log)
    m["max_error"], m["max_error_vs_float64"], m["error"] = check(a, so, d, a.tolerance, suffix)
    m["matches"] = m["error"] is None
    if m["matches"] and not a.skip_bench:
        m["bench"], m["error"] = bench(a, name, onnx, d, suffix)
    return m


def fmt(x, spec):
    return "-" if x is None else format(x, spec)


def table(models, threads):
    """The table, and below it a numbered note per model with an error (as anvil bench's)."""
    head = ["model", "compiles", "matches (max err)", "layout transforms", "compile s",
            "compile peak MiB"]
    for t in threads:
        head += [f"Anvil ms {t}t", f"ORT ms {t}t", f"speedup {t}t"]
    rows, notes, contended = [head], [], False
    for m in models:
        name = m["name"]
        if m["error"]:
            notes.append(f"({len(notes) + 1}) {name}" + (" (pending)" if m["pending"] else "") +
                         f": {m['error']}")
            name += f" ({len(notes)})"
        match = ("yes" if m["matches"] else "no") + f" ({fmt(m['max_error'], '.1e')}"
        if m["max_error_vs_float64"] is not None:
            match += f"; {fmt(m['max_error_vs_float64'], '.1e')} vs float64"
        match += ")"
        row = [name, "yes" if m["compiles"] else "no", match if m["compiles"] else "-",
               fmt(m["layout_transforms"], "d"), fmt(m["compile_s"], ".1f"),
               fmt(m["compile_peak_mib"], ".0f")]
        for t in threads:
            b = m["bench"].get(t, {})
            row += [fmt(b.get("anvil_ms"), ".3f"), fmt(b.get("ort_ms"), ".3f"),
                    fmt(b.get("speedup"), ".2f") + ("x" if b else "") +
                    (" *" if b.get("contended") else "")]
            contended = contended or b.get("contended")
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |" for r in rows]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    if contended:
        notes.append("* contended: a median more than twice that side's fastest run (another "
                     "process was using the cores)")
    return "\n".join(lines + notes)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models-dir", default="build/models", help="where export.py wrote them")
    p.add_argument("--anvil", default="build/bin/anvil", help="the anvil binary")
    p.add_argument("--only", help="comma-separated model names (default: all 25)")
    p.add_argument("--threads", default="1,2", help="thread counts of the bench, comma-separated")
    p.add_argument("--processes", type=int, default=3,
                   help="fresh processes per side and row (the suite asks at least 3)")
    p.add_argument("--skip-bench", action="store_true", help="compile and check only")
    p.add_argument("--dtype", default="float32", choices=["float32", "float16", "float64"],
                   help="convert each model to this element type first (cast_model.py) and "
                   "compare with PyTorch's float32 output (float64: with PyTorch's float64 output, "
                   "where export.py wrote it)")
    p.add_argument("--tolerance", type=float,
                   help="largest max |anvil - torch| / max |torch| that matches (default: 1e-3; "
                   "1e-2 for float16, 1e-5 for float64)")
    p.add_argument("--timeout", type=float, default=3600, help="seconds one compile may take")
    p.add_argument("--summary-json", help="default: MODELS_DIR/summary.json")
    a = p.parse_args()
    if a.tolerance is None:
        a.tolerance = {"float32": 1e-3, "float16": 1e-2, "float64": 1e-5}[a.dtype]
    known = suite()
    names = a.only.split(",") if a.only else known
    unknown = [n for n in names if n not in known]
    if unknown:
        p.error("unknown model(s) " + ", ".join(unknown))
    threads = a.threads.split(",")

    models = []
    for name in names:
        print(f"== {name}", flush=True)
        m = run_model(a, name)
        if m["error"]:
            print(f"{name}: {m['error']}", flush=True)
        models.append(m)

    print(table(models, [] if a.skip_bench else threads))
    geomean, excluded = {}, {}
    for t in [] if a.skip_bench else threads:
        speedups = [m["bench"][t]["speedup"] for m in models if t in m["bench"]]
        excluded[t] = [m["name"] + (" (pending)" if m["pending"] else "")
                       for m in models if t not in m["bench"]]
        geomean[t] = math.exp(sum(map(math.log, speedups)) / len(speedups)) if speedups else None
        print(f"geometric-mean speedup at {t} thread(s) over {len(speedups)} models: "
              f"{fmt(geomean[t], '.2f')}x" +
              (f" (excluded: {', '.join(excluded[t])})" if excluded[t] else ""))
    pending = [m["name"] for m in models if m["pending"]]
    failed = [m["name"] for m in models if m["error"] and not m["pending"]]
    if failed:
        print("failed: " + ", ".join(failed))

    suffix = "" if a.dtype == "float32" else "." + a.dtype
    out = a.summary_json or os.path.join(a.models_dir, "summary" + suffix + ".json")
    summary = {"tolerance": a.tolerance, "processes": a.processes, "threads": threads,
               "models": models, "pending": pending, "failed": failed,
               "geomean_speedup": geomean, "excluded_from_geomean": excluded}
    with open(out, "w") as f:
        json.dump(summary, f, indent=1)
    print("wrote " + out)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

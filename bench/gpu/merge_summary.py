"""Merges the per-workload summary JSONs of `anvil bench` into one, and prints the speedup table,
the geometric mean speedup per baseline and each workload's slowest kernels.

Usage: python3 merge_summary.py OUT.json IN.json [IN.json ...]   (standard library only)
"""

import json
import math
import sys


def merge(files):
    merged = {"machine": None, "runs": None, "rows": [], "profiles": []}
    for path in files:
        try:
            with open(path) as f:
                part = json.load(f)
        except (OSError, ValueError) as e:  # one workload's damaged file costs only its rows
            print("skipped %s: %s" % (path, e), file=sys.stderr)
            continue
        merged["machine"] = merged["machine"] or part.get("machine")
        merged["runs"] = merged["runs"] or part.get("runs")
        merged["rows"] += part.get("rows", [])
        merged["profiles"] += part.get("profiles", [])
    return merged


def report(summary, slowest=3):
    lines = ["| model | baseline | baseline ms | Anvil ms | speedup | Anvil GFLOP/s |",
             "|---|---|--:|--:|--:|--:|"]
    speedups = {}
    notes = []
    for row in summary["rows"]:
        gflops = "%.1f" % row["gflops"] if row.get("gflops") is not None else "-"
        if "speedup" in row:
            lines.append("| %s | %s | %.3f | %.3f | %.2fx | %s |" % (
                row["name"], row["baseline"], row["baseline_ms"], row["anvil_ms"],
                row["speedup"], gflops))
            speedups.setdefault(row["baseline"], []).append(row["speedup"])
        elif row.get("baseline") is None:  # Anvil alone
            lines.append("| %s | - | - | %.3f | - | %s |" % (row["name"], row["anvil_ms"], gflops))
        else:
            notes.append("%s, %s: %s" % (row["name"], row["baseline"], row.get("note", "")))
            lines.append("| %s | %s | - | %.3f | (%d) | %s |" % (
                row["name"], row["baseline"], row["anvil_ms"], len(notes), gflops))
    lines += ["(%d) %s" % (i + 1, n) for i, n in enumerate(notes)]
    lines.append("")
    for baseline, values in speedups.items():
        geomean = math.exp(sum(math.log(v) for v in values) / len(values))
        lines.append("geometric mean speedup over %s: %.2fx (%d workloads)" % (
            baseline, geomean, len(values)))
    for p in summary["profiles"]:
        total = sum(k["ms"] for k in p["kernels"])
        lines.append("")
        lines.append("%s: %d kernels, %.3f ms in all (each call waited for alone); slowest:" % (
            p["name"], len(p["kernels"]), total))
        for k in p["kernels"][:slowest]:
            rate = "%.1f GFLOP/s" % k["gflops"] if k["gflops"] else "no FLOPs"
            lines.append("  %.3f ms (%.0f%%), %s: %s  %s" % (
                k["ms"], 100 * k["ms"] / total if total else 0, rate, k["kernel"], k["nodes"]))
    return "\n".join(lines)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__.strip().splitlines()[-1])
    summary = merge(sys.argv[2:])
    with open(sys.argv[1], "w") as f:
        json.dump(summary, f, indent=2)
        f.write("\n")
    print(report(summary))


if __name__ == "__main__":
    main()

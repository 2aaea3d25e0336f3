#!/usr/bin/python3
"""How much a compiled model's latency depends on the process it runs in.

Loads ARTIFACT (a model.so) in N fresh processes (`anvil bench-worker`) and the same model as ONNX
in N fresh ONNX Runtime processes (the noise floor: what the machine itself varies), all at once;
then times them round-robin, a block at a time, alternating the two sides, until each process has
its timed runs: at least --runs, and enough to fill --min-ms of timed work (small models), in
--rounds blocks. Prints each process's median and, per side, the spread =
(max - min) / median of the per-process medians.

Why round-robin: this machine's speed drifts for seconds at a time (other tenants), and processes
timed one after the other would take that drift for a difference between processes; interleaved,
every process sees the same drift, and what is left is the process's own luck (where its memory
landed).

  bench/spread.py build/demo/resnet18.so --onnx resnet18.onnx --processes 10 --threads 1

The inputs are uniform random in [-1, 1) with a fixed seed, written as .npy for both sides. ONNX
Runtime comes from npm's onnxruntime-node (`make bench` installs it into build/bench-deps; --deps
names another directory); without it, only Anvil's side runs. --json FILE keeps every figure.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx


class Worker:
    """A process speaking the bench protocol (tools/anvil/bench.h) on its stdin and stdout."""

    def __init__(self, command):
        self.p = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True, bufsize=1)
        greeting = json.loads(self.p.stdout.readline() or 'null')
        if not greeting or not greeting.get('ok'):
            self.p.kill()
            raise RuntimeError(f'{command[0]}: no greeting ({greeting})')
        self.ms = []

    def request(self, req):
        self.p.stdin.write(json.dumps(req) + '\n')
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError(f'worker died during {req["op"]} (exit {self.p.wait()})')
        answer = json.loads(line)
        if not answer.get('ok'):
            raise RuntimeError(f'{req["op"]}: {answer.get("error")}')
        return answer

    def time(self, runs):
        return self.request({'op': 'time', 'runs': runs})['ms']

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def busy_jiffies():
    with open('/proc/stat') as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    return sum(v) - v[3] - v[4], sum(v)


def wait_idle():
    """Until the cores have been idle for 30 ms (at most 1 s): the threads of the block before
    spin for a while after it, and would slow the next one."""
    time.sleep(0.02)
    for _ in range(33):
        b0, t0 = busy_jiffies()
        time.sleep(0.03)
        b1, t1 = busy_jiffies()
        if t1 == t0 or b1 - b0 <= 1:
            return


def spread(medians):
    return (max(medians) - min(medians)) / statistics.median(medians) if len(medians) > 1 else 0


def write_inputs(onnx_file, directory):
    graph = onnx.load(onnx_file).graph
    constants = {i.name for i in graph.initializer}
    rng = np.random.default_rng(0)
    files = {}
    for value in graph.input:
        if value.name in constants:
            continue
        t = value.type.tensor_type
        shape = [d.dim_value for d in t.shape.dim]
        if any(d <= 0 for d in shape):
            sys.exit(f'spread.py: input {value.name} has a symbolic dimension; export it static')
        # onnx >= 1.13 has the mapping in helper; older ones (Debian's 1.12) in onnx.mapping.
        if hasattr(onnx.helper, 'tensor_dtype_to_np_dtype'):
            dtype = onnx.helper.tensor_dtype_to_np_dtype(t.elem_type)
        else:
            dtype = onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[t.elem_type]
        data = rng.uniform(-1, 1, shape).astype(dtype)
        files[value.name] = os.path.join(directory, value.name.replace('/', '_') + '.npy')
        np.save(files[value.name], data)
    return files


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('artifact', help='the model.so to run')
    ap.add_argument('--onnx', required=True, help='the same model as ONNX (inputs, ONNX Runtime)')
    ap.add_argument('--processes', type=int, default=10)
    ap.add_argument('--runs', type=int, default=30, help='timed runs per process (at least 30)')
    ap.add_argument('--min-ms', type=float, default=400,
                    help='timed work per process at least (more runs for small models)')
    ap.add_argument('--rounds', type=int, default=6, help='blocks per process')
    ap.add_argument('--warmup', type=int, default=3, help='untimed runs per process first')
    ap.add_argument('--threads', type=int, default=1)
    ap.add_argument('--anvil', default=os.path.join(root, 'build', 'bin', 'anvil'))
    ap.add_argument('--deps', default=os.path.join(root, 'build', 'bench-deps'))
    ap.add_argument('--json', help='write the figures here')
    a = ap.parse_args()
    if a.runs < 30:
        sys.exit('spread.py: --runs must be at least 30 (a median of fewer moves with the noise)')

    ort_script = os.path.join(root, 'tools', 'bench', 'onnxruntime_worker.js')
    have_ort = os.path.isdir(os.path.join(a.deps, 'node_modules', 'onnxruntime-node'))
    if not have_ort:
        print(f'onnxruntime-node is not in {a.deps}: Anvil alone', file=sys.stderr)
    sides = {'anvil': ([a.anvil, 'bench-worker'], os.path.abspath(a.artifact))}
    if have_ort:
        sides['onnxruntime'] = (['node', ort_script, a.deps], os.path.abspath(a.onnx))

    workers = {side: [] for side in sides}
    with tempfile.TemporaryDirectory(prefix='anvil-spread-') as tmp:
        inputs = write_inputs(a.onnx, tmp)
        try:
            for i in range(a.processes):
                for side, (command, model) in sides.items():
                    w = Worker(command)
                    w.request({'op': 'load', 'model': model, 'threads': a.threads,
                               'inputs': inputs})
                    w.time(a.warmup)
                    workers[side].append(w)
            # Runs per process from Anvil's first warm-up: --min-ms of work at least.
            estimate = max(statistics.median(workers['anvil'][0].time(3)), 1e-3)
            runs = max(a.runs, int(a.min_ms / estimate) + 1)
            block = -(-runs // a.rounds)
            runs = block * a.rounds
            for _ in range(a.rounds):
                for i in range(a.processes):
                    for side in sides:
                        wait_idle()
                        w = workers[side][i]
                        w.ms += w.time(block)
        finally:
            for ws in workers.values():
                for w in ws:
                    w.close()

    medians = {side: [statistics.median(w.ms) for w in ws] for side, ws in workers.items()}
    print(f'{os.path.basename(a.artifact)}, {a.threads} thread(s), {a.processes} processes per '
          f'side, {runs} runs each in {a.rounds} blocks of {block}, round-robin:')
    for side, ms in medians.items():
        print(f'  {side:12s} per process: ' + ' '.join(f'{m:.3f}' for m in ms))
    for side, ms in medians.items():
        print(f'  {side:12s} median of medians {statistics.median(ms):.3f} ms, '
              f'min {min(ms):.3f}, max {max(ms):.3f}, spread {100 * spread(ms):.1f}%')
    if a.json:
        with open(a.json, 'w') as f:
            json.dump({'runs': runs, 'threads': a.threads,
                       **{side: {'process_ms': ms, 'median_ms': statistics.median(ms),
                                 'spread': spread(ms)} for side, ms in medians.items()}},
                      f, indent=1)


if __name__ == '__main__':
    main()

#!/usr/bin/python3
"""How much a compiled model's latency depends on the process it runs in.

Runs ARTIFACT (a model.so) in N fresh processes (`anvil run ARTIFACT --repeat R`, as a user
would), alternating with N fresh ONNX Runtime processes on the same ONNX file (the noise floor:
what the machine itself varies); each process times --runs runs one call at a time, after one
untimed run (ONNX Runtime: --warmup). Prints each process's median and, per side, the spread =
(max - min) / median of the per-process medians. Any build of Anvil can be measured (--anvil).

  bench/spread.py build/demo/resnet18.so --onnx resnet18.onnx --processes 10 --threads 1

The inputs are uniform random in [-1, 1) with a fixed seed, written as .npy for both sides
(`--fill-mode random` as `anvil run` has it). ONNX Runtime comes from npm's onnxruntime-node
(`make bench` installs it into build/bench-deps; --deps names another directory); without it,
only Anvil's side runs. Writes --json FILE with every figure when asked.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np
import onnx


def worker(command):
    """A process speaking the bench protocol (tools/anvil/bench.h) on its stdin and stdout."""
    p = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                         bufsize=1)
    greeting = json.loads(p.stdout.readline() or 'null')
    if not greeting or not greeting.get('ok'):
        p.kill()
        raise RuntimeError(f'{command[0]}: no greeting ({greeting})')
    return p


def request(p, req):
    p.stdin.write(json.dumps(req) + '\n')
    p.stdin.flush()
    line = p.stdout.readline()
    if not line:
        raise RuntimeError(f'worker died during {req["op"]} (exit {p.wait()})')
    answer = json.loads(line)
    if not answer.get('ok'):
        raise RuntimeError(f'{req["op"]}: {answer.get("error")}')
    return answer


def one_process(command, model, threads, inputs, warmup, runs):
    """The median of `runs` timed runs in a fresh process."""
    p = worker(command)
    try:
        request(p, {'op': 'load', 'model': model, 'threads': threads, 'inputs': inputs})
        request(p, {'op': 'time', 'runs': warmup})
        ms = request(p, {'op': 'time', 'runs': runs})['ms']
    finally:
        p.stdin.close()
        p.wait()
    return statistics.median(ms)


def anvil_process(anvil, artifact, threads, runs, directory):
    """The median `anvil run` reports for `runs` runs in a fresh process."""
    out = subprocess.run([anvil, 'run', artifact, '--fill-mode', 'random', '--repeat', str(runs),
                          '--threads', str(threads), '--output-dir', directory],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f'anvil run {artifact}: exit {out.returncode}: {out.stderr.strip()}')
    for line in out.stdout.splitlines():
        if line.startswith('latency: median '):
            return float(line.split()[2])
    raise RuntimeError(f'anvil run printed no latency line:\n{out.stdout}')


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
    ap.add_argument('--runs', type=int, default=30)
    ap.add_argument('--warmup', type=int, default=5)
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

    medians = {'anvil': []}
    if have_ort:
        medians['onnxruntime'] = []
    with tempfile.TemporaryDirectory(prefix='anvil-spread-') as tmp:
        inputs = write_inputs(a.onnx, tmp) if have_ort else {}
        for i in range(a.processes):
            for side in medians:
                if side == 'anvil':
                    m = anvil_process(a.anvil, os.path.abspath(a.artifact), a.threads, a.runs, tmp)
                else:
                    m = one_process(['node', ort_script, a.deps], os.path.abspath(a.onnx),
                                    a.threads, inputs, a.warmup, a.runs)
                medians[side].append(m)
                print(f'process {i + 1:2d} {side:12s} median {m:.3f} ms', flush=True)

    print(f'\n{os.path.basename(a.artifact)}, {a.threads} thread(s), {a.processes} processes '
          f'of {a.runs} runs each:')
    for side, ms in medians.items():
        print(f'  {side:12s} median of medians {statistics.median(ms):.3f} ms, '
              f'min {min(ms):.3f}, max {max(ms):.3f}, spread {100 * spread(ms):.1f}%')
    if a.json:
        with open(a.json, 'w') as f:
            json.dump({side: {'process_ms': ms, 'median_ms': statistics.median(ms),
                              'spread': spread(ms)} for side, ms in medians.items()}, f, indent=1)


if __name__ == '__main__':
    main()

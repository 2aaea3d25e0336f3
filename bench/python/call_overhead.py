"""What a call from Python costs on top of the same call from C++ (issue: at most 10 us).

    PYTHONPATH=build/python /usr/bin/python3 -P bench/python/call_overhead.py [--blocks 15]

For DQN (zoo:dqn) and a one-op model (an Add on float32[1, 16]), blocks of calls alternate between
Module.run from Python (NumPy in, NumPy out) and Model::run looped in C++ in the same process on
the same arrays (Module._native.time_native_runs). Each side's figure is the median over all its
calls; the overhead is their difference, with the spread of the per-block medians beside it.
"""

import argparse
import json
import statistics
import time

import numpy as np
import onnx
from onnx import TensorProto, helper

import anvil


def one_op_model():
    graph = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["c"])], "one_op",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [1, 16]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, [1, 16])],
        [helper.make_tensor_value_info("c", TensorProto.FLOAT, [1, 16])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def measure(name, module, blocks, calls):
    arrays = [np.random.default_rng(0).standard_normal(t.shape).astype(t.dtype)
              for t in module.inputs]
    for _ in range(calls):  # warm-up: caches, the thread pool, first touch
        module.run(*arrays)
    py_times, cpp_times, py_blocks, cpp_blocks = [], [], [], []
    for _ in range(blocks):
        block = []
        for _ in range(calls):
            start = time.perf_counter()
            module.run(*arrays)
            block.append(time.perf_counter() - start)
        py_times += block
        py_blocks.append(statistics.median(block))
        block = module._native.time_native_runs(arrays, calls)
        cpp_times += block
        cpp_blocks.append(statistics.median(block))
    py_us = 1e6 * statistics.median(py_times)
    cpp_us = 1e6 * statistics.median(cpp_times)
    row = {"model": name, "python_us": py_us, "cpp_us": cpp_us, "overhead_us": py_us - cpp_us,
           "python_block_spread_us": 1e6 * (max(py_blocks) - min(py_blocks)),
           "cpp_block_spread_us": 1e6 * (max(cpp_blocks) - min(cpp_blocks)),
           "calls": blocks * calls}
    print(f"{name:8} Python {py_us:10.2f} us   C++ {cpp_us:10.2f} us   overhead "
          f"{py_us - cpp_us:6.2f} us   (block medians spread: Python {row['python_block_spread_us']:.2f},"
          f" C++ {row['cpp_block_spread_us']:.2f} us; {row['calls']} calls each)")
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=15)
    parser.add_argument("--calls", type=int, default=0, help="per block (default: per model)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--summary-json")
    args = parser.parse_args()
    anvil.set_num_threads(args.threads)
    print(f"anvil {anvil.__version__}, CPU {anvil._anvil.host_cpu()}, {args.threads} thread(s)")
    rows = [measure("one-op", anvil.compile(one_op_model()), args.blocks, args.calls or 2000),
            measure("dqn", anvil.compile("zoo:dqn"), args.blocks, args.calls or 40)]
    if args.summary_json:
        with open(args.summary_json, "w") as f:
            json.dump({"cpu": anvil._anvil.host_cpu(), "threads": args.threads, "rows": rows}, f,
                      indent=1)


if __name__ == "__main__":
    main()

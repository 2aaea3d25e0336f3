"""Compile ResNet-18 with Anvil and run it from Python, on a NumPy array and on a PyTorch tensor.

    make build
    PYTHONPATH=build/python /usr/bin/python3 examples/python/resnet18.py [MODEL.onnx]

Without an argument it takes Anvil's built-in ResNet-18 (zoo:resnet18, seeded weights: its classes
mean nothing). Prints the top-5 classes of each run and the median latency of 20 runs.
"""

import sys
import time

import numpy as np

import anvil


def top5(logits):
    row = np.asarray(logits).reshape(-1)
    best = np.argsort(row)[::-1][:5]
    return ", ".join(f"{i} ({row[i]:.3f})" for i in best)


def main():
    model = sys.argv[1] if len(sys.argv) > 1 else "zoo:resnet18"
    started = time.perf_counter()
    m = anvil.compile(model)
    print(f"compiled {model} in {time.perf_counter() - started:.1f} s: {m}")
    (spec,) = m.inputs

    image = np.random.default_rng(0).standard_normal(spec.shape).astype(np.float32)
    (logits,) = m.run(image)
    print("NumPy input, top-5 classes:  ", top5(logits))

    try:
        import torch
    except ImportError:
        print("PyTorch is not installed: skipping the tensor run")
    else:
        tensor = torch.from_numpy(image.copy())
        (from_tensor,) = m.run(tensor)  # through DLPack, without a copy
        print("PyTorch input, top-5 classes:", top5(from_tensor))
        assert np.array_equal(from_tensor, logits)

    m.run(image)  # warm-up
    times = []
    for _ in range(20):
        start = time.perf_counter()
        m.run(image)
        times.append(time.perf_counter() - start)
    print(f"median latency over 20 runs: {1e3 * float(np.median(times)):.2f} ms "
          f"({anvil.get_num_threads()} threads, CPU {anvil._anvil.host_cpu()})")


if __name__ == "__main__":
    main()

"""Latency of the onnx wheel's light ResNet50 on the CPU: mlconv.compile vs onnxruntime.

    python bench/resnet50_latency.py [--runs 20] [--warmup 3] [--device cpu]

Both run in this process on the same random input (batch 1); each is warmed up, then timed
`--runs` times; prints the medians and the ratio mlconv / onnxruntime, and checks the outputs
agree (rtol 1e-3, atol 1e-4).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
import onnx


def median_ms(fn, runs: int, warmup: int) -> tuple[float, list[float]]:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times), times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=0, help="onnxruntime intra-op threads")
    args = parser.parse_args()

    import onnxruntime

    import mlconv

    path = os.path.join(
        os.path.dirname(onnx.__file__), "backend", "test", "data", "light", "light_resnet50.onnx"
    )
    x = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)

    start = time.perf_counter()
    run = mlconv.compile(path, device=args.device)
    (ours,) = run(x)  # the first call compiles with XLA
    compile_s = time.perf_counter() - start

    options = onnxruntime.SessionOptions()
    if args.threads:
        options.intra_op_num_threads = args.threads
    session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    (theirs,) = session.run(None, {name: x})
    np.testing.assert_allclose(ours, theirs, rtol=1e-3, atol=1e-4)

    mlconv_ms, _ = median_ms(lambda: run(x), args.runs, args.warmup)
    ort_ms, _ = median_ms(lambda: session.run(None, {name: x}), args.runs, args.warmup)

    print(f"light ResNet50, batch 1, {args.runs} runs after {args.warmup} warm-up, median:")
    print(
        f"  mlconv ({args.device}, XLA) {mlconv_ms:8.1f} ms   (import+lower+compile {compile_s:.1f} s)"
    )
    print(f"  onnxruntime (CPU)     {ort_ms:8.1f} ms")
    print(f"  ratio mlconv / onnxruntime: {mlconv_ms / ort_ms:.2f}")
    print(f"  outputs agree (max abs diff {np.max(np.abs(ours - theirs)):.2e})")


if __name__ == "__main__":
    main()

"""Throughput of the request batcher vs the unbatched loop, on the CPU, in the same run.

    python bench/batching.py [--requests 128] [--rounds 5] [--callers 64] [--width 4096]

A random-weight MLP (fixed seed; x[N,256] -> 4096 -> 4096 -> 256, tanh; 19M weights, 76 MB:
more than this CPU's cache, so one row at a time is bound by reading the weights, the case
batching is for; with `--width 1024` the weights stay in the cache and batching gains little
on a 2-core machine) is converted by mlconv-convert for one row with batch_options
(max_batch_size 64, allowed 16/32/64, timeout 10 ms, one batch thread: XLA:CPU already runs
each batch on every core); then each round serves the same single-row requests twice:

- unbatched: one caller runs each request alone through the executable compiled for one row
  (the fastest unbatched path: no queue, no threads);
- batched: `--callers` threads call `mlconv.load(OUTDIR)`, whose batcher forms the batches.

Rounds alternate the two so that load on the machine hits both alike; the ratio of the median
throughputs is printed (the issue's target: at least 4x), with the median of the per-round
ratios, the batch sizes that ran, and the bound: the time per row of the executable at one row
and at 64 rows, run back to back.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPTIONS = """
    disable_default_optimizations: true
    batch_options {
      num_batch_threads: 1
      max_batch_size: 64
      batch_timeout_micros: 10000
      allowed_batch_sizes: 16
      allowed_batch_sizes: 32
      allowed_batch_sizes: 64
      max_enqueued_batches: 1000
    }
"""


def mlp(features: int, width: int) -> onnx.ModelProto:
    rng = np.random.default_rng(0)

    def weight(name, shape):
        scale = 1.0 / np.sqrt(shape[0])
        return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32) * scale, name)

    weights = [weight("w1", (features, width)), weight("w2", (width, width))]
    weights.append(weight("w3", (width, features)))
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["a"]),
        helper.make_node("Tanh", ["a"], ["b"]),
        helper.make_node("MatMul", ["b", "w2"], ["c"]),
        helper.make_node("Tanh", ["c"], ["d"]),
        helper.make_node("MatMul", ["d", "w3"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", features])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", features])],
        weights,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--callers", type=int, default=64)
    parser.add_argument("--features", type=int, default=256)
    parser.add_argument("--width", type=int, default=4096)
    args = parser.parse_args(argv)

    import mlconv
    from mlconv.tools.mlconv_convert import convert

    folder = Path(tempfile.mkdtemp(prefix="mlconv-batching-"))
    onnx.save(mlp(args.features, args.width), str(folder / "mlp.onnx"))
    convert(
        str(folder / "mlp.onnx"),
        str(folder / "out"),
        OPTIONS,
        input_shapes=f"x:1,{args.features}",
    )
    model = mlconv.load(folder / "out")
    one_row = model.batchers["batch_0"].executable(1)  # compiled for one row, no queue
    rng = np.random.default_rng(1)
    requests = [
        rng.standard_normal((1, args.features)).astype(np.float32) for _ in range(args.requests)
    ]
    expected = [np.asarray(one_row(x)[0]) for x in requests]

    def unbatched() -> list[np.ndarray]:
        return [np.asarray(one_row(x)[0]) for x in requests]

    def batched() -> list[np.ndarray]:
        with ThreadPoolExecutor(max_workers=args.callers) as pool:
            return list(pool.map(lambda x: model(x)[0], requests))

    batched()  # warm the threads
    rates: dict[str, list[float]] = {"unbatched": [], "batched": []}
    before = model.stats.copy()
    for _ in range(args.rounds):
        for name, run in (("unbatched", unbatched), ("batched", batched)):
            start = time.perf_counter()
            outputs = run()
            rates[name].append(len(requests) / (time.perf_counter() - start))
            worst = max(float(np.abs(o - e).max()) for o, e in zip(outputs, expected, strict=True))
            assert worst < 1e-4, f"{name}: outputs differ from the unbatched ones by {worst}"
    stats = model.stats - before
    bound = {}
    for size in (1, 64):
        rows = np.repeat(requests[0], size, axis=0)
        times = []
        for _ in range(5):
            start = time.perf_counter()
            np.asarray(model.batchers["batch_0"].executable(size)(rows)[0])
            times.append(time.perf_counter() - start)
        bound[size] = statistics.median(times) / size
    model.close()
    median = {name: statistics.median(values) for name, values in rates.items()}
    sizes = {k: v for k, v in sorted(stats.items()) if k.startswith("batches@")}
    print(
        f"model: MLP {args.features}->{args.width}->{args.width}->{args.features}, one row per request"
    )
    print(f"requests per round: {args.requests}, rounds: {args.rounds}, callers: {args.callers}")
    for name in ("unbatched", "batched"):
        values = ", ".join(f"{v:.0f}" for v in rates[name])
        print(f"{name:>10}: median {median[name]:8.0f} requests/s  (rounds: {values})")
    print(f"batches run: {sizes}, padding rows: {stats['padding']}")
    print(
        f"executable per row: {bound[1] * 1e3:.2f} ms at 1 row, {bound[64] * 1e3:.2f} ms at 64 "
        f"rows (bound on the ratio: {bound[1] / bound[64]:.1f}x)"
    )
    paired = statistics.median(
        b / u for b, u in zip(rates["batched"], rates["unbatched"], strict=True)
    )
    print(f"median of the per-round ratios: {paired:.1f}x")
    print(f"throughput ratio (batched / unbatched): {median['batched'] / median['unbatched']:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())

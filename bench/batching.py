"""Seed 003's batching under concurrency: correctness and throughput against the unbatched
loop, on the CPU, in the same run.

    python bench/batching.py [--requests 2000] [--callers 64] [--rounds 3] [--width 2048]
                             [--options seed|wide]

A None-batch SavedModel, saved as the seed shows (`tpu_func` with input_signature [None, 256]
under a function alias, the serving signature calling it): a random-weight MLP (fixed seed;
256 -> W -> W -> 256, tanh; with W = 2048 about 5M weights, 21 MB, more than this CPU's cache,
so a call is bound by reading the weights, the case batching is for). It is converted with
the seed's options text, no other flag: `tpu_functions { function_alias: "tpu_func" }` and the
seed's `batch_options` (`--options seed`: max_batch_size 8, allowed 2/4/8, 5 ms, two batch
threads, ten enqueued batches) or the same with room to batch (`--options wide`: 64, allowed
16/32/64, 10 ms, max_enqueued_batches 1000). Each round then serves the same `--requests`
requests of 1..8 rows (random sizes, fixed seed) twice:

- unbatched: one caller runs each request alone through the artifact's TPU function without
  the batcher (`loaded.loaded`, compiled once per request size), in order;
- batched: `--callers` threads call `mlconv.load(OUTDIR)` at once, whose batcher forms the
  batches.

Every batched answer is checked against the same request run alone: the right number of rows,
equal within TOLERANCE of the largest output (none lost, duplicated or mixed with another caller's
rows). Rounds alternate the two so that load on the machine hits both alike; the ratio of the
median throughputs (rows per second) is printed with the batches that ran. A request the batcher refuses because
`max_enqueued_batches` batches already wait (`QueueFullError`, as TensorFlow fails fast) is
retried by its caller after 1 ms; the refusals are counted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "test" / "pytest"))
from seed_models import BATCH_OPTIONS as SEED  # noqa: E402 - the seed's texts and model pattern
from seed_models import TPU_FUNCTIONS, save_tpu_func  # noqa: E402

WIDE = """
    batch_options {
      num_batch_threads: 2
      max_batch_size: 64
      batch_timeout_micros: 10000
      allowed_batch_sizes: 16
      allowed_batch_sizes: 32
      allowed_batch_sizes: 64
      max_enqueued_batches: 1000
    }
"""


TOLERANCE = 1e-2
"""Of the largest output. The seed's defaults compute in bfloat16 (float32 accumulation): a
row's result depends on the batch it ran in by bfloat16 roundings (~1e-3 seen); another
caller's rows would be off by ~1."""


def save_model(folder: Path, features: int, width: int) -> Path:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    rng = np.random.default_rng(0)
    shapes = [(features, width), (width, width), (width, features)]
    weights = [(rng.standard_normal(s) / np.sqrt(s[0])).astype(np.float32) for s in shapes]

    class MLP(tf.Module):
        def __init__(self):
            super().__init__()
            self.w = [tf.Variable(w) for w in weights]

        def __call__(self, x):
            h = tf.tanh(tf.matmul(x, self.w[0]))
            h = tf.tanh(tf.matmul(h, self.w[1]))
            return tf.matmul(h, self.w[2])

    path = folder / "saved"
    save_tpu_func(tf, path, MLP(), [tf.TensorSpec(shape=[None, features], dtype=tf.float32)])
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--callers", type=int, default=64)
    parser.add_argument("--features", type=int, default=256)
    parser.add_argument("--width", type=int, default=2048)
    parser.add_argument("--options", choices=("seed", "wide"), default="seed")
    args = parser.parse_args(argv)

    import mlconv
    from mlconv.converter.batcher import QueueFullError
    from mlconv.tools.mlconv_convert import convert

    folder = Path(tempfile.mkdtemp(prefix="mlconv-batching-"))
    source = save_model(folder, args.features, args.width)
    batch_options = SEED if args.options == "seed" else WIDE
    convert(str(source), str(folder / "out"), TPU_FUNCTIONS + batch_options)
    model = mlconv.load(folder / "out")
    alone = model.loaded  # the artifact without its batcher: each request alone
    rng = np.random.default_rng(1)
    requests = [
        rng.standard_normal((int(k), args.features)).astype(np.float32)
        for k in rng.integers(1, 9, args.requests)
    ]
    rows = sum(len(x) for x in requests)
    expected = [alone(x)[0] for x in requests]  # compiles each request size once
    scale = max(float(np.abs(e).max()) for e in expected)

    def unbatched() -> list[np.ndarray]:
        return [alone(x)[0] for x in requests]

    refused = [0]

    def call(x: np.ndarray) -> np.ndarray:
        while True:  # a full queue refuses at once (max_enqueued_batches): the caller retries
            try:
                return model(x)[0]
            except QueueFullError:
                refused[0] += 1
                time.sleep(0.001)

    def batched() -> list[np.ndarray]:
        with ThreadPoolExecutor(max_workers=args.callers) as pool:
            return list(pool.map(call, requests))

    batched()  # warm the threads and every allowed size
    rates: dict[str, list[float]] = {"unbatched": [], "batched": []}
    before = model.stats.copy()
    worst = 0.0
    for _ in range(args.rounds):
        for name, run in (("unbatched", unbatched), ("batched", batched)):
            start = time.perf_counter()
            outputs = run()
            rates[name].append(rows / (time.perf_counter() - start))
            assert len(outputs) == len(requests), f"{name}: {len(outputs)} answers"
            for x, out, want in zip(requests, outputs, expected, strict=True):
                assert out.shape == want.shape, f"{name}: {out.shape} for {len(x)} rows"
                error = float(np.abs(out - want).max()) / scale
                worst = max(worst, error)
                assert error <= TOLERANCE, (
                    f"{name}: an answer differs from its request alone ({error})"
                )
    stats = model.stats - before
    model.close()
    median = {name: statistics.median(values) for name, values in rates.items()}
    sizes = {k: v for k, v in sorted(stats.items()) if k.startswith("batches@")}
    print(
        f"model: None-batch SavedModel, MLP {args.features}->{args.width}->{args.width}->"
        f"{args.features}; batch options: {args.options}"
    )
    print(
        f"requests per round: {args.requests} of 1..8 rows ({rows} rows), rounds: {args.rounds}, "
        f"callers: {args.callers}"
    )
    for name in ("unbatched", "batched"):
        values = ", ".join(f"{v:.0f}" for v in rates[name])
        print(f"{name:>10}: median {median[name]:8.0f} rows/s  (rounds: {values})")
    print(f"batches run: {sizes}, padding rows: {stats['padding']}")
    print(f"requests refused by a full queue and retried by their caller: {refused[0]}")
    print(f"every answer equals its request run alone: worst difference {worst:.1e} (of max |y|)")
    paired = statistics.median(
        b / u for b, u in zip(rates["batched"], rates["unbatched"], strict=True)
    )
    print(f"median of the per-round ratios: {paired:.1f}x")
    print(f"throughput ratio (batched / unbatched): {median['batched'] / median['unbatched']:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())

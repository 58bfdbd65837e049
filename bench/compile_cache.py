"""The persistent compilation cache across processes: light ResNet50 compiled by a fresh process
with an empty cache, then by fresh processes that find it filled.

    python bench/compile_cache.py [--model resnet50] [--warm 2]

Each process (this script with --child) reports where its time went: `import mlconv` (and jax),
`mlconv.compile` (ONNX import and the passes), the first call (XLA compile, or loading the
executable from the cache, plus one run), a second call (the run alone), and the whole process
from its start. The cache lives in a temporary folder (MLCONV_COMPILATION_CACHE_DIR), so
~/.cache is untouched. The machine is shared: compare only within one run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

START = time.perf_counter()


def child(model_name: str) -> None:
    import numpy as np  # noqa: F401
    import onnx

    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    from latency import input_arrays, light_path, randomize

    t0 = time.perf_counter()
    import jax  # noqa: F401

    import mlconv
    from mlconv.backends import compile_cache

    t1 = time.perf_counter()
    model = randomize(onnx.load(light_path(model_name)))
    inputs = input_arrays(model)
    t2 = time.perf_counter()
    run = mlconv.compile(model, device="cpu", quiet=True)
    t3 = time.perf_counter()
    run(**inputs)
    t4 = time.perf_counter()
    run(**inputs)
    t5 = time.perf_counter()
    directory = jax.config.jax_compilation_cache_dir
    print(json.dumps({
        "process_start_to_import_s": t0 - START,
        "import_mlconv_jax_s": t1 - t0,
        "load_randomize_s": t2 - t1,
        "compile_passes_s": t3 - t2,
        "first_call_s": t4 - t3,
        "run_s": t5 - t4,
        "xla_or_cache_s": (t4 - t3) - (t5 - t4),
        "total_s": t5 - START,
        "entries": compile_cache.entries(directory) if directory else 0,
    }))  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="resnet50")
    parser.add_argument("--warm", type=int, default=2, help="warm processes after the cold one")
    parser.add_argument("--child", action="store_true")
    args = parser.parse_args()
    if args.child:
        child(args.model)
        return
    with tempfile.TemporaryDirectory() as folder:
        env = {
            **os.environ,
            "MLCONV_COMPILATION_CACHE": "1",
            "MLCONV_COMPILATION_CACHE_DIR": folder,
        }
        rows = []
        for i in range(1 + args.warm):
            wall = time.perf_counter()
            out = subprocess.run(
                [sys.executable, __file__, "--child", "--model", args.model],
                env=env, capture_output=True, text=True, check=True,
            )  # fmt: skip
            row = json.loads(out.stdout.strip().splitlines()[-1])
            row["process_wall_s"] = time.perf_counter() - wall
            row["process"] = "cold" if i == 0 else f"warm{i}"
            rows.append(row)
    keys = [k for k in rows[0] if k != "process"]
    print(f"{'':28}" + "".join(f"{r['process']:>10}" for r in rows))
    for key in keys:
        print(f"{key:28}" + "".join(f"{r[key]:10.3f}" for r in rows))
    cold, warm = rows[0], min(rows[1:], key=lambda r: r["xla_or_cache_s"])
    print(
        f"XLA compile vs cache load: {cold['xla_or_cache_s']:.3f} -> {warm['xla_or_cache_s']:.3f} s"
        f" ({cold['xla_or_cache_s'] / warm['xla_or_cache_s']:.1f}x); compile + first call "
        f"{cold['compile_passes_s'] + cold['first_call_s']:.3f} -> "
        f"{warm['compile_passes_s'] + warm['first_call_s']:.3f} s; whole process "
        f"{cold['process_wall_s']:.2f} -> {warm['process_wall_s']:.2f} s"
    )


if __name__ == "__main__":
    main()

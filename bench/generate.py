"""Greedy generation with a KV cache: mlconv against onnxruntime on the same ONNX file, same loop.

    python bench/generate.py [--models llama,qwen2,phi3] [--tokens 128] [--rounds 3]

Decoders: tiny random-config Llama, Qwen2 and Phi-3-style models exported by
torch.onnx.export(dynamo=True) with optimum's input names (test/pytest/decoder_models.py), and
with `--optimum-python PY` the same three exported by optimum-onnx (text-generation-with-past),
compiled by `mlconv.compile(path)` with no option (the past length padded to buckets by
default, backends/padding.py). Each model runs in two fresh processes sharing one temporary
persistent compilation cache: the first starts with it empty (cold), the second finds it filled
(warm cache: XLA's executables and mlconv's lowered programs, backends/program_cache.py). Per
process: time to first token of the first loop, from the `mlconv.compile` call (jax imported
just before it, timed apart) and for the whole process (imports included), then `--rounds`
interleaved loops of mlconv and onnxruntime: median ms per generated token (the prompt's call
excluded) and tokens/s; the tokens must be identical; compilations are mlconv's own count. The
machine is shared: compare only within one run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PROMPT = [1, 5, 9, 20]


def loop_times(run, tokens: int) -> tuple[list[int], float, list[float]]:
    import numpy as np
    from decoder_models import greedy

    stamps = [time.perf_counter()]
    out = greedy(
        run, np.array(PROMPT, np.int64), tokens, lambda _: stamps.append(time.perf_counter())
    )
    steps = [b - a for a, b in zip(stamps[:-1], stamps[1:], strict=True)]
    return out, steps[0], steps[1:]


def child(path: str, tokens: int, rounds: int) -> None:
    sys.path.insert(0, os.path.join(HERE, "..", "test", "pytest"))
    start = time.perf_counter()
    import onnxruntime

    import mlconv

    imported = time.perf_counter()
    import jax  # noqa: F401 - what mlconv.compile would import first: timed on its own

    jax_imported = time.perf_counter()
    run = mlconv.compile(path, quiet=True)
    compiled = time.perf_counter()
    ours = lambda feeds: run(**feeds)  # noqa: E731
    first, prompt_s, _ = loop_times(ours, tokens)
    ttft = compiled - jax_imported + prompt_s  # mlconv.compile's call to the first token
    whole = compiled - start + prompt_s  # imports (onnxruntime's too) included
    session = onnxruntime.InferenceSession(path)
    theirs = lambda feeds: session.run(None, feeds)  # noqa: E731
    reference, ort_ttft, _ = loop_times(theirs, tokens)
    per_token = {"mlconv": [], "onnxruntime": []}
    warm_ttft = []
    for i in range(rounds):
        for name, fn in (("mlconv", ours), ("onnxruntime", theirs))[:: 1 if i % 2 == 0 else -1]:
            out, prompt_s, steps = loop_times(fn, tokens)
            assert out == reference, f"{name} tokens differ from onnxruntime's"
            per_token[name].append(statistics.median(steps))
            if name == "mlconv":
                warm_ttft.append(prompt_s)
    ms = {k: 1e3 * statistics.median(v) for k, v in per_token.items()}
    print(json.dumps({
        "identical": first == reference,
        "compilations": run.compilations,
        "ttft_first_loop_s": ttft,
        "ttft_whole_s": whole,
        "jax_import_s": jax_imported - imported,
        "lowered": getattr(run.inner, "lowered", True),
        "ttft_warm_loop_ms": 1e3 * statistics.median(warm_ttft),
        "ort_first_ttft_ms": 1e3 * ort_ttft,
        "mlconv_ms_per_token": ms["mlconv"],
        "ort_ms_per_token": ms["onnxruntime"],
        "mlconv_tokens_per_s": 1e3 / ms["mlconv"],
        "ort_tokens_per_s": 1e3 / ms["onnxruntime"],
    }))  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="llama,qwen2,phi3")
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--optimum-python",
        help="an interpreter with optimum-onnx: also optimum's text-generation-with-past exports",
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.tokens, args.rounds)
        return
    sys.path.insert(0, os.path.join(HERE, "..", "test", "pytest"))
    from decoder_models import export_decoder, export_optimum

    with tempfile.TemporaryDirectory() as folder:
        env = {
            **os.environ,
            "MLCONV_COMPILATION_CACHE": "1",
            "MLCONV_COMPILATION_CACHE_DIR": os.path.join(folder, "xla"),
        }
        models = [(f"dynamo {n}", n) for n in args.models.split(",")]
        if args.optimum_python:
            models += [(f"optimum {n}", n) for n in args.models.split(",")]
        for name, kind in models:
            if name.startswith("optimum"):
                path = export_optimum(kind, os.path.join(folder, kind), args.optimum_python)
            else:
                path = export_decoder(kind, os.path.join(folder, f"{kind}.onnx"))
            for label in ("cold cache", "warm cache"):
                out = subprocess.run(
                    [sys.executable, __file__, "--child", str(path), "--tokens",
                     str(args.tokens), "--rounds", str(args.rounds)],
                    env=env, capture_output=True, text=True,
                )  # fmt: skip
                if out.returncode != 0:
                    print(f"{name} ({label}): failed: {out.stderr.strip().splitlines()[-1:]}")
                    continue
                r = json.loads(out.stdout.strip().splitlines()[-1])
                print(
                    f"{name:14} {label}: identical {r['identical']}, {r['compilations']} "
                    f"compilations / {args.tokens} tokens; ms per token mlconv "
                    f"{r['mlconv_ms_per_token']:.3f} onnxruntime {r['ort_ms_per_token']:.3f} "
                    f"({r['mlconv_ms_per_token'] / r['ort_ms_per_token']:.2f}x; tokens/s "
                    f"{r['mlconv_tokens_per_s']:.0f} vs {r['ort_tokens_per_s']:.0f}); TTFT from "
                    f"mlconv.compile {r['ttft_first_loop_s']:.2f} s (jax imported before it in "
                    f"{r['jax_import_s']:.2f} s; whole process {r['ttft_whole_s']:.2f} s; model "
                    f"{'lowered' if r['lowered'] else 'not lowered: stored programs'}), later "
                    f"loops {r['ttft_warm_loop_ms']:.2f} ms (onnxruntime first "
                    f"{r['ort_first_ttft_ms']:.1f} ms)",
                    flush=True,
                )


if __name__ == "__main__":
    main()

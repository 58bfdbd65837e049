"""Latency of converted models: mlconv (XLA, auto) against onnxruntime and OpenVINO, in one process.

    python bench/latency.py [--models resnet50,squeezenet] [--rounds 5] [--runs 5]
                            [--device cpu] [--exported] [--target-passes on|off]

Models: the nine light ONNX models of the onnx wheel with seeded random weights (`randomize`:
their ConstantOfShape fills made initializers, He-normal filters, BatchNorm statistics from real
activations), so no runtime can shortcut constant weights and outputs depend on inputs; with `--exported`, also the PyTorch
models of test/pytest/exported_models.py (when that module exists).

Runtimes: mlconv through XLA (`xla`) and as `mlconv.compile`'s default `auto` chooses (XLA or
its own OpenVINO IR in the OpenVINO runtime, in f32: backends/backend_choice.py; measured afresh
in each run), onnxruntime (`ort`), OpenVINO's own converter as it compiles by default (`ov`: in
bf16 on CPUs with bf16 units, as these AMD EPYCs) and in f32 (`ov32`). Each runtime is compiled
once, then timed in `--rounds` interleaved rounds (the runtimes' order rotates per round) of
`--runs` calls each; the reported latency is the median of all calls. The ratios compare with the
fastest peer of the same run, `best` = min(ort, ov) and `best32` = min(ort, ov32). Timings swing
between runs on a shared machine (onnxruntime's and OpenVINO's spinning thread pools lose more
under load than XLA): compare ratios of one run, on an idle machine where possible. Compile
times: mlconv's XLA path (import + passes + XLA compile and first call), auto (measuring both
back ends; `choose s` its cost beyond the XLA path's own work) and OpenVINO's convert+compile.
Outputs are checked against onnxruntime (relative to the largest magnitude) so a fast wrong
answer cannot pass.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from typing import Any

import numpy as np
import onnx

# Cold compiles: no executable from mlconv's persistent XLA cache (backends/compile_cache.py).
os.environ["MLCONV_COMPILATION_CACHE"] = "0"

# Run as a script, bench/ is sys.path[0]: drop it so that bench/openvino.py does not shadow the
# openvino package.
if sys.path and os.path.abspath(sys.path[0] or ".") == os.path.dirname(os.path.abspath(__file__)):
    sys.path.pop(0)

LIGHT = [
    "bvlc_alexnet",
    "densenet121",
    "inception_v1",
    "inception_v2",
    "resnet50",
    "shufflenet",
    "squeezenet",
    "vgg19",
    "zfnet512",
]


def light_path(name: str) -> str:
    return os.path.join(
        os.path.dirname(onnx.__file__), "backend", "test", "data", "light", f"light_{name}.onnx"
    )


def randomize(model: onnx.ModelProto, seed: int = 0) -> onnx.ModelProto:
    """A copy of `model` with seeded random weights, as the tests use them
    (test/pytest/sensitivity.py): every ConstantOfShape fill becomes an initializer (the light
    models build most weights so; a fill would leave them constant), filters He-normal,
    BatchNorm statistics from the activations of one random input."""
    sys.path.insert(
        0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "pytest")
    )
    try:
        import sensitivity  # type: ignore[import-not-found]
    finally:
        sys.path.pop(0)
    calibration = list(input_arrays(model, seed=seed + 100).values())
    return sensitivity.randomize_onnx_weights(model, seed, calibration)


def input_arrays(model: onnx.ModelProto, seed: int = 1) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    initializers = {t.name for t in model.graph.initializer}
    arrays = {}
    for value in model.graph.input:
        if value.name in initializers:
            continue
        dims = [d.dim_value if d.dim_value > 0 else 1 for d in value.type.tensor_type.shape.dim]
        dtype = onnx.helper.tensor_dtype_to_np_dtype(value.type.tensor_type.elem_type)
        if dtype.kind == "f":
            arrays[value.name] = rng.standard_normal(dims).astype(dtype)
        else:
            arrays[value.name] = rng.integers(0, 2, dims).astype(dtype)
    return arrays


class Mlconv:
    """mlconv.compile's steps, timed one by one: import, passes, XLA compile (first call);
    `bf16` adds tpu-bf16 after the pipeline."""

    def __init__(
        self,
        path: str,
        device: str,
        inputs: dict[str, np.ndarray],
        target_passes: bool,
        bf16: bool | str = False,
    ):
        from mlconv.backends.jax_backend import compile_module
        from mlconv.dialects import make_context
        from mlconv.frontends.load import load_model
        from mlconv.passes.core_infer_shapes import CoreInferShapesPass
        from mlconv.passes.pipelines import CoreToTpuPipeline, lower_to_core

        start = time.perf_counter()
        module = load_model(path)
        self.import_s = time.perf_counter() - start
        start = time.perf_counter()
        lower_to_core(module)
        ctx = make_context()
        shapes = ";".join(f"{k}:" + ",".join(map(str, v.shape)) for k, v in inputs.items())
        CoreInferShapesPass(input_shapes=shapes).apply(ctx, module)
        CoreToTpuPipeline(device=device if target_passes else "").apply(ctx, module)
        if bf16:
            from mlconv.passes.tpu_bf16 import TpuBf16Pass

            # bf16 names tpu-bf16's `products` form ("float32" when True)
            TpuBf16Pass(products=bf16 if isinstance(bf16, str) else "float32").apply(ctx, module)
        self.passes_s = time.perf_counter() - start
        start = time.perf_counter()
        self.run = compile_module(module, device)
        self.args = [inputs[name] for name in self.run.input_names]
        self.first = self.run(*self.args)
        self.xla_s = time.perf_counter() - start

    def __call__(self) -> list[np.ndarray]:
        return self.run(*self.args)


def time_calls(fn, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return times


def relative_error(got, want) -> float:
    """Largest absolute difference, relative to the largest magnitude of `want`."""
    want = np.asarray(want, dtype=np.float64)
    scale = max(float(np.max(np.abs(want))), 1e-6)
    return float(np.max(np.abs(np.asarray(got, dtype=np.float64) - want))) / scale


def interleaved_medians(runners: dict, rounds: int, runs: int, warmup: int = 2) -> dict:
    """Median milliseconds per call of each runner: `warmup` calls each, then `rounds` rounds
    of `runs` calls each, the runners' order rotating per round."""
    for fn in runners.values():
        time_calls(fn, warmup)
    times: dict[str, list[float]] = {k: [] for k in runners}
    order = list(runners)
    for round_index in range(rounds):
        rotated = order[round_index % len(order) :] + order[: round_index % len(order)]
        for key in rotated:
            times[key] += time_calls(runners[key], runs)
    return {k: statistics.median(v) for k, v in times.items()}


def bench_model(
    name: str, path: str, args: argparse.Namespace, inputs: dict[str, np.ndarray] | None = None
) -> dict[str, Any]:
    import onnxruntime
    import openvino

    import mlconv

    inputs = inputs or input_arrays(onnx.load(path))

    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    feeds = {i.name: inputs[i.name] for i in session.get_inputs()}
    expected = session.run(None, feeds)

    core = openvino.Core()
    start = time.perf_counter()
    compiled = core.compile_model(openvino.convert_model(path), "CPU")
    ov_compile_s = time.perf_counter() - start
    request = compiled.create_infer_request()
    f32_request = core.compile_model(
        openvino.convert_model(path), "CPU", {"INFERENCE_PRECISION_HINT": "f32"}
    ).create_infer_request()
    ov_feeds = {i: feeds[n] for i, n in enumerate(feeds)}

    ours = Mlconv(path, args.device, inputs, args.target_passes == "on")
    start = time.perf_counter()
    shapes = {k: list(v.shape) for k, v in inputs.items()}  # static: auto chooses (an exported
    # model's dynamic dims would run on XLA, per shape)
    auto = mlconv.compile(path, device=args.device, backend="auto", quiet=True, input_shapes=shapes)
    auto_args = [inputs[n] for n in auto.input_names]
    auto_first = auto(*auto_args)
    auto_s = time.perf_counter() - start
    for who, outputs in (("mlconv", ours.first), ("mlconv auto", auto_first)):
        for got, want in zip(outputs, expected, strict=True):
            if (error := relative_error(got, want)) > 1e-3:
                raise SystemExit(
                    f"{name}: {who}'s output differs from onnxruntime's (relative {error:.1e})"
                )

    runners = {
        "xla": ours,
        "auto": lambda: auto(*auto_args),
        "ort": lambda: session.run(None, feeds),
        "ov": lambda: request.infer(ov_feeds),
        "ov32": lambda: f32_request.infer(ov_feeds),
    }
    median = interleaved_medians(runners, args.rounds, args.runs)
    choice = auto.backend_choice
    return {
        "ms": median,
        "backend": auto.backend,
        "choice": choice,
        "import_s": ours.import_s,
        "passes_s": ours.passes_s,
        "xla_s": ours.xla_s,
        "auto_s": auto_s,
        "ov_compile_s": ov_compile_s,
    }


def exported_models(folder: str, names: str) -> list[tuple[str, str, dict[str, np.ndarray]]]:
    """(name, path, batch-1 inputs) of test/pytest/exported_models.py's PyTorch models, exported
    with TorchScript (opset 17), if that module and torch are present."""
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "pytest")
    sys.path.insert(0, here)
    try:
        import exported_models  # type: ignore[import-not-found]
    except ImportError as error:
        print(f"(no exported PyTorch models: {error})")
        return []
    return [case[:3] for case in exported_models.torchscript_onnx_cases(folder, names)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(LIGHT), help="light models, comma-separated")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=5, help="calls per runtime per round")
    parser.add_argument("--device", default="cpu")
    parser.add_argument(
        "--exported",
        nargs="?",
        const="",
        default=None,
        help="also the exported PyTorch models (optionally a comma-separated subset)",
    )
    parser.add_argument(
        "--target-passes", choices=("on", "off"), default="on", help="tpu-level target passes"
    )
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as folder:
        # mlconv auto measures its choice in this run, not one cached by an earlier run.
        os.environ["MLCONV_CACHE_DIR"] = os.path.join(folder, "cache")
        cases = []
        for name in [m for m in args.models.split(",") if m]:
            path = os.path.join(folder, f"{name}.onnx")
            onnx.save(randomize(onnx.load(light_path(name))), path)
            cases.append((name, path, None))
        if args.exported is not None:
            cases += exported_models(folder, args.exported)

        print(
            f"batch 1, device {args.device}, target passes {args.target_passes}, "
            f"{args.rounds} rounds x {args.runs} runs, median ms; ov: OpenVINO as it compiles by "
            "default (bf16 on CPUs with bf16 units), ov32: in f32 (INFERENCE_PRECISION_HINT), "
            "auto: mlconv's choice of XLA or its own OpenVINO IR (f32); best = min(ort, ov), "
            "best32 = min(ort, ov32)"
        )
        print(
            f"{'model':<16}{'xla':>9}{'auto':>9}{' ran':<10}{'ort':>9}{'ov':>9}{'ov32':>9}"
            f"{'xla/best':>9}{'auto/best':>10}{'auto/b32':>9}{'compile s':>10}{'auto s':>8}"
            f"{'choose s':>9}{'ov s':>7}"
        )
        rows = []
        for name, path, inputs in cases:
            row = bench_model(name, path, args, inputs)
            ms = row["ms"]
            row["best"] = min(ms["ort"], ms["ov"])
            row["best32"] = min(ms["ort"], ms["ov32"])
            rows.append(row)
            total = row["import_s"] + row["passes_s"] + row["xla_s"]
            choose = row["choice"].measure_s
            print(
                f"{name:<16}{ms['xla']:>9.2f}{ms['auto']:>9.2f} {row['backend']:<9}{ms['ort']:>9.2f}"
                f"{ms['ov']:>9.2f}{ms['ov32']:>9.2f}{ms['xla'] / row['best']:>9.2f}"
                f"{ms['auto'] / row['best']:>10.2f}{ms['auto'] / row['best32']:>9.2f}"
                f"{total:>10.2f}{row['auto_s']:>8.2f}"
                f"{choose if choose is not None else float('nan'):>9.2f}"
                f"{row['ov_compile_s']:>7.2f}",
                flush=True,
            )
            if row["choice"].note:
                print(f"    {row['choice'].line()}")
        if rows:
            ratios = {
                key: [r["ms"][a] / r[b] for r in rows]
                for key, (a, b) in {
                    "xla/best": ("xla", "best"),
                    "auto/best": ("auto", "best"),
                    "auto/best32": ("auto", "best32"),
                    "ov/ort": ("ov", "best"),
                }.items()
            }
            ratios["ov/ort"] = [r["ms"]["ov"] / r["ms"]["ort"] for r in rows]
            for key, values in ratios.items():
                print(f"{key:<12} median {statistics.median(values):.2f}  worst {max(values):.2f}")
            totals = [r["import_s"] + r["passes_s"] + r["xla_s"] for r in rows]
            print(
                f"compile s median: xla {statistics.median(totals):.2f}, auto (measuring both) "
                f"{statistics.median(r['auto_s'] for r in rows):.2f}, OpenVINO convert+compile "
                f"{statistics.median(r['ov_compile_s'] for r in rows):.2f}"
            )


if __name__ == "__main__":
    main()

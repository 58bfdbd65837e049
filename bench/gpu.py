"""GPU speed: mlconv against a naive whole-graph JAX translation, and bfloat16 throughput.

    python bench/gpu.py [--models resnet50,squeezenet] [--exported [names]] [--rounds 5]
                        [--runs 20] [--batches 64,256] [--no-latency] [--no-throughput]
                        [--device gpu]

The naive translation is jaxonnxruntime (Google's ONNX-to-JAX converter: one JAX function per
ONNX node, the whole graph traced under one `jax.jit`, weights as jit arguments as mlconv's),
which is what a user gets by handing the ONNX file to JAX directly. It is a benchmark
dependency only (`pip install jaxonnxruntime`).

Latency, batch 1: the light models of bench/latency.py (seeded random weights) and, with
`--exported`, its PyTorch exports. Three programs per model: mlconv with the tpu-level target
passes for the device, mlconv without them, and jaxonnxruntime; each is timed on inputs already
on the device (`CompiledModule.on_device`, then `jax.block_until_ready`), so the host copies,
the same for all three, are left out. Rounds are interleaved (the order rotates per round);
latency is the median of all calls and the table prints ratios to jaxonnxruntime, plus compile
times: mlconv's import + passes + XLA against jaxonnxruntime's conversion (it runs each node once
on the example input) + XLA. Outputs are checked against onnxruntime on the CPU, within 2e-2 of
the largest magnitude: XLA:GPU computes float32 convolutions and dots in TF32 by default, for
both programs alike.

Throughput: torchvision ResNet50 (seeded random weights, BatchNorm statistics from random
activations) exported by `torch.onnx.export` (TorchScript, opset 17, dynamic batch), at each
batch of `--batches`: mlconv in float32 and in bfloat16 (tpu-bf16), jaxonnxruntime in float32
and with its weights and input cast to bfloat16. Each round dispatches `--runs` calls and waits
for the last; images/s is the median over rounds, and TFLOP/s counts ResNet50's 8.2 GFLOP per
224x224 image (4.1 G multiply-adds), against the GPU's dense bfloat16 peak.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np
import onnx

if sys.path and os.path.abspath(sys.path[0] or ".") == os.path.dirname(os.path.abspath(__file__)):
    sys.path.pop(0)  # as bench/latency.py: bench/ must not shadow packages
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import latency  # noqa: E402

RESNET50_GFLOP = 8.2
# Dense bfloat16 tensor-core peak, TFLOP/s, by device kind (NVIDIA's data sheets, SXM parts).
BF16_PEAK_TFLOPS = {"H100": 989.4, "H200": 989.4, "A100": 312.0}
# XLA:GPU's TF32 convolutions and dots drift further than that on deep models (inception_v2:
# 2.6e-2, for mlconv and jaxonnxruntime alike); a wrong program is off by far more.
TOLERANCE = 1e-1


def bf16_peak(kind: str) -> float | None:
    return next((peak for name, peak in BF16_PEAK_TFLOPS.items() if name in kind), None)


class Blocking:
    """A program whose `dispatch()` starts a call on the device; calling it waits for it."""

    def dispatch(self) -> list:
        raise NotImplementedError

    def __call__(self) -> list:
        import jax

        return jax.block_until_ready(self.dispatch())


class Naive(Blocking):
    """jaxonnxruntime's translation of an ONNX model under one jax.jit: float initializers are
    jit arguments, the others (shapes, axes) stay static; `dtype` casts the float weights and
    inputs (bfloat16)."""

    def __init__(
        self, model: onnx.ModelProto, inputs: dict[str, np.ndarray], device, dtype=None
    ) -> None:
        import jax
        from jaxonnxruntime import call_onnx, config_class

        start = time.perf_counter()
        # Shapes computed from the input's own shape (exported models' Reshape targets) are
        # then taken from the example input, as a user making it convert would have to.
        with config_class.jaxort_only_allow_initializers_as_static_args(False):
            function, params = call_onnx.call_onnx_model(model, dict(inputs))
        weights = {k: v for k, v in params.items() if v.dtype.kind == "f"}
        static = {k: v for k, v in params.items() if k not in weights}

        def cast(array: np.ndarray) -> np.ndarray:
            return array.astype(dtype) if dtype is not None and array.dtype.kind == "f" else array

        self.weights = jax.device_put({k: cast(v) for k, v in weights.items()}, device)
        self.inputs = jax.device_put({k: cast(v) for k, v in inputs.items()}, device)
        self.jitted = jax.jit(lambda weights, inputs: function({**static, **weights}, inputs))
        self.first = [np.asarray(o, dtype=np.float32) for o in self()]
        self.compile_s = time.perf_counter() - start

    def dispatch(self) -> list:
        return self.jitted(self.weights, self.inputs)


class OnDevice(Blocking):
    """A latency.Mlconv program called on device-resident inputs."""

    def __init__(self, ours: latency.Mlconv, device) -> None:
        import jax

        self.ours = ours
        self.args = [jax.device_put(a, device) for a in ours.args]
        self.first = [np.asarray(o, dtype=np.float32) for o in ours.first]

    def dispatch(self) -> list:
        return self.ours.run.on_device(*self.args)


def latency_row(name: str, path: str, inputs, args, device) -> dict[str, float]:
    import onnxruntime

    model = onnx.load(path)
    inputs = inputs or latency.input_arrays(model)
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    expected = session.run(None, {i.name: inputs[i.name] for i in session.get_inputs()})

    ours = latency.Mlconv(path, args.device, inputs, True)
    plain = latency.Mlconv(path, args.device, inputs, False)
    runners = {"mlconv": OnDevice(ours, device), "plain": OnDevice(plain, device)}
    row: dict[str, float] = {
        "compile_s": ours.import_s + ours.passes_s + ours.xla_s,
        "naive_compile_s": float("nan"),
    }
    try:
        runners["naive"] = Naive(model, inputs, device)
        row["naive_compile_s"] = runners["naive"].compile_s
    except Exception as error:  # noqa: BLE001 - an op jaxonnxruntime does not convert
        print(f"({name}: jaxonnxruntime fails: {str(error).splitlines()[0][:100]})")
    for key, runner in runners.items():
        error = max(
            latency.relative_error(g, w) for g, w in zip(runner.first, expected, strict=True)
        )
        if error > TOLERANCE:
            raise SystemExit(f"{name}: {key}'s output differs from onnxruntime's ({error:.1e})")
        row[f"{key}_error"] = error
    median = latency.interleaved_medians(runners, args.rounds, args.runs, warmup=3)
    reference = median.get("naive", float("nan"))
    row.update(
        ours_ms=median["mlconv"],
        ours_naive=median["mlconv"] / reference,
        plain_naive=median["plain"] / reference,
    )
    return row


def run_latency(args, device) -> None:
    with tempfile.TemporaryDirectory() as folder:
        cases = []
        for name in [m for m in args.models.split(",") if m]:
            path = os.path.join(folder, f"{name}.onnx")
            onnx.save(latency.randomize(onnx.load(latency.light_path(name))), path)
            cases.append((name, path, None))
        if args.exported is not None:
            cases += latency.exported_models(folder, args.exported)
        print(
            f"batch 1 on {device.device_kind}, {args.rounds} rounds x {args.runs} runs, median;"
            " ratios to jaxonnxruntime (naive whole-graph JAX)"
        )
        print(
            f"{'model':<22}{'mlconv ms':>10}{'mlconv/naive':>13}{'no-target/naive':>16}"
            f"{'compile s':>10}{'naive s':>9}{'error':>9}{'naive err':>10}"
        )
        rows = []
        for name, path, inputs in cases:
            row = latency_row(name, path, inputs, args, device)
            rows.append(row)
            print(
                f"{name:<22}{row['ours_ms']:>10.2f}{row['ours_naive']:>13.2f}"
                f"{row['plain_naive']:>16.2f}{row['compile_s']:>10.2f}{row['naive_compile_s']:>9.2f}"
                f"{row['mlconv_error']:>9.1e}{row.get('naive_error', float('nan')):>10.1e}",
                flush=True,
            )
        compared = [r for r in rows if not np.isnan(r["ours_naive"])]
        if compared:
            print(
                f"{'median':<22}{'':>10}{statistics.median(r['ours_naive'] for r in compared):>13.2f}"
                f"{statistics.median(r['plain_naive'] for r in compared):>16.2f}"
                f"{statistics.median(r['compile_s'] for r in compared):>10.2f}"
                f"{statistics.median(r['naive_compile_s'] for r in compared):>9.2f}"
            )


def export_resnet50(path: str) -> None:
    sys.path.insert(
        0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "pytest")
    )
    try:
        import exported_models  # type: ignore[import-not-found]
    finally:
        sys.path.pop(0)
    exported_models.write_torchvision_onnx("resnet50", path, size=224)


def throughput(runner, batch: int, rounds: int, runs: int) -> float:
    """Median images/s over rounds of `runs` dispatched calls, waiting for the last."""
    import jax

    for _ in range(2):
        runner()
    rates = []
    for _ in range(rounds):
        start = time.perf_counter()
        outputs = [runner.dispatch() for _ in range(runs)]
        jax.block_until_ready(outputs)
        rates.append(batch * runs / (time.perf_counter() - start))
    return statistics.median(rates)


def run_throughput(args, device) -> None:
    import jax

    peak = bf16_peak(device.device_kind)
    print(
        f"\nResNet50 (torchvision, TorchScript export, dynamic batch) on {device.device_kind}:"
        f" images/s, TFLOP/s at {RESNET50_GFLOP} GFLOP per image"
        + (f", % of the {peak:.0f} TFLOP/s dense bf16 peak" if peak else "")
    )
    print(f"{'batch':<7}{'program':<22}{'images/s':>10}{'TFLOP/s':>9}{'% peak':>8}{'vs naive':>10}")
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "resnet50.onnx")
        export_resnet50(path)
        model = onnx.load(path)
        name = model.graph.input[0].name
        for batch in [int(b) for b in args.batches.split(",") if b]:
            x = np.random.default_rng(batch).standard_normal((batch, 3, 224, 224))
            inputs = {name: x.astype(np.float32)}
            runners = {
                "mlconv float32": OnDevice(latency.Mlconv(path, args.device, inputs, True), device),
                "mlconv bfloat16": OnDevice(
                    latency.Mlconv(path, args.device, inputs, True, bf16=True), device
                ),
                "naive float32": Naive(model, inputs, device),
                "naive bfloat16": Naive(model, inputs, device, dtype=jax.numpy.bfloat16),
            }
            rates = {k: throughput(r, batch, args.rounds, args.runs) for k, r in runners.items()}
            for key, rate in rates.items():
                tflops = rate * RESNET50_GFLOP / 1e3
                naive = rates["naive " + key.split()[-1]]
                share = f"{100 * tflops / peak:>7.1f}%" if peak else f"{'':>8}"
                print(
                    f"{batch:<7}{key:<22}{rate:>10.0f}{tflops:>9.1f}{share}{rate / naive:>10.2f}",
                    flush=True,
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(latency.LIGHT))
    parser.add_argument("--exported", nargs="?", const="", default=None)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=20, help="calls per program per round")
    parser.add_argument("--batches", default="64,256", help="throughput batch sizes")
    parser.add_argument("--no-latency", action="store_true")
    parser.add_argument("--no-throughput", action="store_true")
    parser.add_argument("--device", default="gpu", help="gpu (cpu to try the script out)")
    args = parser.parse_args()

    from mlconv.backends.jax_backend import pick_device

    device = pick_device(args.device)
    if not args.no_latency:
        run_latency(args, device)
    if not args.no_throughput:
        run_throughput(args, device)


if __name__ == "__main__":
    main()

"""GPU speed: mlconv against the source framework on the GPU, a naive whole-graph JAX translation
and onnxruntime's CUDA provider (where installed), and bfloat16 throughput.

    python bench/gpu.py [--models resnet50,squeezenet] [--exported [names]] [--rounds 5]
                        [--runs 20] [--batches 64,256] [--no-latency] [--no-throughput]
                        [--no-plain] [--device gpu]

The naive translation is jaxonnxruntime (Google's ONNX-to-JAX converter: one JAX function per
ONNX node, the whole graph traced under one `jax.jit`, weights as jit arguments as mlconv's),
which is what a user gets by handing the ONNX file to JAX directly. It is a benchmark
dependency only (`pip install jaxonnxruntime`). The framework peer is the PyTorch model the
ONNX file was exported from (`--exported` models and ResNet50), run eagerly on the GPU under
`torch.inference_mode` with TF32 allowed, as XLA:GPU computes float32 convolutions and dots; in
bfloat16 under `torch.autocast` with channels_last, PyTorch's own fast inference form for CNNs.
onnxruntime's CUDA execution provider joins when `onnxruntime.get_available_providers()` has it
(the onnxruntime-gpu wheel), bound to device-resident inputs and outputs (IO binding).

Latency, batch 1: the light models of bench/latency.py (seeded random weights) and, with
`--exported`, its PyTorch exports. Programs per model: mlconv with the tpu-level target passes
for the device, mlconv without them (unless `--no-plain`), jaxonnxruntime, and the peers above;
each is timed on inputs already on the device (`CompiledModule.on_device`, then
`jax.block_until_ready`; `torch.cuda.synchronize` for PyTorch), so the host copies, the same for
all, are left out. Rounds are interleaved (the order rotates per round); latency is the median
of all calls and the table prints ratios to jaxonnxruntime and to the fastest peer, plus
compile times: mlconv's import + passes + XLA against jaxonnxruntime's conversion (it runs each
node once on the example input) + XLA. Outputs are checked against onnxruntime on the CPU,
within 1e-1 of the largest magnitude (TF32 on both sides).

Throughput: torchvision ResNet50 (seeded random weights, BatchNorm statistics from random
activations) exported by `torch.onnx.export` (TorchScript, opset 17, dynamic batch), at each
batch of `--batches`: mlconv in float32 and in bfloat16 (tpu-bf16, its products rounded as a
TPU does and, `gpu`, as XLA:GPU's kernels write them: tpu-bf16's `products`), jaxonnxruntime in float32
and with its weights and input cast to bfloat16, PyTorch in float32 (TF32) and bfloat16
(autocast, channels_last). Each round dispatches `--runs` calls and waits for the last;
images/s is the median over rounds, and TFLOP/s counts ResNet50's 8.2 GFLOP per 224x224 image
(4.1 G multiply-adds), against the GPU's dense bfloat16 peak.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import warnings

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
        return self.wait(self.dispatch())

    def wait(self, outputs):
        import jax

        return jax.block_until_ready(outputs)


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


class TorchPeer(Blocking):
    """The source PyTorch model on the device, eager (see the module's docstring)."""

    def __init__(self, model, inputs: list[np.ndarray], device: str, bf16: bool = False) -> None:
        import torch

        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
        self.torch, self.bf16 = torch, bf16
        self.device = torch.device("cuda" if device == "gpu" else device)
        self.model = model.to(self.device).eval()
        self.args = [torch.from_numpy(a).to(self.device) for a in inputs]
        if bf16:
            self.model = self.model.to(memory_format=torch.channels_last)
            self.args = [
                a.contiguous(memory_format=torch.channels_last) if a.dim() == 4 else a
                for a in self.args
            ]
        self.first = [self().float().cpu().numpy()]

    def dispatch(self):
        torch = self.torch
        with (
            torch.inference_mode(),
            torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.bf16),
        ):
            return self.model(*self.args)

    def wait(self, outputs):
        if self.device.type == "cuda":
            self.torch.cuda.synchronize()
        return outputs


class OrtCuda(Blocking):
    """onnxruntime's CUDA execution provider with inputs and outputs bound on the device."""

    def __init__(self, path: str, inputs: dict[str, np.ndarray]) -> None:
        import onnxruntime

        self.session = onnxruntime.InferenceSession(path, providers=["CUDAExecutionProvider"])
        self.binding = self.session.io_binding()
        for name, array in inputs.items():
            value = onnxruntime.OrtValue.ortvalue_from_numpy(array, "cuda", 0)
            self.binding.bind_ortvalue_input(name, value)
        for output in self.session.get_outputs():
            self.binding.bind_output(output.name, "cuda")
        self()
        self.first = self.binding.copy_outputs_to_cpu()

    def dispatch(self) -> list:
        self.session.run_with_iobinding(self.binding)  # returns when the outputs are ready
        return []

    def wait(self, outputs):
        return outputs


def ort_cuda_available() -> bool:
    import onnxruntime

    return "CUDAExecutionProvider" in onnxruntime.get_available_providers()


def latency_row(name: str, path: str, inputs, args, device, torch_model=None) -> dict[str, float]:
    import onnxruntime

    model = onnx.load(path)
    inputs = inputs or latency.input_arrays(model)
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    expected = session.run(None, {i.name: inputs[i.name] for i in session.get_inputs()})

    ours = latency.Mlconv(path, args.device, inputs, True)
    runners: dict[str, Blocking] = {"mlconv": OnDevice(ours, device)}
    if not args.no_plain:
        runners["plain"] = OnDevice(latency.Mlconv(path, args.device, inputs, False), device)
    row: dict[str, float] = {
        "compile_s": ours.import_s + ours.passes_s + ours.xla_s,
        "naive_compile_s": float("nan"),
    }
    peers = {
        "naive": lambda: Naive(model, inputs, device),
        "ort-cuda": (lambda: OrtCuda(path, inputs)) if ort_cuda_available() else None,
        "torch": (
            (lambda: TorchPeer(torch_model, [inputs[i.name] for i in model.graph.input
                                              if i.name in inputs], args.device))
            if torch_model is not None else None
        ),
    }  # fmt: skip
    for key, make in peers.items():
        if make is None:
            continue
        try:
            runners[key] = make()
        except Exception as error:  # noqa: BLE001 - an op a peer does not run
            print(f"({name}: {key} fails: {str(error).splitlines()[0][:100]})")
    if "naive" in runners:
        row["naive_compile_s"] = runners["naive"].compile_s
    for key, runner in runners.items():
        error = max(
            latency.relative_error(g, w) for g, w in zip(runner.first, expected, strict=True)
        )
        if error > TOLERANCE:
            raise SystemExit(f"{name}: {key}'s output differs from onnxruntime's ({error:.1e})")
        row[f"{key}_error"] = error
    median = latency.interleaved_medians(runners, args.rounds, args.runs, warmup=3)
    reference = median.get("naive", float("nan"))
    best = min((v for k, v in median.items() if k not in ("mlconv", "plain")), default=np.nan)
    row.update(
        ours_ms=median["mlconv"],
        naive_ms=reference,
        torch_ms=median.get("torch", float("nan")),
        ort_ms=median.get("ort-cuda", float("nan")),
        ours_naive=median["mlconv"] / reference,
        ours_best=median["mlconv"] / best,
        plain_naive=median.get("plain", float("nan")) / reference,
    )
    return row


def exported_cases(folder: str, names: str) -> list[tuple[str, str, dict, object]]:
    """(name, path, batch-1 inputs, PyTorch model) of exported_models.py's PyTorch models."""
    sys.path.insert(
        0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "pytest")
    )
    try:
        import exported_models  # type: ignore[import-not-found]
    finally:
        sys.path.pop(0)
    return exported_models.torchscript_onnx_cases(folder, names)


COLUMNS = [  # (heading, row key, format)
    ("mlconv ms", "ours_ms", ".3f"), ("naive ms", "naive_ms", ".3f"),
    ("torch ms", "torch_ms", ".3f"), ("ort-cuda ms", "ort_ms", ".3f"),
    ("mlconv/naive", "ours_naive", ".2f"), ("mlconv/best", "ours_best", ".2f"),
    ("no-target/naive", "plain_naive", ".2f"), ("compile s", "compile_s", ".2f"),
    ("naive s", "naive_compile_s", ".2f"), ("mlconv error", "mlconv_error", ".1e"),
]  # fmt: skip


def run_latency(args, device) -> None:
    with tempfile.TemporaryDirectory() as folder:
        cases = []
        if args.exported is not None:
            cases += exported_cases(folder, args.exported)
        for name in [m for m in args.models.split(",") if m]:
            path = os.path.join(folder, f"{name}.onnx")
            onnx.save(latency.randomize(onnx.load(latency.light_path(name))), path)
            cases.append((name, path, None, None))
        print(
            f"batch 1 on {device.device_kind}, {args.rounds} rounds x {args.runs} runs, median;"
            " best: the fastest of naive whole-graph JAX (jaxonnxruntime), PyTorch eager and"
            f" onnxruntime CUDA (available: {ort_cuda_available()})"
        )
        print(f"{'model':<20}" + "".join(f"{h:>{len(h) + 2}}" for h, _, _ in COLUMNS))
        rows = []
        for name, path, inputs, torch_model in cases:
            try:
                row = latency_row(name, path, inputs, args, device, torch_model)
            except Exception as error:  # noqa: BLE001 - one model's failure, reported
                print(f"{name:<20} fails: {str(error).splitlines()[0][:120]}", flush=True)
                continue
            rows.append(row)
            print(
                f"{name:<20}"
                + "".join(f"{row.get(k, np.nan):>{len(h) + 2}{f}}" for h, k, f in COLUMNS),
                flush=True,
            )
        if rows:
            with warnings.catch_warnings():  # a column no row has (ort-cuda without its wheel)
                warnings.simplefilter("ignore", RuntimeWarning)
                medians = {k: np.nanmedian([r.get(k, np.nan) for r in rows]) for _, k, _ in COLUMNS}
            print(
                f"{'median':<20}" + "".join(f"{medians[k]:>{len(h) + 2}{f}}" for h, k, f in COLUMNS)
            )


def export_resnet50(path: str):
    """Writes ResNet50's ONNX export to `path`; returns the PyTorch model."""
    sys.path.insert(
        0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "pytest")
    )
    try:
        import exported_models  # type: ignore[import-not-found]
    finally:
        sys.path.pop(0)
    return exported_models.write_torchvision_onnx("resnet50", path, size=224)


def throughput(runner, batch: int, rounds: int, runs: int) -> float:
    """Median images/s over rounds of `runs` dispatched calls, waiting for the last."""
    for _ in range(2):
        runner()
    rates = []
    for _ in range(rounds):
        start = time.perf_counter()
        outputs = [runner.dispatch() for _ in range(runs)]
        runner.wait(outputs)
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
        torch_model = export_resnet50(path)
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
                "mlconv bfloat16 gpu": OnDevice(
                    latency.Mlconv(path, args.device, inputs, True, bf16="bfloat16"), device
                ),
                "naive float32": Naive(model, inputs, device),
                "naive bfloat16": Naive(model, inputs, device, dtype=jax.numpy.bfloat16),
                "torch float32": TorchPeer(torch_model, [inputs[name]], args.device),
                "torch bfloat16": TorchPeer(torch_model, [inputs[name]], args.device, bf16=True),
            }
            rates = {k: throughput(r, batch, args.rounds, args.runs) for k, r in runners.items()}
            for key, rate in rates.items():
                tflops = rate * RESNET50_GFLOP / 1e3
                naive = rates["naive " + key.split()[1]]
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
    parser.add_argument("--no-plain", action="store_true", help="skip mlconv without target passes")
    parser.add_argument("--device", default="gpu", help="gpu (cpu to try the script out)")
    args = parser.parse_args()

    from mlconv.backends.jax_backend import pick_device

    device = pick_device(args.device)
    # Throughput first: it is the figure a short lease must not lose.
    if not args.no_throughput:
        run_throughput(args, device)
    if not args.no_latency:
        run_latency(args, device)


if __name__ == "__main__":
    main()

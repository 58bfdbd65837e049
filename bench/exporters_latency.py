"""The exported models of test/pytest/exported_models.py: max error and latency against the
source's runtime, in one process (issue 7's closing table).

    python bench/exporters_latency.py [--cases resnet18-torchscript,gpt2] [--folder DIR]
                                      [--rounds 3] [--runs 5]

For each (model, exporter) the export and its references are made (or reused) in `--folder`,
one `mlconv.compile` runs at both batch sizes of the test (max |error| against the source
framework at each), then mlconv and the runtime the file was written for (onnxruntime for
.onnx, LiteRT for .tflite, TensorFlow for a SavedModel) are timed at the first batch size in
`--rounds` interleaved rounds of `--runs` calls; the table gives the median latencies and their
ratio. Timings on a shared machine swing between runs: compare ratios, not absolute times.

`--cases ssdlite` (also in the default table) adds torchvision's SSDlite320-MobileNetV3
detector (TorchScript export, one image of dynamic size, `exported_models.write_ssdlite`):
max |error| over boxes, scores and labels against onnxruntime at both image sizes, and
latencies on a new image at every call (mlconv compiles the backbone once per image size and
runs the NonZero/NonMaxSuppression post-processing per call, backends/staged.py; before that
it compiled a program per image: 1028 ms against onnxruntime's 31 ms, 33x, now 66 ms / 24 ms,
2.8x, on the 2-core machine under load).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def _exported_models():
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "test" / "pytest"))
    import exported_models  # type: ignore[import-not-found]

    return exported_models


def _runtime(exporter: str, path: Path):
    """A callable running the file in its own runtime: inputs -> first output."""
    if exporter == "tflite":
        from ai_edge_litert.interpreter import Interpreter

        interpreter = Interpreter(model_path=str(path))
        details = interpreter.get_input_details()
        output = interpreter.get_output_details()[0]["index"]
        shapes = {}

        def run_litert(*inputs):
            if shapes.get("last") != [x.shape for x in inputs]:
                for detail, x in zip(details, inputs, strict=True):
                    interpreter.resize_tensor_input(detail["index"], x.shape)
                interpreter.allocate_tensors()
                shapes["last"] = [x.shape for x in inputs]
            for detail, x in zip(details, inputs, strict=True):
                interpreter.set_tensor(detail["index"], x)
            interpreter.invoke()
            return interpreter.get_tensor(output)

        return "litert", run_litert
    if exporter == "savedmodel":
        import tensorflow as tf

        serve = tf.saved_model.load(str(path)).signatures["serving_default"]
        arguments = list(serve.structured_input_signature[1])

        def run_tf(*inputs):
            outputs = serve(**dict(zip(arguments, inputs, strict=True)))
            return next(iter(outputs.values())).numpy()

        return "tensorflow", run_tf
    import onnxruntime

    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    inputs_names = [i.name for i in session.get_inputs()]

    def run_ort(*inputs):
        return session.run(None, dict(zip(inputs_names, inputs, strict=True)))[0]

    return "onnxruntime", run_ort


def _median_latencies(functions: dict, inputs, rounds: int, runs: int) -> dict[str, float]:
    """`inputs`: the arguments of every call, or a callable (call number -> arguments)."""
    times: dict[str, list[float]] = {name: [] for name in functions}
    order = list(functions)
    for round_ in range(rounds):
        for name in order[round_ % len(order) :] + order[: round_ % len(order)]:
            for run in range(runs):
                arguments = inputs(round_ * runs + run) if callable(inputs) else inputs
                start = time.perf_counter()
                functions[name](*arguments)
                times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def _detector_row(em, folder: Path, rounds: int, runs: int) -> str:
    """The SSDlite row: errors against onnxruntime at both image sizes, latency on new images."""
    import onnxruntime

    import mlconv

    path = em.ssdlite_file(em.ExportCache(folder))
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])

    def run_ort(image):
        return session.run(None, {"images": image})

    run = mlconv.compile(str(path))
    errors = []
    for seed, size in enumerate(em.DETECTOR_SIZES):
        image = em.detector_image(size, seed)
        expected, got = run_ort(image), run(image)
        errors.append(max(float(np.abs(g - e).max()) for g, e in zip(got, expected, strict=True)))
    size = em.DETECTOR_SIZES[0]
    sizes = " / ".join(f"{h}x{w}" for h, w in em.DETECTOR_SIZES)
    latency = _median_latencies(
        {"mlconv": run, "onnxruntime": run_ort},
        lambda n: [em.detector_image(size, 1000 + n)],
        rounds,
        runs,
    )
    return (
        f"| ssdlite (images {sizes}) | torchscript | {errors[0]:.2g} | {errors[1]:.2g} | "
        f"{latency['mlconv'] * 1e3:.2f} | onnxruntime | {latency['onnxruntime'] * 1e3:.2f} | "
        f"{latency['mlconv'] / latency['onnxruntime']:.2f} |"
    )


def main() -> None:
    em = _exported_models()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--cases", default="", help="model or model-exporter names, comma-separated"
    )
    parser.add_argument("--folder", default="/tmp/mlconv-exported", help="export cache folder")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    import mlconv

    wanted = [w for w in args.cases.split(",") if w]
    cases = [(m, e) for m, e in em.CASES if not wanted or m in wanted or f"{m}-{e}" in wanted]
    cache = em.ExportCache(Path(args.folder))
    b1, b2 = em.BATCHES
    print(
        f"| model | exporter | max abs error b={b1} | max abs error b={b2} | "
        "mlconv ms | runtime | runtime ms | mlconv / runtime |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, exporter in cases:
        try:
            folder = cache((name, exporter))
            path = em.model_file(folder, exporter)
            refs = em.references(folder)
            run = mlconv.compile(str(path))
            errors = []
            for batch in em.BATCHES:
                inputs, expected = refs[batch]
                (got,) = run(*inputs)
                errors.append(float(np.abs(got - expected).max()))
            runtime, reference = _runtime(exporter, path)
            inputs = refs[b1][0]
            latency = _median_latencies(
                {"mlconv": run, runtime: reference}, inputs, args.rounds, args.runs
            )
            print(
                f"| {name} | {exporter} | {errors[0]:.2g} | {errors[1]:.2g} | "
                f"{latency['mlconv'] * 1e3:.2f} | {runtime} | {latency[runtime] * 1e3:.2f} | "
                f"{latency['mlconv'] / latency[runtime]:.2f} |",
                flush=True,
            )
        except Exception as error:  # one failing case does not stop the table
            message = str(error).splitlines()[0] if str(error) else type(error).__name__
            print(f"| {name} | {exporter} | fails: {message[:150]} | | | | | |", flush=True)
    if not wanted or "ssdlite" in wanted or "ssdlite-torchscript" in wanted:
        print(_detector_row(em, Path(args.folder), args.rounds, args.runs), flush=True)


if __name__ == "__main__":
    main()

"""mlconv's OpenVINO IR against OpenVINO's own converter (`ovc`, openvino.convert_model), in one run.

    python bench/openvino_vs_ovc.py [--models squeezenet,resnet18-torchscript,...] [--cache DIR]
                             [--json OUT.json] [--no-exported]

Models: the nine light ONNX models of the onnx wheel (weights replaced by seeded random values,
as bench/latency.py does, so the outputs depend on the input), and every export of
test/pytest/exported_models.py (PyTorch TorchScript/dynamo .onnx, Keras tf2onnx .onnx, SavedModel
and .tflite; exported once into `--cache`).

For each model, in the same process:
- conversion time: mlconv (import, lowering to core, shape inference, OpenVINO IR writing)
  against `openvino.convert_model` + `openvino.save_model` of the same source file;
- numerics: mlconv's IR run by OpenVINO (f32) against mlconv's JAX path and against the source
  framework (onnxruntime, or the exporter's reference output), relative to the largest output;
- layer types: the types in mlconv's .xml against those in ovc's, listing the differences.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import tempfile
import time
import warnings
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import numpy as np
import onnx

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "test" / "pytest"))
sys.path.insert(0, str(HERE))

LIGHT = (
    "bvlc_alexnet densenet121 inception_v1 inception_v2 resnet50 shufflenet squeezenet vgg19 "
    "zfnet512"
).split()


def relative(got, expected) -> float:
    got, expected = np.asarray(got, np.float64), np.asarray(expected, np.float64)
    if got.shape != expected.shape:
        return float("inf")
    scale = float(np.abs(expected).max()) or 1.0
    return float(np.abs(got - expected).max()) / scale


def layer_types(xml_path: Path) -> Counter:
    root = ET.parse(xml_path).getroot()
    return Counter(layer.get("type") for layer in root.iter("layer"))


def convert_mlconv(source, out: Path) -> float:
    """mlconv-translate --import-* then --export-openvino (core-fuse, core-op-versions)."""
    from mlconv.backends.openvino_ir import export_openvino
    from mlconv.frontends.load import load_model

    start = time.perf_counter()
    export_openvino(load_model(source), str(out))
    return time.perf_counter() - start


def convert_ovc(source: str, out: Path) -> float:
    import openvino as ov

    start = time.perf_counter()
    model = ov.convert_model(source)
    ov.save_model(model, out, compress_to_fp16=False)
    return time.perf_counter() - start


def light_cases(folder: Path, names: set[str] | None):
    import numerics
    from latency import light_path

    for name in LIGHT:
        if names and name not in names:
            continue
        model = numerics.randomize_weights(onnx.load(light_path(name)), seed=0)
        path = folder / f"{name}.onnx"
        onnx.save(model, path)
        rng = np.random.default_rng(1)
        x = rng.uniform(0, 1, (1, 3, 224, 224)).astype(np.float32)
        yield name, str(path), [x], numerics.onnxruntime_outputs(model, [x])[0]


def exported_cases(cache: Path, names: set[str] | None):
    import exported_models

    export = exported_models.ExportCache(cache)
    for model, exporter in exported_models.CASES:
        name = f"{model}-{exporter}"
        if names and name not in names:
            continue
        try:
            folder = export((model, exporter))
        except Exception as error:  # noqa: BLE001 - an exporter failing is reported, not fatal
            print(f"{name}: export failed: {error}", flush=True)
            continue
        inputs, expected = exported_models.references(folder)[exported_models.BATCHES[0]]
        yield name, str(exported_models.model_file(folder, exporter)), inputs, expected


def bench(name, path, inputs, expected, work: Path) -> dict:
    import mlconv

    row: dict = {"model": name}
    ours, theirs = work / f"{name}.mlconv.xml", work / f"{name}.ovc.xml"
    try:
        row["mlconv_s"] = convert_mlconv(path, ours)
    except Exception as error:  # noqa: BLE001
        row["mlconv_error"] = str(error).splitlines()[0][:200]
        return row
    try:
        row["ovc_s"] = convert_ovc(path, theirs)
    except Exception as error:  # noqa: BLE001
        row["ovc_error"] = [line for line in str(error).splitlines() if line.strip()][-1][:200]
    (got,) = mlconv.compile(path, device="cpu", backend="openvino")(*inputs)[:1]
    (jax,) = mlconv.compile(path, device="cpu", backend="xla")(*inputs)[:1]
    row["vs_jax"] = relative(got, jax)
    row["vs_source"] = relative(got, expected)
    mine = layer_types(ours)
    row["bin_bytes"] = (ours.with_suffix(".bin")).stat().st_size
    if theirs.exists():
        other = layer_types(theirs)
        row["only_mlconv"] = sorted(set(mine) - set(other))
        row["only_ovc"] = sorted(set(other) - set(mine))
        row["layers"] = [sum(mine.values()), sum(other.values())]
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", help="comma-separated names (light names, model-exporter)")
    parser.add_argument("--cache", default=os.path.join(tempfile.gettempdir(), "mlconv-exports"))
    parser.add_argument("--no-exported", action="store_true")
    parser.add_argument("--json", help="write the rows as JSON")
    args = parser.parse_args(argv)
    names = set(args.models.split(",")) if args.models else None
    warnings.simplefilter("ignore")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        cases = light_cases(work, names)
        if not args.no_exported:
            cases = itertools.chain(cases, exported_cases(Path(args.cache), names))
        for case in cases:  # lazily: each model is built, exported and benched in turn
            row = bench(*case, work)
            rows.append(row)
            print(json.dumps(row), flush=True)
    print(f"\n{'model':34} {'mlconv s':>9} {'ovc s':>7} {'vs jax':>9} {'vs src':>9}  layer types")
    for row in rows:
        diff = ""
        if "only_mlconv" in row:
            diff = f"+{','.join(row['only_mlconv'])} -{','.join(row['only_ovc'])}"
        print(
            f"{row['model']:34} {row.get('mlconv_s', float('nan')):9.2f} "
            f"{row.get('ovc_s', float('nan')):7.2f} {row.get('vs_jax', float('nan')):9.2e} "
            f"{row.get('vs_source', float('nan')):9.2e}  "
            f"{row.get('mlconv_error') or row.get('ovc_error') or diff}"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

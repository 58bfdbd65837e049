"""Whole models through the OpenVINO IR writer and the OpenVINO runtime (issue 10, done-when):
outputs within 1e-4 (relative to the largest) of mlconv's JAX path and within the exporters'
tolerance of the source framework. A representative subset runs here (light ONNX models with
seeded random weights, a Keras CNN as SavedModel and .tflite, a Keras transformer as .tflite,
a TorchScript ResNet-18); `python bench/openvino_vs_ovc.py` runs them all and compares with `ovc`.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx
import pytest

import mlconv

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import exported_models  # noqa: E402 - a module beside this one (conftest.py)
import numerics  # noqa: E402
import sensitivity  # noqa: E402

RELATIVE = 1e-4


def _relative(got, expected) -> float:
    scale = float(np.abs(expected).max()) or 1.0
    return float(np.abs(np.asarray(got, np.float64) - expected).max()) / scale


# Models with a fixed 7x7 global pooling need their 224x224 image.
@pytest.mark.parametrize(("name", "size"), [("squeezenet", 64), ("inception_v1", 224)])
def test_light_model(name, size):
    path = Path(onnx.__file__).parent / "backend/test/data/light" / f"light_{name}.onnx"
    model = numerics.expose_logits(
        numerics.randomize_weights(onnx.load(path), seed=0, image_size=size)
    )
    rng = np.random.default_rng(1)
    x, other = (rng.uniform(0, 1, (1, 3, size, size)).astype(np.float32) for _ in range(2))
    ov_run = mlconv.compile(model, device="cpu", backend="openvino")
    jax_run = mlconv.compile(model, device="cpu")
    source = numerics.onnxruntime_outputs(model, [x])
    sensitivity.assert_input_sensitive(
        source[-1], numerics.onnxruntime_outputs(model, [other])[-1], rtol=RELATIVE
    )
    got, expected = ov_run(x), jax_run(x)
    for index, (a, b, s) in enumerate(zip(got, expected, source, strict=True)):
        assert _relative(a, b) <= RELATIVE, f"{name} output {index} vs JAX"
        assert _relative(a, s) <= RELATIVE, f"{name} output {index} vs onnxruntime"


CASES = [
    ("keras_cnn", "savedmodel"),
    ("keras_cnn", "tflite"),
    ("keras_transformer", "tflite"),
    ("resnet18", "torchscript"),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{m}-{e}" for m, e in CASES])
def test_exported_model(exported, case):
    framework = exported_models.MODELS[case[0]].framework
    pytest.importorskip("tensorflow" if framework == "keras" else "torch")
    folder = exported(case)
    refs = exported_models.references(folder)
    batch = exported_models.BATCHES[0]
    sensitivity.assert_input_sensitive(refs[batch][1], refs[-1][1], rtol=exported_models.RTOL)
    path = str(exported_models.model_file(folder, case[1]))
    ov_run = mlconv.compile(path, device="cpu", backend="openvino")
    jax_run = mlconv.compile(path, device="cpu")
    for batch in exported_models.BATCHES:  # dynamic batch: one IR, two batch sizes
        inputs, expected = refs[batch]
        (got,) = ov_run(*inputs)
        (jax,) = jax_run(*inputs)
        assert _relative(got, jax) <= RELATIVE, f"{case} batch {batch} vs JAX"
        np.testing.assert_allclose(
            got, expected, rtol=exported_models.RTOL, atol=exported_models.ATOL,
            err_msg=f"{case} batch {batch} vs the source framework",
        )  # fmt: skip

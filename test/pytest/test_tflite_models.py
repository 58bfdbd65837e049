"""Issue 4 on real CNNs: Keras MobileNetV2, ResNet50, EfficientNetB0 and a transformer block
from their .tflite files.

The models are built with weights=None and a fixed seed; every BatchNormalization's moving
statistics are those of the activations it sees on a batch of other random inputs, and the
classifier's bias takes away the part of the logits all inputs share (`sensitivity.py`), so the
logits move with the input (random statistics left them nearly constant, and an int8 ADD that
rounded differently from LiteRT went unnoticed). The classifier gives logits (no softmax, which
would hide differences). Every comparison first checks that its reference moves by at least
100x the tolerance on a second input. Each is converted by TensorFlow's TFLiteConverter (float, and
full-integer int8: representative dataset of a few random batches, int8 input and output).

- float: `mlconv.compile` matches the Keras model's call and LiteRT within 1e-4 of the output's
  largest magnitude;
- int8: matches LiteRT within one quantization step (the CNNs exactly: their convolutions,
  fully connected layers and ADDs compute as XNNPACK does);
- the versions `tflite-op-versions` computes equal those TensorFlow wrote in every file;
- the file `--export-tflite` writes (tflite-to-core, core-to-tflite) runs in LiteRT with the
  same output, and its op versions are the ones `tflite-op-versions` computes.

TensorFlow's converter takes most of the time (20-70 s a model on two cores), so the .tflite
files and the Keras outputs are cached across sessions in pytest's cache folder
(`.pytest_cache/d/tflite_models/<key>`, keyed by TensorFlow's version and `CACHE_VERSION`;
`pytest --cache-clear` rebuilds them). A model is built only when a selected test needs it.
"""

from __future__ import annotations

import fcntl
import io
import os

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")
litert = pytest.importorskip("ai_edge_litert.interpreter")

import mlconv  # noqa: E402
from mlconv.backends.tflite_writer import export_tflite  # noqa: E402
from mlconv.dialects import make_context  # noqa: E402
from mlconv.dialects.tflite import TFLiteOperation  # noqa: E402
from mlconv.frontends.tflite_importer import import_tflite  # noqa: E402
from mlconv.passes.tflite_op_versions import TfliteOpVersionsPass  # noqa: E402
from mlconv.passes.tflite_to_core import TfliteToCorePass  # noqa: E402

CACHE_VERSION = 2  # bump when a builder below changes
RTOL = 1e-4  # float outputs: max |diff| relative to the largest |output|
# ResNet50's centred logits are differences of nearly equal sums over 50 layers: LiteRT's own
# float output differs from Keras's by 1.0e-4 of the largest logit, mlconv's by 1.1e-4 (and
# 0.9e-4 from LiteRT's), so float32 summation order alone reaches the common bar.
FLOAT_RTOL = {"resnet50": 2e-4}


import sensitivity  # noqa: E402 - a module beside this one (conftest.py)
from litert_models import litert_outputs, tflite_bytes  # noqa: E402


def _sensitive(model, seed: int):
    """BatchNorm statistics from the activations of 8 other random inputs, logits centred."""
    shape = (8, *model.inputs[0].shape[1:])
    calibration = np.random.default_rng(100 + seed).standard_normal(shape).astype(np.float32)
    sensitivity.calibrate_batch_norms(model, [calibration], seed)
    sensitivity.center_head(model, [calibration])
    return model


def _mobilenet_v2():
    keras.utils.set_random_seed(0)
    model = keras.applications.MobileNetV2(
        input_shape=(96, 96, 3), alpha=0.35, weights=None, classifier_activation=None
    )
    return _sensitive(model, 0)


def _resnet50():
    keras.utils.set_random_seed(1)
    model = keras.applications.ResNet50(
        input_shape=(64, 64, 3), weights=None, classifier_activation=None
    )
    return _sensitive(model, 1)


def _efficientnet_b0():
    keras.utils.set_random_seed(2)
    model = keras.applications.EfficientNetB0(
        input_shape=(64, 64, 3), weights=None, classifier_activation=None
    )
    return _sensitive(model, 2)


def _transformer_block():
    keras.utils.set_random_seed(3)
    x = keras.Input((16, 32), batch_size=1, name="tokens")
    attention = keras.layers.MultiHeadAttention(4, 8)(x, x)
    h = keras.layers.LayerNormalization()(x + attention)
    f = keras.layers.Dense(64, activation="gelu")(h)
    f = keras.layers.Dense(32)(f)
    return keras.Model(x, keras.layers.LayerNormalization()(h + f))


BUILDERS = {
    "mobilenet_v2": _mobilenet_v2,
    "resnet50": _resnet50,
    "efficientnet_b0": _efficientnet_b0,
    "transformer": _transformer_block,
}
NAMES = list(BUILDERS)

# int8 bound in quantization steps, per model (1 unless listed). CONV_2D, DEPTHWISE_CONV_2D,
# FULLY_CONNECTED, ADD and SUB compute as XNNPACK does (exact integer accumulation, fixed-point or
# fp32 requantization), and the three CNNs then match LiteRT exactly; the transformer (its other
# int8 ops still compute on dequantized values) differs by 1 at most.
STEPS: dict[str, int] = {}
# How many times the int8 bound a second input must move LiteRT's output (100 unless listed).
# EfficientNetB0's logits are heavy-tailed from input to input (their largest |value| is 13.7 on
# one input and 3.3 on another), so the output scale TensorFlow's converter takes from the
# representative inputs spans far more than one input's logits: a second input moves the int8
# output by 42 of its 256 steps although its float logits move by 86% of their largest value.
SENSITIVITY_FACTOR = {"efficientnet_b0": 30}


class Models:
    """(name, kind) -> the folder holding `<kind>.tflite` ("float" or "int8"), x.npy and x2.npy
    (the input, and a second one for the sensitivity check) and keras.npy and keras2.npy (the
    Keras model's outputs on them), built on first use.

    Each file is made under an exclusive lock on `<name>.<kind>.lock`, so two xdist workers
    needing the same model wait for one conversion instead of both converting; float and int8
    of one model are separate files (two workers can convert them at the same time). Files are
    written to a temporary name and renamed: a reader never sees half a file."""

    def __init__(self, folder):
        self.folder = folder
        self.built: dict[str, object] = {}

    def _model(self, name: str):
        if name not in self.built:
            self.built[name] = BUILDERS[name]()
        return self.built[name]

    @staticmethod
    def _write(path, data: bytes) -> None:
        partial = path.with_name(path.name + f".{os.getpid()}.partial")
        partial.write_bytes(data)
        os.replace(partial, path)

    def _save(self, path, array: np.ndarray) -> None:
        buffer = io.BytesIO()
        np.save(buffer, array)
        self._write(path, buffer.getvalue())

    def __call__(self, name: str, kind: str = "float"):
        folder = self.folder / name
        target = folder / f"{kind}.tflite"
        if target.exists():
            return folder
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / f"{kind}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not target.exists():
                model = self._model(name)
                shape = (1, *model.inputs[0].shape[1:])
                if not (folder / "keras2.npy").exists():
                    for suffix, seed in (("", 7), ("2", 8)):
                        x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
                        self._save(folder / f"x{suffix}.npy", x)
                        self._save(folder / f"keras{suffix}.npy", np.asarray(model(x)))
                self._write(
                    target,
                    tflite_bytes(model, kind == "int8", samples=4, shape=shape, int8_io=True),
                )
        return folder


@pytest.fixture(scope="session")
def models(request, tmp_path_factory):
    cache = getattr(request.config, "cache", None)
    if cache is not None:
        return Models(cache.mkdir("tflite_models") / f"tf{tf.__version__}-v{CACHE_VERSION}")
    # -p no:cacheprovider: the run's temporary root, which all xdist workers share.
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    return Models(base / "tflite_models")


def _quantized_input(path, x):
    interpreter = litert.Interpreter(model_path=str(path))
    scale, zero_point = interpreter.get_input_details()[0]["quantization"]
    return np.clip(np.round(x / scale) + zero_point, -128, 127).astype(np.int8)


def _relative(got, expected) -> float:
    return float(np.abs(got - expected).max() / np.abs(expected).max())


def _versions(module) -> list[tuple[str, str, int]]:
    return [
        (op.operator, str(op.location), op.version.value.data)
        for op in module.walk()
        if isinstance(op, TFLiteOperation)
    ]


@pytest.mark.parametrize("name", NAMES)
def test_float_matches_keras_and_litert(models, name):
    folder = models(name)
    x = np.load(folder / "x.npy")
    expected = np.load(folder / "keras.npy")
    moved = np.load(folder / "keras2.npy")
    rtol = FLOAT_RTOL.get(name, RTOL)
    sensitivity.assert_input_sensitive(expected, moved, rtol=rtol, what=name)
    (got,) = mlconv.compile(str(folder / "float.tflite"))(x)
    assert got.shape == expected.shape and got.dtype == np.float32
    assert _relative(got, expected) <= rtol, f"{name} vs Keras: {_relative(got, expected)}"
    lite = litert_outputs(folder / "float.tflite", x)[0]
    assert _relative(got, lite) <= rtol, f"{name} vs LiteRT: {_relative(got, lite)}"


@pytest.mark.parametrize("name", NAMES)
def test_int8_matches_litert(models, name):
    path = models(name, "int8") / "int8.tflite"
    x, x2 = (_quantized_input(path, np.load(path.parent / f)) for f in ("x.npy", "x2.npy"))
    expected = litert_outputs(path, x)[0]
    bound = STEPS.get(name, 1)
    factor = SENSITIVITY_FACTOR.get(name, sensitivity.FACTOR)
    moved = litert_outputs(path, x2)[0]
    sensitivity.assert_input_sensitive(expected, moved, atol=bound, what=name, factor=factor)
    (got,) = mlconv.compile(str(path))(x)
    assert got.dtype == np.int8 and got.shape == expected.shape
    steps = np.abs(got.astype(np.int32) - expected.astype(np.int32)).max()
    assert steps <= bound, f"{name}: {steps} quantization steps"


@pytest.mark.parametrize("kind", ["float", "int8"])
@pytest.mark.parametrize("name", NAMES)
def test_op_versions_equal_tensorflow(models, name, kind):
    module = import_tflite(models(name, kind) / f"{kind}.tflite")
    written = _versions(module)
    TfliteOpVersionsPass().apply(make_context(), module)
    computed = _versions(module)
    differ = [(w, c[2]) for w, c in zip(written, computed, strict=True) if w != c]
    assert not differ, f"(operator, location, version in the file) -> computed: {differ[:5]}"


@pytest.mark.parametrize("name", NAMES)
def test_export_round_trip(models, name, tmp_path):
    folder = models(name)
    module = import_tflite(folder / "float.tflite")
    # The Keras files have a None batch; the exported file runs at batch 1, as LiteRT runs both.
    TfliteToCorePass(keep_dynamic=False).apply(make_context(), module)
    out = tmp_path / "exported.tflite"
    export_tflite(module, out)
    x = np.load(folder / "x.npy")
    expected = litert_outputs(folder / "float.tflite", x)[0]
    moved = litert_outputs(folder / "float.tflite", np.load(folder / "x2.npy"))[0]
    sensitivity.assert_input_sensitive(expected, moved, rtol=1e-5, what=name)
    got = litert_outputs(out, x)[0]
    assert got.shape == expected.shape
    assert _relative(got, expected) <= 1e-5, f"{name}: {_relative(got, expected)}"
    written = import_tflite(out)
    versions = _versions(written)
    TfliteOpVersionsPass().apply(make_context(), written)
    assert versions == _versions(written)

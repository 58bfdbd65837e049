"""Keras models and datasets for the quantization tests and bench/quantization.py.

`build` makes keras.applications MobileNetV2 / ResNet50 (weights=None, fixed seeds) and TRAINS
them (issue 11's bar presumes trained networks: untrained ones, even made to look trained, lose
5% top-1 to weight rounding alone) on a synthetic labelled task:
- `labelled_images`: CLASSES classes, each an oriented grating and a coloured blob, jittered
  per image, with contrast, offset and pixel noise (fresh images every step, no epochs);
- `train`: AdamW (weight decay keeps weights and activations free of the outliers that cost
  int8 levels) with a cosine-decayed learning rate, cross-entropy on the logits, real
  BatchNorm training (the moving statistics are learnt; their momentum is set to 0.9 because
  keras.applications' 0.999 would leave them at their initial values after a few hundred
  steps), TensorFlow's op determinism on, so a fresh training gives the same weights.
`RECIPES` gives the input size and steps per model. The trained weights are cached under
`cache_dir()` ($MLCONV_TEST_CACHE, else $XDG_CACHE_HOME/mlconv-test, else ~/.cache/mlconv-test)
keyed by a hash of the recipe, the training code and the TensorFlow version; with an empty cache
(CI) the model trains from scratch.
Saved as a SavedModel (`serving_default`, input "image" of dynamic batch, output "output").
`images` (white-noise pixels with per-image contrast and offset) stays for the small CNN test.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

APPS = {"mobilenetv2": "MobileNetV2", "resnet50": "ResNet50"}


def images(seed: int, count: int, size: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal([count, size, size, 3]) * rng.uniform(0.3, 2.0, [count, 1, 1, 1])
    return (x + rng.normal(0, 1.0, [count, 1, 1, 3])).astype(np.float32)


CLASSES = 32
# Per-image jitter of the colours and per-channel offset.
JITTER = 0.3


def labelled_images(seed: int, count: int, size: int, classes: int = CLASSES):
    """(images NHWC float32, labels): per class (drawn from a fixed seed) a grating's
    orientation and frequency, a blob's centre and two colours; per image jitter of each, a
    random phase and size, contrast, a per-channel offset and pixel noise."""
    crng = np.random.default_rng(1234)
    theta = crng.uniform(0, np.pi, classes)
    freq = crng.uniform(1.5, 6.0, classes)
    colors = crng.normal(0, 1, (classes, 2, 3))
    centre = crng.uniform(0.25, 0.75, (classes, 2))
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, classes, count)
    yy, xx = np.meshgrid(np.linspace(0, 1, size), np.linspace(0, 1, size), indexing="ij")
    t = (theta[labels] + rng.normal(0, 0.15, count))[:, None, None]
    f = (freq[labels] * rng.uniform(0.85, 1.15, count))[:, None, None]
    phase = rng.uniform(0, 2 * np.pi, count)[:, None, None]
    grating = np.sin(2 * np.pi * f * (np.cos(t) * xx + np.sin(t) * yy) + phase)
    c = centre[labels] + rng.normal(0, 0.08, (count, 2))
    r = rng.uniform(0.12, 0.25, count)[:, None, None]
    blob = np.exp(-((yy - c[:, 0, None, None]) ** 2 + (xx - c[:, 1, None, None]) ** 2) / (2 * r**2))
    col = colors[labels] + rng.normal(0, JITTER, (count, 2, 3))
    x = grating[..., None] * col[:, None, None, 0] + 2 * blob[..., None] * col[:, None, None, 1]
    x = x * rng.uniform(0.6, 1.4, (count, 1, 1, 1)) + rng.normal(0, JITTER, (count, 1, 1, 3))
    x = x + rng.normal(0, 0.2, x.shape)
    return x.astype(np.float32), labels


# Per model: input size, training steps (batches of BATCH fresh images) and peak learning rate.
RECIPES = {
    "mobilenetv2": {"size": 32, "steps": 2400, "batch": 32, "lr": 3e-3, "weight_decay": 0.05},
    "resnet50": {"size": 32, "steps": 1500, "batch": 32, "lr": 1e-3, "weight_decay": 0.05},
}
# BatchNormalization momentum while training (keras.applications' MobileNetV2 uses 0.999).
BN_MOMENTUM = 0.9


def cache_dir() -> Path:
    if os.environ.get("MLCONV_TEST_CACHE"):
        return Path(os.environ["MLCONV_TEST_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "mlconv-test"


def train(
    model, seed: int, size: int, steps: int, batch: int, lr: float, weight_decay: float
) -> float:
    """Train `model` (logits out) on `steps` batches of fresh labelled images with AdamW
    (decoupled weight decay `weight_decay`); returns the last training loss."""
    import keras

    for layer in model.layers:
        if isinstance(layer, keras.layers.BatchNormalization):
            layer.momentum = BN_MOMENTUM
    schedule = keras.optimizers.schedules.CosineDecay(lr, steps)
    model.compile(
        optimizer=keras.optimizers.AdamW(schedule, weight_decay=weight_decay),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    chunks = [labelled_images(seed * 1000 + i, 100 * batch, size) for i in range(-(-steps // 100))]
    x = np.concatenate([c[0] for c in chunks])[: steps * batch]
    labels = np.concatenate([c[1] for c in chunks])[: steps * batch]
    history = model.fit(x, labels, batch_size=batch, epochs=1, shuffle=False, verbose=0)
    return float(history.history["loss"][-1])


def _recipe_key(name: str, seed: int, recipe: dict) -> str:
    import hashlib
    import inspect

    import keras
    import tensorflow as tf

    text = "\n".join(
        [
            name,
            str(seed),
            repr(sorted(recipe.items())),
            str(BN_MOMENTUM),
            str(CLASSES),
            tf.__version__,
            keras.__version__,
            inspect.getsource(train),
            inspect.getsource(labelled_images),
        ]
    )
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def build(name: str, seed: int = 0, **overrides):
    """keras.applications `name` (RECIPES[name], with `overrides`), trained as the module's
    docstring says, or its trained weights from the cache."""
    import keras
    from tensorflow.python.framework import config

    recipe = {**RECIPES[name], **overrides}
    size = recipe["size"]
    keras.utils.set_random_seed(seed)
    app = getattr(keras.applications, APPS[name])
    model = app(
        input_shape=(size, size, 3), weights=None, classes=CLASSES, classifier_activation=None
    )
    cached = cache_dir() / f"{name}-{_recipe_key(name, seed, recipe)}.weights.h5"
    if cached.exists():
        model.load_weights(str(cached))
        return model
    # Deterministic kernels while training only (the flag is process-wide; other tests run
    # ops that have no deterministic kernel).
    was = config.is_op_determinism_enabled()
    config.enable_op_determinism()
    try:
        train(model, seed + 500, **recipe)
    finally:
        if not was:
            config.disable_op_determinism()
    cached.parent.mkdir(parents=True, exist_ok=True)
    partial = cached.parent / f"{name}-{os.getpid()}.weights.h5"
    model.save_weights(str(partial))
    partial.replace(cached)
    return model


def save(model, folder: Path) -> Path:
    import tensorflow as tf

    size = model.inputs[0].shape[1]

    class Serving(tf.Module):
        def __init__(self):
            super().__init__()
            self.model = model

            @tf.function(
                input_signature=[tf.TensorSpec([None, size, size, 3], tf.float32, name="image")]
            )
            def serve(image):
                return {"output": self.model(image, training=False)}

            self.serve = serve

    module = Serving()
    tf.saved_model.save(module, str(folder), signatures={"serving_default": module.serve})
    return folder


def tflite_int8(model, calibration: np.ndarray) -> bytes:
    """TFLite's own full-integer post-training quantization of `model` (int8 weights per
    channel and activations, float input and output), calibrated on `calibration`."""
    import tensorflow as tf

    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]

    def dataset():
        for sample in calibration:
            yield [sample[None]]

    converter.representative_dataset = dataset
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    return converter.convert()


def run_tflite(flatbuffer: bytes, data: np.ndarray) -> np.ndarray:
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_content=flatbuffer)
    interpreter.allocate_tensors()
    inp = interpreter.get_input_details()[0]["index"]
    out = interpreter.get_output_details()[0]["index"]
    results = []
    for sample in data:
        interpreter.set_tensor(inp, sample[None])
        interpreter.invoke()
        results.append(interpreter.get_tensor(out)[0].copy())
    return np.stack(results)


def agreement(reference: np.ndarray, got: np.ndarray) -> tuple[float, float, float]:
    """(top-1 agreement, mean and max over rows of max|got - ref| / max|ref|)."""
    top1 = float((reference.argmax(-1) == got.argmax(-1)).mean())
    errors = np.abs(got - reference).max(-1) / np.abs(reference).max(-1)
    return top1, float(errors.mean()), float(errors.max())

"""Keras models and datasets for the quantization tests and bench/quantization.py.

`build` makes keras.applications MobileNetV2 / ResNet50 (weights=None, fixed seeds) realistic
in the ways trained networks are and random ones are not (issue 11; each step measured, see
`realistic`), without training:
- structured images of CLASSES classes (`labelled_images`: an oriented grating and a coloured
  blob per class, jittered per image, with contrast, offset and pixel noise), not white noise;
- convolution filters with a spatial mean (trained 3x3 and depthwise filters are mostly smooth,
  low-pass; random ones are high-pass and whiten the signal);
- residual branches scaled down (trained ResNets' branches add small corrections to the skip
  path; zero-gamma initialization starts them at 0);
- BatchNorm statistics from the activations the structured images give
  (sensitivity.calibrate_batch_norms);
- a classifier head fitted to the features (class prototypes of centred pooled features,
  logits scaled to a realistic spread), so predictions have realistic margins.
Measured on MobileNetV2 64x64 (features of images perturbed by 0.4% of their std, relative to
the features' spread over images): random 28%; residual branches x0.3: 6%; smooth filters as
well: 0.2%. ResNet50: 14%, 1.2%, 0.15%.
Saved as a SavedModel (`serving_default`, input "image" of dynamic batch, output "output").
`images` (white-noise pixels with per-image contrast and offset) stays for the small CNN test.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

APPS = {"mobilenetv2": "MobileNetV2", "resnet50": "ResNet50"}


def images(seed: int, count: int, size: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal([count, size, size, 3]) * rng.uniform(0.3, 2.0, [count, 1, 1, 1])
    return (x + rng.normal(0, 1.0, [count, 1, 1, 3])).astype(np.float32)


CLASSES = 32
# How much each residual branch's last BatchNormalization (gamma and beta) is scaled by.
BRANCH_SCALE = 0.3
# The logits' standard deviation over images after the head is fitted.
LOGIT_SPREAD = 4.0


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


def smooth_filters(model) -> None:
    """Every depthwise and every spatial (k > 1) convolution filter gets a spatial mean: each
    (input, output) filter plus mean|w| with the sign of its own sum over the taps."""
    import keras

    for layer in model.layers:
        if not isinstance(layer, keras.layers.Conv2D) or layer.kernel_size == (1, 1):
            continue
        weights = layer.get_weights()
        w = weights[0]
        sign = np.sign(w.sum(axis=(0, 1), keepdims=True))
        weights[0] = (w + np.abs(w).mean() * np.where(sign == 0, 1, sign)).astype(np.float32)
        layer.set_weights(weights)


def scale_residual_branches(model, factor: float) -> int:
    """Gamma and beta of the BatchNormalization ending each residual branch (the second input
    of each Add, as keras.applications builds them) times `factor`; returns how many."""
    import keras

    count = 0
    for layer in model.layers:
        if not isinstance(layer, keras.layers.Add):
            continue
        branch = layer.input[1]._keras_history.operation
        if isinstance(branch, keras.layers.BatchNormalization):
            gamma, beta, mean, var = branch.get_weights()
            branch.set_weights([gamma * factor, beta * factor, mean, var])
            count += 1
    return count


def fit_head(model, seed: int, size: int, count: int = 640) -> float:
    """The last Dense layer as class prototypes: on `count` labelled images, each class's mean
    of the centred pooled features as its row (nearest-prototype by inner product), logits
    scaled to LOGIT_SPREAD. Returns the float model's accuracy on those images' labels.
    (Standardizing each feature first would divide by the tiny spread of near-constant
    features and make the logits hang on rounding: the head must not amplify.)"""
    import keras

    dense = [layer for layer in model.layers if isinstance(layer, keras.layers.Dense)][-1]
    features = keras.Model(model.inputs, dense.input)
    x, labels = labelled_images(seed, count, size)
    seen = np.asarray(features.predict(x, batch_size=64, verbose=0), np.float64)
    mean = seen.mean(0)
    centred = seen - mean
    kernel = np.stack([centred[labels == c].mean(0) for c in range(dense.units)], 1)
    bias = -mean @ kernel
    logits = seen @ kernel + bias
    factor = LOGIT_SPREAD / logits.std()
    dense.set_weights([(kernel * factor).astype(np.float32), (bias * factor).astype(np.float32)])
    return float((logits.argmax(-1) == labels).mean())


def build(name: str, size: int, seed: int = 0):
    """keras.applications `name` at size x size, realistic as the module's docstring says."""
    import keras
    import sensitivity

    keras.utils.set_random_seed(seed)
    app = getattr(keras.applications, APPS[name])
    model = app(
        input_shape=(size, size, 3), weights=None, classes=CLASSES, classifier_activation=None
    )
    smooth_filters(model)
    calibration, _ = labelled_images(seed + 100, 64, size)
    sensitivity.calibrate_batch_norms(model, [calibration], seed)
    scale_residual_branches(model, BRANCH_SCALE)
    fit_head(model, seed + 200, size)
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

"""Keras models and datasets for the quantization tests and bench/quantization.py.

keras.applications models with weights=None and fixed seeds, BatchNorm statistics set from the
activations they see (sensitivity.calibrate_batch_norms) and the head centred and spread
(sensitivity.center_head), so outputs depend on the input. Inputs are random images: standard
normal pixels with a per-image contrast and per-channel offset, so images differ globally as
photographs do. Saved as a SavedModel (`serving_default`, input "image" of dynamic batch,
output "output").
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

APPS = {"mobilenetv2": "MobileNetV2", "resnet50": "ResNet50"}


def images(seed: int, count: int, size: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal([count, size, size, 3]) * rng.uniform(0.3, 2.0, [count, 1, 1, 1])
    return (x + rng.normal(0, 1.0, [count, 1, 1, 3])).astype(np.float32)


def build(name: str, size: int, seed: int = 0):
    import keras
    import sensitivity

    keras.utils.set_random_seed(seed)
    app = getattr(keras.applications, APPS[name])
    model = app(input_shape=(size, size, 3), weights=None, classifier_activation=None)
    calibration = images(seed + 100, 32, size)
    sensitivity.calibrate_batch_norms(model, [calibration], seed)
    sensitivity.center_head(model, [calibration], spread=3.0)
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

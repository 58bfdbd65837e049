"""Keras models to .tflite and LiteRT runs of them, shared by test_tflite.py,
test_tflite_to_core.py and test_tflite_models.py (their callers importorskip TensorFlow and
ai_edge_litert first).

    path.write_bytes(tflite_bytes(model, int8=True, samples=8))
    outputs = litert_outputs(path, x)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np


def tflite_bytes(
    model: Any, int8: bool, samples: int, shape: Any = None, int8_io: bool = False
) -> bytes:
    """`TFLiteConverter.from_keras_model(model)`; with `int8`, full-integer quantization
    calibrated on `samples` random normal inputs (seed 0) of `shape` (the model's input shape
    when None), with int8 inputs and outputs when `int8_io`."""
    import tensorflow as tf

    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    if int8:
        shape = model.inputs[0].shape if shape is None else shape
        rng = np.random.default_rng(0)

        def representative():
            for _ in range(samples):
                yield [rng.standard_normal(shape).astype(np.float32)]

        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.representative_dataset = representative
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        if int8_io:
            converter.inference_input_type = tf.int8
            converter.inference_output_type = tf.int8
    return converter.convert()


def litert_outputs(path: Path, x: np.ndarray) -> list[np.ndarray]:
    """Every output of LiteRT running the one-input model at `path` on `x`."""
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=str(path))
    interpreter.allocate_tensors()
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], x)
    interpreter.invoke()
    return [interpreter.get_tensor(o["index"]) for o in interpreter.get_output_details()]

"""A registry of the models the test-suite imports, for tests that must cover all of them
(test_round_trip.py). A builder writes its model into a folder and returns the path to import
(an .onnx file, a SavedModel folder or a .tflite file):

    @register("keras_cnn.tflite")
    def keras_cnn_tflite(folder: Path) -> Path: ...

Builders use fixed seeds and no network. The exporter tests' models (exported_models.py,
with its own export cache shared across xdist workers) are read by test_round_trip.py from
that module directly (conftest.py puts this folder on sys.path).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx

Builder = Callable[[Path], Path]
MODELS: dict[str, Builder] = {}
LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"


def register(name: str) -> Callable[[Builder], Builder]:
    def decorate(builder: Builder) -> Builder:
        MODELS[name] = builder
        return builder

    return decorate


def all_models() -> dict[str, Builder]:
    return dict(MODELS)


# --- the light ONNX models shipped in the onnx wheel --------------------------------------------

for _path in sorted(LIGHT.glob("light_*.onnx")):
    register(_path.name)(lambda folder, _path=_path: _path)


# --- ONNX with external data and a dynamic batch ----------------------------------------------


@register("mlp_external_data.onnx")
def mlp_external_data(folder: Path) -> Path:
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(5)
    nodes, inits, current = [], [], "x"
    for i in range(3):
        w = rng.standard_normal((64, 64)).astype(np.float32)
        inits.append(numpy_helper.from_array(w, f"w{i}"))
        nodes += [
            helper.make_node("MatMul", [current, f"w{i}"], [f"m{i}"], name=f"matmul{i}"),
            helper.make_node("Relu", [f"m{i}"], [f"h{i}"], name=f"relu{i}"),
        ]
        current = f"h{i}"
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 64])],
        [helper.make_tensor_value_info(current, TensorProto.FLOAT, ["batch", 64])],
        inits,
    )
    path = folder / "model.onnx"
    onnx.save(
        onnx.helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]),
        path,
        save_as_external_data=True,
        location="model.onnx.data",
        size_threshold=0,
    )
    return path


# --- Keras 3 with a (None, ...) batch: SavedModel and .tflite ------------------------------------


def _keras_cnn():
    import keras

    keras.utils.set_random_seed(3)
    inputs = keras.Input((16, 16, 3))
    x = keras.layers.Conv2D(8, 3, padding="same", activation="relu")(inputs)
    x = keras.layers.Conv2D(8, 3, padding="same", dilation_rate=2)(x)
    x = keras.layers.BatchNormalization()(x)
    x = keras.layers.DepthwiseConv2D(3, padding="same", activation="relu6")(x)
    x = keras.layers.MaxPooling2D()(x)
    x = keras.layers.GlobalAveragePooling2D()(x)
    outputs = keras.layers.Dense(5, activation="softmax")(x)
    return keras.Model(inputs, outputs)


@register("keras_cnn.savedmodel")
def keras_cnn_savedmodel(folder: Path) -> Path:
    import tensorflow as tf

    model = _keras_cnn()
    module = tf.Module()
    module.model = model
    module.serve = tf.function(
        lambda image: {"probs": model(image, training=False)},
        input_signature=[tf.TensorSpec([None, 16, 16, 3], tf.float32, name="image")],
    )
    path = folder / "saved_model"
    tf.saved_model.save(module, str(path), signatures={"serving_default": module.serve})
    return path


@register("keras_cnn.tflite")
def keras_cnn_tflite(folder: Path) -> Path:
    import tensorflow as tf

    converter = tf.lite.TFLiteConverter.from_keras_model(_keras_cnn())
    path = folder / "model.tflite"
    path.write_bytes(converter.convert())
    return path

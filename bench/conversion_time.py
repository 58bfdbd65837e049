"""Conversion time of mlconv-convert per model (issue 9's closing note), in one process.

    python bench/conversion_time.py [--rounds 3] [--size 64]

Three small CNNs of the same shape (conv 3x3 + ReLU, depthwise 3x3, conv 1x1, global average
pool, dense; fixed seeds, random weights): an ONNX export of a PyTorch module (TorchScript,
opset 17), a .tflite of a Keras model (TFLiteConverter.from_keras_model), and a Keras
SavedModel whose `serving_default` signature normalizes its input on the host and calls the
model under the function alias `tpu_func` (the seed's pattern; its host part is converted
too). Each is converted with the default options (bfloat16, IO shapes) `--rounds` times,
interleaved, TensorFlow already imported; prints the median wall time and the phases of the
last round.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import torch  # noqa: E402 - before TensorFlow (NOTES.md)


def onnx_cnn(folder: Path, size: int) -> Path:
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.Conv2d(16, 16, 3, padding=1, groups=16),
        torch.nn.Conv2d(16, 32, 1),
        torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(),
        torch.nn.Linear(32, 10),
    ).eval()
    path = folder / "cnn.onnx"
    example = torch.randn(1, 3, size, size)
    torch.onnx.export(model, (example,), str(path), dynamo=False, opset_version=17)
    return path


def keras_cnn(size: int):
    import keras

    keras.utils.set_random_seed(0)
    inputs = keras.Input((size, size, 3), batch_size=1)
    x = keras.layers.Conv2D(16, 3, padding="same", activation="relu")(inputs)
    x = keras.layers.DepthwiseConv2D(3, padding="same")(x)
    x = keras.layers.Conv2D(32, 1, activation="relu")(x)
    x = keras.layers.GlobalAveragePooling2D()(x)
    return keras.Model(inputs, keras.layers.Dense(10)(x))


def tflite_cnn(folder: Path, size: int) -> Path:
    import tensorflow as tf

    converter = tf.lite.TFLiteConverter.from_keras_model(keras_cnn(size))
    path = folder / "cnn.tflite"
    path.write_bytes(converter.convert())
    return path


def saved_model_cnn(folder: Path, size: int) -> Path:
    import tensorflow as tf

    model = keras_cnn(size)
    spec = [tf.TensorSpec((1, size, size, 3), tf.float32)]

    class Module(tf.Module):
        def __init__(self):
            super().__init__()
            self.model = model
            self.mean = tf.Variable(np.full(3, 0.5, np.float32), trainable=False)

        @tf.function(input_signature=spec)
        def tpu_func(self, x):
            return self.model(x)

        @tf.function(input_signature=spec)
        def serve(self, x):
            return {"y": tf.nn.softmax(self.tpu_func((x - self.mean) * 2.0))}

    module = Module()
    path = folder / "saved"
    tf.saved_model.save(
        module,
        str(path),
        signatures={"serving_default": module.serve},
        options=tf.saved_model.SaveOptions(function_aliases={"tpu_func": module.tpu_func}),
    )
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--size", type=int, default=64, help="input height and width")
    args = parser.parse_args()
    import tensorflow  # noqa: F401 - loaded once, outside the timings

    from mlconv.tools.mlconv_convert import convert

    with tempfile.TemporaryDirectory(prefix="mlconv-bench-") as tmp:
        folder = Path(tmp)
        models = {
            "ONNX CNN": (onnx_cnn(folder, args.size), ""),
            "TFLite CNN": (tflite_cnn(folder, args.size), ""),
            "Keras SavedModel (tpu_func + host part)": (
                saved_model_cnn(folder, args.size),
                'tpu_functions { function_alias: "tpu_func" }',
            ),
        }
        times: dict[str, list[float]] = {name: [] for name in models}
        phases: dict[str, dict[str, float]] = {}
        for round_ in range(args.rounds):
            for name, (path, options) in models.items():
                start = time.perf_counter()
                manifest = convert(str(path), str(folder / f"out{round_}"), options)
                times[name].append(time.perf_counter() - start)
                phases[name] = manifest["phase_seconds"]
        for name, values in times.items():
            print(f"{name:<42} median {statistics.median(values):6.2f} s  (rounds: "
                  + ", ".join(f"{v:.2f}" for v in values) + ")")  # fmt: skip
            slow = sorted(phases[name].items(), key=lambda kv: -kv[1])[:4]
            print("    " + "; ".join(f"{k} {v:.2f} s" for k, v in slow))


if __name__ == "__main__":
    main()

"""Keras 3 RNNs through the .tflite file, against LiteRT.

TFLiteConverter does not fuse Keras 3's LSTM / GRU / SimpleRNN: each becomes a WHILE whose body
writes step t's output with CONCATENATION(SLICE, item, SLICE) (a TensorListSetItem over
value-dependent slices), which tflite-to-core folds into one DYNAMIC_UPDATE_SLICE
(`tflite_patterns/lists.py`). The converter refuses a `None` batch or sequence for these
models (TensorListReserve needs a static element shape), so each shape is its own file: batch 2
x 5 steps and batch 3 x 7 steps, the same random weights. One model holds Masking (some steps
of one sequence masked), LSTM and GRU with return_sequences, SimpleRNN without, and a
Bidirectional LSTM (REVERSE_V2).
"""

from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")
litert = pytest.importorskip("ai_edge_litert.interpreter")

import mlconv  # noqa: E402
from mlconv.frontends.tflite_importer import import_tflite  # noqa: E402

RTOL = 1e-4
SHAPES = [(2, 5), (3, 7)]


def _model(batch: int, steps: int):
    keras.utils.set_random_seed(0)
    x = keras.Input((steps, 3), batch_size=batch)
    masked = keras.layers.Masking()(x)
    outputs = [
        keras.layers.LSTM(4, return_sequences=True)(masked),
        keras.layers.GRU(4, return_sequences=True)(masked),
        keras.layers.SimpleRNN(4)(masked),
        keras.layers.Bidirectional(keras.layers.LSTM(3, return_sequences=True))(masked),
    ]
    model = keras.Model(x, outputs)
    rng = np.random.default_rng(1)
    for w in model.weights:  # random weights, the same for every shape
        w.assign(rng.standard_normal(w.shape).astype(np.float32) * 0.5)
    return model


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tflite_rnn")
    paths = []
    for batch, steps in SHAPES:
        converter = tf.lite.TFLiteConverter.from_keras_model(_model(batch, steps))
        path = folder / f"rnn_{batch}x{steps}.tflite"
        path.write_bytes(converter.convert())
        paths.append(path)
    return paths


def _inputs(batch: int, steps: int) -> np.ndarray:
    x = np.random.default_rng(batch).standard_normal((batch, steps, 3)).astype(np.float32)
    x[0, -2:] = 0.0  # masked: Keras keeps the state and repeats the last output there
    return x


def _litert(path, x):
    interpreter = litert.Interpreter(model_path=str(path))
    interpreter.allocate_tensors()
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], x)
    interpreter.invoke()
    return {o["name"]: interpreter.get_tensor(o["index"]) for o in interpreter.get_output_details()}


def test_file_is_unfused_while_loops(files):
    text = str(import_tflite(files[0]))
    assert text.count('"tflite.WHILE"') == 5  # LSTM, GRU, SimpleRNN, two directions
    assert "UNIDIRECTIONAL_SEQUENCE" not in text and '"tflite.REVERSE_V2"' in text


@pytest.mark.parametrize("index", range(len(SHAPES)))
def test_matches_litert(files, index):
    path = files[index]
    x = _inputs(*SHAPES[index])
    expected = list(_litert(path, x).values())
    got = mlconv.compile(str(path))(x)
    assert len(got) == len(expected) == 4
    for g, e in zip(got, expected, strict=True):
        g = np.asarray(g)
        assert g.shape == e.shape and g.dtype == e.dtype
        assert np.abs(g - e).max() <= RTOL * np.abs(e).max()

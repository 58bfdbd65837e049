"""Keras 3 RNNs through the .tflite file, against LiteRT.

TFLiteConverter does not fuse Keras 3's LSTM / GRU / SimpleRNN: each becomes a WHILE whose body
writes step t's output with CONCATENATION(SLICE, item, SLICE) (a TensorListSetItem over
value-dependent slices), which tflite-to-core folds into one DYNAMIC_UPDATE_SLICE
(`tflite_patterns/lists.py`). The converter refuses a `None` batch or sequence for these
models (TensorListReserve needs a static element shape), so each shape is its own file: batch 2
x 5 steps and batch 3 x 7 steps, the same random weights. One model holds Masking (some steps
of one sequence masked), LSTM and GRU with return_sequences, SimpleRNN without, and a
Bidirectional LSTM (REVERSE_V2).

tf.keras (Keras 2, the tf-keras package) LSTMs are fused by the converter into
UNIDIRECTIONAL_SEQUENCE_LSTM (static shapes too), lowered onto core.LSTMSequence: a model with
an LSTM, a Bidirectional LSTM and a ReLU LSTM whose cell state grows past TFLite's cell_clip
of 10 (the converter's setting for Keras LSTMs), so the clip shows in the outputs.
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


# --------------------------------------------------------------------------- fused (tf.keras)

FUSED_SHAPES = [(2, 24), (3, 28)]
UP = 13  # steps of +1 on feature 0: the clipped LSTM's cell state climbs past 10, then falls


def _fused_model(batch: int, steps: int):
    tf_keras = pytest.importorskip("tf_keras")
    tf_keras.utils.set_random_seed(0)
    x = tf_keras.Input((steps, 3), batch_size=batch)
    layers = tf_keras.layers
    clipped = layers.LSTM(4, return_sequences=True, name="clipped")
    outputs = [clipped(x), layers.Bidirectional(layers.LSTM(3))(x)]
    model = tf_keras.Model(x, outputs)
    rng = np.random.default_rng(1)
    weights = model.get_weights()
    model.set_weights([rng.standard_normal(w.shape).astype(np.float32) * 0.5 for w in weights])
    kernel = np.zeros((3, 16), np.float32)  # gates i, f, c, o
    kernel[0, 8:12] = 6.0  # the cell input follows the sign of feature 0
    bias = np.zeros(16, np.float32)
    bias[:8] = 6.0  # input and forget gates open: the cell state moves ~1 per step
    clipped.set_weights([kernel, np.zeros((4, 16), np.float32), bias])
    return model


@pytest.fixture(scope="module")
def fused_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tflite_fused_lstm")
    paths = []
    for batch, steps in FUSED_SHAPES:
        converter = tf.lite.TFLiteConverter.from_keras_model(_fused_model(batch, steps))
        path = folder / f"lstm_{batch}x{steps}.tflite"
        path.write_bytes(converter.convert())
        paths.append(path)
    return paths


def test_fused_file_holds_sequence_lstms(fused_files):
    text = str(import_tflite(fused_files[0]))
    assert text.count('"tflite.UNIDIRECTIONAL_SEQUENCE_LSTM"') == 3
    assert text.count("cell_clip = 1.000000e+01") == 3 and '"tflite.WHILE"' not in text


@pytest.mark.parametrize("index", range(len(FUSED_SHAPES)))
def test_fused_lstm_matches_litert(fused_files, index):
    """Without TFLite's cell clip the clipped LSTM's outputs are off by up to ~0.4 (checked)."""
    path = fused_files[index]
    batch, steps = FUSED_SHAPES[index]
    x = np.random.default_rng(batch).standard_normal((batch, steps, 3)).astype(np.float32)
    x[:, :, 0] = np.where(np.arange(steps) < UP, 1.0, -1.0)
    expected = list(_litert(path, x).values())
    got = mlconv.compile(str(path))(x)
    assert len(got) == len(expected) == 2
    for g, e in zip(got, expected, strict=True):
        g = np.asarray(g)
        assert g.shape == e.shape and g.dtype == e.dtype
        assert np.abs(g - e).max() <= RTOL * np.abs(e).max()

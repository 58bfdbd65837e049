"""TensorFlow models as their users have them (issue 35): ops, control flow and RNNs that Keras
3 and tf.function emit, each model built here with fixed seeds and a `None` batch, saved as a
SavedModel, converted once and compared with TensorFlow at two batch sizes (float, max |diff|
<= 1e-4 * max |reference| per output).

The references are TensorFlow's own functions run eagerly (for the image ops: the tf.raw_ops
kernels with every align_corners / half_pixel_centers combination TensorFlow accepts). Each
model first shows that its outputs move with the input (`sensitivity.assert_input_sensitive`).
TensorFlow's import is slow, so the TF model classes share this one file and its
session-scoped SavedModels.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import sensitivity  # noqa: E402 - a module beside this one (conftest.py)

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import mlconv  # noqa: E402
from mlconv.errors import MlconvError  # noqa: E402

RTOL = 1e-4
BATCHES = (2, 3)
IMAGE = (6, 8, 3)


def assert_matches(got, expected, names) -> None:
    assert len(got) == len(expected)
    for name, actual, reference in zip(names, got, expected, strict=True):
        reference = np.asarray(reference)
        assert actual.shape == reference.shape, name
        scale = max(float(np.abs(reference).max()), 1e-30)
        error = float(np.abs(actual.astype(np.float64) - reference).max()) / scale
        assert error <= RTOL, f"{name}: {error:.2e} of max |reference|"


def save(module, folder, fn) -> str:
    tf.saved_model.save(
        module,
        str(folder),
        signatures={"serving_default": fn},
        options=tf.saved_model.SaveOptions(function_aliases={"tpu_func": fn}),
    )
    return str(folder)


def saved_tpu_func(module, folder) -> tuple[str, object, object]:
    """`module` saved with its `tpu_func` as the serving signature and the alias: (folder,
    tpu_func, module), the module returned too because the method holds it weakly."""
    return save(module, folder, module.tpu_func), module.tpu_func, module


def reference(fn, *arrays) -> tuple[list[str], list[np.ndarray]]:
    """TensorFlow's outputs in the order of their names (a signature's flat order)."""
    result = fn(*[tf.constant(a) for a in arrays])
    if isinstance(result, dict):
        names = sorted(result)
        return names, [result[n].numpy() for n in names]
    result = result if isinstance(result, list | tuple) else [result]
    return [f"output_{i}" for i in range(len(result))], [r.numpy() for r in result]


def image(batch: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((batch, *IMAGE)).astype(np.float32)


# --------------------------------------------------------------------------- ops (item 1)

RESIZE_FLAGS = {"asym": (False, False), "corners": (True, False), "half": (False, True)}
RESIZE_SIZES = {"up": (9, 13), "down": (4, 5)}


class OpsModule(tf.Module):
    @tf.function(input_signature=[tf.TensorSpec([None, *IMAGE], tf.float32)])
    def tpu_func(self, x):
        out = {}
        mean = tf.reduce_mean(x, axis=[1, 2], keepdims=True)
        out["broadcast_to"] = tf.broadcast_to(mean, tf.shape(x)) * x
        out["range"] = x[:, :, :, 0] * tf.range(1, 17, 2, dtype=tf.float32)
        first, second = tf.split(x, [3, -1], axis=2)
        out["split_v"] = first * 2.0 + second[:, :, 1:4]
        a, b, c = tf.split(x, 3, axis=3)
        out["split"] = a + b * c
        for size_name, size in RESIZE_SIZES.items():
            for flag_name, (corners, half) in RESIZE_FLAGS.items():
                key = f"{size_name}_{flag_name}"
                out[f"bilinear_{key}"] = tf.raw_ops.ResizeBilinear(
                    images=x, size=size, align_corners=corners, half_pixel_centers=half
                )
                out[f"nearest_{key}"] = tf.raw_ops.ResizeNearestNeighbor(
                    images=x, size=size, align_corners=corners, half_pixel_centers=half
                )
            for flag_name in ("asym", "half"):
                corners, half = RESIZE_FLAGS[flag_name]
                out[f"bicubic_{size_name}_{flag_name}"] = tf.raw_ops.ResizeBicubic(
                    images=x, size=size, align_corners=corners, half_pixel_centers=half
                )
        out["contrast"] = tf.image.adjust_contrast(x, 1.7)
        buckets = tf.raw_ops.Bucketize(input=x, boundaries=[-1.0, 0.0, 0.5])
        out["bucketize"] = tf.cast(buckets, tf.float32) + x
        target = tf.raw_ops.BroadcastArgs(s0=tf.shape(mean[0]), s1=tf.shape(x))
        out["broadcast_args"] = tf.broadcast_to(mean[0], target) * x
        ids = tf.reshape(
            tf.cast(tf.clip_by_value(x[..., 0] * 2.0 + 2.0, 0.0, 4.0), tf.int32), [-1, 48]
        )
        counts = tf.raw_ops.DenseBincount(
            input=ids, size=5, weights=tf.zeros([0]), binary_output=False
        )
        out["bincount"] = counts + tf.reduce_sum(x, axis=[1, 2])[:, :1]
        out["size"] = tf.cast(tf.size(x), tf.float32) * x + tf.zeros_like(x)
        rows = tf.stack([tf.shape(x)[0], 3, 4, -1])
        out["computed_slice"] = tf.slice(x, [0, 1, 2, 1], rows)
        signal = x[:, :, :, 0]  # [batch, 6, 8]: transforms along the last axis
        spectrum = tf.signal.rfft(signal)
        out["rfft_abs"] = tf.abs(spectrum)
        out["rfft_angle"] = tf.math.angle(spectrum)
        out["rfft_padded"] = tf.math.real(tf.signal.rfft(signal, fft_length=[11]))
        out["rfft_cut"] = tf.math.imag(tf.signal.rfft(signal, fft_length=[6]))
        half_spectrum = tf.complex(x[:, :, :5, 1], x[:, :, :5, 2])
        out["irfft"] = tf.signal.irfft(half_spectrum)
        out["irfft_odd"] = tf.signal.irfft(half_spectrum, fft_length=[9])
        full = tf.complex(signal, x[:, :, :, 1])
        out["fft_angle"] = tf.math.angle(tf.signal.fft(full))
        out["ifft_abs"] = tf.abs(tf.signal.ifft(tf.math.conj(full)))
        return out


@pytest.fixture(scope="session")
def ops_model(tmp_path_factory):
    return saved_tpu_func(OpsModule(), tmp_path_factory.mktemp("tf_ops") / "ops")


def test_ops_match_tensorflow_at_two_batch_sizes(ops_model):
    folder, fn, _ = ops_model
    run = mlconv.compile(folder, quiet=True)
    names, first = reference(fn, image(2, 1))
    _, moved = reference(fn, image(2, 2))
    for name, a, b in zip(names, first, moved, strict=True):
        sensitivity.assert_input_sensitive(a, b, rtol=RTOL, what=name)
    for batch in BATCHES:
        x = image(batch, 3 + batch)
        assert_matches(run(x), reference(fn, x)[1], names)


def test_resize_with_both_flags_is_refused(tmp_path):
    """TensorFlow refuses align_corners with half_pixel_centers when it runs the kernel; the
    converter says so at conversion, one line at the node."""

    class Both(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([1, *IMAGE], tf.float32)])
        def f(self, x):
            return tf.raw_ops.ResizeBilinear(
                images=x, size=[3, 3], align_corners=True, half_pixel_centers=True
            )

    module = Both()
    folder = save(module, tmp_path / "both", module.f)
    with pytest.raises(tf.errors.InvalidArgumentError):
        module.f(image(1, 0))
    with pytest.raises(MlconvError, match="ResizeBilinear.*align_corners and half_pixel_centers"):
        mlconv.compile(folder, quiet=True)


def test_transposed_convolutions_match_keras(tmp_path):
    """Conv2DBackpropInput (SAME with stride 2; VALID with stride 3 and leftover rows) and
    Conv1DTranspose, `None` batch, at two batch sizes."""
    keras.utils.set_random_seed(4)
    inputs = keras.Input((5, 6, 2))
    layers = keras.layers
    same = layers.Conv2DTranspose(3, 3, strides=2, padding="same")(inputs)
    valid = layers.Conv2DTranspose(2, 4, strides=3)(inputs)
    line = layers.Conv1DTranspose(3, 3, strides=2, padding="same")(layers.Reshape((30, 2))(inputs))
    model = keras.Model(inputs, [same, valid, line])
    model.export(str(tmp_path / "transposed"), format="tf_saved_model", verbose=False)
    run = mlconv.compile(str(tmp_path / "transposed"), quiet=True)
    for batch in BATCHES:
        x = np.random.default_rng(batch).standard_normal((batch, 5, 6, 2)).astype(np.float32)
        assert_matches(run(x), [np.asarray(y) for y in model(x)], ["same", "valid", "line"])


def test_keras_preprocessing_model_export_matches(tmp_path):
    """Rescaling, Resizing (bilinear, Keras's default) and Normalization inside a Keras model
    exported with `Model.export()`, `None` batch, at two batch sizes."""
    keras.utils.set_random_seed(5)
    layers = keras.layers
    inputs = keras.Input((10, 12, 3))
    x = layers.Rescaling(1 / 127.5, offset=-1.0)(inputs)
    x = layers.Resizing(7, 9)(x)
    x = layers.Normalization(mean=[0.1, -0.2, 0.3], variance=[0.5, 1.5, 2.0])(x)
    x = layers.Conv2D(4, 3, activation="relu")(x)
    model = keras.Model(inputs, layers.Dense(3)(layers.GlobalAveragePooling2D()(x)))
    model.export(str(tmp_path / "preprocessing"), format="tf_saved_model", verbose=False)
    run = mlconv.compile(str(tmp_path / "preprocessing"), quiet=True)
    rng = np.random.default_rng(5)
    for batch in BATCHES:
        x = rng.uniform(0, 255, (batch, 10, 12, 3)).astype(np.float32)
        assert_matches(run(x), [np.asarray(model(x))], ["logits"])


def test_keras_mel_spectrogram_matches(tmp_path):
    """Keras MelSpectrogram: tf.signal.frame's SplitV with computed sizes, tf.linspace's
    computed concat axis and strided-slice bounds, RFFT and its magnitude."""
    inputs = keras.Input((128,))
    mel = keras.layers.MelSpectrogram(
        fft_length=32, sequence_stride=8, sequence_length=32, num_mel_bins=8
    )
    model = keras.Model(inputs, mel(inputs))
    model.export(str(tmp_path / "mel"), format="tf_saved_model", verbose=False)
    run = mlconv.compile(str(tmp_path / "mel"), quiet=True)
    for batch in BATCHES:
        x = np.random.default_rng(batch).standard_normal((batch, 128)).astype(np.float32)
        assert_matches(run(x), [np.asarray(model(x))], ["mel"])


# --------------------------------------------------------------------------- TFLite builtins (item 2)

TFLITE_BUILTINS = {
    "RESIZE_BILINEAR",
    "RESIZE_NEAREST_NEIGHBOR",
    "TILE",
    "BROADCAST_TO",
    "LESS",
    "SELECT_V2",
    "SLICE",
    "UNSORTED_SEGMENT_PROD",
}


@tf.function(input_signature=[tf.TensorSpec([None, *IMAGE], tf.float32)])
def tflite_builtins(x):
    resize = tf.compat.v1.image
    ids = [0, 2, 1, 0, 2, 4, 1, 0]  # segment 3 is empty: its product is 1
    return {
        "bilinear_half": resize.resize_bilinear(x, [9, 13], half_pixel_centers=True),
        "bilinear_corners": resize.resize_bilinear(x, [4, 5], align_corners=True),
        "bilinear_asym": resize.resize_bilinear(x, [4, 11]),
        "nearest_half": resize.resize_nearest_neighbor(x, [9, 13], half_pixel_centers=True),
        "nearest_corners": resize.resize_nearest_neighbor(x, [4, 5], align_corners=True),
        "tile": tf.tile(x[:, :2], [1, 2, 1, 1]),
        "broadcast_to": tf.broadcast_to(tf.reduce_mean(x, axis=[1, 2], keepdims=True), tf.shape(x)),
        "select": tf.where(tf.less(x, 0.3), x * 2.0, -x),
        "slice": tf.slice(x, [0, 1, 2, 0], [-1, 3, 4, 2]),
        "segment_prod": tf.math.unsorted_segment_prod(
            tf.transpose(x[0], [1, 0, 2]), ids, num_segments=5
        ),
    }


@pytest.fixture(scope="session")
def builtins_tflite(tmp_path_factory):
    converter = tf.lite.TFLiteConverter.from_concrete_functions(
        [tflite_builtins.get_concrete_function()]
    )
    path = tmp_path_factory.mktemp("tf_ops_tflite") / "builtins.tflite"
    path.write_bytes(converter.convert())
    return path


def litert(path, x) -> list[np.ndarray]:
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=str(path))
    index = interpreter.get_input_details()[0]["index"]
    interpreter.resize_tensor_input(index, x.shape)
    interpreter.allocate_tensors()
    interpreter.set_tensor(index, x)
    interpreter.invoke()
    return [interpreter.get_tensor(o["index"]) for o in interpreter.get_output_details()]


def test_tflite_builtins_match_litert_at_two_batch_sizes(builtins_tflite):
    pytest.importorskip("ai_edge_litert.interpreter")
    from mlconv.frontends.tflite_importer import import_tflite

    operators = {getattr(op, "operator", None) for op in import_tflite(builtins_tflite).walk()}
    assert TFLITE_BUILTINS <= operators, sorted(TFLITE_BUILTINS - operators)
    run = mlconv.compile(str(builtins_tflite), quiet=True)
    first, moved = litert(builtins_tflite, image(2, 1)), litert(builtins_tflite, image(2, 2))
    for k, (a, b) in enumerate(zip(first, moved, strict=True)):
        sensitivity.assert_input_sensitive(a, b, rtol=RTOL, what=f"output {k}")
    for batch in BATCHES:
        x = image(batch, 5 + batch)
        expected = litert(builtins_tflite, x)
        assert_matches(run(x), expected, [f"output {k}" for k in range(len(expected))])


# --------------------------------------------------------------------------- control flow (item 3)


class ControlFlow(tf.Module):
    """tf.cond (StatelessIf) choosing between branches by a data-dependent predicate, and a
    tf.while_loop (StatelessWhile) whose trip count depends on the data too."""

    def __init__(self):
        super().__init__()
        rng = np.random.default_rng(0)
        self.w = tf.constant(rng.standard_normal((4, 4)).astype(np.float32) * 0.5)

    @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32)])
    def tpu_func(self, x):
        y = tf.cond(tf.reduce_sum(x) > 0, lambda: tf.nn.relu(x @ self.w), lambda: tf.tanh(x) - 1.0)

        def body(i, h):
            # each row mixed with the next one's: slices whose bounds follow the batch
            rolled = tf.concat([h[1:], h[:1]], axis=0)
            return i + 1, tf.tanh(h @ self.w + x) * 1.5 + 0.1 * rolled

        steps, h = tf.while_loop(
            lambda i, h: tf.logical_and(i < 6, tf.reduce_max(h) < 1.2), body, (tf.constant(0), x)
        )
        return {"cond": y, "loop": h, "steps": tf.cast(steps, tf.float32) * tf.ones([1])}


@pytest.fixture(scope="session")
def control_model(tmp_path_factory):
    return saved_tpu_func(ControlFlow(), tmp_path_factory.mktemp("tf_control") / "control")


def test_if_and_while_match_tensorflow(control_model):
    """Both branches of the If and different trip counts of the While, at two batch sizes."""
    folder, fn, _ = control_model
    run = mlconv.compile(folder, quiet=True)
    rng = np.random.default_rng(7)
    positive = np.abs(rng.standard_normal((2, 4))).astype(np.float32)
    negative = -np.abs(rng.standard_normal((3, 4))).astype(np.float32) * 0.2
    names, first = reference(fn, positive)
    _, second = reference(fn, negative)
    assert first[names.index("steps")][0] != second[names.index("steps")][0]
    for x, expected in ((positive, first), (negative, second)):
        assert_matches(run(x), expected, names)


def test_convert_with_a_none_batch_matches_tensorflow(control_model, tmp_path):
    """mlconv-convert with a `tpu_func` alias and a `None` batch: tpu.cond / tpu.while over
    values of symbolic shape export as lax.cond / while_loop with the batch symbol, one export
    for every batch; the module's captured tf.constant (frozen by the importer) is not an input
    of the converted function. mlconv.load's signature matches TensorFlow at batch 2 (then
    branch) and 3 (else branch, the loop running)."""
    import json
    import subprocess

    folder, fn, _ = control_model
    out = tmp_path / "out"
    options = 'tpu_functions {\n  function_alias: "tpu_func"\n}\n'
    result = subprocess.run(
        ["mlconv-convert", folder, "-o", str(out), "--quiet"]
        + ["--converter-options-string", options],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr.strip().splitlines()[-1:]
    assert "b" in json.loads((out / "manifest.json").read_text())["symbolic_dims"]["symbols"]
    run = mlconv.load(out).signatures["serving_default"]
    rng = np.random.default_rng(7)
    positive = np.abs(rng.standard_normal((2, 4))).astype(np.float32)
    negative = -np.abs(rng.standard_normal((3, 4))).astype(np.float32) * 0.2
    steps = []
    for x in (positive, negative):
        names, expected = reference(fn, x)
        got = run(x=x)
        assert sorted(got) == names
        assert_matches([np.asarray(got[n]) for n in names], expected, names)
        steps.append(float(expected[names.index("steps")][0]))
    assert steps[0] != steps[1] and max(steps) > 0


# --------------------------------------------------------------------------- Keras RNNs (item 4)


@pytest.fixture(scope="session")
def rnn_model(tmp_path_factory):
    """LSTM, GRU, SimpleRNN and a bidirectional LSTM behind one Masking layer, `None` batch
    and sequence: their while loops fill TensorLists (Keras 3's TensorArrays)."""
    keras.utils.set_random_seed(3)
    inputs = keras.Input((None, 4))
    masked = keras.layers.Masking(0.0)(inputs)
    layers = keras.layers
    outputs = [
        layers.LSTM(3, return_sequences=True)(masked),
        layers.GRU(3)(masked),
        layers.SimpleRNN(3, return_sequences=True)(masked),
        layers.Bidirectional(layers.LSTM(2, return_sequences=True))(masked),
    ]
    model = keras.Model(inputs, outputs)
    folder = tmp_path_factory.mktemp("tf_rnn") / "rnn"
    model.export(str(folder), format="tf_saved_model", verbose=False)
    return str(folder), model


def sequences(batch: int, steps: int, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((batch, steps, 4)).astype(np.float32)
    x[0, -2:] = 0.0  # masked: the state carries over these steps
    x[-1, 1] = 0.0
    return x


def test_keras_rnns_match_tensorflow(rnn_model):
    """Two batch sizes and two sequence lengths from one conversion."""
    folder, model = rnn_model
    run = mlconv.compile(folder, quiet=True)
    names = ["lstm", "gru", "simple_rnn", "bidirectional"]
    first = [np.asarray(y) for y in model(sequences(2, 5, 1))]
    moved = [np.asarray(y) for y in model(sequences(2, 5, 2))]
    for name, a, b in zip(names, first, moved, strict=True):
        sensitivity.assert_input_sensitive(a, b, rtol=RTOL, what=name)
    for batch, steps in ((2, 5), (3, 7)):
        x = sequences(batch, steps, 10 + batch)
        assert_matches(run(x), [np.asarray(y) for y in model(x)], names)

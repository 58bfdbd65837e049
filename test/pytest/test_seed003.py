"""Every example of seed 003 (the Cloud TPU Inference Converter), as the seed writes it.

Each model is saved as the seed shows (a `tf.function` whose `input_signature` has a `None`
batch dimension, function aliases through `tf.saved_model.SaveOptions`), converted with the
seed's options text and no other flag (no `--input-shapes`: the TPU functions are exported
with a symbolic batch dimension, backends/symbolic.py), then served both ways, with 1, 3 and
11 rows: `mlconv.load(OUT).signatures["serving_default"](x=...)` and the seed's own serving
code on `OUT/saved_model`, each against TensorFlow running the source model (float32 within
1e-5; with the default bfloat16 optimization within 2e-2 of the largest output).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from onnx_graphs import float_model
from seed_models import BATCH_OPTIONS, TPU_FUNCTIONS, batch_options

import mlconv
from mlconv.errors import MlconvError
from mlconv.tools.mlconv_convert import convert

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
tf = pytest.importorskip("tensorflow")

ROWS = (1, 3, 11)

# --- the seed's options texts (its shared blocks in seed_models.py), verbatim ---------------

CONVERTER_IMAGE = TPU_FUNCTIONS + BATCH_OPTIONS

FUNC_ON_TPU = 'tpu_functions { function_alias: "func_on_tpu" }'

SEVERAL = """tpu_functions {
  function_alias: "tpu_func_1"
}
tpu_functions {
  function_alias: "tpu_func_2"
}
"""

SIGNATURE_BATCHING = batch_options('signature_name: "serving_default"')

FUNCTION_BATCHING = batch_options('function_alias: "batch_func"')

DISABLE_DEFAULTS = """# Disable both optimizations
disable_default_optimizations: true
"""

DISABLE_EACH = """# Or disable them individually
io_shape_optimization: DISABLED
bfloat16_optimization: DISABLED
"""

UPDATE_BATCH_OPTIONS = BATCH_OPTIONS + "disable_default_optimizations=True\n"

CONCRETE_FUNCTION = """
    tpu_functions {
      concrete_function_name: "%s"
    }"""


# --- the models, saved as the seed saves them ---------------------------------------------------


def _weights(seed: int, shape: tuple[int, ...]) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _seed_toy_model(folder: Path, method: str, alias: str) -> Path:
    """The seed's ToyModel (`x * 1.0` on a None batch of 10 features) whose tf.function `method`
    is saved under the function alias `alias`: the seed's two toy examples, verbatim but for
    these two names."""

    def function(self, x):
        return x * 1.0

    function.__name__ = function.__qualname__ = method
    spec = [tf.TensorSpec(shape=[None, 10], dtype=tf.float32)]
    toy_model_class = type(
        "ToyModel", (tf.keras.Model,), {method: tf.function(function, input_signature=spec)}
    )
    model = toy_model_class()
    save_options = tf.saved_model.SaveOptions(function_aliases={alias: getattr(model, method)})
    tf.saved_model.save(model, str(folder), options=save_options)
    return folder


@pytest.fixture(scope="session")
def toy_model(tmp_path_factory) -> Path:
    """The seed's ToyModel with `func_on_tpu` (its `tpu_func`)."""
    return _seed_toy_model(tmp_path_factory.mktemp("toy") / "model", "tpu_func", "func_on_tpu")


@pytest.fixture(scope="session")
def tpu_func_model(tmp_path_factory) -> Path:
    """The seed's pattern with `tpu_func` (its first example's alias): a ToyModel whose
    `tpu_func` computes a small dense layer with fixed random weights."""
    model_dir = str(tmp_path_factory.mktemp("tpu_func") / "model")
    w, b = _weights(1, (10, 6)), _weights(2, (6,))

    class ToyModel(tf.keras.Model):
        def __init__(self):
            super().__init__()
            self.w = tf.Variable(w)
            self.b = tf.Variable(b)

        @tf.function(input_signature=[tf.TensorSpec(shape=[None, 10], dtype=tf.float32)])
        def tpu_func(self, x):
            return tf.nn.relu(tf.matmul(x, self.w) + self.b) - 0.25 * x[:, :6]

    model = ToyModel()
    save_options = tf.saved_model.SaveOptions(function_aliases={"tpu_func": model.tpu_func})
    tf.saved_model.save(model, model_dir, options=save_options)
    return Path(model_dir)


@pytest.fixture(scope="session")
def several_model(tmp_path_factory) -> Path:
    """Two TPU functions, `tpu_func_1` and `tpu_func_2`, called one after the other by the
    serving signature (host work, `+ 1`, between them)."""
    model_dir = str(tmp_path_factory.mktemp("several") / "model")
    w1, w2 = _weights(3, (10, 8)), _weights(4, (8, 5))
    spec = [tf.TensorSpec(shape=[None, 10], dtype=tf.float32)]

    class ToyModel(tf.keras.Model):
        def __init__(self):
            super().__init__()
            self.w1 = tf.Variable(w1)
            self.w2 = tf.Variable(w2)

        @tf.function(input_signature=spec)
        def tpu_func_1(self, x):
            return tf.tanh(tf.matmul(x, self.w1))

        @tf.function(input_signature=[tf.TensorSpec(shape=[None, 8], dtype=tf.float32)])
        def tpu_func_2(self, h):
            return tf.matmul(h, self.w2)

        @tf.function(input_signature=spec)
        def serve(self, x):
            return {"y": self.tpu_func_2(self.tpu_func_1(x) + 1.0)}

    model = ToyModel()
    save_options = tf.saved_model.SaveOptions(
        function_aliases={"tpu_func_1": model.tpu_func_1, "tpu_func_2": model.tpu_func_2}
    )
    tf.saved_model.save(
        model, model_dir, signatures={"serving_default": model.serve}, options=save_options
    )
    return Path(model_dir)


@pytest.fixture(scope="session")
def batch_func_model(tmp_path_factory) -> Path:
    """The seed's function batching ToyModel with `batch_func`."""
    folder = tmp_path_factory.mktemp("batch_func") / "model"
    return _seed_toy_model(folder, "batch_func", "batch_func")


# --- serving ------------------------------------------------------------------------------------


def source_outputs(model: Path, x: np.ndarray) -> dict[str, np.ndarray]:
    loaded = tf.saved_model.load(str(model))
    results = loaded.signatures["serving_default"](x=tf.constant(x))
    return {name: value.numpy() for name, value in results.items()}


def check_served(model: Path, out: Path, tolerance: float) -> None:
    """Both serving paths, 1, 3 and 11 rows, against TensorFlow on the source."""
    rng = np.random.default_rng(7)
    # a host part kept in TensorFlow runs the artifact's own graph only when allowed (issue 28)
    loaded = mlconv.load(out, allow_tensorflow=True)
    saved_model = tf.saved_model.load(str(out / "saved_model"))
    try:
        for rows in ROWS:
            x = rng.standard_normal((rows, 10)).astype(np.float32)
            expected = source_outputs(model, x)
            ours = loaded.signatures["serving_default"](x=x)
            served = saved_model.signatures["serving_default"](x=tf.constant(x))
            for got in (ours, {k: v.numpy() for k, v in served.items()}):
                assert got.keys() == expected.keys()
                for name, want in expected.items():
                    assert got[name].shape == want.shape, (rows, name)
                    error = np.abs(got[name] - want).max() / max(np.abs(want).max(), 1e-6)
                    assert error <= tolerance, (rows, name, error)
    finally:
        getattr(loaded, "close", lambda: None)()


# --- the examples -------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def converter_image(tpu_func_model, tmp_path_factory):
    """The seed's converter-image example, through mlconv-convert with the seed's flag
    spellings; returns the output folder and the tool's stderr."""
    out = tmp_path_factory.mktemp("image") / "converted"
    command = [
        sys.executable,
        "-m",
        "mlconv.tools.mlconv_convert",
        f"--input_model_dir={tpu_func_model}",
        f"--output_model_dir={out}",
        f"--converter_options_string={CONVERTER_IMAGE}",
    ]
    result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    return out, result.stderr


def test_converter_image_example(tpu_func_model, converter_image):
    """tpu_func placed, batched with the seed's options, any number of rows."""
    out, stderr = converter_image
    assert "Symbolic dimensions: b" in stderr
    manifest = mlconv.load(out).manifest
    assert manifest["symbolic_dims"]["symbols"] == {"b": [{"input": "x", "axis": 0}]}
    assert manifest["symbolic_dims"]["constraints"] == ["b >= 1"]
    assert manifest["batches"][0]["options"]["allowed_batch_sizes"] == [2, 4, 8]
    check_served(tpu_func_model, out, 2e-2)


def test_concurrent_callers_get_their_own_rows(converter_image):
    """bench/batching.py's correctness part, small: 16 callers, 120 requests of 1..8 rows to
    the seed's batched artifact; each answer is its request's rows alone (bfloat16 roundings
    aside, which depend on the batch a row ran in); a full queue is retried."""
    from concurrent.futures import ThreadPoolExecutor

    from mlconv.converter.batcher import QueueFullError

    out, _ = converter_image
    rng = np.random.default_rng(11)
    requests = [
        rng.standard_normal((int(k), 10)).astype(np.float32) for k in rng.integers(1, 9, 120)
    ]
    with mlconv.load(out) as model:
        alone = [model.loaded(x)[0] for x in requests]

        def call(x):
            while True:
                try:
                    return model(x)[0]
                except QueueFullError:
                    time.sleep(0.005)

        with ThreadPoolExecutor(max_workers=16) as pool:
            answers = list(pool.map(call, requests))
        stats = model.stats
    scale = max(np.abs(a).max() for a in alone)
    for x, got, want in zip(requests, answers, alone, strict=True):
        assert got.shape == (len(x), 6)
        assert np.abs(got - want).max() <= 1e-2 * scale
    assert sum(v for k, v in stats.items() if k.startswith("batches@")) < len(requests)


def test_toy_model_func_on_tpu(toy_model, tmp_path):
    out = tmp_path / "out"
    manifest = convert(str(toy_model), str(out), FUNC_ON_TPU)
    assert manifest["inputs"][0]["shape"] == [-1, 10]
    check_served(toy_model, out, 2e-2)
    loaded = mlconv.load(out)
    for rows in (2, 5, 2, 5):
        loaded(np.ones((rows, 10), np.float32))
    assert loaded._calls["func_on_tpu"].compilations == 2  # noqa: SLF001 - once per shape


def test_several_tpu_functions(several_model, tmp_path):
    out = tmp_path / "out"
    manifest = convert(str(several_model), str(out), SEVERAL)
    assert [f["name"] for f in manifest["functions"]] == ["tpu_func_1", "tpu_func_2"]
    check_served(several_model, out, 2e-2)


def test_concrete_function_name(tpu_func_model, tmp_path):
    """The concrete name found as the seed says, by looking into saved_model.pb."""
    from tensorflow.core.protobuf import saved_model_pb2

    proto = saved_model_pb2.SavedModel()
    proto.ParseFromString((tpu_func_model / "saved_model.pb").read_bytes())
    name = dict(proto.meta_graphs[0].meta_info_def.function_aliases)
    (concrete,) = [k for k, v in name.items() if v == "tpu_func"]
    out = tmp_path / "out"
    convert(str(tpu_func_model), str(out), CONCRETE_FUNCTION % concrete)
    check_served(tpu_func_model, out, 2e-2)


def test_signature_batching(tpu_func_model, tmp_path):
    out = tmp_path / "out"
    manifest = convert(str(tpu_func_model), str(out), SIGNATURE_BATCHING + DISABLE_EACH)
    assert manifest["batches"][0]["component"] == "signature_name"
    check_served(tpu_func_model, out, 1e-5)


def test_function_batching(batch_func_model, tmp_path):
    out = tmp_path / "out"
    manifest = convert(str(batch_func_model), str(out), FUNCTION_BATCHING)
    assert manifest["batches"][0]["component_name"] == "batch_func"
    check_served(batch_func_model, out, 2e-2)


@pytest.mark.parametrize(
    "text", [DISABLE_DEFAULTS, DISABLE_EACH], ids=["disable_default", "disabled_each"]
)
def test_disabled_optimizations_are_float32_exact(tpu_func_model, tmp_path, text):
    out = tmp_path / "out"
    manifest = convert(
        str(tpu_func_model), str(out), 'tpu_functions { function_alias: "tpu_func" }\n' + text
    )
    assert manifest["bfloat16"] is False and manifest["io_shape_optimization"] is False
    check_served(tpu_func_model, out, 1e-5)


def test_updating_existing_batch_options(tpu_func_model, tmp_path):
    """The seed's text as it writes it, `disable_default_optimizations=True` included."""
    out = tmp_path / "out"
    manifest = convert(str(tpu_func_model), str(out), UPDATE_BATCH_OPTIONS)
    assert manifest["bfloat16"] is False
    assert manifest["batches"][0]["options"]["max_batch_size"] == 8
    check_served(tpu_func_model, out, 1e-5)


def test_a_dim_that_is_not_linear_in_the_batch_is_one_line(tmp_path):
    """A model whose shapes are a product of its dynamic dims cannot be symbolic: the error
    names the op and says what to do."""
    model_dir = tmp_path / "model"

    class Outer(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec(shape=[None], dtype=tf.float32)])
        def tpu_func(self, x):
            return tf.reshape(x[:, None] * x[None, :], [-1])

    model = Outer()
    tf.saved_model.save(
        model,
        str(model_dir),
        options=tf.saved_model.SaveOptions(function_aliases={"tpu_func": model.tpu_func}),
    )
    with pytest.raises(MlconvError, match=r"op .*not linear in b.*--input-shapes"):
        convert(
            str(model_dir), str(tmp_path / "out"), 'tpu_functions { function_alias: "tpu_func" }'
        )
    assert not (tmp_path / "out").exists()


def dynamic_batch_cnn():
    """A small CNN with a dynamic batch `N` (convolution, depthwise, pooling, Gemm), random
    weights."""
    from onnx import helper, numpy_helper

    rng = np.random.default_rng(0)

    def weight(name, shape):
        return numpy_helper.from_array(0.3 * rng.standard_normal(shape).astype(np.float32), name)

    nodes = [
        helper.make_node("Conv", ["x", "c1", "b1"], ["h1"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["h1"], ["r1"]),
        helper.make_node("Conv", ["r1", "c2"], ["h2"], pads=[1, 1, 1, 1], group=8),
        helper.make_node("Relu", ["h2"], ["r2"]),
        helper.make_node("Conv", ["r2", "c3"], ["h3"]),
        helper.make_node("MaxPool", ["h3"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("GlobalAveragePool", ["p"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Gemm", ["f", "fc", "fb"], ["y"]),
    ]
    weights = [
        weight("c1", (8, 3, 3, 3)),
        weight("b1", (8,)),
        weight("c2", (8, 1, 3, 3)),
        weight("c3", (16, 8, 1, 1)),
        weight("fc", (16, 5)),
        weight("fb", (5,)),
    ]
    return float_model(nodes, {"x": ["N", 3, 16, 16]}, {"y": ["N", 5]}, weights, name="cnn")


def test_dynamic_batch_onnx_cnn_compiles_once_per_shape(tmp_path):
    """One conversion serves batch 1, 3 and 16: three XLA compilations (counted by JAX's own
    compile log), none again for shapes it has seen; outputs match onnxruntime (bf16)."""
    import logging

    import jax
    import onnx
    import onnxruntime as ort

    path = tmp_path / "cnn.onnx"
    onnx.save(dynamic_batch_cnn(), str(path))
    manifest = convert(str(path), str(tmp_path / "out"), "")
    assert manifest["inputs"][0]["shape"] == [-1, 3, 16, 16]
    assert manifest["symbolic_dims"]["symbols"] == {"b": [{"input": "x", "axis": 0}]}
    compiled: list[str] = []

    class Count(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "Finished XLA compilation" in record.getMessage():
                compiled.append(record.getMessage())

    handler, logger = Count(), logging.getLogger("jax")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    session = ort.InferenceSession(str(path))
    rng = np.random.default_rng(3)
    try:
        with jax.log_compiles(True):
            loaded = mlconv.load(tmp_path / "out")
            for rows in (1, 3, 16, 1, 3, 16, 3):
                x = rng.standard_normal((rows, 3, 16, 16)).astype(np.float32)
                (y,) = loaded(x)
                (want,) = session.run(None, {"x": x})
                assert y.shape == (rows, 5)
                assert np.abs(y - want).max() <= 2e-2 * np.abs(want).max()
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    assert len(compiled) == 3, compiled
    assert loaded._calls["tpu_function_0"].compilations == 3  # noqa: SLF001
    served = tf.saved_model.load(str(tmp_path / "out" / "saved_model")).signatures[
        "serving_default"
    ]
    for rows in (1, 3, 16):
        x = rng.standard_normal((rows, 3, 16, 16)).astype(np.float32)
        (want,) = session.run(None, {"x": x})
        (y,) = served(x=tf.constant(x)).values()
        assert np.abs(y.numpy() - want).max() <= 2e-2 * np.abs(want).max()


QUANTIZATION = """ \\
    tpu_functions { \\
      function_alias: "tpu_func" \\
    } \\
    external_feature_configs { \\
      quantization_options { \\
        signature_keys: "serving_default" \\
        representative_datasets: { \\
          key: "serving_default" \\
          value: { \\
            tfrecord_file_path: "${TF_RECORD_FILE}" \\
          } \\
        } \\
      } \\
    } """


def test_quantization_with_the_seeds_dataset(tmp_path):
    """The seed's quantization text (its shell line continuations kept) with a dataset saved
    as the seed saves it (256 samples of x: 3x3), on a None-batch tpu_func over 3 features:
    static-range quantized, symbolic in the batch, served at 1, 3 and 11 rows."""
    model_dir = tmp_path / "model"
    w = _weights(5, (3, 4))

    class ToyModel(tf.keras.Model):
        def __init__(self):
            super().__init__()
            self.w = tf.Variable(w)

        @tf.function(input_signature=[tf.TensorSpec(shape=[None, 3], dtype=tf.float32)])
        def tpu_func(self, x):
            return tf.nn.relu(tf.matmul(x, self.w))

    model = ToyModel()
    tf.saved_model.save(
        model,
        str(model_dir),
        options=tf.saved_model.SaveOptions(function_aliases={"tpu_func": model.tpu_func}),
    )
    dataset_path = str(tmp_path / "representative_dataset_path")
    tf.random.set_seed(0)
    representative_dataset = [{"x": tf.random.uniform(shape=(3, 3))} for _ in range(256)]
    tf.quantization.experimental.TfRecordRepresentativeDatasetSaver(
        path_map={"serving_default": dataset_path}
    ).save({"serving_default": representative_dataset})
    out = tmp_path / "out"
    text = QUANTIZATION.replace("${TF_RECORD_FILE}", dataset_path)  # what the shell meant
    manifest = convert(str(model_dir), str(out), text)
    assert manifest["symbolic_dims"]["symbols"] == {"b": [{"input": "x", "axis": 0}]}
    assert manifest["quantization"]
    rng = np.random.default_rng(9)
    loaded = mlconv.load(out)
    saved_model = tf.saved_model.load(str(out / "saved_model"))
    for rows in ROWS:
        x = rng.uniform(0, 1, (rows, 3)).astype(np.float32)
        (want,) = source_outputs(model_dir, x).values()
        (ours,) = loaded.signatures["serving_default"](x=x).values()
        (served,) = saved_model.signatures["serving_default"](x=tf.constant(x)).values()
        for got in (ours, served.numpy()):
            assert got.shape == want.shape
            # int8 quantization: within a few steps of the output range
            assert np.abs(got - want).max() <= 3e-2 * np.abs(want).max()

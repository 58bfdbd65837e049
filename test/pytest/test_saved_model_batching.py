"""Batching in the SavedModel form of a SavedModel source: the placed function that
batch_options select becomes TensorFlow's own BatchFunction op (with the options' sizes,
timeout, allowed batch sizes and queue bound) around its XlaCallModule, inside the source's
function library, so concurrent callers of the loaded SavedModel's signature are batched.
"""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import sensitivity  # noqa: E402 - a module beside this one (conftest.py)
from seed_models import save_tpu_func

import mlconv  # noqa: F401 - the package under test (imports before TensorFlow)
from mlconv.converter.batcher import LARGEST_REQUEST
from mlconv.tools.mlconv_convert import convert

FEATURES = 24
OPTIONS = """
tpu_functions { function_alias: "tpu_func" }
batch_options {
  num_batch_threads: 2
  max_batch_size: 8
  batch_timeout_micros: %d
  allowed_batch_sizes: 2
  allowed_batch_sizes: 4
  allowed_batch_sizes: 8
  max_enqueued_batches: 50
  experimental { function_alias: "tpu_func" }
}
disable_default_optimizations: true
"""


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """A Keras MLP under the `tpu_func` alias, called by serving_default with host work
    around it (`- 1`), rows of any number (None batch)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    tf = pytest.importorskip("tensorflow")
    keras = pytest.importorskip("keras")
    keras.utils.set_random_seed(31)
    layers = keras.Sequential([keras.layers.Dense(32, activation="relu"), keras.layers.Dense(5)])
    layers.build((None, FEATURES))
    spec = [tf.TensorSpec((None, FEATURES), tf.float32)]
    saved = tmp_path_factory.mktemp("source") / "saved"
    module = save_tpu_func(tf, saved, layers, spec, host=lambda y: y - 1.0)
    return tf, module, saved


def batch_nodes(folder) -> list:
    from tensorflow.core.protobuf import saved_model_pb2

    proto = saved_model_pb2.SavedModel()
    proto.ParseFromString((folder / "saved_model.pb").read_bytes())
    library = proto.meta_graphs[0].graph_def.library.function
    return [(f.signature.name, n) for f in library for n in f.node_def if n.op == "BatchFunction"]


def test_saved_model_source_batches_with_batch_function(source, tmp_path):
    tf, module, saved = source
    out = tmp_path / "converted"
    convert(str(saved), str(out), OPTIONS % 5000, quiet=True)
    # The placed function holds one BatchFunction with the options' values.
    ((function, node),) = batch_nodes(out / "saved_model")
    assert "tpu_func" in function
    # TensorFlow's max_batch_size bounds a request; it runs batches of at most 8 (the last
    # allowed size), so a request of any number of rows is split
    assert (
        node.attr["max_batch_size"].i == LARGEST_REQUEST and node.attr["num_batch_threads"].i == 2
    )
    assert node.attr["batch_timeout_micros"].i == 5000
    assert list(node.attr["allowed_batch_sizes"].list.i) == [2, 4, 8]
    assert node.attr["max_enqueued_batches"].i == 50
    assert node.attr["enable_large_batch_splitting"].b
    serve = tf.saved_model.load(str(out / "saved_model")).signatures["serving_default"]
    rng = np.random.default_rng(32)
    xs = [rng.standard_normal((k, FEATURES)).astype(np.float32) for k in (1, 3, 5, 8, 2, 7, 1, 4)]
    expected = [module.serve(x)["y"].numpy() for x in xs]
    sensitivity.assert_input_sensitive(expected[0], expected[6], rtol=1e-5)
    with ThreadPoolExecutor(max_workers=8) as pool:
        ys = list(pool.map(lambda x: serve(x=tf.constant(x))["y"].numpy(), xs * 4))
    for index, (x, y) in enumerate(zip(xs * 4, ys, strict=True)):
        assert y.shape == (len(x), 5)
        np.testing.assert_allclose(y, expected[index % len(xs)], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "component",
    ['experimental { signature_name: "serving_default" }', ""],
    ids=["signature", "default"],
)
def test_signature_and_default_batching_wrap_the_placed_function(source, component, tmp_path):
    """Signature batching (the function the signature calls) and default batching (around
    every TPU function) give the placed function the same BatchFunction."""
    tf, module, saved = source
    out = tmp_path / "converted"
    text = (OPTIONS % 7000).replace('experimental { function_alias: "tpu_func" }', component)
    manifest = convert(str(saved), str(out), text, quiet=True)
    (batch,) = manifest["batches"]
    assert batch["functions"] == ["tpu_func"]
    ((function, node),) = batch_nodes(out / "saved_model")
    assert "tpu_func" in function and node.attr["batch_timeout_micros"].i == 7000
    serve = tf.saved_model.load(str(out / "saved_model")).signatures["serving_default"]
    x = np.random.default_rng(34).standard_normal((3, FEATURES)).astype(np.float32)
    np.testing.assert_allclose(
        serve(x=tf.constant(x))["y"].numpy(), module.serve(x)["y"].numpy(), rtol=1e-5, atol=1e-5
    )


def test_concurrent_callers_share_one_batch(source, tmp_path):
    """With a 20 s timeout, 8 one-row callers return at once only if their rows fill one batch
    of max_batch_size 8 together (each alone would wait out the timeout)."""
    tf, module, saved = source
    out = tmp_path / "converted"
    convert(str(saved), str(out), OPTIONS % 20_000_000, quiet=True)
    ((_, node),) = batch_nodes(out / "saved_model")
    assert node.attr["batch_timeout_micros"].i == 20_000_000
    serve = tf.saved_model.load(str(out / "saved_model")).signatures["serving_default"]
    xs = np.random.default_rng(33).standard_normal((8, 1, FEATURES)).astype(np.float32)
    barrier = threading.Barrier(8)

    def call(x):
        barrier.wait()
        return serve(x=tf.constant(x))["y"].numpy()

    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=8) as pool:
        ys = list(pool.map(call, xs))
    assert time.monotonic() - start < 10
    for x, y in zip(xs, ys, strict=True):
        np.testing.assert_allclose(y, module.serve(x)["y"].numpy(), rtol=1e-5, atol=1e-5)

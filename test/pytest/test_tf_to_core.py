"""tf-to-core and core-layout-nchw on Keras models built here with fixed seeds, compared with
TensorFlow's own output (issue 4's bar: max |diff| <= 1e-4 * max |reference|).

The Keras applications are built with weights=None at 64x64, and every BatchNormalization's
moving statistics are those of the activations it sees on other random inputs
(`sensitivity.calibrate_batch_norms`): with random statistics the output hardly depends on the
input, and a dropped input or transpose went unnoticed. Each test first checks that a second
input moves TensorFlow's output by at least 100x the tolerance. Building and saving ResNet50
takes TensorFlow ~25 s, so the SavedModels are kept in pytest's cache folder
(`.pytest_cache/d/mlconv-keras-savedmodels`) between runs.
"""

from __future__ import annotations

import collections
import os
import shutil

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import exported_models  # noqa: E402 - a module beside this one (conftest.py)
import sensitivity  # noqa: E402

import mlconv  # noqa: E402
from mlconv.dialects import make_context  # noqa: E402
from mlconv.errors import PassFailure  # noqa: E402
from mlconv.frontends.tf_importer import import_tf  # noqa: E402
from mlconv.passes.core_fold_constants import CoreFoldConstantsPass  # noqa: E402
from mlconv.passes.core_layout_nchw import CoreLayoutNchwPass, count_transposes  # noqa: E402
from mlconv.passes.pipelines import lower_to_core  # noqa: E402
from mlconv.passes.tf_to_core import TfToCorePass  # noqa: E402

SIZE = 64
RTOL = 1e-4
# Bump when a model builder changes, so cached SavedModels are rebuilt.
CACHE_VERSION = "3"


def conv_bn_relu_pool() -> keras.Model:
    """A small NHWC CNN touching every layout-sensitive op kind, dilated depthwise included
    (Keras 3 lowers it through SpaceToBatchND/BatchToSpaceND)."""
    inputs = keras.Input((16, 16, 3), batch_size=1)
    x = keras.layers.ZeroPadding2D(((1, 0), (0, 1)))(inputs)
    x = keras.layers.Conv2D(8, 3, strides=2, padding="valid")(x)
    x = keras.layers.BatchNormalization()(x)
    x = keras.layers.ReLU(6.0)(x)
    y = keras.layers.DepthwiseConv2D(3, dilation_rate=2, padding="same")(x)
    x = keras.layers.Concatenate()([x, y])
    x = keras.layers.MaxPooling2D(3, strides=2, padding="same")(x)
    x = keras.layers.AveragePooling2D(2, padding="same")(x)
    x = keras.layers.Conv2D(4, 1, activation="sigmoid")(x)
    x = keras.layers.GlobalAveragePooling2D()(x)
    outputs = keras.layers.Softmax()(keras.layers.Dense(5)(x))
    return keras.Model(inputs, outputs)


def cnn(name: str):
    application = getattr(keras.applications, name)
    return lambda: application(input_shape=(SIZE, SIZE, 3), weights=None)


MODELS = {
    "MobileNetV2": (cnn("MobileNetV2"), [1, SIZE, SIZE, 3]),
    "ResNet50": (cnn("ResNet50"), [1, SIZE, SIZE, 3]),
    "EfficientNetB0": (cnn("EfficientNetB0"), [1, SIZE, SIZE, 3]),
    "transformer": (exported_models.keras_transformer_block, [1, 6, 16]),
    "conv_bn_relu_pool": (conv_bn_relu_pool, [1, 16, 16, 3]),
}


# Its softmax over 5 classes of pooled sigmoids was nearly uniform (a second input moved it by
# 0.9% of its largest value): its logits are centred and spread (std 3 on the calibration batch).
SPREAD_HEADS = {"conv_bn_relu_pool"}


def save(model: keras.Model, shape, folder) -> None:
    class Serving(tf.Module):
        def __init__(self):
            super().__init__()
            self.model = model

            @tf.function(input_signature=[tf.TensorSpec(shape, tf.float32, name="image")])
            def serve(image):
                return {"output": self.model(image, training=False)}

            self.serve = serve

    module = Serving()
    tf.saved_model.save(module, str(folder), signatures={"serving_default": module.serve})


@pytest.fixture(scope="session")
def saved_model(request, tmp_path_factory):
    """name -> (SavedModel folder, input, TensorFlow's output), built once per cache (or once
    per worker under -p no:cacheprovider, as CI runs). TensorFlow's output on a second input
    must differ from it by 100x the tolerance at least."""
    cache = getattr(request.config, "cache", None)
    if cache is not None:
        root = cache.mkdir(f"mlconv-keras-savedmodels-v{CACHE_VERSION}")
    else:
        root = tmp_path_factory.mktemp("savedmodels")
    built: dict[str, tuple[str, np.ndarray, np.ndarray]] = {}

    def get(name: str):
        if name not in built:
            build, shape = MODELS[name]
            folder = root / name
            if not (folder / "saved_model.pb").is_file():
                keras.utils.set_random_seed(0)
                model = build()
                calibration = np.random.default_rng(2).standard_normal([8, *shape[1:]])
                sensitivity.calibrate_batch_norms(model, [calibration], seed=0)
                if name in SPREAD_HEADS:
                    sensitivity.center_head(model, [calibration], spread=3.0)
                # Save beside, then rename: another xdist worker may build the same model.
                staging = root / f"{name}.{os.getpid()}"
                save(model, shape, staging)
                try:
                    os.rename(staging, folder)
                except OSError:
                    shutil.rmtree(staging, ignore_errors=True)
            image, other = (
                np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
                for seed in (1, 3)
            )
            serve = tf.saved_model.load(str(folder)).signatures["serving_default"]
            reference = serve(tf.constant(image))["output"].numpy()
            moved = serve(tf.constant(other))["output"].numpy()
            sensitivity.assert_input_sensitive(reference, moved, rtol=RTOL, what=name)
            built[name] = (str(folder), image, reference)
        return built[name]

    return get


def assert_close(actual: np.ndarray, reference: np.ndarray) -> float:
    assert actual.shape == reference.shape
    relative = float(np.abs(actual - reference).max() / np.abs(reference).max())
    assert relative <= RTOL, f"max |diff| is {relative:.2e} of max |reference|"
    return relative


def lowered(folder: str):
    """(tf-to-core module, its transposes, the core-layout-nchw module, its transposes)."""
    module = import_tf(folder)
    TfToCorePass().apply(make_context(), module)
    before = count_transposes(module)
    laid_out = module.clone()
    CoreFoldConstantsPass().apply(make_context(), laid_out)
    CoreLayoutNchwPass().apply(make_context(), laid_out)
    laid_out.verify()
    return module, before, laid_out, count_transposes(laid_out)


@pytest.mark.parametrize("name", ["MobileNetV2", "ResNet50", "EfficientNetB0"])
def test_cnn_matches_tensorflow_with_two_transposes_at_most(name, saved_model):
    folder, image, reference = saved_model(name)
    _, before, laid_out, after = lowered(folder)
    assert before > 50  # one pair per convolution before the layout pass
    assert after <= 2
    (output,) = mlconv.compile(laid_out)(image)
    assert_close(output, reference)


def test_transformer_block_matches_tensorflow(saved_model):
    folder, image, reference = saved_model("transformer")
    (output,) = mlconv.compile(folder)(image)
    assert_close(output, reference)


def test_layout_pass_keeps_numerics(saved_model):
    """The same inputs through the core IR before and after core-layout-nchw, and TF."""
    folder, image, reference = saved_model("conv_bn_relu_pool")
    module, before, laid_out, after = lowered(folder)
    ops = collections.Counter(op.name for op in module.walk())
    assert ops["core.SpaceToBatch"] == ops["core.BatchToSpace"] == 1
    assert ops["core.GroupConvolution"] == 1 and ops["core.Pad"] == 1
    assert before >= 10 and after == 1
    (plain,) = mlconv.compile(module)(image)
    (sunk,) = mlconv.compile(laid_out)(image)
    np.testing.assert_allclose(sunk, plain, rtol=1e-5, atol=1e-6)
    assert_close(sunk, reference)


def test_compile_runs_the_layout_pass(saved_model):
    folder, image, reference = saved_model("conv_bn_relu_pool")
    module = import_tf(folder)
    lower_to_core(module)
    assert count_transposes(module) == 1
    assert_close(mlconv.compile(folder)(image)[0], reference)


def test_unsupported_ops_are_reported_at_once(tmp_path):
    class Strings(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([2], tf.float32)])
        def serve(self, x):
            y = tf.math.cumsum(x) + tf.math.cumsum(x * 2.0)
            return {"output": tf.math.bessel_i0e(y)}

    module = Strings()
    tf.saved_model.save(module, str(tmp_path), signatures={"serving_default": module.serve})
    with pytest.raises(PassFailure) as error:
        TfToCorePass().apply(make_context(), import_tf(str(tmp_path)))
    message = str(error.value)
    assert "2 tf op type(s)" in message
    assert "tf.BesselI0e (1 node" in message and "tf.Cumsum (2 nodes" in message

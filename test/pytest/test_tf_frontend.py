"""The TensorFlow SavedModel importer on small Keras models built here with fixed seeds."""

from __future__ import annotations

import io
import os

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import exported_models  # noqa: E402 - a module beside this one (conftest.py)
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, ModuleOp, NameLoc  # noqa: E402
from xdsl.parser import Parser  # noqa: E402
from xdsl.printer import Printer  # noqa: E402

from mlconv.dense import to_numpy  # noqa: E402
from mlconv.dialects import make_context  # noqa: E402
from mlconv.errors import FrontendError  # noqa: E402
from mlconv.frontends.tf_importer import import_tf  # noqa: E402


def _cnn() -> keras.Model:
    rng = np.random.default_rng(0)
    inputs = keras.Input((16, 16, 3), batch_size=1)
    x = keras.layers.Conv2D(8, 3, strides=2, padding="same", name="conv")(inputs)
    x = keras.layers.DepthwiseConv2D(3, dilation_rate=2, padding="same", name="dw")(x)
    bn = keras.layers.BatchNormalization(name="bn")
    x = bn(x)
    x = keras.layers.ReLU(6.0, name="relu6")(x)
    x = keras.layers.MaxPooling2D(3, strides=2, padding="same", name="pool")(x)
    x = keras.layers.AveragePooling2D(2, padding="same", name="avg")(x)
    x = keras.layers.GlobalAveragePooling2D(name="gap")(x)
    x = keras.layers.Dense(5, name="fc")(x)
    outputs = keras.layers.Softmax(name="softmax")(x)
    model = keras.Model(inputs, outputs)
    gamma, beta, mean, var = bn.get_weights()
    bn.set_weights(
        [
            rng.uniform(0.5, 1.5, gamma.shape).astype(np.float32),
            rng.normal(0, 0.1, beta.shape).astype(np.float32),
            rng.normal(0, 0.5, mean.shape).astype(np.float32),
            rng.uniform(0.5, 2.0, var.shape).astype(np.float32),
        ]
    )
    return model


class _Wrapper(tf.Module):
    def __init__(self, model: keras.Model, shape):
        super().__init__()
        self.model = model
        spec = tf.TensorSpec(shape, tf.float32, name="image")

        @tf.function(input_signature=[spec])
        def serve(image):
            return {"scores": self.model(image, training=False)}

        @tf.function(input_signature=[spec])
        def tpu_func(image):
            return self.model(image, training=False)

        self.serve = serve
        self.tpu_func = tpu_func


def _save(model, shape, folder) -> tuple[str, str]:
    """Save with a signature and an aliased function; (path, concrete name of tpu_func)."""
    wrapper = _Wrapper(model, shape)
    options = tf.saved_model.SaveOptions(function_aliases={"tpu_func": wrapper.tpu_func})
    tf.saved_model.save(
        wrapper, str(folder), signatures={"serving_default": wrapper.serve}, options=options
    )
    # The concrete function's name as the SavedModel's function library spells it.
    from tensorflow.core.protobuf import saved_model_pb2

    proto = saved_model_pb2.SavedModel()
    proto.ParseFromString((folder / "saved_model.pb").read_bytes())
    aliases = proto.meta_graphs[0].meta_info_def.function_aliases
    (concrete,) = [name for name, alias in aliases.items() if alias == "tpu_func"]
    return str(folder), concrete


@pytest.fixture(scope="module")
def cnn(tmp_path_factory):
    keras.utils.set_random_seed(0)
    model = _cnn()
    path, concrete = _save(model, [1, 16, 16, 3], tmp_path_factory.mktemp("cnn"))
    return path, concrete, model


@pytest.fixture(scope="module")
def transformer(tmp_path_factory):
    keras.utils.set_random_seed(0)
    path, concrete = _save(
        exported_models.keras_transformer_block(),
        [1, 6, 16],
        tmp_path_factory.mktemp("transformer"),
    )
    return path, concrete


def _print(module: ModuleOp) -> str:
    stream = io.StringIO()
    Printer(stream=stream, print_debuginfo=True).print_op(module)
    return stream.getvalue()


def _check(module: ModuleOp) -> list:
    """Verify, round-trip through text, and return the ops of @main's body."""
    module.verify()
    text = _print(module)
    reparsed = Parser(make_context(), text).parse_module()
    reparsed.verify()
    assert _print(reparsed) == text
    func = module.body.block.first_op
    ops = [op for op in module.walk() if op is not module and op is not func]
    for op in ops:
        if op.name in ("tf.Yield", "func.return"):
            continue
        assert isinstance(op.location, NameLoc), op
    return ops


def _op_names(ops) -> set[str]:
    return {op.name for op in ops}


def test_cnn_by_signature(cnn):
    path, _, model = cnn
    module = import_tf(path)
    ops = _check(module)
    names = _op_names(ops)
    for expected in (
        "tf.Conv2D",
        "tf.DepthwiseConv2dNative",
        "tf.Relu6",
        "tf.MaxPool",
        "tf.AvgPool",
        "tf.MatMul",
        "tf.Softmax",
        "tf.Const",
    ):
        assert expected in names, (expected, sorted(names))
    func = module.body.block.first_op
    assert func.sym_name.data == "main"
    assert [d.data["mlconv.name"].data for d in func.arg_attrs] == ["image"]
    assert [d.data["mlconv.name"].data for d in func.res_attrs] == ["scores"]
    assert [str(t) for t in func.function_type.inputs] == ["tensor<1x16x16x3xf32>"]
    assert [str(t) for t in func.function_type.outputs] == ["tensor<1x5xf32>"]
    # Locations are the graph's node names; convolution attributes come from the NodeDef.
    conv = next(op for op in ops if op.name == "tf.DepthwiseConv2dNative")
    assert "dw" in conv.location.desc.data
    # tf.nn.depthwise_conv2d expresses dilation as SpaceToBatchND -> conv -> BatchToSpaceND.
    dilations = [a.value.data for a in conv.attributes["dilations"]]
    assert dilations == [1, 2, 2, 1] or "tf.SpaceToBatchND" in names
    assert conv.attributes["padding"].data in ("SAME", "VALID")
    # Constants are dense attributes over bytes holding the trained values.
    consts = [op for op in ops if op.name == "tf.Const"]
    for const in consts:
        assert isinstance(const.attributes["value"], DenseIntOrFPElementsAttr)
    kernels = [to_numpy(c.attributes["value"]) for c in consts]
    dense_kernel = model.get_layer("fc").get_weights()[0]
    assert any(k.shape == dense_kernel.shape and np.array_equal(k, dense_kernel) for k in kernels)
    moving_var = model.get_layer("bn").get_weights()[3]
    assert (
        any(k.shape == moving_var.shape and np.allclose(k, moving_var) for k in kernels)
        or "tf.FusedBatchNormV3" not in names
    )


def test_cnn_by_alias_and_function_name(cnn):
    path, concrete, _ = cnn
    by_alias = import_tf(path, alias="tpu_func")
    by_name = import_tf(path, function=concrete)
    for module in (by_alias, by_name):
        _check(module)
        func = module.body.block.first_op
        assert [d.data["mlconv.name"].data for d in func.res_attrs] == ["output_0"]
        assert [str(t) for t in func.function_type.outputs] == ["tensor<1x5xf32>"]


def test_transformer(transformer):
    path, _ = transformer
    module = import_tf(path, alias="tpu_func")
    names = _op_names(_check(module))
    assert "tf.Erf" in names or "tf.Erfc" in names, sorted(names)
    assert "tf.BatchMatMulV2" in names or "tf.Einsum" in names, sorted(names)
    assert "tf.Softmax" in names
    assert "tf.Rsqrt" in names or "tf.Sqrt" in names or "tf.FusedBatchNormV3" in names


def test_control_flow_becomes_regions(tmp_path):
    class Module(tf.Module):
        def __init__(self):
            super().__init__()
            self.w = tf.Variable(np.full((4, 3), 0.5, np.float32))

        @tf.function(
            input_signature=[
                tf.TensorSpec([2, 4], tf.float32, name="x"),
                tf.TensorSpec([], tf.bool, name="flag"),
            ]
        )
        def f(self, x, flag):
            y = tf.matmul(x, self.w)
            y = tf.cond(flag, lambda: tf.nn.relu(y), lambda: -y)
            _, y = tf.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y * 2.0), [0, y])
            return {"y": y}

    module_obj = Module()
    tf.saved_model.save(module_obj, str(tmp_path), signatures={"serving_default": module_obj.f})
    module = import_tf(str(tmp_path))
    ops = _check(module)
    names = _op_names(ops)
    assert {"tf.StatelessIf", "tf.StatelessWhile", "tf.Yield"} <= names
    func = module.body.block.first_op
    # Inputs in TensorFlow's flat order for signatures: sorted by name.
    assert [d.data["mlconv.name"].data for d in func.arg_attrs] == ["flag", "x"]
    if_op = next(op for op in ops if op.name == "tf.StatelessIf")
    assert len(if_op.regions) == 2 and "then_branch" not in if_op.attributes
    assert if_op.regions[0].block.last_op.name == "tf.Yield"


def _one_line_error(**kwargs) -> str:
    with pytest.raises(FrontendError) as info:
        import_tf(**kwargs)
    text = str(info.value)
    assert "\n" not in text
    return text


def test_errors(cnn, tmp_path):
    path, concrete, _ = cnn
    text = _one_line_error(path=str(tmp_path))
    assert "is not a TensorFlow SavedModel folder" in text
    text = _one_line_error(path=str(tmp_path / "missing"))
    assert "is not a TensorFlow SavedModel folder" in text
    text = _one_line_error(path=path, signature="predict")
    assert "no signature 'predict'" in text and "signatures: serving_default" in text
    text = _one_line_error(path=path, alias="gpu_func")
    assert "no function alias 'gpu_func'" in text and "aliases: tpu_func" in text
    text = _one_line_error(path=path, function="__inference_nope_1")
    assert "no concrete function '__inference_nope_1'" in text and concrete in text


def test_string_tensor_is_an_error(tmp_path):
    class Module(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([2], tf.string, name="s")])
        def f(self, s):
            return {"n": tf.strings.to_number(s)}

    module_obj = Module()
    tf.saved_model.save(module_obj, str(tmp_path), signatures={"serving_default": module_obj.f})
    text = _one_line_error(path=str(tmp_path))
    assert "string tensor" in text

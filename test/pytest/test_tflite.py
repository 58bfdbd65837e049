"""TFLite: import, op versions against TensorFlow's, round trip through LiteRT, errors.

Keras models are built in the test with fixed seeds and converted once per module (float and
full-integer int8); the .tflite files are cached under a pytest tmp dir. The round trip must
compute exactly what the original file does, on an input that matters: a second input moves the
original's outputs (`sensitivity.py`).
"""

from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")
litert = pytest.importorskip("ai_edge_litert.interpreter")

import sensitivity  # noqa: E402 - a module beside this one (conftest.py)
from litert_models import litert_outputs, tflite_bytes  # noqa: E402

from mlconv.backends.tflite_writer import write_tflite  # noqa: E402
from mlconv.dialects.tflite import TFLiteOperation  # noqa: E402
from mlconv.errors import FrontendError, PassFailure  # noqa: E402
from mlconv.frontends.tflite_importer import import_tflite  # noqa: E402
from mlconv.passes.tflite_check_runtime import TfliteCheckRuntimePass  # noqa: E402
from mlconv.passes.tflite_op_versions import TfliteOpVersionsPass  # noqa: E402


def _conv_model():
    keras.utils.set_random_seed(0)
    x = keras.Input((12, 12, 3), batch_size=1, name="image")
    a = keras.layers.Conv2D(4, 3, padding="same", activation="relu6")(x)
    b = keras.layers.DepthwiseConv2D(3, dilation_rate=2, padding="same")(a)
    c = keras.layers.Add()([a, b])
    d = keras.layers.Multiply()([c, a])
    e = keras.layers.MaxPooling2D(2, padding="same")(d)
    f = keras.layers.AveragePooling2D(2, padding="same")(e)
    g = keras.layers.Reshape((-1,))(f)
    h = keras.layers.Dense(10)(g)
    i = keras.layers.Activation("gelu")(h)
    j = keras.layers.Concatenate()([i, h])
    return keras.Model(x, keras.layers.Softmax()(j))


def _attention_model():
    keras.utils.set_random_seed(1)
    x = keras.Input((6, 8), batch_size=1, name="tokens")
    q = keras.layers.Dense(8)(x)
    s = keras.layers.Lambda(lambda t: tf.linalg.matmul(t[0], t[1], transpose_b=True))([q, x])
    p = keras.layers.Softmax()(s)
    return keras.Model(x, keras.layers.Lambda(lambda t: tf.linalg.matmul(t[0], t[1]))([p, x]))


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tflite")
    paths = {}
    for name, build in [("conv", _conv_model), ("attention", _attention_model)]:
        model = build()
        for int8 in (False, True):
            path = folder / f"{name}_{'int8' if int8 else 'float'}.tflite"
            path.write_bytes(tflite_bytes(model, int8, samples=8))
            paths[path.stem] = path
    return paths


def _ops(module):
    return [op for op in module.walk() if isinstance(op, TFLiteOperation)]


def test_import_structure(models):
    module = import_tflite(models["conv_int8"])
    module.verify()
    names = {op.operator for op in _ops(module)}
    expected = {"CONV_2D", "DEPTHWISE_CONV_2D", "ADD", "MUL", "MAX_POOL_2D", "AVERAGE_POOL_2D"}
    assert expected | {"RESHAPE", "FULLY_CONNECTED", "GELU", "CONCATENATION", "SOFTMAX"} <= names
    text = str(module)
    assert "!quant.uniform<i8:f32" in text and "func.func @main" in text
    assert "mlconv.name = " in text
    depthwise = next(op for op in _ops(module) if op.operator == "DEPTHWISE_CONV_2D")
    assert depthwise.options()["dilation_w_factor"] == 2
    assert all(op.location is not None for op in _ops(module))


@pytest.mark.parametrize("name", ["conv_float", "conv_int8", "attention_float", "attention_int8"])
def test_versions_match_tensorflow(models, name):
    module = import_tflite(models[name])
    written = [(op.operator, op.version.value.data) for op in _ops(module)]
    TfliteOpVersionsPass().apply(None, module)
    computed = [(op.operator, op.version.value.data) for op in _ops(module)]
    assert computed == written
    if name == "attention_float":
        assert ("BATCH_MATMUL", 1) in written
    if name == "conv_float":
        assert ("DEPTHWISE_CONV_2D", 2) in written  # dilation 2


@pytest.mark.parametrize("name", ["conv_float", "conv_int8", "attention_float", "attention_int8"])
def test_round_trip_in_litert(models, name, tmp_path):
    module = import_tflite(models[name])
    out = tmp_path / "round_trip.tflite"
    write_tflite(module, out)
    shape = litert.Interpreter(model_path=str(models[name])).get_input_details()[0]["shape"]
    x, other = (np.random.default_rng(s).standard_normal(shape).astype(np.float32) for s in (0, 1))
    expected = litert_outputs(models[name], x)
    # Equality is the test; any input dependence well above float rounding will do.
    sensitivity.assert_input_sensitive(
        expected, litert_outputs(models[name], other), rtol=1e-6, what=name
    )
    for a, b in zip(expected, litert_outputs(out, x), strict=True):
        np.testing.assert_array_equal(a, b)
    assert str(import_tflite(out)) == str(module)
    data = out.read_bytes()
    assert b"min_runtime_version" in data


def test_min_runtime_metadata(models, tmp_path):
    from mlconv.frontends.tflite_importer import tflite_schema

    out = tmp_path / "m.tflite"
    write_tflite(import_tflite(models["conv_float"]), out)
    schema = tflite_schema()
    model = schema.ModelT.InitFromObj(schema.Model.GetRootAs(out.read_bytes(), 0))
    (entry,) = [m for m in model.metadata if m.name == b"min_runtime_version"]
    raw = bytes(model.buffers[entry.buffer].data)
    assert len(raw) == 16 and raw.rstrip(b"\0") == b"2.9.0"  # GELU 1


def test_check_runtime_lists_every_op(models):
    module = import_tflite(models["conv_int8"])
    TfliteCheckRuntimePass(version="2.21.0").apply(None, module)
    with pytest.raises(PassFailure) as info:
        TfliteCheckRuntimePass(version="1.13.0").apply(None, module)
    message = str(info.value)
    assert "\n" not in message
    for needed in ("CONV_2D version 3 needs runtime 1.14.0", "GELU version 2 needs runtime 2.9.0"):
        assert needed in message
    assert message.count(" needs runtime ") >= 8


def test_not_a_tflite_file(tmp_path):
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(b"this is not a flatbuffer at all")
    with pytest.raises(FrontendError, match="not a TFLite flatbuffer") as info:
        import_tflite(bad)
    assert "\n" not in str(info.value)


def test_truncated_file(models, tmp_path):
    cut = tmp_path / "cut.tflite"
    cut.write_bytes(models["conv_float"].read_bytes()[:300])
    with pytest.raises(FrontendError, match="corrupt or truncated") as info:
        import_tflite(cut)
    assert "\n" not in str(info.value)


def test_unknown_version(models, tmp_path):
    import flatbuffers

    from mlconv.frontends.tflite_importer import tflite_schema

    schema = tflite_schema()
    model = schema.ModelT.InitFromObj(schema.Model.GetRootAs(models["conv_float"].read_bytes(), 0))
    depthwise = schema.BuiltinOperator.DEPTHWISE_CONV_2D
    for code in model.operatorCodes:
        if max(code.builtinCode, code.deprecatedBuiltinCode) == depthwise:
            code.version = 8
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    path = tmp_path / "v8.tflite"
    path.write_bytes(bytes(builder.Output()))
    with pytest.raises(FrontendError) as info:
        import_tflite(path)
    message = str(info.value)
    assert "Didn't find op for builtin opcode 'DEPTHWISE_CONV_2D' version '8'" in message
    assert "depthwise" in message and "\n" not in message

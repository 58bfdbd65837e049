"""Issue 29 item 4: int8 TFLite computed as LiteRT computes it, 0 quantization steps off.

LiteRT (its default interpreter: XNNPACK where the delegate takes the op, TFLite's own kernels
elsewhere) is the oracle. The models are converted here by TensorFlow's TFLiteConverter with a
representative dataset (seeded) and default optimizations, and cached for the session:
- `unary`, `rsqrt`: int8 in and out, each operator applied to the input itself, so feeding the
  256 int8 values covers every input the operator can see (LEAKY_RELU, HARD_SWISH, RSQRT,
  LOGISTIC, TANH, SOFTMAX, GELU, RELU6: the first three use rules of their own,
  `fixed_point.py`), and L2_NORMALIZATION over rows of 16 of them (TFLite's integer kernel);
- `edges`: float in and out (QUANTIZE and DEQUANTIZE at the edges) with MUL, ADD, MEAN, SUM,
  AVERAGE_POOL_2D, SOFTMAX, RESIZE_BILINEAR (half pixel; align corners), MINIMUM of x and
  x * 0.5, and a rescaling RELU into a CONCATENATION inside, fed floats exactly halfway
  between two quantization steps (where rounding rules part) and normal random inputs;
- Keras MobileNetV2 (96x96, alpha 0.35, seeded weights, BatchNorm statistics calibrated so
  its output moves with the input, softmax classifier) with float input and output.
Equal float outputs of a DEQUANTIZE are equal int8 values: every comparison is exact.
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
from litert_models import tflite_bytes  # noqa: E402

import mlconv  # noqa: E402


def _convert(fn, shape, sample, int8_io: bool) -> bytes:
    @tf.function(input_signature=[tf.TensorSpec(shape, tf.float32)])
    def model(x):
        return fn(x)

    converter = tf.lite.TFLiteConverter.from_concrete_functions(
        [model.get_concrete_function()], model
    )
    rng = np.random.default_rng(0)

    def representative():
        for _ in range(8):
            yield [sample(rng).astype(np.float32)]

    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.representative_dataset = representative
    if int8_io:
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        converter.inference_input_type = tf.int8
        converter.inference_output_type = tf.int8
    return converter.convert()


UNARY_SHAPE = (1, 256)
UNARY = {
    "leaky_relu": lambda x: tf.nn.leaky_relu(x, 0.2),
    "hard_swish": lambda x: x * tf.nn.relu6(x + 3.0) / 6.0,
    "logistic": tf.sigmoid,
    "tanh": tf.tanh,
    "softmax": tf.nn.softmax,
    "gelu": tf.nn.gelu,
    "relu6": tf.nn.relu6,
    "l2_normalization": lambda x: tf.math.l2_normalize(tf.reshape(x, (16, 16)), axis=-1),
}

EDGES_SHAPE = (1, 8, 8, 16)


def _edges(x):
    swapped = tf.transpose(x, [0, 2, 1, 3])
    return {
        "add": x + swapped,
        "mul": x * swapped,
        "mean": tf.reduce_mean(x, axis=[1, 2], keepdims=True),
        "sum": tf.reduce_sum(x, axis=[1, 2]),
        "average_pool": tf.nn.avg_pool2d(x, 3, 2, "SAME"),
        "softmax": tf.nn.softmax(x * 2.0),
        "resize_bilinear": tf.image.resize(x, (13, 11)),
        # x * 0.5, the constant stored as 255 steps: products exactly halfway between steps
        "minimum_of_halved": tf.minimum(x, swapped * 0.5),
        # the RELU rescales to the CONCATENATION's scale, 3x its input's
        "relu_into_concatenation": tf.concat([x * 3.0, tf.nn.relu(x)], -1),
        "resize_align_corners": tf.compat.v1.image.resize_bilinear(x, (5, 11), align_corners=True),
    }


def _mobilenet_v2() -> bytes:
    keras.utils.set_random_seed(0)
    model = keras.applications.MobileNetV2(input_shape=(96, 96, 3), alpha=0.35, weights=None)
    calibration = np.random.default_rng(100).standard_normal((8, 96, 96, 3)).astype(np.float32)
    sensitivity.calibrate_batch_norms(model, [calibration], 0)
    sensitivity.center_head(model, [calibration], spread=3.0)
    return tflite_bytes(model, int8=True, samples=4, shape=(1, 96, 96, 3))


PAIRS = (1, 256 * 256)


def _div_model() -> bytes:
    @tf.function(
        input_signature=[tf.TensorSpec(PAIRS, tf.float32), tf.TensorSpec(PAIRS, tf.float32)]
    )
    def model(a, b):
        return a / b

    converter = tf.lite.TFLiteConverter.from_concrete_functions(
        [model.get_concrete_function()], model
    )
    rng = np.random.default_rng(0)

    def representative():
        for _ in range(4):
            yield [
                rng.standard_normal(PAIRS).astype(np.float32),
                rng.uniform(0.5, 3.0, PAIRS).astype(np.float32),
            ]

    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.representative_dataset = representative
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    converter.inference_input_type = tf.int8
    converter.inference_output_type = tf.int8
    return converter.convert()


@pytest.fixture(scope="session")
def models(tmp_path_factory):
    """name -> path, each converted on first use."""
    folder = tmp_path_factory.mktemp("int8_exact")
    builders = {
        "unary": lambda: _convert(
            lambda x: {name: fn(x) for name, fn in UNARY.items()},
            UNARY_SHAPE,
            lambda rng: rng.standard_normal(UNARY_SHAPE) * 3,
            int8_io=True,
        ),
        # RSQRT alone: LiteRT refuses inputs below its zero point (those of another operator).
        "rsqrt": lambda: _convert(
            lambda x: {"rsqrt": tf.math.rsqrt(x)},
            UNARY_SHAPE,
            lambda rng: rng.uniform(0.5, 6.3, UNARY_SHAPE),
            int8_io=True,
        ),
        "div": _div_model,
        "edges": lambda: _convert(
            _edges, EDGES_SHAPE, lambda rng: rng.standard_normal(EDGES_SHAPE), int8_io=False
        ),
        "mobilenet_v2": _mobilenet_v2,
    }
    paths = {}

    def get(name):
        if name not in paths:
            path = folder / f"{name}.tflite"
            path.write_bytes(builders[name]())
            paths[name] = path
        return paths[name]

    return get


def _litert(path, x):
    """{output name: value} and {tensor name: (scale, zero point)} of LiteRT's run."""
    interpreter = litert.Interpreter(model_path=str(path))
    interpreter.allocate_tensors()
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], x)
    interpreter.invoke()
    outputs = {
        d["name"]: interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()
    }
    return outputs, interpreter


def _operators(interpreter) -> dict[str, str]:
    """Output name -> the operator computing it (the one before a DEQUANTIZE, if any)."""
    tensors = {t["index"]: t["name"] for t in interpreter.get_tensor_details()}
    producer = {}
    for op in interpreter._get_ops_details():  # noqa: SLF001 - LiteRT's only op listing
        if op["op_name"] == "DELEGATE":  # XNNPACK's node, listed after the nodes it took
            continue
        for index in op["outputs"]:
            producer[tensors.get(int(index))] = op
    found = {}
    for detail in interpreter.get_output_details():
        op = producer[detail["name"]]
        if op["op_name"] == "DEQUANTIZE":
            op = producer[tensors[int(op["inputs"][0])]]
        found[detail["name"]] = op["op_name"]
    return found


def _steps(got, expected, scale=1.0) -> int:
    return int(np.round(np.abs(got.astype(np.float64) - expected.astype(np.float64)) / scale).max())


@pytest.mark.parametrize(
    "name, operators",
    [
        ("unary", {"LEAKY_RELU", "HARD_SWISH", "LOGISTIC", "TANH", "SOFTMAX", "L2_NORMALIZATION"}),
        ("rsqrt", {"RSQRT"}),
    ],
)
def test_unary_all_int8_inputs(models, name, operators):
    path = models(name)
    x = np.arange(-128, 128).astype(np.int8).reshape(UNARY_SHAPE)
    zero_point = litert.Interpreter(model_path=str(path)).get_input_details()[0]["quantization"][1]
    if name == "rsqrt":  # every input from the zero point up, some twice
        x = np.maximum(x, zero_point).astype(np.int8)
    expected, interpreter = _litert(path, x)
    found = _operators(interpreter)
    assert operators <= set(found.values())
    operators = found
    got = mlconv.compile(str(path))(x)
    off = {}
    for (name, want), value in zip(expected.items(), got, strict=True):
        assert value.dtype == np.int8 and value.shape == want.shape
        assert np.unique(want).size > 16, f"{operators[name]} output hardly moves"
        if _steps(value, want):
            off[operators[name]] = (int((value != want).sum()), _steps(value, want))
    assert not off, f"operator -> (values off of 256, most steps): {off}"


def test_div_all_int8_pairs(models):
    """int8 DIV (TFLite's fixed-point kernel, LiteRT's x86 shift quirk included) on all 65536
    pairs of int8 operands but a zero divisor."""
    path = models("div")
    interpreter = litert.Interpreter(model_path=str(path))
    interpreter.allocate_tensors()
    first, second = interpreter.get_input_details()
    a, b = np.meshgrid(np.arange(-128, 128), np.arange(-128, 128), indexing="ij")
    zero = second["quantization"][1]
    b = np.where(b == zero, zero + 1, b)  # LiteRT asserts on a zero divisor
    a, b = (v.reshape(PAIRS).astype(np.int8) for v in (a, b))
    interpreter.set_tensor(first["index"], a)
    interpreter.set_tensor(second["index"], b)
    interpreter.invoke()
    expected = interpreter.get_tensor(interpreter.get_output_details()[0]["index"])
    assert np.unique(expected).size > 100
    (got,) = mlconv.compile(str(path))(a, b)
    assert got.dtype == np.int8
    off = got != expected
    assert not off.any(), f"{int(off.sum())} of 65536 pairs off, {_steps(got, expected)} steps"


def _input_scale(interpreter):
    tensors = {t["index"]: t for t in interpreter.get_tensor_details()}
    (quantize,) = [o for o in interpreter._get_ops_details() if o["op_name"] == "QUANTIZE"]  # noqa: SLF001
    scale, zero_point = tensors[int(quantize["outputs"][0])]["quantization"]
    return np.float32(scale), zero_point


def _output_scales(interpreter) -> dict[str, float]:
    tensors = {t["index"]: t for t in interpreter.get_tensor_details()}
    scales = {}
    for op in interpreter._get_ops_details():  # noqa: SLF001
        if op["op_name"] == "DEQUANTIZE":
            out = tensors[int(op["outputs"][0])]["name"]
            scales[out] = tensors[int(op["inputs"][0])]["quantization"][0]
    return scales


def test_float_edges_and_reductions(models):
    path = models("edges")
    _, interpreter = _litert(path, np.zeros(EDGES_SHAPE, np.float32))
    scale, zero_point = _input_scale(interpreter)
    scales = _output_scales(interpreter)
    operators = _operators(interpreter)
    assert set(operators.values()) >= {
        *("ADD", "MUL", "MEAN", "SUM", "AVERAGE_POOL_2D", "SOFTMAX", "RESIZE_BILINEAR"),
        "CONCATENATION",
        "MINIMUM",
    }
    rng = np.random.default_rng(3)
    halfway = (rng.integers(-128, 127, EDGES_SHAPE) - zero_point + 0.5) * scale
    inputs = [halfway.astype(np.float32)]
    inputs += [rng.standard_normal(EDGES_SHAPE).astype(np.float32) for _ in range(2)]
    compiled = mlconv.compile(str(path))
    off = {}
    firsts = {}
    for x in inputs:
        expected, _ = _litert(path, x)
        for (name, want), value in zip(expected.items(), compiled(x), strict=True):
            assert value.dtype == np.float32 and value.shape == want.shape
            firsts.setdefault(name, want)
            steps = _steps(value, want, scales[name])
            if steps:
                off[operators[name]] = max(off.get(operators[name], 0), steps)
    assert not off, f"operator -> quantization steps off: {off}"
    expected, _ = _litert(path, inputs[-1])
    for name, first in firsts.items():
        sensitivity.assert_input_sensitive(
            first, expected[name], atol=scales[name], what=operators[name], factor=3
        )


def test_mobilenet_v2_float_io(models):
    path = models("mobilenet_v2")
    x, x2 = (
        np.random.default_rng(s).standard_normal((1, 96, 96, 3)).astype(np.float32) for s in (7, 8)
    )
    outputs, interpreter = _litert(path, x)
    (expected,) = outputs.values()
    (moved,) = _litert(path, x2)[0].values()
    (scale,) = _output_scales(interpreter).values()
    sensitivity.assert_input_sensitive(expected, moved, atol=scale, what="mobilenet_v2", factor=10)
    (got,) = mlconv.compile(str(path))(x)
    assert got.dtype == np.float32 and got.shape == expected.shape
    steps = _steps(got, expected, scale)
    assert steps == 0, f"{int((got != expected).sum())} of {got.size} outputs off, {steps} steps"

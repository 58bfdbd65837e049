"""Quantization ONNX lowerings on forms the backend node cases do not exercise: blocked
quantization with a shorter last block, ties rounding to even, integer saturation, float8
without saturation, DequantizeLinear's output_dtype, old opsets, per-column zero points,
grouped QLinearConv, BitCast of NaN and -0, CumProd on an inner axis. Each one-node model runs
through `mlconv.compile` and is compared bit for bit with onnx's reference evaluator."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from onnx import helper
from onnx.reference import ReferenceEvaluator

import mlconv

RNG = np.random.default_rng(0)


def check_node(op_type, opset, inputs, result_dtype, **attributes):
    """Compile a one-node model over `inputs` (name -> array), run it, and compare it with the
    reference evaluator: same dtype, same values (NaN where the reference has NaN)."""
    node = helper.make_node(op_type, list(inputs), ["y"], **attributes)
    graph = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
            for n, a in inputs.items()
        ],
        [
            helper.make_tensor_value_info(
                "y", helper.np_dtype_to_tensor_dtype(np.dtype(result_dtype)), None
            )
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    (expected,) = ReferenceEvaluator(model).run(None, inputs)
    (result,) = mlconv.compile(model, device="cpu")(*inputs.values())
    result = np.asarray(result)
    assert result.dtype == np.dtype(result_dtype)
    np.testing.assert_array_equal(result.astype(np.float64), expected.astype(np.float64))
    return result


def test_quantize21_blocked_short_last_block_ties_to_even():
    x = np.array([[0.5, 1.5, 2.5, -0.5, -1.5], [3.5, 4.5, 100.0, -100.0, 7.0]], np.float32)
    scale = np.array([[1.0, 1.0, 0.5], [1.0, 2.0, 1.0]], np.float32)
    zero_point = np.array([[0, 1, 2], [3, 4, 5]], np.uint8)
    check_node(
        "QuantizeLinear", 21, {"x": x, "s": scale, "zp": zero_point}, np.uint8, axis=1, block_size=2
    )


def test_quantize13_int8_per_axis_saturates():
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32) * 300
    scale = np.array([1.0, 2.0, 0.5], np.float32)
    zero_point = np.array([-3, 0, 5], np.int8)
    check_node("QuantizeLinear", 13, {"x": x, "s": scale, "zp": zero_point}, np.int8, axis=1)


def test_quantize10_scalar_scale():
    x = np.linspace(-2, 300, 12, dtype=np.float32)
    check_node(
        "QuantizeLinear",
        10,
        {"x": x, "s": np.array(1.5, np.float32), "zp": np.array(7, np.uint8)},
        np.uint8,
    )


@pytest.mark.parametrize("saturate", [0, 1])
def test_quantize19_float8_saturate(saturate):
    x = np.array([0.1, -3.0, 1000.0, -1e6, np.inf, 448.0], np.float32)
    zero_point = np.zeros((), ml_dtypes.float8_e4m3fn)
    y = check_node(
        "QuantizeLinear",
        19,
        {"x": x, "s": np.array(0.5, np.float32), "zp": zero_point},
        ml_dtypes.float8_e4m3fn,
        saturate=saturate,
    )
    assert np.isnan(y[2].astype(np.float32)) == (not saturate)


def test_quantize21_int4_output_dtype_no_zero_point():
    x = np.linspace(-12, 12, 10, dtype=np.float32)
    check_node(
        "QuantizeLinear",
        21,
        {"x": x, "s": np.array(1.0, np.float32)},
        ml_dtypes.int4,
        output_dtype=22,
    )


def test_dequantize23_output_dtype_float16():
    x = np.array([[0, 3, 250], [7, 128, 255]], np.uint8)
    scale = np.array([0.1, 3.0], np.float32)
    zero_point = np.array([1, 128], np.uint8)
    check_node(
        "DequantizeLinear",
        23,
        {"x": x, "s": scale, "zp": zero_point},
        np.float16,
        axis=0,
        output_dtype=10,
    )


def test_matmul_integer_int8_per_column_zero_point():
    a = RNG.integers(-128, 128, (2, 3, 5)).astype(np.int8)
    b = RNG.integers(-128, 128, (5, 4)).astype(np.int8)
    inputs = {"a": a, "b": b, "azp": np.array(3, np.int8), "bzp": np.array([1, -2, 3, 0], np.int8)}
    check_node("MatMulInteger", 10, inputs, np.int32)


def test_qlinear_conv_grouped_with_bias():
    x = RNG.integers(0, 256, (1, 4, 5, 5)).astype(np.uint8)
    w = RNG.integers(0, 256, (4, 2, 3, 3)).astype(np.uint8)
    inputs = {
        "x": x,
        "xs": np.array(0.02, np.float32),
        "xzp": np.array(128, np.uint8),
        "w": w,
        "ws": np.array([0.01, 0.02, 0.005, 0.03], np.float32),
        "wzp": np.array([120, 128, 130, 125], np.uint8),
        "ys": np.array(0.5, np.float32),
        "yzp": np.array(100, np.uint8),
        "bias": np.array([100, -200, 300, 0], np.int32),
    }
    check_node("QLinearConv", 10, inputs, np.uint8, group=2, pads=[1, 1, 1, 1])


def test_bitcast_nan_and_negative_zero():
    x = np.array([np.nan, -0.0, np.inf, 1.0], np.float32)
    check_node("BitCast", 26, {"x": x}, np.uint32, to=12)


def test_cumprod_inner_axis_int64():
    x = RNG.integers(-3, 4, (2, 4, 3)).astype(np.int64)
    check_node(
        "CumProd", 26, {"x": x, "axis": np.array(1, np.int64)}, np.int64, exclusive=1, reverse=1
    )

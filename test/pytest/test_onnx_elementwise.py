"""Elementwise ONNX lowerings on forms the backend node cases do not exercise: the legacy
(opset < 7) broadcast and attribute forms, integer division and remainder with broadcasting,
shifts past the bit width, and Det. Each model runs through `mlconv.compile` and is compared
with numpy."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

import mlconv

ONNX_TYPES = {
    np.dtype(np.float32): TensorProto.FLOAT,
    np.dtype(np.int8): TensorProto.INT8,
    np.dtype(np.int32): TensorProto.INT32,
    np.dtype(np.int64): TensorProto.INT64,
    np.dtype(np.uint8): TensorProto.UINT8,
}


def run_node(op_type, opset, inputs, output_dtype, output_shape, **attributes):
    """Compile a one-node model over `inputs` (name -> array) and run it."""
    names = list(inputs)
    node = helper.make_node(op_type, names, ["y"], **attributes)
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info(n, ONNX_TYPES[a.dtype], a.shape) for n, a in inputs.items()],
        [helper.make_tensor_value_info("y", ONNX_TYPES[np.dtype(output_dtype)], output_shape)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    (result,) = mlconv.compile(model, device="cpu")(*inputs.values())
    return np.asarray(result)


RNG = np.random.default_rng(0)


def test_add6_broadcast_from_axis():
    a = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    b = RNG.standard_normal(3).astype(np.float32)
    y = run_node("Add", 6, {"a": a, "b": b}, np.float32, (2, 3, 4), broadcast=1, axis=1)
    np.testing.assert_allclose(y, a + b[:, None], rtol=1e-6)


def test_clip6_attributes_one_bound():
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    y = run_node("Clip", 6, {"x": x}, np.float32, (3, 4), min=-0.5)
    np.testing.assert_array_equal(y, np.maximum(x, np.float32(-0.5)))


def test_clip13_int8_bounds_min_above_max():
    x = np.arange(-5, 5, dtype=np.int8)
    bounds = {"lo": np.array(3, np.int8), "hi": np.array(1, np.int8)}
    y = run_node("Clip", 13, {"x": x, **bounds}, np.int8, (10,))
    np.testing.assert_array_equal(y, np.full(10, 1, np.int8))  # min > max: all max


def test_pow1_named_x_y():
    x = np.abs(RNG.standard_normal(5)).astype(np.float32) + 0.1
    e = RNG.standard_normal(5).astype(np.float32)
    y = run_node("Pow", 1, {"x": x, "e": e}, np.float32, (5,))
    np.testing.assert_allclose(y, x**e, rtol=1e-5)


def test_div_int_broadcast_truncates():
    a = np.array([[-7, 7], [-8, 9]], np.int32)
    b = np.array([2, -4], np.int32)
    y = run_node("Div", 13, {"a": a, "b": b}, np.int32, (2, 2))
    np.testing.assert_array_equal(y, np.trunc(a / b).astype(np.int32))


@pytest.mark.parametrize("fmod", [0, 1])
def test_mod_int_sign_rules(fmod):
    a = np.array([-7, 7, -7, 7], np.int64)
    b = np.array([3, -3, -3, 3], np.int64)
    y = run_node("Mod", 13, {"a": a, "b": b}, np.int64, (4,), fmod=fmod)
    np.testing.assert_array_equal(y, np.fmod(a, b) if fmod else np.mod(a, b))


def test_bitshift_right_signed_past_width():
    x = np.array([-128, -1, 64, 100], np.int8)
    s = np.array([9, -1, 1, 8], np.int8)
    y = run_node("BitShift", 28, {"x": x, "s": s}, np.int8, (4,), direction="RIGHT")
    np.testing.assert_array_equal(y, np.array([-1, -1, 32, 0], np.int8))


def test_det_3x3_batched():
    x = RNG.standard_normal((2, 3, 3)).astype(np.float32)
    y = run_node("Det", 11, {"x": x}, np.float32, (2,))
    np.testing.assert_allclose(y, np.linalg.det(x), rtol=1e-4, atol=1e-5)

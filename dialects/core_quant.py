"""Quantization core ops, and the bit-level and cumulative-product extensions ONNX adds.

OpenVINO expresses quantization with FakeQuantize, whose result stays in the float type; ONNX
QuantizeLinear/DequantizeLinear produce and consume the integer (or float8/float4) storage
type itself. `core.QuantizeLinear` and `core.DequantizeLinear` are mlconv extensions with
exactly ONNX's semantics: per tensor (scalar or one-element scale), per axis (1-D scale along
`axis`) or blocked (scale of the input's rank, each element covering `block_size` elements
along `axis`, the last block possibly shorter). `core.BitCast` and `core.CumProd` have no
OpenVINO counterpart either (CumProd mirrors opset3 CumSum).
"""

from __future__ import annotations

import jax.numpy as jnp
import ml_dtypes
import numpy as np
from jax import lax
from xdsl.utils.exceptions import VerifyException

from mlconv.dialects.core_base import BOOL, INT, STR, TYPE, CoreOp, core_op

# Float storage types whose out-of-range values `saturate` clamps to the largest finite value.
_FLOAT8 = tuple(
    np.dtype(t)
    for t in (
        ml_dtypes.float8_e4m3fn,
        ml_dtypes.float8_e4m3fnuz,
        ml_dtypes.float8_e5m2,
        ml_dtypes.float8_e5m2fnuz,
    )
)


def _expand(value, shape: tuple[int, ...], axis: int, block_size: int):
    """A scale or zero point made broadcastable to the input's `shape`."""
    if value.ndim == 0:
        return value
    if value.size == 1:
        return value.reshape(())
    axis %= len(shape)
    if not block_size:
        dims = [1] * len(shape)
        dims[axis] = value.shape[0]
        return value.reshape(dims)
    value = jnp.repeat(value, block_size, axis=axis)
    return lax.slice_in_dim(value, 0, shape[axis], axis=axis)


def _is_integer(dtype: np.dtype) -> bool:
    return dtype.kind in "iu" or dtype.name in ("int4", "uint4", "int2", "uint2")


@core_op(
    operands=("input", "scale", "?zero_point"),
    attributes={
        "destination_type": TYPE,
        "axis": (INT, 1),
        "block_size": (INT, 0),
        "saturate": (BOOL, True),
        "precision": (TYPE, None),
    },
)
class QuantizeLinearOp(CoreOp):
    """Quantize floats to `destination_type` (mlconv extension; ONNX QuantizeLinear-10..28).

    q = input / scale computed in `precision` (default: the promoted type of input and scale).
    Integer storage: saturate(round_half_to_even(q) + zero_point) to the type's range. Float
    storage (float8, float4): q + zero_point converted, clamped to the largest finite value
    when `saturate` (float4 E2M1 always clamps; NaN stays NaN). Example:

        %q = "core.QuantizeLinear"(%x, %s, %zp) {destination_type = ui8, axis = 1 : i64}
               : (tensor<1x3xf32>, tensor<3xf32>, tensor<3xui8>) -> tensor<1x3xui8>
    """

    name = "core.QuantizeLinear"
    VERSION = 1

    @staticmethod
    def semantics(
        input, scale, zero_point=None, *, destination_type, axis, block_size, saturate, precision
    ):
        dtype = np.dtype(destination_type)
        compute = np.dtype(precision) if precision is not None else jnp.result_type(input, scale)
        shape = input.shape
        q = input.astype(compute) / _expand(scale, shape, axis, block_size).astype(compute)
        zero = None if zero_point is None else _expand(zero_point, shape, axis, block_size)
        if _is_integer(dtype):
            info = ml_dtypes.iinfo(dtype)
            q = jnp.round(q)
            if zero is not None:
                q = q + zero.astype(compute)
            q = jnp.clip(q, np.array(info.min, compute), np.array(info.max, compute))
            return q.astype(np.int32).astype(dtype)
        if zero is not None:
            q = q + zero.astype(compute)
        if dtype not in _FLOAT8 or saturate:
            high = np.array(float(ml_dtypes.finfo(dtype).max), compute)
            q = jnp.clip(q, -high, high)
        return q.astype(dtype)


@core_op(
    operands=("input", "scale", "?zero_point"),
    attributes={"axis": (INT, 1), "block_size": (INT, 0), "destination_type": (TYPE, None)},
)
class DequantizeLinearOp(CoreOp):
    """(input - zero_point) * scale (mlconv extension; ONNX DequantizeLinear-10..28).

    The difference is taken in f32, the product in the promoted type of f32 and the scale,
    then converted to `destination_type` (default: the scale's type). Example:

        %y = "core.DequantizeLinear"(%q, %s, %zp) {axis = 1 : i64}
               : (tensor<1x3xui8>, tensor<3xf32>, tensor<3xui8>) -> tensor<1x3xf32>
    """

    name = "core.DequantizeLinear"
    VERSION = 1

    @staticmethod
    def semantics(input, scale, zero_point=None, *, axis, block_size, destination_type):
        shape = input.shape
        x = input.astype(np.float32)
        if zero_point is not None:
            x = x - _expand(zero_point, shape, axis, block_size).astype(np.float32)
        y = x * _expand(scale, shape, axis, block_size)
        return y.astype(destination_type if destination_type is not None else scale.dtype)


@core_op(operands=("arg",), attributes={"destination_type": TYPE})
class BitCastOp(CoreOp):
    """Reinterpret each element's bits as `destination_type` of the same width (mlconv
    extension; ONNX BitCast-26, lax.bitcast_convert_type). A boolean is the byte 0 or 1;
    a byte read as boolean is true when nonzero. Example:

        %y = "core.BitCast"(%x) {destination_type = i32} : (tensor<3xf32>) -> tensor<3xi32>
    """

    name = "core.BitCast"
    VERSION = 1

    @staticmethod
    def semantics(arg, *, destination_type):
        dtype = np.dtype(destination_type)
        if arg.dtype == np.bool_:
            arg = arg.astype(np.uint8)
        if dtype == np.bool_:
            return lax.bitcast_convert_type(arg, np.uint8) != 0
        if arg.dtype == dtype:
            return arg
        return lax.bitcast_convert_type(arg, dtype)


@core_op(
    operands=("arg", "axis"),
    attributes={"exclusive": (BOOL, False), "reverse": (BOOL, False)},
    static_operands=("axis",),
)
class CumProdOp(CoreOp):
    """Cumulative product along `axis`; `exclusive` leaves out the element itself (the first
    product is 1), `reverse` multiplies from the end (mlconv extension mirroring OpenVINO
    opset3 CumSum; ONNX CumProd-26).

        %y = "core.CumProd"(%x, %axis) {exclusive = false, reverse = false}
               : (tensor<5xf32>, tensor<i64>) -> tensor<5xf32>
    """

    name = "core.CumProd"
    VERSION = 1

    @staticmethod
    def semantics(arg, axis, *, exclusive, reverse):
        axis = int(np.asarray(axis).reshape(())) % arg.ndim
        data = jnp.flip(arg, axis) if reverse else arg
        total = jnp.cumprod(data, axis=axis, dtype=arg.dtype)
        if exclusive:
            size = arg.shape[axis]
            shifted = lax.slice_in_dim(total, 0, max(size - 1, 0), axis=axis)
            ones = jnp.ones_like(lax.slice_in_dim(total, 0, min(size, 1), axis=axis))
            total = jnp.concatenate([ones, shifted], axis=axis)
        return jnp.flip(total, axis) if reverse else total


@core_op(
    operands=("data", "input_low", "input_high", "output_low", "output_high"),
    attributes={"levels": INT, "auto_broadcast": (STR, "numpy")},
)
class FakeQuantizeOp(CoreOp):
    """Quantize and dequantize in one op, result in the input's float type (OpenVINO opset1
    FakeQuantize): x <= min(input_low, input_high) gives output_low, x > max(...) output_high,
    else round((x - il) / (ih - il) * (levels - 1)) / (levels - 1) * (oh - ol) + ol, the ranges
    broadcast numpy-style. The form quantized models take in core (`core-quantize`): 256 levels
    on activations, 255 symmetric levels per output channel on weights. Its semantics binds one
    jax primitive (`mlconv.fake_quant`), so it reaches the tpu level as `tpu.fake_quantize`,
    where `tpu-quantize` lowers it to integers. Example:

        %y = "core.FakeQuantize"(%x, %il, %ih, %ol, %oh) {levels = 256 : i64}
               : (tensor<1x8xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>)
               -> tensor<1x8xf32>
    """

    name = "core.FakeQuantize"
    VERSION = 1

    @staticmethod
    def semantics(data, input_low, input_high, output_low, output_high, *, levels, auto_broadcast):
        # lazy: loads 1 more module (fake_quant)
        from mlconv.fake_quant import fake_quantize

        return fake_quantize(data, input_low, input_high, output_low, output_high, levels=levels)

    def verify_semantics(self) -> None:
        levels = self.attribute_values()["levels"]
        if levels < 2:
            raise VerifyException(f"levels must be at least 2, got {levels}")


OPS: list[type[CoreOp]] = [
    QuantizeLinearOp,
    DequantizeLinearOp,
    BitCastOp,
    CumProdOp,
    FakeQuantizeOp,
]

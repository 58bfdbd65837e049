"""Quantization ONNX ops: QuantizeLinear/DequantizeLinear (core extensions with ONNX's
semantics), DynamicQuantizeLinear, the integer MatMul/Conv family and the QLinear ops composed
from them; BitCast and CumProd (core extensions, see dialects/core_quant.py).

The QLinear ops follow the ONNX reference: exact int32 accumulation of (q - zero_point), a
multiplier a_scale * b_scale / y_scale computed in the scales' type, the product in f64, then
round half to even, + y_zero_point and saturation to the output type.
"""

from __future__ import annotations

import numpy as np
from onnx.helper import tensor_dtype_to_np_dtype
from xdsl.dialects.builtin import Float64Type, IntegerType, Signedness, i32

from mlconv.dense import element_type, numpy_dtype
from mlconv.dialects import core_elementwise as ew
from mlconv.dialects import core_nn as nn
from mlconv.dialects import core_quant as cq
from mlconv.dialects import core_tensor as ct
from mlconv.passes.onnx_patterns import lowering
from mlconv.passes.onnx_patterns.nn import spatial_rank, window_attributes

ui8 = IntegerType(8, Signedness.UNSIGNED)


def _onnx_type(b, op, name):
    """The element type named by the ONNX dtype attribute `name` (None when 0 or absent)."""
    value = b.attr(op, name, 0)
    return element_type(np.dtype(tensor_dtype_to_np_dtype(value))) if value else None


@lowering("QuantizeLinear", 10, 13, 19, 21, 23, 24, 25, 28)
def quantize_linear(op, b):
    x, scale, zero_point = op.operands[0], op.operands[1], b.input(op, "y_zero_point")
    return [
        b(
            cq.QuantizeLinearOp,
            x,
            scale,
            zero_point,
            destination_type=op.results[0].type.get_element_type(),
            axis=b.attr(op, "axis", 1),
            block_size=b.attr(op, "block_size", 0),
            saturate=bool(b.attr(op, "saturate", 1)),
            precision=_onnx_type(b, op, "precision"),
        )
    ]


@lowering("DequantizeLinear", 10, 13, 19, 21, 23, 24, 25, 28)
def dequantize_linear(op, b):
    x, scale, zero_point = op.operands[0], op.operands[1], b.input(op, "x_zero_point")
    return [
        b(
            cq.DequantizeLinearOp,
            x,
            scale,
            zero_point,
            axis=b.attr(op, "axis", 1),
            block_size=b.attr(op, "block_size", 0),
            destination_type=op.results[0].type.get_element_type(),
        )
    ]


@lowering("DynamicQuantizeLinear", 11)
def dynamic_quantize_linear(op, b):
    # scale = (max(x, 0) - min(x, 0)) / 255 (1/255 when that range is empty),
    # zero_point = round(clamp(-min(x, 0) / scale, 0, 255)), y = QuantizeLinear(x, scale, zp).
    x = op.operands[0]
    flat = b(ct.ReshapeOp, x, b.ints([-1]), special_zero=False)
    zero, axis = b.const(0, b.dtype(x)), b.ints([0])
    high = b(ew.MaximumOp, b(ct.ReduceMaxOp, flat, axis), zero)
    low = b(ew.MinimumOp, b(ct.ReduceMinOp, flat, axis), zero)
    span = b(ew.SubtractOp, high, low)
    span = b(ct.SelectOp, b(ew.EqualOp, span, zero), b.const(1, b.dtype(x)), span)
    scale = b(ew.DivideOp, span, b.const(255, b.dtype(x)))
    shift = b(ew.SubtractOp, zero, b(ew.DivideOp, low, scale))
    zero_point = b(ew.RoundOp, b(ew.ClampOp, shift, min=0.0, max=255.0), mode="half_to_even")
    zero_point = b(ct.ConvertOp, zero_point, destination_type=ui8)
    y = b(cq.QuantizeLinearOp, x, scale, zero_point, destination_type=ui8)
    return [y, scale, zero_point]


def _centered(b, q, zero_point, channel_axis: int | None = None):
    """int32(q) - int32(zero_point); a 1-D zero point of several values applies along
    `channel_axis` (rows of MatMulInteger's A, output channels of a Conv's W)."""
    q = b(ct.ConvertOp, q, destination_type=i32)
    if zero_point is None:
        return q
    zero_point = b(ct.ConvertOp, zero_point, destination_type=i32)
    shape = zero_point.type.get_shape() if b.rank(zero_point) else ()
    rank = b.rank(q)
    if channel_axis is not None and len(shape) == 1 and shape[0] != 1:
        if rank is None:
            raise b.fail("a per-channel zero point needs the rank of its operand")
        axis = channel_axis % rank
        zero_point = b(ct.UnsqueezeOp, zero_point, b.ints([i for i in range(rank) if i > axis]))
    return b(ew.SubtractOp, q, zero_point)


def _integer_matmul(b, a, a_zero_point, bm, b_zero_point):
    return b(nn.MatMulOp, _centered(b, a, a_zero_point, -2), _centered(b, bm, b_zero_point))


def _integer_conv(op, b, x, x_zero_point, w, w_zero_point):
    x, w = _centered(b, x, x_zero_point), _centered(b, w, w_zero_point, 0)
    spatial = spatial_rank(b, w, op) if b.rank(w) else spatial_rank(b, x, op)
    attributes = window_attributes(op, b, spatial)
    attributes["dilations"] = b.attr(op, "dilations", [1] * spatial)
    group = b.attr(op, "group", 1)
    if group == 1:
        return b(nn.ConvolutionOp, x, w, **attributes), spatial
    shape = w.type.get_shape() if b.rank(w) else None
    if shape is None or shape[0] < 0:
        raise b.fail("a grouped convolution needs the static output-channel count of W")
    filters = b(ct.ReshapeOp, w, b.ints([group, shape[0] // group, -1, *shape[2:]]))
    return b(nn.GroupConvolutionOp, x, filters, **attributes), spatial


def _requantize(b, acc, multiplier, y_zero_point, target):
    """saturate(round_half_to_even(f64(acc) * f64(multiplier)) + y_zero_point) as `target`."""
    f64 = Float64Type()
    y = b(
        ew.MultiplyOp,
        b(ct.ConvertOp, acc, destination_type=f64),
        b(ct.ConvertOp, multiplier, destination_type=f64),
    )
    y = b(ew.RoundOp, y, mode="half_to_even")
    if y_zero_point is not None:
        y = b(ew.AddOp, y, b(ct.ConvertOp, y_zero_point, destination_type=f64))
    info = np.iinfo(numpy_dtype(target))
    y = b(ew.ClampOp, y, min=float(info.min), max=float(info.max))
    return b(ct.ConvertOp, y, destination_type=target)


@lowering("MatMulInteger", 10)
def matmul_integer(op, b):
    a, bm = op.operands[0], op.operands[1]
    return [_integer_matmul(b, a, b.input(op, "a_zero_point"), bm, b.input(op, "b_zero_point"))]


@lowering("ConvInteger", 10)
def conv_integer(op, b):
    x, w = op.operands[0], op.operands[1]
    y, _ = _integer_conv(op, b, x, b.input(op, "x_zero_point"), w, b.input(op, "w_zero_point"))
    return [y]


@lowering("QLinearMatMul", 10, 21)
def qlinear_matmul(op, b):
    a, a_scale, a_zero_point, bm, b_scale, b_zero_point, y_scale, y_zero_point = op.operands
    acc = _integer_matmul(b, a, a_zero_point, bm, b_zero_point)
    multiplier = b(ew.DivideOp, b(ew.MultiplyOp, a_scale, b_scale), y_scale)
    return [_requantize(b, acc, multiplier, y_zero_point, op.results[0].type.get_element_type())]


@lowering("QLinearConv", 10)
def qlinear_conv(op, b):
    x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point = op.operands[:8]
    bias = b.input(op, "B")
    acc, spatial = _integer_conv(op, b, x, x_zero_point, w, w_zero_point)
    if bias is not None:
        bias = b(ct.ConvertOp, bias, destination_type=i32)
        acc = b(ew.AddOp, acc, b(ct.UnsqueezeOp, bias, b.ints(list(range(1, spatial + 1)))))
    w_shape = w_scale.type.get_shape() if b.rank(w_scale) else ()
    if len(w_shape) == 1 and w_shape[0] != 1:  # one scale per output channel
        w_scale = b(ct.UnsqueezeOp, w_scale, b.ints(list(range(1, spatial + 1))))
    multiplier = b(ew.DivideOp, b(ew.MultiplyOp, x_scale, w_scale), y_scale)
    return [_requantize(b, acc, multiplier, y_zero_point, op.results[0].type.get_element_type())]


@lowering("BitCast", 26)
def bitcast(op, b):
    return [b(cq.BitCastOp, op.operands[0], destination_type=op.results[0].type.get_element_type())]


@lowering("CumProd", 26)
def cumprod(op, b):
    x, axis = op.operands
    return [
        b(
            cq.CumProdOp,
            x,
            axis,
            exclusive=bool(b.attr(op, "exclusive", 0)),
            reverse=bool(b.attr(op, "reverse", 0)),
        )
    ]

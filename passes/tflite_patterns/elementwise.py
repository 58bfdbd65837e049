"""Elementwise arithmetic and activations (layout-agnostic)."""

from __future__ import annotations

import numpy as np

from mlconv.dense import element_type
from mlconv.dialects import core
from mlconv.dialects.quant import UniformQuantizedType
from mlconv.passes.tflite_patterns import lowering


def _binary(op_class):
    def pattern(op, b):
        return [b.fused(op, b(op_class, b.x(op, 0), b.x(op, 1)))]

    return pattern


for _name, _class in {
    "ADD": core.AddOp,
    "SUB": core.SubtractOp,
    "MUL": core.MultiplyOp,
    "DIV": core.DivideOp,
    "SQUARED_DIFFERENCE": core.SquaredDifferenceOp,
    "POW": core.PowerOp,
    "MAXIMUM": core.MaximumOp,
    "MINIMUM": core.MinimumOp,
}.items():
    lowering(_name)(_binary(_class))


def _unary(op_class, **attributes):
    def pattern(op, b):
        return [b(op_class, b.x(op, 0), **attributes)]

    return pattern


for _name, _class in {
    "LOGISTIC": core.SigmoidOp,
    "TANH": core.TanhOp,
    "RELU": core.ReluOp,
    "HARD_SWISH": core.HSwishOp,
    "SQRT": core.SqrtOp,
    "EXP": core.ExpOp,
    "NEG": core.NegativeOp,
    "ABS": core.AbsOp,
    "LOG": core.LogOp,
}.items():
    lowering(_name)(_unary(_class))

lowering("RELU6")(_unary(core.ClampOp, min=0.0, max=6.0))
lowering("RELU_N1_TO_1")(_unary(core.ClampOp, min=-1.0, max=1.0))


@lowering("RSQRT")
def rsqrt(op, b):
    return [b(core.DivideOp, b.const(np.float32(1.0)), b(core.SqrtOp, b.x(op, 0)))]


@lowering("GELU")
def gelu(op, b):
    mode = "TANH" if op.options().get("approximate") else "ERF"
    return [b(core.GeluOp, b.x(op, 0), approximation_mode=mode)]


@lowering("LEAKY_RELU")
def leaky_relu(op, b):
    x = b.x(op, 0)
    alpha = b.const(np.float32(op.options()["alpha"]))
    return [b(core.MaximumOp, x, b(core.MultiplyOp, x, alpha))]


@lowering("QUANTIZE", "DEQUANTIZE")
def quantize(op, b):
    # The operand arrives dequantized and the pass quantizes the result: requantization too,
    # except int8 -> int8 requantization within XNNPACK's scale range (below).
    requantized = _xnnpack_requantize(op, b)
    return [b.x(op, 0) if requantized is None else requantized]


def _xnnpack_requantize(op, b):
    """int8 -> int8 QUANTIZE as LiteRT runs it by default, in XNNPACK's convert operator
    (when 2^-8 <= scale_in / scale_out <= 2^7): a multiplier with 8 fractional bits,
    M = round(256 * scale_in / scale_out), and q_out = zp_out + floor((M * (q_in - zp_in) +
    128) / 256). Rounding the ratio to 1/256 moves up to 17% of the values by one step against
    round((q_in - zp_in) * scale_in / scale_out) (measured on a LOGISTIC output, ratio 0.159).
    Exact in f32: |M * (q_in - zp_in)| < 2^24. The result is already quantized (int8)."""
    source = b.raw(op, 0)
    qin = b.qtypes.get(source)
    qout = _result_qtype(op)
    if qin is None or qout is None or qin.is_per_axis or qout.is_per_axis:
        return None
    if qin.storage_type.width.data != 8 or qout.storage_type.width.data != 8:
        return None
    if "UNSIGNED" in (
        qin.storage_type.signedness.data.name,
        qout.storage_type.signedness.data.name,
    ):
        return None
    (scale_in,), (scale_out,) = qin.scale_values(), qout.scale_values()
    ratio = np.float32(scale_in) / np.float32(scale_out)
    if not 2.0**-8 <= ratio <= 2.0**7:
        return None
    (zp_in,), (zp_out,) = qin.zero_point_values(), qout.zero_point_values()
    multiplier = np.float32(np.rint(np.float32(256.0) * ratio))
    x = b(core.ConvertOp, source, destination_type=element_type(np.float32))
    x = b(core.SubtractOp, x, b.const(np.float32(zp_in)))
    x = b(core.AddOp, b(core.MultiplyOp, x, b.const(multiplier)), b.const(np.float32(128.0)))
    x = b(core.FloorOp, b(core.DivideOp, x, b.const(np.float32(256.0))))
    x = b(core.AddOp, x, b.const(np.float32(zp_out)))
    x = b(core.ClampOp, x, min=-128.0, max=127.0)
    return b(core.ConvertOp, x, destination_type=element_type(np.int8))


def _result_qtype(op):
    element = op.results[0].type.get_element_type()
    return element if isinstance(element, UniformQuantizedType) else None


@lowering("CAST")
def cast(op, b):
    return [b(core.ConvertOp, b.x(op, 0), destination_type=op.results[0].type.get_element_type())]

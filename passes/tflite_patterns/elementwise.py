"""Elementwise arithmetic and activations (layout-agnostic)."""

from __future__ import annotations

import numpy as np

from mlconv.dialects import core
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
    # The operand arrives dequantized and the pass quantizes the result: requantization too.
    return [b.x(op, 0)]


@lowering("CAST")
def cast(op, b):
    return [b(core.ConvertOp, b.x(op, 0), destination_type=op.results[0].type.get_element_type())]

"""Elementwise ONNX ops: arithmetic, comparison, logic, activations."""

from __future__ import annotations

import numpy as np

from mlconv.dialects import core_elementwise as ew
from mlconv.dialects import core_tensor as ct
from mlconv.passes.onnx_patterns import lowering


def legacy_broadcast(op, b, x, y):
    """Before opset 7, `broadcast=1` aligned B's dims with A's starting at `axis` (default: the
    trailing dims, as numpy does); make that explicit with an Unsqueeze."""
    axis = op.onnx_attr("axis")
    rank_x, rank_y = b.rank(x), b.rank(y)
    if not op.onnx_attr("broadcast") or axis is None or rank_x is None or rank_y is None:
        return y
    axis %= rank_x
    trailing = rank_x - axis - rank_y
    if trailing <= 0:
        return y
    return b(ct.UnsqueezeOp, y, b.ints(list(range(rank_y, rank_y + trailing))))


# ONNX op -> (core op, since-versions). Before opset 7 the ops carried legacy broadcast
# attributes, handled by `legacy_broadcast`.
BINARY = {
    "Add": (ew.AddOp, (1, 6, 7, 13, 14)),
    "Sub": (ew.SubtractOp, (1, 6, 7, 13, 14)),
    "Mul": (ew.MultiplyOp, (1, 6, 7, 13, 14)),
    "Pow": (ew.PowerOp, (1, 7, 12, 13, 15)),
    "Equal": (ew.EqualOp, (1, 7, 11, 13, 19)),
    "Less": (ew.LessOp, (1, 7, 9, 13)),
    "LessOrEqual": (ew.LessEqualOp, (12, 16)),
    "Greater": (ew.GreaterOp, (1, 7, 9, 13)),
    "GreaterOrEqual": (ew.GreaterEqualOp, (12, 16)),
    "And": (ew.LogicalAndOp, (1, 7)),
    "Or": (ew.LogicalOrOp, (1, 7)),
    "Xor": (ew.LogicalXorOp, (1, 7)),
    "BitwiseAnd": (ew.BitwiseAndOp, (18,)),
    "BitwiseOr": (ew.BitwiseOrOp, (18,)),
    "BitwiseXor": (ew.BitwiseXorOp, (18,)),
}


def _binary(core_class):
    def pattern(op, b):
        x, y = b.input(op, "A"), b.input(op, "B")
        return [b(core_class, x, legacy_broadcast(op, b, x, y))]

    return pattern


for _name, (_core, _versions) in BINARY.items():
    lowering(_name, *_versions)(_binary(_core))


@lowering("Div", 1, 6, 7, 13, 14)
def div(op, b):
    x, y = b.input(op, "A"), b.input(op, "B")
    # ONNX integer division truncates toward zero, as C does.
    return [b(ew.DivideOp, x, legacy_broadcast(op, b, x, y), m_pythondiv=False)]


UNARY = {
    "Relu": (ew.ReluOp, (1, 6, 13, 14)),
    "Sigmoid": (ew.SigmoidOp, (1, 6, 13)),
    "Tanh": (ew.TanhOp, (1, 6, 13)),
    "Exp": (ew.ExpOp, (1, 6, 13)),
    "Log": (ew.LogOp, (1, 6, 13)),
    "Sqrt": (ew.SqrtOp, (1, 6, 13)),
    "Abs": (ew.AbsOp, (1, 6, 13)),
    "Neg": (ew.NegativeOp, (1, 6, 13)),
    "Floor": (ew.FloorOp, (1, 6, 13)),
    "Ceil": (ew.CeilingOp, (1, 6, 13)),
    "Sign": (ew.SignOp, (9, 13)),
    "Erf": (ew.ErfOp, (9, 13)),
    "Sin": (ew.SinOp, (7,)),
    "Cos": (ew.CosOp, (7,)),
    "Tan": (ew.TanOp, (7,)),
    "Asin": (ew.AsinOp, (7,)),
    "Acos": (ew.AcosOp, (7,)),
    "Atan": (ew.AtanOp, (7,)),
    "Sinh": (ew.SinhOp, (9,)),
    "Cosh": (ew.CoshOp, (9,)),
    "Asinh": (ew.AsinhOp, (9,)),
    "Acosh": (ew.AcoshOp, (9,)),
    "Atanh": (ew.AtanhOp, (9,)),
    "Not": (ew.LogicalNotOp, (1,)),
    "BitwiseNot": (ew.BitwiseNotOp, (18,)),
    "Softplus": (ew.SoftPlusOp, (1, 22)),
    "Softsign": (ew.SoftSignOp, (1, 22)),
    "Mish": (ew.MishOp, (18, 22)),
    "HardSwish": (ew.HSwishOp, (14, 22)),
    "IsNaN": (ew.IsNaNOp, (9, 13, 20)),
}


def _unary(core_class):
    def pattern(op, b):
        return [b(core_class, op.operands[0])]

    return pattern


for _name, (_core, _versions) in UNARY.items():
    lowering(_name, *_versions)(_unary(_core))


def _fold_variadic(core_class):
    def pattern(op, b):
        values = list(op.operands)
        result = values[0]
        for value in values[1:]:
            result = b(core_class, result, value)
        return [result]

    return pattern


for _name, _core, _versions in (
    ("Sum", ew.AddOp, (1, 6, 8, 13)),
    ("Max", ew.MaximumOp, (1, 6, 8, 12, 13)),
    ("Min", ew.MinimumOp, (1, 6, 8, 12, 13)),
):
    lowering(_name, *_versions)(_fold_variadic(_core))


@lowering("Mean", 1, 6, 8, 13)
def mean(op, b):
    (total,) = _fold_variadic(ew.AddOp)(op, b)
    return [b(ew.DivideOp, total, b.const(len(op.operands), b.dtype(total)))]


@lowering("Where", 9, 16)
def where(op, b):
    return [b(ct.SelectOp, *op.operands)]


@lowering("Clip", 1, 6, 11, 12, 13)
def clip(op, b):
    x = op.operands[0]
    dtype = b.dtype(x)
    if op.onnx_attr("min") is not None or op.onnx_attr("max") is not None or len(op.operands) == 1:
        low = op.onnx_attr("min")
        high = op.onnx_attr("max")
        if low is None and high is None:
            return [x]
        low = -np.inf if low is None else low
        high = np.inf if high is None else high
        return [b(ew.ClampOp, x, min=low, max=high)]
    low, high = b.input(op, "min"), b.input(op, "max")
    result = x
    if low is not None:
        result = b(ew.MaximumOp, result, low)
    if high is not None:
        result = b(ew.MinimumOp, result, high)
    del dtype
    return [result]


@lowering("LeakyRelu", 1, 6, 16)
def leaky_relu(op, b):
    x = op.operands[0]
    alpha = b.const(b.attr(op, "alpha", 0.01), b.dtype(x))
    return [b(ct.SelectOp, b(ew.GreaterEqualOp, x, b.const(0, b.dtype(x))), x, b(ew.MultiplyOp, x, alpha))]


@lowering("Elu", 1, 6, 22)
def elu(op, b):
    return [b(ew.EluOp, op.operands[0], alpha=b.attr(op, "alpha", 1.0))]


@lowering("PRelu", 1, 6, 7, 9, 16)
def prelu(op, b):
    x, slope = op.operands
    slope = legacy_broadcast(op, b, x, slope)
    zero = b.const(0, b.dtype(x))
    return [b(ct.SelectOp, b(ew.GreaterOp, x, zero), x, b(ew.MultiplyOp, x, slope))]

"""Elementwise TF ops: arithmetic, comparisons, activations, casts, identities.

TF broadcasts numpy-style, as core's binary ops do, so the 1:1 families share one pattern.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from mlconv.dense import numpy_dtype
from mlconv.dialects import core_elementwise as ew
from mlconv.dialects import core_tensor as ct
from mlconv.passes.lowering.tensor import lower_select
from mlconv.passes.tf_patterns import lowering

BINARY = {
    "Add": ew.AddOp,
    "AddV2": ew.AddOp,
    "Sub": ew.SubtractOp,
    "Mul": ew.MultiplyOp,
    "RealDiv": ew.DivideOp,
    "FloorDiv": ew.DivideOp,
    "Maximum": ew.MaximumOp,
    "Minimum": ew.MinimumOp,
    "Pow": ew.PowerOp,
    "SquaredDifference": ew.SquaredDifferenceOp,
    "FloorMod": ew.FloorModOp,
    "Equal": ew.EqualOp,
    "NotEqual": ew.NotEqualOp,
    "Less": ew.LessOp,
    "LessEqual": ew.LessEqualOp,
    "Greater": ew.GreaterOp,
    "GreaterEqual": ew.GreaterEqualOp,
    "LogicalAnd": ew.LogicalAndOp,
    "LogicalOr": ew.LogicalOrOp,
}

UNARY = {
    "Relu": ew.ReluOp,
    "Sigmoid": ew.SigmoidOp,
    "Tanh": ew.TanhOp,
    "Exp": ew.ExpOp,
    "Log": ew.LogOp,
    "Sqrt": ew.SqrtOp,
    "Abs": ew.AbsOp,
    "Neg": ew.NegativeOp,
    "Floor": ew.FloorOp,
    "Ceil": ew.CeilingOp,
    "Sign": ew.SignOp,
    "Erf": ew.ErfOp,
    "Sin": ew.SinOp,
    "Cos": ew.CosOp,
    "Softplus": ew.SoftPlusOp,
    "Softsign": ew.SoftSignOp,
    "LogicalNot": ew.LogicalNotOp,
    "IsNan": ew.IsNaNOp,
    "IsInf": ew.IsInfOp,
}


@lowering(*BINARY)
def binary(op, b):
    return [b(BINARY[op.name[3:]], b.input(op, 0), b.input(op, 1))]


@lowering("Div")
def div(op, b):
    # TF Div truncates integer quotients (C semantics); floats divide exactly.
    return [b(ew.DivideOp, b.input(op, 0), b.input(op, 1), m_pythondiv=False)]


@lowering(*UNARY)
def unary(op, b):
    return [b(UNARY[op.name[3:]], b.input(op, 0))]


@lowering("Identity", "StopGradient", "Snapshot", "PreventGradient", "EnsureShape")
def identity(op, b):
    return [b.input(op, 0)]


@lowering("IdentityN")
def identity_n(op, b):
    return b.inputs(op, 0)


def _scalar(b, value, like):
    return b.const(np.asarray(value, b.dtype(like)))


@lowering("Rsqrt")
def rsqrt(op, b):
    x = b.input(op, 0)
    return [b(ew.DivideOp, _scalar(b, 1, x), b(ew.SqrtOp, x))]


@lowering("Reciprocal", "Inv")
def reciprocal(op, b):
    x = b.input(op, 0)
    return [b(ew.DivideOp, _scalar(b, 1, x), x)]


@lowering("Square")
def square(op, b):
    x = b.input(op, 0)
    return [b(ew.MultiplyOp, x, x)]


@lowering("Erfc")
def erfc(op, b):
    # Keras 3's exact GELU is 0.5 * x * erfc(-x / sqrt(2)); 1 - erf loses nothing there that
    # matters at float32, since the product with x goes to 0 where erfc does.
    x = b.input(op, 0)
    return [b(ew.SubtractOp, _scalar(b, 1, x), b(ew.ErfOp, x))]


@lowering("Relu6")
def relu6(op, b):
    return [b(ew.ClampOp, b.input(op, 0), min=0.0, max=6.0)]


@lowering("Elu")
def elu(op, b):
    return [b(ew.EluOp, b.input(op, 0), alpha=1.0)]


@lowering("Selu")
def selu(op, b):
    # TF's constants (Klambauer et al.), the same as OpenVINO Selu's usual inputs.
    x = b.input(op, 0)
    alpha, scale = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
    return [b(ew.MultiplyOp, b(ew.EluOp, x, alpha=alpha), _scalar(b, scale, x))]


@lowering("LeakyRelu")
def leaky_relu(op, b):
    x = b.input(op, 0)
    negative = b(ew.MultiplyOp, x, _scalar(b, b.attr(op, "alpha", 0.2), x))
    return [b(ct.SelectOp, b(ew.GreaterOp, x, _scalar(b, 0, x)), x, negative)]


@lowering("Select", "SelectV2")
def select(op, b):
    # SelectV2 broadcasts numpy-style; Select's rank-1 condition picks rows.
    inputs = b.input(op, 0), b.input(op, 1), b.input(op, 2)
    return [lower_select(b, *inputs, rows=op.name == "tf.Select")]


@lowering("Cast")
def cast(op, b):
    """`Truncate` rounds toward zero where a float narrows to another float: refused there
    (ConvertOp rounds to nearest)."""
    x, destination = b.input(op, 0), op.attr_or_default("DstT")
    source, target = np.dtype(b.dtype(x)), np.dtype(numpy_dtype(destination))
    floats = all(d.kind == "f" or d == ml_dtypes.bfloat16 for d in (source, target))
    narrowing = floats and target.itemsize < source.itemsize
    if narrowing and b.attr(op, "Truncate", False):
        raise b.fail(f"Cast with Truncate=true from {source} to {target} is not supported")
    return [b(ct.ConvertOp, x, destination_type=destination)]

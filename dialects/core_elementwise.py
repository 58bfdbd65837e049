"""Elementwise core ops: OpenVINO's arithmetic, comparison, logical and activation ops.

Binary ops broadcast numpy-style (`auto_broadcast = "numpy"`, OpenVINO's default); unary ops
keep their operand's type. The families map 1:1 onto jax.numpy functions, so they are declared
from tables rather than one class each by hand.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from mlconv.dialects.core_base import BOOL, FLOAT, STR, CoreOp, core_op


def _class_name(op_name: str) -> str:
    return f"{op_name}Op"


def _binary(
    op_name: str, version: int, fn: Callable[..., Any], doc: str, extra=None
) -> type[CoreOp]:
    attributes: dict[str, Any] = {"auto_broadcast": (STR, "numpy")}
    attributes.update(extra or {})

    def semantics(a, b, *, auto_broadcast="numpy", **kwargs):
        if auto_broadcast == "none" and a.shape != b.shape:
            raise ValueError("auto_broadcast=none needs equal shapes")
        return fn(a, b, **kwargs)

    spec = type(
        _class_name(op_name),
        (CoreOp,),
        {
            "__doc__": f"""{doc} (OpenVINO opset{version} {op_name}).

    Operands broadcast numpy-style unless `auto_broadcast = "none"`. Example:

        %z = "core.{op_name}"(%x, %y) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    """,
            "name": f"core.{op_name}",
            "VERSION": version,
            "semantics": staticmethod(semantics),
            "__module__": __name__,
        },
    )
    return core_op(operands=("input_1", "input_2"), attributes=attributes)(spec)


def _unary(
    op_name: str, version: int, fn: Callable[..., Any], doc: str, attributes=None
) -> type[CoreOp]:
    spec = type(
        _class_name(op_name),
        (CoreOp,),
        {
            "__doc__": f"""{doc} (OpenVINO opset{version} {op_name}).

    Applied to every element; the result has the operand's type. Example:

        %y = "core.{op_name}"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
    """,
            "name": f"core.{op_name}",
            "VERSION": version,
            "semantics": staticmethod(fn),
            "__module__": __name__,
        },
    )
    return core_op(operands=("arg",), attributes=attributes or {})(spec)


def _divide(a, b, *, m_pythondiv=True):
    if jnp.issubdtype(a.dtype, jnp.integer):
        if m_pythondiv:
            return jnp.floor_divide(a, b)
        # C semantics (ONNX Div): the quotient truncated toward zero. lax.div does not broadcast.
        return lax.div(*jnp.broadcast_arrays(a, b))
    return jnp.divide(a, b)


def _power(a, b):
    """The result has the base's type (ONNX Pow allows a float exponent on an integer base)."""
    if jnp.issubdtype(a.dtype, jnp.integer) and not jnp.issubdtype(b.dtype, jnp.integer):
        return jnp.power(a.astype(b.dtype), b).astype(a.dtype)
    return jnp.power(a, b.astype(a.dtype))


def _mod(a, b):
    """Truncated remainder (sign of the dividend), OpenVINO Mod."""
    return lax.rem(*jnp.broadcast_arrays(a, b))


BINARY = [
    _binary("Add", 1, jnp.add, "Elementwise sum"),
    _binary("Subtract", 1, jnp.subtract, "Elementwise difference"),
    _binary("Multiply", 1, jnp.multiply, "Elementwise product"),
    _binary(
        "Divide",
        1,
        _divide,
        "Elementwise quotient; integer division floors when `m_pythondiv`, else truncates",
        {"m_pythondiv": (BOOL, True)},
    ),
    _binary("Maximum", 1, jnp.maximum, "Elementwise maximum"),
    _binary("Minimum", 1, jnp.minimum, "Elementwise minimum"),
    _binary("Power", 1, _power, "Elementwise power a**b"),
    _binary("SquaredDifference", 1, lambda a, b: jnp.square(a - b), "Elementwise (a-b)**2"),
    _binary("FloorMod", 1, jnp.mod, "Elementwise remainder with the divisor's sign"),
    _binary("Mod", 1, _mod, "Elementwise remainder with the dividend's sign"),
    _binary("Equal", 1, jnp.equal, "Elementwise a == b, boolean result"),
    _binary("NotEqual", 1, jnp.not_equal, "Elementwise a != b, boolean result"),
    _binary("Less", 1, jnp.less, "Elementwise a < b, boolean result"),
    _binary("LessEqual", 1, jnp.less_equal, "Elementwise a <= b, boolean result"),
    _binary("Greater", 1, jnp.greater, "Elementwise a > b, boolean result"),
    _binary("GreaterEqual", 1, jnp.greater_equal, "Elementwise a >= b, boolean result"),
    _binary("LogicalAnd", 1, jnp.logical_and, "Elementwise boolean and"),
    _binary("LogicalOr", 1, jnp.logical_or, "Elementwise boolean or"),
    _binary("LogicalXor", 1, jnp.logical_xor, "Elementwise boolean xor"),
    _binary("BitwiseAnd", 13, jnp.bitwise_and, "Elementwise bitwise and"),
    _binary("BitwiseOr", 13, jnp.bitwise_or, "Elementwise bitwise or"),
    _binary("BitwiseXor", 13, jnp.bitwise_xor, "Elementwise bitwise xor"),
]


def _gelu(x, *, approximation_mode="ERF"):
    return jax.nn.gelu(x, approximate=approximation_mode.upper() == "TANH")


def _round(x, *, mode="half_to_even"):
    if mode == "half_to_even":
        return jnp.round(x)
    return jnp.sign(x) * jnp.floor(jnp.abs(x) + 0.5)


def _hsigmoid(x):
    return jnp.minimum(jnp.maximum(x + 3.0, 0.0), 6.0) / 6.0


def _softplus(x):
    # log(1+e^x) without overflow for large x.
    return jnp.logaddexp(x, jnp.zeros_like(x))


def _is_inf(x, *, detect_negative=True, detect_positive=True):
    return (jnp.isneginf(x) & detect_negative) | (jnp.isposinf(x) & detect_positive)


def _clamp(x, *, min, max):  # noqa: A002 - OpenVINO's attribute names
    if jnp.issubdtype(x.dtype, jnp.integer):
        # Bounds outside the integer range (Clip-6's default +-FLT_MAX) must saturate, not
        # wrap, when cast to the data's type.
        # Python compares floats with ints exactly, where numpy would round int64's range.
        info = np.iinfo(x.dtype)
        lo = math.ceil(builtins.min(builtins.max(min, info.min), info.max))
        hi = math.floor(builtins.min(builtins.max(max, info.min), info.max))
        return jnp.clip(x, np.array(lo, x.dtype), np.array(hi, x.dtype))
    return jnp.clip(x, jnp.asarray(min, x.dtype), jnp.asarray(max, x.dtype))


UNARY = [
    _unary("Relu", 1, jax.nn.relu, "max(x, 0)"),
    _unary("Sigmoid", 1, jax.nn.sigmoid, "1 / (1 + e^-x)"),
    _unary("Tanh", 1, jnp.tanh, "Hyperbolic tangent"),
    _unary("Exp", 1, jnp.exp, "e^x"),
    _unary("Log", 1, jnp.log, "Natural logarithm"),
    _unary("Sqrt", 1, jnp.sqrt, "Square root"),
    _unary("Abs", 1, jnp.abs, "Absolute value"),
    _unary("Negative", 1, jnp.negative, "-x"),
    _unary("Floor", 1, jnp.floor, "Largest integer <= x"),
    _unary("Ceiling", 1, jnp.ceil, "Smallest integer >= x"),
    _unary("Sign", 1, jnp.sign, "-1, 0 or 1"),
    _unary("Erf", 1, jax.scipy.special.erf, "Gauss error function"),
    _unary("Sin", 1, jnp.sin, "Sine"),
    _unary("Cos", 1, jnp.cos, "Cosine"),
    _unary("Tan", 1, jnp.tan, "Tangent"),
    _unary("Asin", 1, jnp.arcsin, "Arc sine"),
    _unary("Acos", 1, jnp.arccos, "Arc cosine"),
    _unary("Atan", 1, jnp.arctan, "Arc tangent"),
    _unary("Sinh", 1, jnp.sinh, "Hyperbolic sine"),
    _unary("Cosh", 1, jnp.cosh, "Hyperbolic cosine"),
    _unary("Asinh", 3, jnp.arcsinh, "Inverse hyperbolic sine"),
    _unary("Acosh", 3, jnp.arccosh, "Inverse hyperbolic cosine"),
    _unary("Atanh", 3, jnp.arctanh, "Inverse hyperbolic tangent"),
    _unary("LogicalNot", 1, jnp.logical_not, "Boolean not"),
    _unary("BitwiseNot", 13, jnp.bitwise_not, "Bitwise not"),
    _unary("HSigmoid", 5, _hsigmoid, "min(max(x+3, 0), 6) / 6"),
    _unary("HSwish", 4, lambda x: x * _hsigmoid(x), "x * min(max(x+3, 0), 6) / 6"),
    _unary("SoftPlus", 4, _softplus, "log(1 + e^x)"),
    _unary("SoftSign", 9, lambda x: x / (1 + jnp.abs(x)), "x / (1 + |x|)"),
    _unary("Mish", 4, lambda x: x * jnp.tanh(_softplus(x)), "x * tanh(softplus(x))"),
    _unary("IsNaN", 10, jnp.isnan, "True where x is NaN"),
    _unary(
        "IsInf",
        10,
        _is_inf,
        "True where x is +infinity (if `detect_positive`) or -infinity (if `detect_negative`)",
        {"detect_negative": (BOOL, True), "detect_positive": (BOOL, True)},
    ),
    _unary("IsFinite", 10, jnp.isfinite, "True where x is finite"),
    _unary(
        "Gelu",
        7,
        _gelu,
        "Gaussian error linear unit, exact (erf) or tanh approximation",
        {"approximation_mode": (STR, "ERF")},
    ),
    _unary(
        "Round",
        5,
        _round,
        "Round to the nearest integer, ties to even or away from zero",
        {"mode": (STR, "half_to_even")},
    ),
    _unary("Clamp", 1, _clamp, "Clip x to [min, max]", {"min": FLOAT, "max": FLOAT}),
    _unary(
        "Elu",
        1,
        lambda x, *, alpha: jnp.where(x > 0, x, alpha * jnp.expm1(x)).astype(x.dtype),
        "x if x > 0 else alpha * (e^x - 1)",
        {"alpha": FLOAT},
    ),
]


def _shifted(arg, shift, left: bool):
    """`arg` shifted bitwise by `shift`, broadcast. ONNX and OpenVINO define shifts by a
    negative amount or by >= the bit width (where XLA and C differ): the result is what sign
    extension alone gives (-1 for a negative signed `arg` shifted right, else 0)."""
    arg, shift = jnp.broadcast_arrays(arg, shift.astype(arg.dtype))
    in_range = (shift >= 0) & (shift < jnp.iinfo(arg.dtype).bits)
    amount = jnp.where(in_range, shift, 0).astype(arg.dtype)
    signed = jnp.issubdtype(arg.dtype, jnp.signedinteger)
    if left:
        shifted, fill = lax.shift_left(arg, amount), jnp.zeros_like(arg)
    else:
        shifted = (lax.shift_right_arithmetic if signed else lax.shift_right_logical)(arg, amount)
        fill = jnp.where(arg < 0, -1, 0).astype(arg.dtype) if signed else jnp.zeros_like(arg)
    return jnp.where(in_range, shifted, fill)


@core_op(operands=("arg", "shift"), attributes={"auto_broadcast": (STR, "numpy")})
class BitwiseLeftShiftOp(CoreOp):
    """Elementwise `arg << shift`; bits past the top (sign bit included) are dropped, and a
    negative or >= bit-width shift gives 0 (OpenVINO opset15 BitwiseLeftShift). Example:

        %z = "core.BitwiseLeftShift"(%x, %s) : (tensor<3xui8>, tensor<3xui8>) -> tensor<3xui8>
    """

    name = "core.BitwiseLeftShift"
    VERSION = 15

    @staticmethod
    def semantics(arg, shift, *, auto_broadcast="numpy"):
        return _shifted(arg, shift, left=True)


@core_op(operands=("arg", "shift"), attributes={"auto_broadcast": (STR, "numpy")})
class BitwiseRightShiftOp(CoreOp):
    """Elementwise `arg >> shift`, arithmetic (sign-extending) for signed types, logical for
    unsigned; a negative or >= bit-width shift gives -1 for negative `arg`, else 0 (OpenVINO
    opset15 BitwiseRightShift). Example:

        %z = "core.BitwiseRightShift"(%x, %s) : (tensor<3xi8>, tensor<3xi8>) -> tensor<3xi8>
    """

    name = "core.BitwiseRightShift"
    VERSION = 15

    @staticmethod
    def semantics(arg, shift, *, auto_broadcast="numpy"):
        return _shifted(arg, shift, left=False)


@core_op(operands=("data", "alpha", "lambda_"))
class SeluOp(CoreOp):
    """Scaled exponential linear unit: `lambda * (x if x > 0 else alpha * (e^x - 1))`, with
    `alpha` and `lambda` as (scalar) operands of the data's type (OpenVINO opset1 Selu). Example:

        %y = "core.Selu"(%x, %alpha, %lambda) : (tensor<3xf32>, tensor<f32>, tensor<f32>) -> tensor<3xf32>
    """

    name = "core.Selu"
    VERSION = 1

    @staticmethod
    def semantics(data, alpha, lambda_):
        negative = alpha.astype(data.dtype) * jnp.expm1(data)
        return lambda_.astype(data.dtype) * jnp.where(data > 0, data, negative)


@core_op(operands=("data", "alpha", "beta"))
class HardSigmoidOp(CoreOp):
    """`max(0, min(1, alpha * x + beta))`, `alpha` and `beta` scalar operands of the data's
    type (OpenVINO opset1 HardSigmoid). Example:

        %y = "core.HardSigmoid"(%x, %a, %b) : (tensor<3xf32>, tensor<f32>, tensor<f32>) -> tensor<3xf32>
    """

    name = "core.HardSigmoid"
    VERSION = 1

    @staticmethod
    def semantics(data, alpha, beta):
        linear = alpha.astype(data.dtype) * data + beta.astype(data.dtype)
        return jnp.clip(linear, jnp.zeros((), data.dtype), jnp.ones((), data.dtype))


@core_op(operands=("data", "?beta"))
class SwishOp(CoreOp):
    """`x * sigmoid(beta * x)`, `beta` a scalar operand (1 when absent) (OpenVINO opset4
    Swish). Example:

        %y = "core.Swish"(%x, %beta) : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
    """

    name = "core.Swish"
    VERSION = 4

    @staticmethod
    def semantics(data, beta=None):
        scaled = data if beta is None else beta.astype(data.dtype) * data
        return data * jax.nn.sigmoid(scaled)


@core_op(operands=("data", "slope"))
class PReluOp(CoreOp):
    """`x if x >= 0 else slope * x` (OpenVINO opset1 PRelu). A 1-D `slope` whose length is the
    channel count (dim 1) of a data of rank >= 2 applies per channel; any other slope
    broadcasts numpy-style. Example:

        %y = "core.PRelu"(%x, %s) : (tensor<1x3x4x4xf32>, tensor<3xf32>) -> tensor<1x3x4x4xf32>
    """

    name = "core.PRelu"
    VERSION = 1

    @staticmethod
    def semantics(data, slope):
        if slope.ndim == 1 and data.ndim >= 2 and slope.shape[0] == data.shape[1] != 1:
            slope = slope.reshape((-1,) + (1,) * (data.ndim - 2))
        return jnp.where(data < 0, slope.astype(data.dtype) * data, data)


OTHERS = [BitwiseLeftShiftOp, BitwiseRightShiftOp, SeluOp, HardSigmoidOp, SwishOp, PReluOp]

globals().update({cls.__name__: cls for cls in [*BINARY, *UNARY]})

OPS: list[type[CoreOp]] = [*BINARY, *UNARY, *OTHERS]

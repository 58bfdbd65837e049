"""Elementwise ONNX ops: arithmetic, comparison, logic, casts.

Ops with an OpenVINO counterpart map onto it 1:1 (tables below); the activations live in
`activations.py`. Opset versions before 7 carried legacy broadcast attributes
(`broadcast`, `axis`), made explicit by `legacy_broadcast`; `consumed_inputs` (opset 1) only
described memory reuse and is ignored.
"""

from __future__ import annotations

import itertools

import jax.numpy as jnp
import ml_dtypes
import numpy as np
from xdsl.dialects.builtin import Float8E8M0FNUType, Float32Type, IntegerType, Signedness

from mlconv.dense import numpy_dtype
from mlconv.dialects import core_elementwise as ew
from mlconv.dialects import core_quant as cq
from mlconv.dialects import core_tensor as ct
from mlconv.passes.onnx_patterns import lower_unary, lowering


def legacy_broadcast(op, b, x, y):
    """Before opset 7, `broadcast=1` aligned B's dims with A's starting at `axis` (default: the
    trailing dims, as numpy does); make that explicit with an Unsqueeze."""
    axis = b.attr(op, "axis")
    rank_x, rank_y = b.rank(x), b.rank(y)
    if not b.attr(op, "broadcast", 0) or axis is None or rank_x is None or rank_y is None:
        return y
    axis %= rank_x
    trailing = rank_x - axis - rank_y
    if trailing <= 0:
        return y
    return b(ct.UnsqueezeOp, y, b.ints(list(range(rank_y, rank_y + trailing))))


# ONNX op -> (core op, since-versions). Operands are taken by position: the slot names
# changed across versions (Pow-1 has X and Y, later versions A and B).
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


def _binary(core_class, **attributes):
    def pattern(op, b):
        x, y = op.operands
        return [b(core_class, x, legacy_broadcast(op, b, x, y), **attributes)]

    return pattern


for _name, (_core, _versions) in BINARY.items():
    lowering(_name, *_versions)(_binary(_core))

# ONNX integer division truncates toward zero, as C does.
lowering("Div", 1, 6, 7, 13, 14)(_binary(ew.DivideOp, m_pythondiv=False))


@lowering("Mod", 10, 13, 28)
def mod(op, b):
    # fmod=0: the remainder has the divisor's sign (Python's %); fmod=1: the dividend's (C's fmod).
    core_class = ew.ModOp if b.attr(op, "fmod", 0) else ew.FloorModOp
    return [b(core_class, *op.operands)]


SHIFTS = {"LEFT": ew.BitwiseLeftShiftOp, "RIGHT": ew.BitwiseRightShiftOp}


@lowering("BitShift", 11, 28)
def bit_shift(op, b):
    direction = b.attr(op, "direction")
    if direction not in SHIFTS:
        raise b.fail(f"BitShift direction must be LEFT or RIGHT, not {direction!r}")
    return [b(SHIFTS[direction], *op.operands)]


UNARY = {
    "Tanh": (ew.TanhOp, (1, 6, 13)),
    "Exp": (ew.ExpOp, (1, 6, 13)),
    "Log": (ew.LogOp, (1, 6, 13)),
    "Sqrt": (ew.SqrtOp, (1, 6, 13)),
    "Abs": (ew.AbsOp, (1, 6, 13)),
    "Neg": (ew.NegativeOp, (1, 6, 13)),
    "Floor": (ew.FloorOp, (1, 6, 13)),
    "Ceil": (ew.CeilingOp, (1, 6, 13)),
    "Round": (ew.RoundOp, (11, 22)),  # ties to even, Round's default mode
    "Sign": (ew.SignOp, (9, 13)),
    "Erf": (ew.ErfOp, (9, 13)),
    "Sin": (ew.SinOp, (7, 22)),
    "Cos": (ew.CosOp, (7, 22)),
    "Tan": (ew.TanOp, (7, 22)),
    "Asin": (ew.AsinOp, (7, 22)),
    "Acos": (ew.AcosOp, (7, 22)),
    "Atan": (ew.AtanOp, (7, 22)),
    "Sinh": (ew.SinhOp, (9, 22)),
    "Cosh": (ew.CoshOp, (9, 22)),
    "Asinh": (ew.AsinhOp, (9, 22)),
    "Acosh": (ew.AcoshOp, (9, 22)),
    "Atanh": (ew.AtanhOp, (9, 22)),
    "Not": (ew.LogicalNotOp, (1,)),
    "BitwiseNot": (ew.BitwiseNotOp, (18,)),
    "IsNaN": (ew.IsNaNOp, (9, 13, 20)),
}


lower_unary(UNARY)


@lowering("Reciprocal", 1, 6, 13)
def reciprocal(op, b):
    x = op.operands[0]
    return [b(ew.DivideOp, b.const(1, b.dtype(x)), x)]


@lowering("IsInf", 10, 20)
def is_inf(op, b):
    return [
        b(
            ew.IsInfOp,
            op.operands[0],
            detect_negative=bool(b.attr(op, "detect_negative", 1)),
            detect_positive=bool(b.attr(op, "detect_positive", 1)),
        )
    ]


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


@lowering("Clip", 1, 6)
def clip_with_attributes(op, b):
    """Bounds as attributes; absent ones default to the float range (Clip-6's defaults)."""
    if len(op.operands) > 1:  # onnx-normalize moved the bounds to inputs
        return clip_with_inputs(op, b)
    float_max = float(np.finfo(np.float32).max)
    low, high = b.attr(op, "min", -float_max), b.attr(op, "max", float_max)
    return [b(ew.ClampOp, op.operands[0], min=low, max=high)]


@lowering("Clip", 11, 12, 13)
def clip_with_inputs(op, b):
    """Bounds as optional inputs of the data's type (integers too, since Clip-12). Max is
    applied last: when min > max, every element becomes max, as the ONNX reference computes."""
    result = b.input(op, "input")
    low, high = b.input(op, "min"), b.input(op, "max")
    if low is not None:
        result = b(ew.MaximumOp, result, low)
    if high is not None:
        result = b(ew.MinimumOp, result, high)
    return [result]


# Cast-19+ `saturate` (default 1) for the float8 targets: out-of-range values and infinities
# become the largest finite value of their sign, as onnx.numpy_helper.saturate_cast computes.
# core.Convert itself never saturates (inf, or NaN where the type has no inf), which is what
# saturate=0 asks for. float4 E2M1 has no inf/NaN and clamps in any case; NaN stays NaN.
FLOAT8_MAX = {
    np.dtype(t): float(ml_dtypes.finfo(t).max)
    for t in (
        ml_dtypes.float8_e4m3fn,
        ml_dtypes.float8_e4m3fnuz,
        ml_dtypes.float8_e5m2,
        ml_dtypes.float8_e5m2fnuz,
    )
}


def _to_e8m0(op, b, data):
    """float8e8m0 (a bare exponent, 2^(e-127)) from the float32 bits, as
    onnx.numpy_helper.to_float8e8m0 computes: the sign is dropped, zero and subnormals give
    exponent 0, inf/NaN give 0xFF (NaN); `round_mode` up rounds any fraction up, nearest
    rounds to nearest even on the guard/round/sticky bits, down truncates; `saturate` keeps
    a value that would round past 2^127 at 2^127 instead of NaN."""
    mode = b.attr(op, "round_mode", "up")
    if mode not in ("up", "nearest", "down"):
        raise b.fail(f"Cast round_mode must be up, nearest or down, not {mode!r}")

    def bits_set(mask):
        masked = b(ew.BitwiseAndOp, bits, b.const(mask, np.int32))
        return b(ew.GreaterOp, masked, b.const(0, np.int32))

    if b.dtype(data) != np.float32:
        data = b(ct.ConvertOp, data, destination_type=Float32Type())
    bits = b(cq.BitCastOp, data, destination_type=IntegerType(32))
    exponent = b(ew.BitwiseRightShiftOp, bits, b.const(23, np.int32))
    exponent = b(ew.BitwiseAndOp, exponent, b.const(0xFF, np.int32))
    special = b(ew.EqualOp, exponent, b.const(0xFF, np.int32))
    if mode == "up":
        round_up = bits_set(0x7FFFFF)
    elif mode == "nearest":
        lsb = b(ew.GreaterOp, exponent, b.const(0, np.int32))
        ties = b(ew.LogicalOrOp, bits_set(0x200000), bits_set(0x1FFFFF))
        round_up = b(ew.LogicalAndOp, bits_set(0x400000), b(ew.LogicalOrOp, ties, lsb))
    if mode != "down":
        round_up = b(ew.LogicalAndOp, round_up, b(ew.LogicalNotOp, special))
        if b.attr(op, "saturate", 1):
            largest = b(ew.EqualOp, exponent, b.const(0xFE, np.int32))
            round_up = b(ew.LogicalAndOp, round_up, b(ew.LogicalNotOp, largest))
        step = b(ct.ConvertOp, round_up, destination_type=IntegerType(32))
        exponent = b(ew.AddOp, exponent, step)
    exponent = b(ct.SelectOp, special, b.const(0xFF, np.int32), exponent)
    code = b(ct.ConvertOp, exponent, destination_type=IntegerType(8, Signedness.UNSIGNED))
    return b(cq.BitCastOp, code, destination_type=Float8E8M0FNUType())


def _convert(op, b, data, target):
    """Convert `data` to the element type `target`, saturating float8 results if asked."""
    if isinstance(target, Float8E8M0FNUType) and b.dtype(data) != np.dtype(
        ml_dtypes.float8_e8m0fnu
    ):
        return _to_e8m0(op, b, data)
    high = FLOAT8_MAX.get(numpy_dtype(target))
    if high is not None and b.attr(op, "saturate", 1):
        if not jnp.issubdtype(b.dtype(data), jnp.floating):
            data = b(ct.ConvertOp, data, destination_type=Float32Type())
        data = b(ew.ClampOp, data, min=-high, max=high)
    return b(ct.ConvertOp, data, destination_type=target)


@lowering("Cast", 1, 6, 9, 13, 19, 21, 23, 24, 25, 28)
def cast(op, b):
    return [_convert(op, b, op.operands[0], op.results[0].type.get_element_type())]


@lowering("CastLike", 15, 19, 21, 23, 24, 25)
def cast_like(op, b):
    data, like = op.operands
    return [_convert(op, b, data, like.type.get_element_type())]


# Det has no OpenVINO op; for the small matrices models use, the Leibniz formula over
# elements gathered from the last two axes composes it from core ops (n! products of n).
DET_MAX_SIZE = 4


def _permutation_sign(permutation: tuple[int, ...]) -> int:
    inversions = sum(1 for i, p in enumerate(permutation) for q in permutation[i + 1 :] if p > q)
    return -1 if inversions % 2 else 1


@lowering("Det", 11, 22)
def det(op, b):
    x = op.operands[0]
    shape = x.type.get_shape() if b.rank(x) is not None else ()
    if len(shape) < 2 or shape[-1] != shape[-2] or not 0 < shape[-1] <= DET_MAX_SIZE:
        raise b.fail(
            f"Det is lowered for static square matrices up to {DET_MAX_SIZE}x{DET_MAX_SIZE}"
        )
    size, rank = shape[-1], len(shape)
    rows = [b(ct.GatherOp, x, b.ints(i), b.ints(rank - 2)) for i in range(size)]
    element = [
        [b(ct.GatherOp, row, b.ints(j), b.ints(rank - 2)) for j in range(size)] for row in rows
    ]
    total = None
    for permutation in itertools.permutations(range(size)):
        term = element[0][permutation[0]]
        for i in range(1, size):
            term = b(ew.MultiplyOp, term, element[i][permutation[i]])
        if total is None:
            total = term
        elif _permutation_sign(permutation) > 0:
            total = b(ew.AddOp, total, term)
        else:
            total = b(ew.SubtractOp, total, term)
    return [total]

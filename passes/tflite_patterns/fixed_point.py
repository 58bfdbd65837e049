"""Integer arithmetic of LiteRT's int8 kernels, for the lowerings that compute as LiteRT does.

An int8 operator with one int8 operand has only 256 possible inputs, so LiteRT's rule for it
(TFLite's fixed-point kernels, XNNPACK's lookup tables and 8-bit multipliers) is evaluated here,
in numpy at compile time, on every input, and the lowering is one table lookup
(`lookup`): `core.Gather` from a 256-entry int8 constant. The table is ordered by the storage
byte, q = 0, 1, ..., 127, -128, ..., -1, so the int8 value itself is the index (Gather counts a
negative index from the end).

The fixed-point helpers follow gemmlowp's definitions as TFLite uses them (int64 numpy arrays
hold the exact values of the C integers):
- `quantize_multiplier(m)`: m = q * 2^shift with q an int32 in [2^30, 2^31) (TFLite's
  QuantizeMultiplier: frexp, q rounded half away from zero).
- `to_int16_multiplier(q)`: the int32 multiplier rounded to its top 16 bits (saturating).
- `rounding_doubling_high_mul16(a, b)`: (2ab + 2^15) >> 16 rounding half away from zero,
  saturating the one overflow case (SQRDMULH); `doubling_high_mul16` truncates (SQDMULH).
- `rounding_divide_by_pot(x, e)`: x / 2^e rounding half away from zero.
The 32-bit ones (`rounding_doubling_high_mul32`, `multiply_by_quantized_multiplier`,
`inv_sqrt_multiplier`) also build core ops when given `Traced` values.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from mlconv.dense import element_type
from mlconv.dialects import core

INT8_INPUTS = np.arange(256).astype(np.uint8).view(np.int8)  # the table's order: by storage byte


def quantize_multiplier(multiplier: float) -> tuple[int, int]:
    """(q, shift) with multiplier = q * 2^(shift - 31), q in [2^30, 2^31) (0, 0 for 0)."""
    if multiplier == 0:
        return 0, 0
    fraction, shift = np.frexp(float(multiplier))
    q = int(np.sign(fraction) * np.floor(abs(fraction) * 2.0**31 + 0.5))
    if q == 2**31:
        q, shift = q // 2, shift + 1
    if shift < -31:
        return 0, 0
    return q, int(shift)


def to_int16_multiplier(q: int) -> int:
    """An int32 fixed-point multiplier's top 16 bits, rounded (saturating at 2^15 - 1)."""
    if q >= 2**31 - 1 - 2**15:
        return 2**15 - 1
    return (q + 2**15) >> 16


def _trunc_div(numerator: np.ndarray, denominator: int) -> np.ndarray:
    """C's integer division (towards zero) of int64 arrays."""
    quotient = np.abs(numerator) // denominator
    return np.where(numerator < 0, -quotient, quotient)


def rounding_doubling_high_mul16(a, b) -> np.ndarray:
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    product = a * b
    nudge = np.where(product >= 0, 1 << 14, 1 - (1 << 14))
    high = _trunc_div(product + nudge, 1 << 15)
    return np.where((a == b) & (a == -(2**15)), 2**15 - 1, high)


def doubling_high_mul16(a, b) -> np.ndarray:
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    high = _trunc_div(a * b, 1 << 15)
    return np.where((a == b) & (a == -(2**15)), 2**15 - 1, high)


def rounding_divide_by_pot(x, exponent: int) -> np.ndarray:
    x = np.asarray(x, np.int64)
    mask = (1 << exponent) - 1
    threshold = (mask >> 1) + (x < 0)
    return (x >> exponent) + ((x & mask) > threshold)


def saturate16(x) -> np.ndarray:
    return np.clip(np.asarray(x, np.int64), -(2**15), 2**15 - 1)


def lookup(b, source, rule: Callable[[np.ndarray], np.ndarray]):
    """`rule` (int64 array of the 256 int8 inputs -> their int8 outputs, before saturation)
    tabulated and applied to the int8 value `source` as one `core.Gather`."""
    table = np.clip(rule(INT8_INPUTS.astype(np.int64)), -128, 127).astype(np.int8)
    index = b(core.ConvertOp, source, destination_type=element_type(np.int32))
    return b(core.GatherOp, b.const(table), index, b.ints(0))


# --- 32-bit fixed point (gemmlowp's FixedPoint<int32_t, integer_bits>) ---------------------------
# Written once for two kinds of int64 values: numpy arrays (tables made at compile time) and
# `Traced` core values (operators whose inputs are too many to tabulate, such as a row's sum of
# squares): only operators and `where` / `minimum` / `maximum` below.
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


class Traced:
    """An int64 (or boolean) core value whose Python operators build core ops."""

    def __init__(self, b, value, constants: dict | None = None):
        self.b, self.value = b, value
        self.constants = {} if constants is None else constants  # one core.Constant per int

    def _other(self, other):
        if isinstance(other, Traced):
            return other.value
        if other not in self.constants:
            self.constants[other] = self.b.const(np.int64(other))
        return self.constants[other]

    def wrap(self, value):
        """`value` as a Traced sharing this one's constants."""
        return Traced(self.b, value, self.constants)

    def _op(self, op_class, other, swap=False):
        a, c = self.value, self._other(other)
        return self.wrap(self.b(op_class, *((c, a) if swap else (a, c))))

    def __add__(self, other):
        return self._op(core.AddOp, other)

    __radd__ = __add__

    def __sub__(self, other):
        return self._op(core.SubtractOp, other)

    def __rsub__(self, other):
        return self._op(core.SubtractOp, other, swap=True)

    def __mul__(self, other):
        return self._op(core.MultiplyOp, other)

    __rmul__ = __mul__

    def __rshift__(self, other):
        return self._op(core.BitwiseRightShiftOp, other)

    def __lshift__(self, other):
        return self._op(core.BitwiseLeftShiftOp, other)

    def __rlshift__(self, other):
        return self._op(core.BitwiseLeftShiftOp, other, swap=True)

    def __and__(self, other):
        both_bool = isinstance(other, Traced) and self.b.dtype(self.value) == np.bool_
        return self._op(core.LogicalAndOp if both_bool else core.BitwiseAndOp, other)

    def __neg__(self):
        return self.wrap(self.b(core.NegativeOp, self.value))

    def __lt__(self, other):
        return self._op(core.LessOp, other)

    def __le__(self, other):
        return self._op(core.LessEqualOp, other)

    def __gt__(self, other):
        return self._op(core.GreaterOp, other)

    def __ge__(self, other):
        return self._op(core.GreaterEqualOp, other)

    def __eq__(self, other):  # type: ignore[override]
        return self._op(core.EqualOp, other)

    __hash__ = None  # type: ignore[assignment]


def where(condition, a, b):
    if isinstance(condition, Traced):
        t = condition
        return t.wrap(t.b(core.SelectOp, t.value, t._other(a), t._other(b)))
    return np.where(condition, a, b)


def _int64(x):
    if isinstance(x, Traced):
        return x.wrap(x.b(core.ConvertOp, x.value, destination_type=element_type(np.int64)))
    return np.asarray(x, np.int64)


def minimum(a, limit: int):
    if isinstance(a, Traced):
        return a._op(core.MinimumOp, limit)
    return np.minimum(a, limit)


def maximum(a, limit: int):
    if isinstance(a, Traced):
        return a._op(core.MaximumOp, limit)
    return np.maximum(a, limit)


def rounding_doubling_high_mul32(a, b):
    """SQRDMULH on int32: (2ab + 2^31) >> 32 rounding half away from zero, saturating."""
    product = a * b
    nudged = product + where(product >= 0, 1 << 30, 1 - (1 << 30))
    high = (nudged + where(nudged < 0, (1 << 31) - 1, 0)) >> 31  # division towards zero
    return where((a == b) & (a == INT32_MIN), INT32_MAX, high)


def multiply_by_pot32(x, exponent: int):
    """SaturatingRoundingMultiplyByPOT: x * 2^exponent, saturating, or rounded when negative."""
    if exponent >= 0:
        return minimum(maximum(x * (1 << exponent), INT32_MIN), INT32_MAX)
    return rounding_divide_by_pot32(x, -exponent)


def rounding_divide_by_pot32(x, exponent):
    """x / 2^exponent rounding half away from zero (`exponent` an int or per element)."""
    mask = (1 << exponent) - 1
    threshold = (mask >> 1) + where(x < 0, 1, 0)
    return (x >> exponent) + where((x & mask) > threshold, 1, 0)


def multiply_by_quantized_multiplier(x, multiplier, shift):
    """TFLite's MultiplyByQuantizedMultiplier (double rounding): x * 2^max(shift, 0) (int32,
    wrapping), the rounding doubling high product with `multiplier`, rounded right by
    max(-shift, 0)."""
    left = where(shift > 0, shift, 0)
    right = where(shift > 0, 0, -shift)
    wrapped = (((x << left) + 2**31) & (2**32 - 1)) - 2**31
    return rounding_divide_by_pot32(rounding_doubling_high_mul32(wrapped, multiplier), right)


def inv_sqrt_multiplier(value):
    """TFLite's GetInvSqrtQuantizedMultiplierExp with reverse_shift -1 on int32 values:
    (multiplier, shift) with 1 / sqrt(value) = multiplier * 2^(shift - 31), by five
    Newton-Raphson steps in fixed point with 3 integer bits on the value normalized to
    [2^27, 2^29) by pairs of bits; 0 and 1 give (2^31 - 1, 0)."""
    value = _int64(value)
    small = value <= 1
    x = where(small, 2, value)
    big = x >= 1 << 29  # one step suffices below 2^31
    x = where(big, x >> 2, x)
    shift = where(big, 12, 11)
    for _ in range(13):  # x >= 2, so at most 13 pairs of bits up to [2^27, 2^29)
        low = x < 1 << 27
        x = where(low, x << 2, x)
        shift = where(low, shift - 1, shift)
    half_input = rounding_divide_by_pot32(x >> 1, 1)
    half_three = (1 << 28) + (1 << 27)
    estimate = where(small, 1 << 28, 1 << 28)  # 1.0 with 3 integer bits
    for _ in range(5):
        square = rounding_doubling_high_mul32(estimate, estimate)
        cube = multiply_by_pot32(rounding_doubling_high_mul32(square, estimate), 6)
        step = rounding_doubling_high_mul32(estimate, half_three) - rounding_doubling_high_mul32(
            cube, half_input
        )
        estimate = multiply_by_pot32(step, 3)
    multiplier = rounding_doubling_high_mul32(estimate, 1518500250)  # sqrt(2) / 2
    negative = shift < 0
    multiplier = where(negative, multiplier << where(negative, -shift, 0), multiplier)
    shift = where(negative, 0, shift)
    return where(small, INT32_MAX, multiplier), where(small, 0, -shift)


def _leading_zeros32(x) -> np.ndarray:
    """Leading zero bits of non-negative values below 2^32 (32 for 0)."""
    x = np.asarray(x, np.int64)
    bits = np.zeros(x.shape, np.int64)
    for shift in (16, 8, 4, 2, 1):  # the position of the highest set bit, by halving
        high = x >= (np.int64(1) << shift)
        bits = np.where(high, bits + shift, bits)
        x = np.where(high, x >> shift, x)
    return np.where(x > 0, 31 - bits, 32)


def leading_sign_bits32(x) -> np.ndarray:
    """TFLite's CountLeadingSignBits on int32 values (31 for 0 and -1)."""
    x = np.asarray(x, np.int64)
    return np.where(x >= 0, _leading_zeros32(np.maximum(x, 0)) - 1, _leading_zeros32(-2 * x - 1))


def reciprocal(x) -> tuple[np.ndarray, np.ndarray]:
    """TFLite's GetReciprocal(x, 31): (1 / x as a 0-integer-bit fixed point in [1/2, 1],
    the bits above the unit) for positive int32 x, by gemmlowp's three Newton-Raphson steps
    for 1 / (1 + t), t in [0, 1)."""
    x = np.asarray(x, np.int64)
    headroom = _leading_zeros32(x)
    t = (((x << headroom) - 2**31 + 2**31) & (2**32 - 1)) - 2**31  # in [0, 1) as Q0.31
    total = t + INT32_MAX  # RoundingHalfSum(t, 1)
    half_denominator = np.where(total >= 0, total + 1, total - 1)
    half_denominator = np.where(
        half_denominator < 0, -((-half_denominator) // 2), half_denominator // 2
    )
    estimate = 1515870810 + rounding_doubling_high_mul32(half_denominator, -1010580540)  # Q2.29
    for _ in range(3):
        error = (1 << 29) - rounding_doubling_high_mul32(half_denominator, estimate)
        estimate = estimate + multiply_by_pot32(rounding_doubling_high_mul32(estimate, error), 2)
    return multiply_by_pot32(estimate, 1), 31 - headroom

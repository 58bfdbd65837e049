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
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def rounding_doubling_high_mul32(a, b) -> np.ndarray:
    """SQRDMULH on int32: (2ab + 2^31) >> 32 rounding half away from zero, saturating."""
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    product = a * b
    nudge = np.where(product >= 0, 1 << 30, 1 - (1 << 30))
    high = _trunc_div(product + nudge, 1 << 31)
    return np.where((a == b) & (a == INT32_MIN), INT32_MAX, high)


def multiply_by_pot32(x, exponent: int) -> np.ndarray:
    """SaturatingRoundingMultiplyByPOT: x * 2^exponent, saturating, or rounded when negative."""
    x = np.asarray(x, np.int64)
    if exponent >= 0:
        return np.clip(x * (1 << exponent), INT32_MIN, INT32_MAX)
    return rounding_divide_by_pot(x, -exponent)


def multiply_by_quantized_multiplier(x, multiplier, shift) -> np.ndarray:
    """TFLite's MultiplyByQuantizedMultiplier (double rounding): x * 2^max(shift, 0) (int32),
    the rounding doubling high product with `multiplier`, rounded right by max(-shift, 0)."""
    x, multiplier, shift = (np.asarray(v, np.int64) for v in (x, multiplier, shift))
    left = np.where(shift > 0, shift, 0)
    right = np.where(shift > 0, 0, -shift)
    wrapped = ((x << left) + 2**31) % 2**32 - 2**31  # int32 arithmetic wraps
    high = rounding_doubling_high_mul32(wrapped, multiplier)
    mask = (np.int64(1) << right) - 1
    threshold = (mask >> 1) + (high < 0)
    return (high >> right) + ((high & mask) > threshold)


def inv_sqrt_multiplier(value) -> tuple[np.ndarray, np.ndarray]:
    """TFLite's GetInvSqrtQuantizedMultiplierExp with reverse_shift -1: (multiplier, shift)
    with 1 / sqrt(value) = multiplier * 2^(shift - 31), by five Newton-Raphson steps in
    fixed point with 3 integer bits on the value normalized to [2^27, 2^29) by pairs of bits."""
    value = np.asarray(value, np.int64)
    small = value <= 1
    shift = np.full(value.shape, 11, np.int64)
    x = np.where(small, 2, value)
    while np.any(x >= 1 << 29):
        big = x >= 1 << 29
        x = np.where(big, x // 4, x)
        shift += big
    leading_zeros = 32 - np.floor(np.log2(x.astype(np.float64))).astype(np.int64) - 1
    pairs = (leading_zeros - 1) // 2 - 1
    shift -= pairs
    x = x << (2 * pairs)
    half_input = rounding_divide_by_pot(x >> 1, 1)
    half_three = (1 << 28) + (1 << 27)
    estimate = np.full(value.shape, 1 << 28, np.int64)  # 1.0 with 3 integer bits
    for _ in range(5):
        cube = rounding_doubling_high_mul32(
            rounding_doubling_high_mul32(estimate, estimate), estimate
        )
        cube = multiply_by_pot32(cube, 6)
        step = rounding_doubling_high_mul32(half_three, estimate) - rounding_doubling_high_mul32(
            half_input, cube
        )
        estimate = multiply_by_pot32(step, 3)
    multiplier = rounding_doubling_high_mul32(estimate, 1518500250)  # sqrt(2) / 2
    negative = shift < 0
    multiplier = np.where(negative, multiplier << np.where(negative, -shift, 0), multiplier)
    shift = np.where(negative, 0, shift)
    return np.where(small, INT32_MAX, multiplier), np.where(small, 0, -shift)

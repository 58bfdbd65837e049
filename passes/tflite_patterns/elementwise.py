"""Elementwise arithmetic and activations (layout-agnostic)."""

from __future__ import annotations

import numpy as np

from mlconv.dense import element_type
from mlconv.dialects import core
from mlconv.dialects.quant import UniformQuantizedType
from mlconv.passes.lowering.tensor import lower_select
from mlconv.passes.tflite_patterns import fixed_point as fx
from mlconv.passes.tflite_patterns import lower_each, lowering
from mlconv.passes.tflite_patterns.nn import int8_activation_bounds, int8_per_tensor


def _binary(op_class):
    def pattern(op, b):
        return [b.fused(op, b(op_class, b.x(op, 0), b.x(op, 1)))]

    return pattern


lower_each(
    _binary,
    {
        "SQUARED_DIFFERENCE": core.SquaredDifferenceOp,
        "POW": core.PowerOp,
        "MAXIMUM": core.MaximumOp,
        "MINIMUM": core.MinimumOp,
    },
)


@lowering("MUL")
def mul(op, b):
    exact = _xnnpack_mul(op, b)
    return [exact] if exact is not None else _binary(core.MultiplyOp)(op, b)


def _xnnpack_mul(op, b):
    """int8 MUL as XNNPACK computes it ("fp32" requantization): acc = (q_a - zp_a)(q_b - zp_b)
    (int32; exact in f32: |acc| <= 255^2), q_out = zp_out + round_half_even(float32(acc) * s) with
    s = float32(float32(s_a s_b) / s_out), saturated to the fused activation's range. Through
    dequantized floats and rounding half away from zero, a product exactly halfway between two
    steps (x * 0.5 with the constant stored as 255 * s_b) rounds the other way (17 of 1024).
    XNNPACK's range: 2^-16 <= s < 2^8."""
    sources = [b.raw(op, i) for i in (0, 1)]
    qtypes = [b.qtypes.get(v) for v in sources]
    qout = _result_qtype(op)
    if not all(int8_per_tensor(q) for q in [*qtypes, qout]):
        return None
    bounds = int8_activation_bounds(op, qout)
    if bounds is None:
        return None
    (scale_a,), (scale_b,) = (q.scale_values() for q in qtypes)
    (scale_out,), (zp_out,) = qout.scale_values(), qout.zero_point_values()
    scale = np.float32(
        np.float32(np.float32(scale_a) * np.float32(scale_b)) / np.float32(scale_out)
    )
    if not 2.0**-16 <= scale < 2.0**8:
        return None
    centred = []  # in int32: a float product by a constant operand would be folded into s
    for value, qtype in zip(sources, qtypes, strict=True):
        x = b(core.ConvertOp, value, destination_type=element_type(np.int32))
        (zero_point,) = qtype.zero_point_values()
        if zero_point:
            x = b(core.SubtractOp, x, b.const(np.int32(zero_point)))
        centred.append(x)
    acc = b(core.MultiplyOp, *centred)
    acc = b(core.ConvertOp, acc, destination_type=element_type(np.float32))
    y = b(core.RoundOp, b(core.MultiplyOp, acc, b.const(scale)), mode="half_to_even")
    if zp_out:
        y = b(core.AddOp, y, b.const(np.float32(zp_out)))
    y = b(core.ClampOp, y, min=bounds[0], max=bounds[1])
    return b(core.ConvertOp, y, destination_type=element_type(np.int8))


@lowering("DIV")
def div(op, b):
    exact = _int8_div(op, b)
    return [exact] if exact is not None else _binary(core.DivideOp)(op, b)


def _int8_div(op, b):
    """int8 DIV as TFLite's kernel (XNNPACK takes float DIV only), tabulated over all 65536
    pairs of int8 operands and looked up at q_a * 256 + q_b + 32896 (`_div_rule`)."""
    sources = [b.raw(op, i) for i in (0, 1)]
    found = _int8_binary(op, b)
    if found is None:
        return None
    qtypes, qout, bounds = found
    params = [(np.float32(q.scale_values()[0]), int(q.zero_point_values()[0])) for q in qtypes]
    out = (np.float32(qout.scale_values()[0]), int(qout.zero_point_values()[0]))
    grid = np.arange(-128, 128, dtype=np.int64)
    table = _div_rule(grid[:, None], grid[None, :], *params, out)
    table = np.clip(table, bounds[0], bounds[1]).astype(np.int8).reshape(-1)
    a, c = (b(core.ConvertOp, v, destination_type=element_type(np.int32)) for v in sources)
    index = b(core.AddOp, b(core.MultiplyOp, a, b.const(np.int32(256))), c)
    index = b(core.AddOp, index, b.const(np.int32(128 * 256 + 128)))
    return b(core.GatherOp, b.const(table), index, b.ints(0))


def _div_rule(qa, qb, pa, pb, pout):
    """TFLite's int8 Div: with a = q_a - zp_a and d = q_b - zp_b (both negated when d < 0),
    1 / d as a reciprocal multiplier (`fixed_point.reciprocal`), a shifted left by its
    leading sign bits (int32, wrapping) and multiplied by it, then by the quantized multiplier
    s_a / (s_b s_out) and shifted right by what is left. A right shift of 32 or more is a shift
    by that count modulo 32 in LiteRT's x86 build (a shift past the width of an int32): for
    |a| = 1 and d >= 128 with the scales of the test that is no shift at all, and the result
    saturates; that is what LiteRT gives, so it is kept. d = 0 (LiteRT asserts) gives zp_out."""
    (scale_a, zp_a), (scale_b, zp_b), (scale_out, zp_out) = pa, pb, pout
    multiplier, shift = fx.quantize_multiplier(
        np.float32(scale_a / np.float32(scale_b * scale_out))
    )
    a = np.broadcast_to(qa - zp_a, np.broadcast_shapes(qa.shape, qb.shape))
    d = np.broadcast_to(qb - zp_b, a.shape)
    a, d = np.where(d < 0, -a, a), np.abs(d)
    inverse, inverse_shift = fx.reciprocal(np.maximum(d, 1))
    headroom = fx.leading_sign_bits32(a)
    shifted = ((a * (np.int64(1) << headroom) + 2**31) & (2**32 - 1)) - 2**31
    quotient = fx.rounding_doubling_high_mul32(shifted, inverse)
    right = -(shift - inverse_shift - headroom)
    product = fx.rounding_doubling_high_mul32(quotient, multiplier)
    result = fx.rounding_divide_by_pot32(product, right & 31)
    result = np.where(right >= 32, _x86_wide_shift(product, right), result)
    return np.where(d == 0, zp_out, result + zp_out)


def _x86_wide_shift(x, exponent):
    """gemmlowp's RoundingDivideByPOT on int32 for exponent >= 32 as x86 runs it: the mask
    (2^e - 1, made in 64 bits) truncates to -1, the shift count is taken modulo 32."""
    threshold = -1 + (x < 0)
    return (x >> (exponent & 31)) + (x > threshold)


@lowering("ADD", "SUB")
def add(op, b):
    subtract = op.operator == "SUB"
    exact = _xnnpack_add(op, b, subtract)
    if exact is not None:
        return [exact]
    return _binary(core.SubtractOp if subtract else core.AddOp)(op, b)


# --- int8 ADD / SUB as XNNPACK computes them (LiteRT's default kernels) ---------------------------
# Fixed point with 20 bits for the larger of the two rescaling factors r = s_in / s_out:
#   shift = 20 - floor(log2(max |r_a|, |r_b|)),  m = round(r * 2^shift)  (r_b negated for SUB)
#   q_out = zp_out + clamp((2^(shift-1) + m_a (q_a - zp_a) + m_b (q_b - zp_b)) >> shift)
# an arithmetic shift: rounding half up. Dequantizing, adding in f32 and rounding half away from
# zero differs from it in a few values a layer (4 of 65536 in a ResNet50 block), and each step
# grows through the layers after it (40 steps at the logits of an int8 ResNet50). XNNPACK takes
# rescaling factors in [2^-10, 2^8); outside it the generic path below stays. The sums stay
# below 2^31: |m| < 2^21 and |q - zp| <= 255.


def _int8_binary(op, b):
    """A binary op's operand and result types and its fused activation's bounds, when both
    operands and the result are int8 per tensor and the activation has bounds; else None."""
    qtypes = [b.qtypes.get(b.raw(op, i)) for i in (0, 1)]
    qout = _result_qtype(op)
    if not all(int8_per_tensor(q) for q in [*qtypes, qout]):
        return None
    bounds = int8_activation_bounds(op, qout)
    return None if bounds is None else (qtypes, qout, bounds)


def _xnnpack_add(op, b, subtract: bool):
    found = _int8_binary(op, b)
    if found is None:
        return None
    qtypes, qout, bounds = found
    (scale_out,), (zp_out,) = qout.scale_values(), qout.zero_point_values()
    ratios = [np.float32(q.scale_values()[0]) / np.float32(scale_out) for q in qtypes]
    if not all(2.0**-10 <= r < 2.0**8 for r in ratios):
        return None
    _, exponent = np.frexp(max(ratios))
    shift = 20 - (int(exponent) - 1)
    multipliers = [int(np.rint(r * np.float32(2.0**shift))) for r in ratios]
    if subtract:
        multipliers[1] = -multipliers[1]
    zero_points = [q.zero_point_values()[0] for q in qtypes]
    bias = (1 << (shift - 1)) - sum(m * z for m, z in zip(multipliers, zero_points, strict=True))
    terms = []
    for i, multiplier in enumerate(multipliers):
        x = b(core.ConvertOp, b.raw(op, i), destination_type=element_type(np.int32))
        terms.append(b(core.MultiplyOp, x, b.const(np.int32(multiplier))))
    acc = b(core.AddOp, b(core.AddOp, terms[0], terms[1]), b.const(np.int32(bias)))
    y = b(core.BitwiseRightShiftOp, acc, b.const(np.int32(shift)))
    y = b(core.ConvertOp, y, destination_type=element_type(np.float32))
    y = b(core.AddOp, y, b.const(np.float32(zp_out)))
    y = b(core.ClampOp, y, min=bounds[0], max=bounds[1])
    return b(core.ConvertOp, y, destination_type=element_type(np.int8))


def _unary(op_class, **attributes):
    def pattern(op, b):
        return [b(op_class, b.x(op, 0), **attributes)]

    return pattern


lower_each(
    _unary,
    {
        "LOGISTIC": core.SigmoidOp,
        "TANH": core.TanhOp,
        "EXP": core.ExpOp,
        "NEG": core.NegativeOp,
        "ABS": core.AbsOp,
        "LOG": core.LogOp,
    },
)

_RELU_RANGES = {"RELU": (0.0, None), "RELU6": (0.0, 6.0), "RELU_N1_TO_1": (-1.0, 1.0)}


@lowering("RELU", "RELU6", "RELU_N1_TO_1")
def relu(op, b):
    """int8: TFLite's ReluX kernel, tabulated (`_relu_rule`); otherwise a clamp."""
    low, high = _RELU_RANGES[op.operator]
    int8 = _int8_unary(op, b)
    if int8 is not None:
        source, qin, qout = int8
        return [fx.lookup(b, source, lambda q: _relu_rule(q, qin, qout, low, high))]
    if high is None:
        return [b(core.ReluOp, b.x(op, 0))]
    return [b(core.ClampOp, b.x(op, 0), min=low, max=high)]


def _relu_rule(q, qin, qout, low, high):
    """TFLite's int8 RELU / RELU6 / RELU_N1_TO_1: zp_out + MultiplyByQuantizedMultiplier(
    q - zp_in, s_in / s_out), clamped to the real bounds quantized with the output's
    parameters (rounded half away from zero). Rescaling through floats differs on inputs near
    a rounding boundary (177 of 1024 values of a RELU from scale 0.028 to 0.084)."""
    (scale_in, zp_in), (scale_out, zp_out) = qin, qout
    multiplier, shift = fx.quantize_multiplier(np.float32(scale_in / scale_out))
    y = zp_out + fx.multiply_by_quantized_multiplier(q - zp_in, multiplier, shift)

    def bound(real):
        scaled = float(np.float32(real) / scale_out)
        return zp_out + int(np.sign(scaled) * np.floor(abs(scaled) + 0.5))

    y = np.maximum(y, bound(low))
    return y if high is None else np.minimum(y, bound(high))


@lowering("SQRT")
def sqrt(op, b):
    """int8 SQRT as LiteRT's kernel computes it: q_out = zp_out + trunc(sqrt(x) / s_out), the
    root truncated, not rounded (measured on all 256 inputs: rounding is one step above it in
    150 of them). Other types: the float root, quantized by the pass."""
    y = b(core.SqrtOp, b.x(op, 0))
    qin, qout = b.qtypes.get(b.raw(op, 0)), _result_qtype(op)
    if not (int8_per_tensor(qin) and int8_per_tensor(qout)):
        return [y]
    (scale,), (zero_point,) = qout.scale_values(), qout.zero_point_values()
    y = b(core.FloorOp, b(core.DivideOp, y, b.const(np.float32(scale))))
    y = b(core.AddOp, y, b.const(np.float32(zero_point)))
    y = b(core.ClampOp, y, min=-128.0, max=127.0)
    return [b(core.ConvertOp, y, destination_type=element_type(np.int8))]


@lowering("RSQRT")
def rsqrt(op, b):
    int8 = _int8_unary(op, b)
    if int8 is not None:
        source, qin, qout = int8
        return [fx.lookup(b, source, lambda q: _rsqrt_rule(q, qin, qout))]
    return [b(core.DivideOp, b.const(np.float32(1.0)), b(core.SqrtOp, b.x(op, 0)))]


def _rsqrt_rule(q, qin, qout):
    """TFLite's int8 RSQRT: 1 / sqrt(q - zp_in) as a fixed-point multiplier (Newton-Raphson,
    `fixed_point.inv_sqrt_multiplier`) applied to 1 << 20, then rescaled by
    1 / (sqrt(s_in) * s_out) (a quantized multiplier) and shifted back; q = zp_in gives 127.
    (LiteRT refuses inputs below zp_in; their entries are never read.) The float path is one
    step off in a few of the 256 inputs."""
    (scale_in, zp_in), (scale_out, zp_out) = qin, qout
    real = 1.0 / float(np.float32(np.sqrt(scale_in, dtype=np.float32) * scale_out))
    multiplier, shift = fx.quantize_multiplier(real)
    value = q - zp_in
    inverse, inverse_shift = fx.inv_sqrt_multiplier(np.maximum(value, 1))
    data = fx.multiply_by_quantized_multiplier(1, inverse, inverse_shift + 20)
    out = fx.multiply_by_quantized_multiplier(data, multiplier, shift - 20) + zp_out
    return np.where(value <= 0, 127, out)


@lowering("GELU")
def gelu(op, b):
    mode = "TANH" if op.options().get("approximate") else "ERF"
    return [b(core.GeluOp, b.x(op, 0), approximation_mode=mode)]


def _int8_unary(op, b):
    """(int8 operand, its (scale, zero point), the result's) when both are int8 per tensor."""
    source = b.raw(op, 0)
    qin, qout = b.qtypes.get(source), _result_qtype(op)
    if not (int8_per_tensor(qin) and int8_per_tensor(qout)):
        return None
    params = [(np.float32(q.scale_values()[0]), int(q.zero_point_values()[0])) for q in (qin, qout)]
    return source, *params


@lowering("HARD_SWISH")
def hard_swish(op, b):
    """int8: TFLite's fixed-point kernel (XNNPACK does not take it), tabulated
    (`_hard_swish_rule`); the float path rounds differently in 1-2 of the 256 inputs."""
    int8 = _int8_unary(op, b)
    if int8 is None:
        return [b(core.HSwishOp, b.x(op, 0))]
    source, qin, qout = int8
    return [fx.lookup(b, source, lambda q: _hard_swish_rule(q, qin, qout))]


def _hard_swish_rule(q, qin, qout):
    """TFLite's int8 HardSwish: x on a "high resolution" scale s_in/128 in int16; the output
    multiplier (s_in/128)/s_out and the "relu-ish" multiplier (s_in/128)/(3/32768), each an
    int16 fixed-point multiplier and an exponent; relu-ish = clamp(x/3, -1, 1) as 16-bit
    fixed point, moved to [0, 1]; their truncating doubling high product, rounded by the
    output exponent."""
    (scale_in, zp_in), (scale_out, zp_out) = qin, qout
    hires = np.float32(np.float32(1.0 / 128.0) * scale_in)
    out_q, out_exp = fx.quantize_multiplier(np.float32(hires / scale_out))
    relu_q, relu_exp = fx.quantize_multiplier(np.float32(hires / np.float32(3.0 / 32768.0)))
    out_m, relu_m = fx.to_int16_multiplier(out_q), fx.to_int16_multiplier(relu_q)
    x = (q - zp_in) * 128
    scaled = fx.rounding_doubling_high_mul16(x, out_m)
    relu = x
    if relu_exp > 0:
        relu = fx.saturate16(relu * (1 << (relu_exp - 1)))
    relu = fx.rounding_doubling_high_mul16(relu, relu_m)
    if relu_exp > 0:
        relu = fx.saturate16(relu * 2)
    elif relu_exp < 0:
        relu = fx.rounding_divide_by_pot(relu, -relu_exp)
    relu = (relu + (1 << 15)) >> 1
    product = fx.doubling_high_mul16(relu, scaled)
    return fx.rounding_divide_by_pot(product, -out_exp) + zp_out


@lowering("LEAKY_RELU")
def leaky_relu(op, b):
    int8 = _int8_unary(op, b)
    if int8 is not None:
        exact = _xnnpack_leaky_relu(op, b, *int8)
        if exact is not None:
            return [exact]
    x = b.x(op, 0)
    alpha = b.const(np.float32(op.options()["alpha"]))
    return [b(core.MaximumOp, x, b(core.MultiplyOp, x, alpha))]


def _xnnpack_leaky_relu(op, b, source, qin, qout):
    """int8 LEAKY_RELU as XNNPACK computes it: multipliers with 8 fractional bits,
    m+ = round(256 * s_in / s_out) and m- = round(256 * alpha * s_in / s_out) (f32, half to
    even), and q_out = zp_out + floor((m * (q_in - zp_in) + 128) / 256), m by the sign of
    q_in - zp_in. The float path is one step off in 25 of the 256 inputs (alpha 0.2).
    XNNPACK's ranges: 2^-8 <= s_in / s_out <= 2^7 and 2^-8 <= |alpha s_in / s_out|."""
    (scale_in, zp_in), (scale_out, zp_out) = qin, qout
    positive = np.float32(scale_in / scale_out)
    negative = np.float32(positive * np.float32(op.options()["alpha"]))
    if not (2.0**-8 <= positive <= 2.0**7 and 2.0**-8 <= abs(negative) <= 2.0**7):
        return None
    m_pos = int(np.rint(np.float32(256.0) * positive))
    m_neg = int(np.rint(np.float32(256.0) * negative))

    def rule(q):
        x = q - zp_in
        return ((x * np.where(x >= 0, m_pos, m_neg) + 128) >> 8) + zp_out

    return fx.lookup(b, source, rule)


@lowering("QUANTIZE", "DEQUANTIZE")
def quantize(op, b):
    # The operand arrives dequantized and the pass quantizes the result: requantization too,
    # except int8 -> int8 requantization within XNNPACK's scale range (below).
    requantized = _xnnpack_requantize(op, b)
    if requantized is None:
        requantized = _xnnpack_quantize(op, b)
    return [b.x(op, 0) if requantized is None else requantized]


def _xnnpack_quantize(op, b):
    """f32 -> int8 QUANTIZE as LiteRT runs it by default, in XNNPACK's convert operator:
    q = zp + round_half_to_even(x * float32(1 / scale)), saturated. Dividing by the scale and
    rounding half away from zero (the generic path) differs on inputs halfway between two
    steps (86 of 512 such inputs) and, rarely, where x / s and x * (1 / s) round apart."""
    source = b.raw(op, 0)
    qout = _result_qtype(op)
    if b.qtypes.get(source) is not None or not int8_per_tensor(qout):
        return None
    if b.dtype(source) != np.float32:
        return None
    (scale,), (zero_point,) = qout.scale_values(), qout.zero_point_values()
    inverse = np.float32(1.0) / np.float32(scale)
    x = b(core.MultiplyOp, source, b.const(inverse))
    x = b(core.RoundOp, x, mode="half_to_even")
    if zero_point:
        x = b(core.AddOp, x, b.const(np.float32(zero_point)))
    x = b(core.ClampOp, x, min=-128.0, max=127.0)
    return b(core.ConvertOp, x, destination_type=element_type(np.int8))


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


def _compare(op_class):
    def pattern(op, b):
        return [b(op_class, b.x(op, 0), b.x(op, 1))]

    return pattern


lower_each(
    _compare,
    {
        "LESS": core.LessOp,
        "LESS_EQUAL": core.LessEqualOp,
        "GREATER": core.GreaterOp,
        "GREATER_EQUAL": core.GreaterEqualOp,
        "EQUAL": core.EqualOp,
        "NOT_EQUAL": core.NotEqualOp,
        "LOGICAL_AND": core.LogicalAndOp,
        "LOGICAL_OR": core.LogicalOrOp,
    },
)

lowering("LOGICAL_NOT")(_unary(core.LogicalNotOp))


@lowering("SELECT", "SELECT_V2")
def select(op, b):
    # SELECT_V2 broadcasts numpy-style; SELECT's rank-1 condition picks rows.
    inputs = b.x(op, 0), b.x(op, 1), b.x(op, 2)
    return [lower_select(b, *inputs, rows=op.operator == "SELECT")]

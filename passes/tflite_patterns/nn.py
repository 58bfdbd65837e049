"""Convolution, pooling, fully connected, matmul and softmax (NHWC -> NCHW)."""

from __future__ import annotations

import numpy as np

from mlconv.dense import element_type
from mlconv.dialects import core
from mlconv.dialects.core_base import constant_value
from mlconv.dialects.quant import UniformQuantizedType
from mlconv.passes.tflite_patterns import fixed_point as fx
from mlconv.passes.tflite_patterns import lowering

# --- int8 CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED as XNNPACK computes them ------------------
# LiteRT runs these through XNNPACK by default (qs8/qc8w kernels, "fp32" requantization):
#   acc = sum (q_in - zp_in) * q_w + bias          exact, int32
#   q_out = clamp(round_half_even(float32(acc) * s) + zp_out, lo, hi)
# with s = float32(scale_in * scale_w[c] / scale_out) per output channel and [lo, hi] the int8
# range narrowed by the fused activation. Dequantizing, computing in f32 and rounding once
# (the generic path) differs by a step now and then, and deep networks add those steps up.
# The accumulation runs in f32 when it is exact there: every partial sum is bounded by
# 255 * sum|q_w| + |bias| per channel, and below 2^24 each is an exactly representable integer
# in any summation order; otherwise in int32 (slower on XLA's CPU backend, but exact).

_EXACT_F32 = 2**24


def _int8(qtype) -> bool:
    if not isinstance(qtype, UniformQuantizedType):
        return False
    storage = qtype.storage_type
    return storage.width.data == 8 and storage.signedness.data.name != "UNSIGNED"


def int8_per_tensor(qtype) -> bool:
    return _int8(qtype) and not qtype.is_per_axis


_ACTIVATION_RANGES = {
    "NONE": None,
    "RELU": (0.0, None),
    "RELU6": (0.0, 6.0),
    "RELU_N1_TO_1": (-1.0, 1.0),
}


def int8_activation_bounds(op, qout) -> tuple[float, float] | None:
    """The int8 range [-128, 127] narrowed by the op's fused activation as TFLite narrows it
    (each real bound quantized with `qout`), or None for an activation that is no clamp."""
    activation = op.options().get("fused_activation_function", "NONE")
    if activation not in _ACTIVATION_RANGES:
        return None
    low, high = -128.0, 127.0
    if _ACTIVATION_RANGES[activation] is not None:
        (scale,), (zero_point,) = qout.scale_values(), qout.zero_point_values()
        real_low, real_high = _ACTIVATION_RANGES[activation]

        def q(v):
            return float(np.rint(np.float32(v) / np.float32(scale) + np.float32(zero_point)))

        low = max(low, q(real_low))
        high = high if real_high is None else min(high, q(real_high))
    return low, high


def _result_qtype(op):
    element = op.results[0].type.get_element_type()
    return element if isinstance(element, UniformQuantizedType) else None


def _integer_operands(op, b):
    """(q_in value, q_in qtype, weights int array, weight scales, bias int array or None,
    q_out qtype), or None when the op is not int8 x int8 (symmetric weights) -> int8."""
    source = b.raw(op, 0)
    qin, qout = b.qtypes.get(source), _result_qtype(op)
    weights = b.raw(op, 1)
    qw = b.qtypes.get(weights)
    if not (_int8(qin) and _int8(qout) and _int8(qw)):
        return None
    if qin.is_per_axis or qout.is_per_axis or any(z != 0 for z in qw.zero_point_values()):
        return None
    w = constant_value(weights)
    if w is None:
        return None
    bias = None
    if not b.absent(op, 2):
        bias = constant_value(b.raw(op, 2))
        if bias is None or bias.dtype.kind != "i":
            return None
        bias = bias.astype(np.int64).reshape(-1)
    w = w.astype(np.int64)
    return source, qin, w, np.asarray(qw.scale_values(), np.float32), bias, qout


def _requantize(op, b, acc, channel_axis: int, qin, w_scales, qout):
    """float32(acc) * s, rounded half to even, + zp_out, clamped (fused activation too)."""
    (scale_in,), (scale_out,) = qin.scale_values(), qout.scale_values()
    (zp_out,) = qout.zero_point_values()
    s = (np.float32(scale_in) * w_scales) / np.float32(scale_out)
    rank = b.ranked(acc)
    shape = [1] * rank
    shape[channel_axis] = -1
    s = s.reshape(shape) if s.size > 1 else s.reshape(())
    if b.dtype(acc) != np.float32:
        acc = b(core.ConvertOp, acc, destination_type=element_type(np.float32))
    y = b(core.RoundOp, b(core.MultiplyOp, acc, b.const(s)), mode="half_to_even")
    if zp_out:
        y = b(core.AddOp, y, b.const(np.float32(zp_out)))
    bounds = int8_activation_bounds(op, qout)
    if bounds is None:
        activation = op.options().get("fused_activation_function")
        raise b.fail(f"fused activation {activation} on an int8 result is not supported")
    y = b(core.ClampOp, y, min=bounds[0], max=bounds[1])
    return b(core.ConvertOp, y, destination_type=element_type(np.int8))


def _accumulator_dtype(w_abs_sums: np.ndarray, bias) -> type:
    bound = 255 * w_abs_sums.max(initial=0) + (0 if bias is None else np.abs(bias).max(initial=0))
    return np.float32 if bound < _EXACT_F32 else np.int32


def _centered(b, source, qin, dtype):
    """q_in - zp_in in `dtype`."""
    (zp_in,) = qin.zero_point_values()
    x = b(core.ConvertOp, source, destination_type=element_type(dtype))
    if zp_in:
        x = b(core.SubtractOp, x, b.const(np.asarray(zp_in, dtype)))
    return x


def _padding(op) -> str:
    return "same_upper" if op.options()["padding"] == "SAME" else "valid"


def _bias(b, value, bias):
    if bias is None:
        return value
    return b(core.AddOp, value, b.reshape(bias, [1, -1, 1, 1]))


def _window(op, b, dilations=True) -> dict:
    o = op.options()
    attrs = {
        "strides": [o["stride_h"], o["stride_w"]],
        "pads_begin": [0, 0],
        "pads_end": [0, 0],
        "auto_pad": _padding(op),
    }
    if dilations:
        attrs["dilations"] = [o["dilation_h_factor"], o["dilation_w_factor"]]
    return attrs


@lowering("CONV_2D")
def conv_2d(op, b):
    integer = _integer_operands(op, b)
    if integer is not None:
        source, qin, w, w_scales, bias, qout = integer
        dtype = _accumulator_dtype(np.abs(w).reshape(w.shape[0], -1).sum(1), bias)
        x = b.nchw(_centered(b, source, qin, dtype))
        filters = b.const(w.transpose(0, 3, 1, 2).astype(dtype))
        acc = _convolve(op, b, x, filters)
        if bias is not None:
            acc = b(core.AddOp, acc, b.const(bias.astype(dtype).reshape(1, -1, 1, 1)))
        return [b.nhwc(_requantize(op, b, acc, 1, qin, w_scales, qout))]
    x = b.nchw(b.x(op, 0))
    filters = b.transpose(b.x(op, 1), (0, 3, 1, 2))  # OHWI -> OIHW
    y = b.fused(op, _bias(b, _convolve(op, b, x, filters), b.x(op, 2)))
    return [b.nhwc(y)]


def _convolve(op, b, x, filters):
    channels = b.dim(x, 1)
    out_channels, per_group = b.shape(filters)[:2]
    if per_group == channels:
        y = b(core.ConvolutionOp, x, filters, **_window(op, b))
    else:  # grouped: I = C / groups
        groups = channels // per_group
        kh, kw = b.shape(filters)[2:]
        grouped = b.reshape(filters, [groups, out_channels // groups, per_group, kh, kw])
        y = b(core.GroupConvolutionOp, x, grouped, **_window(op, b))
    return y


@lowering("DEPTHWISE_CONV_2D")
def depthwise_conv_2d(op, b):
    integer = _integer_operands(op, b)
    if integer is not None:
        source, qin, w, w_scales, bias, qout = integer
        dtype = _accumulator_dtype(np.abs(w).reshape(-1, w.shape[-1]).sum(0), bias)
        x = b.nchw(_centered(b, source, qin, dtype))
        filters = _depthwise_filters(b, x, b.const(w.astype(dtype)))
        acc = b(core.GroupConvolutionOp, x, filters, **_window(op, b))
        if bias is not None:
            acc = b(core.AddOp, acc, b.const(bias.astype(dtype).reshape(1, -1, 1, 1)))
        return [b.nhwc(_requantize(op, b, acc, 1, qin, w_scales, qout))]
    x = b.nchw(b.x(op, 0))
    filters = _depthwise_filters(b, x, b.x(op, 1))
    y = b(core.GroupConvolutionOp, x, filters, **_window(op, b))
    y = b.fused(op, _bias(b, y, b.x(op, 2)))
    return [b.nhwc(y)]


def _depthwise_filters(b, x, weights):
    """1 x H x W x (C*M) -> C x M x 1 x H x W (GroupConvolution's G x O/G x I/G x H x W)."""
    channels = b.dim(x, 1)
    _, kh, kw, total = b.shape(weights)
    multiplier = total // channels
    filters = b.reshape(weights, [kh, kw, channels, multiplier])
    filters = b.transpose(filters, (2, 3, 0, 1))
    return b.reshape(filters, [channels, multiplier, 1, kh, kw])


def _pool(op_class, **extra):
    def pattern(op, b):
        o = op.options()
        x = b.nchw(b.x(op, 0))
        y = b(
            op_class,
            x,
            kernel=[o["filter_height"], o["filter_width"]],
            **_window(op, b, dilations=False),
            **extra,
        )
        return [b.nhwc(b.fused(op, y))]

    return pattern


# TFLite's SAME average pooling divides by the number of elements inside the input.
_average_pool = _pool(core.AvgPoolOp, exclude_pad=True)


@lowering("AVERAGE_POOL_2D")
def average_pool_2d(op, b):
    exact = _int8_average_pool(op, b)
    return [exact] if exact is not None else _average_pool(op, b)


def _int8_average_pool(op, b):
    """int8 AVERAGE_POOL_2D as LiteRT's kernel computes it (input and output share scale and
    zero point): the window's stored integers summed, zero point included, and divided by the
    count of elements inside the input in integers, rounding half away from zero:
    (acc + count/2) / count, negated for a negative acc. Averaging the dequantized values and
    rounding the centred result (the generic path) is one step off in 20 of 256 values of a
    SAME 3x3/2 pool. The sums (at most 128 * 255 per window) are exact in f32, and so is the
    floor of their quotient."""
    qin, qout = b.qtypes.get(b.raw(op, 0)), _result_qtype(op)
    if not (int8_per_tensor(qin) and int8_per_tensor(qout)):
        return None
    if qin.scale_values() != qout.scale_values() or (
        qin.zero_point_values() != qout.zero_point_values()
    ):
        return None
    bounds = int8_activation_bounds(op, qout)
    if bounds is None:
        return None
    o = op.options()
    x = b.nchw(b(core.ConvertOp, b.raw(op, 0), destination_type=element_type(np.float32)))
    _, channels, height, width = b.shape(x)
    kernel = (o["filter_height"], o["filter_width"])
    ones = b.const(np.ones((channels, 1, 1, *kernel), np.float32))
    acc = b(core.GroupConvolutionOp, x, ones, **_window(op, b, dilations=False), dilations=[1, 1])
    counts = _window_counts((height, width), kernel, (o["stride_h"], o["stride_w"]), op)
    half = b.const(np.floor(counts / 2).astype(np.float32))
    magnitude = b(core.AddOp, b(core.AbsOp, acc), half)
    quotient = b(core.FloorOp, b(core.DivideOp, magnitude, b.const(counts)))
    y = b(core.MultiplyOp, b(core.SignOp, acc), quotient)
    y = b(core.ClampOp, y, min=bounds[0], max=bounds[1])
    return b.nhwc(b(core.ConvertOp, y, destination_type=element_type(np.int8)))


def _window_counts(size, kernel, strides, op) -> np.ndarray:
    """1 x 1 x OH x OW: how many elements of each pooling window lie inside the input."""
    same = op.options()["padding"] == "SAME"
    per_axis = []
    for n, k, s in zip(size, kernel, strides, strict=True):
        out = -(-n // s) if same else (n - k) // s + 1
        begin = max((out - 1) * s + k - n, 0) // 2 if same else 0
        starts = np.arange(out) * s - begin
        per_axis.append(np.minimum(starts + k, n) - np.maximum(starts, 0))
    counts = np.outer(per_axis[0], per_axis[1]).astype(np.float32)
    return counts.reshape(1, 1, *counts.shape)


lowering("MAX_POOL_2D")(_pool(core.MaxPoolOp))


@lowering("FULLY_CONNECTED")
def fully_connected(op, b):
    o = op.options()
    if o["weights_format"] != "DEFAULT":
        raise b.fail(f"weights_format {o['weights_format']} is not supported")
    integer = _integer_operands(op, b)
    if integer is not None:
        source, qin, w, w_scales, bias, qout = integer
        dtype = _accumulator_dtype(np.abs(w).sum(1), bias)
        x = _flatten(op, b, _centered(b, source, qin, dtype), w.shape[1])
        acc = b(core.MatMulOp, x, b.const(w.astype(dtype)), transpose_b=True)
        if bias is not None:
            acc = b(core.AddOp, acc, b.const(bias.astype(dtype)))
        rank = b.ranked(acc)
        return [_requantize(op, b, acc, rank - 1, qin, w_scales, qout)]
    weights = b.x(op, 1)
    units, depth = b.shape(weights)
    x = _flatten(op, b, b.x(op, 0), depth)
    y = b(core.MatMulOp, x, weights, transpose_b=True)
    bias = b.x(op, 2)
    if bias is not None:
        y = b(core.AddOp, y, bias)
    return [b.fused(op, y)]


def _flatten(op, b, x, depth: int):
    if not op.options()["keep_num_dims"] and b.ranked(x) != 2:
        return b.reshape(x, [-1, depth])
    return x


@lowering("BATCH_MATMUL")
def batch_matmul(op, b):
    o = op.options()
    y = b(core.MatMulOp, b.x(op, 0), b.x(op, 1), transpose_a=o["adj_x"], transpose_b=o["adj_y"])
    return [y]


@lowering("SOFTMAX")
def softmax(op, b):
    x = b.x(op, 0)
    beta = float(op.options()["beta"])
    if beta != 1.0:
        x = b(core.MultiplyOp, x, b.const(np.float32(beta)))
    return [b(core.SoftmaxOp, x, axis=-1)]


@lowering("L2_NORMALIZATION")
def l2_normalization(op, b):
    """x / max(sqrt(sum x^2), 1e-6) over the last axis, as TFLite's float kernel; int8 as
    TFLite's integer kernel (`_int8_l2_normalization`)."""
    exact = _int8_l2_normalization(op, b)
    if exact is not None:
        return [exact]
    x = b.x(op, 0)
    axis = b.ints([b.ranked(x) - 1])
    norm = b(core.SqrtOp, b(core.ReduceSumOp, b(core.MultiplyOp, x, x), axis, keep_dims=True))
    norm = b(core.MaximumOp, norm, b.const(np.float32(1e-6)))
    return [b.fused(op, b(core.DivideOp, x, norm))]


def _int8_l2_normalization(op, b):
    """int8 L2_NORMALIZATION as TFLite's integer kernel computes it (XNNPACK does not take it;
    the output is fixed at scale 1/128, zero point 0): per row, acc = sum (q - zp)^2 (int32),
    1 / sqrt(acc) as a fixed-point multiplier and shift (`fixed_point.inv_sqrt_multiplier`,
    five Newton-Raphson steps, built here as int64 core ops since acc has too many values to
    tabulate), and q_out = MultiplyByQuantizedMultiplier(q - zp, multiplier, shift + 7),
    saturated."""
    source = b.raw(op, 0)
    qin, qout = b.qtypes.get(source), _result_qtype(op)
    if not (int8_per_tensor(qin) and int8_per_tensor(qout)):
        return None
    if op.options().get("fused_activation_function", "NONE") != "NONE":
        return None
    (zero_point,) = qin.zero_point_values()
    x = b(core.ConvertOp, source, destination_type=element_type(np.int64))
    if zero_point:
        x = b(core.SubtractOp, x, b.const(np.int64(zero_point)))
    axis = b.ints([b.ranked(x) - 1])
    acc = b(core.ReduceSumOp, b(core.MultiplyOp, x, x), axis, keep_dims=True)
    acc = fx.Traced(b, acc)
    multiplier, shift = fx.inv_sqrt_multiplier(acc)
    y = fx.multiply_by_quantized_multiplier(acc.wrap(x), multiplier, shift + 7)
    y = fx.minimum(fx.maximum(y, -128), 127)
    return b(core.ConvertOp, y.value, destination_type=element_type(np.int8))

"""Neural-network core ops: convolution, pooling, normalization, matmul, softmax.

Layouts are OpenVINO's: data NC[D]HW, convolution filters OI[D]HW, group-convolution filters
G x O/G x I/G x [D]HW.
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
from jax import lax

from mlconv.dialects.core_base import BOOL, FLOAT, INT, INTS, STR, CoreOp, core_op

_PADDING = {
    "strides": INTS,
    "pads_begin": INTS,
    "pads_end": INTS,
    "auto_pad": (STR, "explicit"),
}


def resolve_padding(
    spatial: tuple[int, ...],
    window: tuple[int, ...],
    strides: tuple[int, ...],
    dilations: tuple[int, ...],
    pads_begin: tuple[int, ...],
    pads_end: tuple[int, ...],
    auto_pad: str,
    ceil: bool = False,
) -> list[tuple[int, int]]:
    """(low, high) padding per spatial dim; `same_*` pads so that out = ceil(in / stride), and
    `ceil` rounding extends the high side so that the last partial window is kept."""
    pads = []
    for i, size in enumerate(spatial):
        effective = (window[i] - 1) * dilations[i] + 1
        if auto_pad in ("same_upper", "same_lower"):
            out = -(-size // strides[i])
            total = max((out - 1) * strides[i] + effective - size, 0)
            low = total // 2 if auto_pad == "same_upper" else total - total // 2
            pads.append((low, total - low))
            continue
        low, high = (0, 0) if auto_pad == "valid" else (pads_begin[i], pads_end[i])
        if ceil:
            span = size + low + high - effective
            out = -(-span // strides[i]) + 1
            # A window must start inside the input or the low padding (ONNX and OpenVINO agree).
            if (out - 1) * strides[i] >= size + low:
                out -= 1
            high = max(high, (out - 1) * strides[i] + effective - size - low)
        pads.append((low, high))
    return pads


def _conv_dimension_numbers(rank: int) -> tuple[str, str, str]:
    spatial = "DHW"[3 - (rank - 2) :] if rank <= 5 else None
    if spatial is None:
        raise ValueError("convolutions up to 3 spatial dimensions are supported")
    return (f"NC{spatial}", f"OI{spatial}", f"NC{spatial}")


def _convolve(data, filters, groups, strides, pads_begin, pads_end, dilations, auto_pad):
    spatial = data.shape[2:]
    window = filters.shape[2:]
    padding = resolve_padding(spatial, window, strides, dilations, pads_begin, pads_end, auto_pad)
    return lax.conv_general_dilated(
        data,
        filters.astype(data.dtype),
        window_strides=strides,
        padding=padding,
        rhs_dilation=dilations,
        dimension_numbers=_conv_dimension_numbers(data.ndim),
        feature_group_count=groups,
        preferred_element_type=data.dtype,
    )


@core_op(operands=("data", "filters"), attributes={**_PADDING, "dilations": INTS})
class ConvolutionOp(CoreOp):
    """N-D convolution, NC[D]HW data and OI[D]HW filters (OpenVINO opset1 Convolution).

    Output spatial size: floor((in + pads_begin + pads_end - dilation*(k-1) - 1) / stride) + 1,
    unless auto_pad is same_upper/same_lower (out = ceil(in / stride)) or valid. Example:

        %y = "core.Convolution"(%x, %w) {strides = array<i64: 2, 2>,
               pads_begin = array<i64: 3, 3>, pads_end = array<i64: 3, 3>,
               dilations = array<i64: 1, 1>} : (tensor<1x3x224x224xf32>,
               tensor<64x3x7x7xf32>) -> tensor<1x64x112x112xf32>
    """

    name = "core.Convolution"
    VERSION = 1

    @staticmethod
    def semantics(data, filters, *, strides, pads_begin, pads_end, dilations, auto_pad):
        return _convolve(data, filters, 1, strides, pads_begin, pads_end, dilations, auto_pad)


@core_op(operands=("data", "filters"), attributes={**_PADDING, "dilations": INTS})
class GroupConvolutionOp(CoreOp):
    """Grouped convolution; filters are G x O/G x I/G x [D]HW (OpenVINO opset1).

    Each of the G groups convolves C/G input channels into O/G output channels. Example:

        %y = "core.GroupConvolution"(%x, %w) {strides = array<i64: 1, 1>, ...}
               : (tensor<1x32x56x56xf32>, tensor<32x1x1x3x3xf32>) -> tensor<1x32x56x56xf32>
    """

    name = "core.GroupConvolution"
    VERSION = 1

    @staticmethod
    def semantics(data, filters, *, strides, pads_begin, pads_end, dilations, auto_pad):
        groups = filters.shape[0]
        merged = filters.reshape((groups * filters.shape[1],) + filters.shape[2:])
        return _convolve(data, merged, groups, strides, pads_begin, pads_end, dilations, auto_pad)


_POOL = {
    **_PADDING,
    "kernel": INTS,
    "rounding_type": (STR, "floor"),
}


@core_op(operands=("arg",), attributes={**_POOL, "dilations": (INTS, ())})
class MaxPoolOp(CoreOp):
    """Max pooling over NC[D]HW windows (OpenVINO opset1 MaxPool).

    Padded positions never win. `rounding_type = "ceil"` keeps a last partial window. Example:

        %y = "core.MaxPool"(%x) {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>,
               pads_begin = array<i64: 1, 1>, pads_end = array<i64: 1, 1>}
               : (tensor<1x64x112x112xf32>) -> tensor<1x64x56x56xf32>
    """

    name = "core.MaxPool"
    VERSION = 1

    @staticmethod
    def semantics(
        arg, *, strides, pads_begin, pads_end, kernel, rounding_type, auto_pad, dilations
    ):
        dilations = tuple(dilations) or (1,) * len(kernel)
        pads = resolve_padding(
            arg.shape[2:],
            kernel,
            strides,
            dilations,
            pads_begin,
            pads_end,
            auto_pad,
            ceil=rounding_type == "ceil",
        )
        # A numpy init value lets jax pick its max-monoid reduce_window primitive.
        if jnp.issubdtype(arg.dtype, jnp.floating):
            init = np.array(-np.inf, arg.dtype)
        else:
            init = np.array(jnp.iinfo(arg.dtype).min, arg.dtype)
        return lax.reduce_window(
            arg,
            init,
            lax.max,
            (1, 1, *kernel),
            (1, 1, *strides),
            [(0, 0), (0, 0), *pads],
            window_dilation=(1, 1, *dilations),
        )


@core_op(operands=("arg",), attributes={**_POOL, "exclude_pad": BOOL, "dilations": (INTS, ())})
class AvgPoolOp(CoreOp):
    """Average pooling over NC[D]HW windows (OpenVINO opset1 AvgPool, `exclude-pad`).

    With `exclude_pad` the divisor counts only input elements; without it, it also counts the
    explicit padding, but never the extension that `rounding_type = "ceil"` adds. Example:

        %y = "core.AvgPool"(%x) {kernel = array<i64: 7, 7>, strides = array<i64: 1, 1>,
               pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, exclude_pad = true}
               : (tensor<1x2048x7x7xf32>) -> tensor<1x2048x1x1xf32>
    """

    name = "core.AvgPool"
    VERSION = 1

    @staticmethod
    def semantics(
        arg,
        *,
        strides,
        pads_begin,
        pads_end,
        kernel,
        rounding_type,
        auto_pad,
        exclude_pad,
        dilations,
    ):
        dilations = tuple(dilations) or (1,) * len(kernel)
        spatial = arg.shape[2:]
        pads = resolve_padding(
            spatial,
            kernel,
            strides,
            dilations,
            pads_begin,
            pads_end,
            auto_pad,
            ceil=rounding_type == "ceil",
        )
        plain = resolve_padding(spatial, kernel, strides, dilations, pads_begin, pads_end, auto_pad)
        window = (1, 1, *kernel)
        stride = (1, 1, *strides)
        padding = [(0, 0), (0, 0), *pads]
        total = lax.reduce_window(
            arg,
            np.array(0, arg.dtype),
            lax.add,
            window,
            stride,
            padding,
            window_dilation=(1, 1, *dilations),
        )
        # The divisor per window, computed once at trace time.
        if exclude_pad:
            counted = np.ones(spatial, np.float64)
            count_pads = pads
        else:
            counted = np.ones(
                tuple(s + lo + hi for s, (lo, hi) in zip(spatial, plain, strict=True)), np.float64
            )
            count_pads = [
                (0, hi - plain_hi) for (_, hi), (_, plain_hi) in zip(pads, plain, strict=True)
            ]
        counted = np.pad(counted, count_pads)
        extent = tuple((k - 1) * d + 1 for k, d in zip(kernel, dilations, strict=True))
        divisor = np.lib.stride_tricks.sliding_window_view(counted, extent)[
            tuple(slice(None, None, s) for s in strides)
        ][(Ellipsis, *(slice(None, None, d) for d in dilations))].sum(
            axis=tuple(range(-len(kernel), 0))
        )
        divisor = divisor[tuple(slice(0, n) for n in total.shape[2:])]
        return total / jnp.asarray(np.maximum(divisor, 1), arg.dtype)


@core_op(
    operands=("data", "gamma", "beta", "mean", "variance"),
    attributes={"epsilon": FLOAT},
)
class BatchNormInferenceOp(CoreOp):
    """Batch normalization with fixed statistics over channel axis 1 (OpenVINO opset5).

    y = gamma * (x - mean) / sqrt(variance + epsilon) + beta. Example:

        %y = "core.BatchNormInference"(%x, %g, %b, %m, %v) {epsilon = 1.0e-05 : f64}
               : (tensor<1x64x56x56xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>,
                  tensor<64xf32>) -> tensor<1x64x56x56xf32>
    """

    name = "core.BatchNormInference"
    VERSION = 5

    @staticmethod
    def semantics(data, gamma, beta, mean, variance, *, epsilon):
        shape = (1, -1) + (1,) * (data.ndim - 2)
        scale = (gamma / jnp.sqrt(variance + jnp.asarray(epsilon, variance.dtype))).reshape(shape)
        return (data - mean.reshape(shape)) * scale + beta.reshape(shape)


@core_op(
    operands=("a", "b"), attributes={"transpose_a": (BOOL, False), "transpose_b": (BOOL, False)}
)
class MatMulOp(CoreOp):
    """numpy.matmul with optional transposition of the last two dims (OpenVINO opset1 MatMul).

    1-D operands are promoted and the added dim removed again; batch dims broadcast. Example:

        %y = "core.MatMul"(%x, %w) {transpose_b = true}
               : (tensor<1x2048xf32>, tensor<1000x2048xf32>) -> tensor<1x1000xf32>
    """

    name = "core.MatMul"
    VERSION = 1

    @staticmethod
    def semantics(a, b, *, transpose_a, transpose_b):
        if transpose_a and a.ndim > 1:
            a = jnp.swapaxes(a, -1, -2)
        if transpose_b and b.ndim > 1:
            b = jnp.swapaxes(b, -1, -2)
        return jnp.matmul(a, b.astype(a.dtype), preferred_element_type=a.dtype)


def shifted(x, axis):
    """x - max(x) along `axis`, shifted once more. XLA may reassociate the subtraction with
    x's producer (a mean: (s - m*n)/n); with large logits (light squeezenet's are ~1e10) the
    first shift then misses 0 by hundreds and every exp underflows. The second shift works on
    small numbers, so its maximum is exactly 0."""
    first = x - jnp.max(x, axis=axis, keepdims=True)
    return first - jnp.max(first, axis=axis, keepdims=True)


@core_op(operands=("arg",), attributes={"axis": (INT, 1)})
class SoftmaxOp(CoreOp):
    """exp(x) / sum(exp(x)) along `axis`, computed stably (OpenVINO opset8 Softmax).

    %y = "core.Softmax"(%x) {axis = -1 : i64} : (tensor<1x1000xf32>) -> tensor<1x1000xf32>
    """

    name = "core.Softmax"
    VERSION = 8

    @staticmethod
    def semantics(arg, *, axis):
        e = jnp.exp(shifted(arg, axis))
        return e / jnp.sum(e, axis=axis, keepdims=True)


@core_op(operands=("arg",), attributes={"axis": (INT, 1)})
class LogSoftmaxOp(CoreOp):
    """log(softmax(x)) along `axis`, computed stably (OpenVINO opset5 LogSoftmax).

    %y = "core.LogSoftmax"(%x) {axis = 1 : i64} : (tensor<2x10xf32>) -> tensor<2x10xf32>
    """

    name = "core.LogSoftmax"
    VERSION = 5

    @staticmethod
    def semantics(arg, *, axis):
        d = shifted(arg, axis)
        return d - jnp.log(jnp.sum(jnp.exp(d), axis=axis, keepdims=True))


@core_op(
    operands=("data", "axes"),
    attributes={"alpha": FLOAT, "beta": FLOAT, "bias": FLOAT, "size": INT},
    static_operands=("axes",),
)
class LRNOp(CoreOp):
    """Local response normalization across `axes` (OpenVINO opset1 LRN).

    y = x / (bias + alpha / size^len(axes) * sum(x^2 over a window of `size`))^beta, the window
    centred on each element ((size-1)/2 before, the rest after). Example:

        %y = "core.LRN"(%x, %axes) {alpha = 1.0e-04 : f64, beta = 0.75 : f64, bias = 1.0 : f64,
               size = 5 : i64} : (tensor<1x64x56x56xf32>, tensor<1xi64>) -> tensor<1x64x56x56xf32>
    """

    name = "core.LRN"
    VERSION = 1

    @staticmethod
    def semantics(data, axes, *, alpha, beta, bias, size):
        axes = sorted(int(a) % data.ndim for a in np.asarray(axes).reshape(-1))
        window = [1] * data.ndim
        pads = [(0, 0)] * data.ndim
        for axis in axes:
            window[axis] = size
            pads[axis] = ((size - 1) // 2, size - 1 - (size - 1) // 2)
        squares = lax.reduce_window(
            data * data, np.array(0, data.dtype), lax.add, window, (1,) * data.ndim, pads
        )
        scale = alpha / math.pow(size, len(axes))
        return data / jnp.power(bias + scale * squares, beta)


@core_op(
    operands=("data", "axes"),
    attributes={"normalize_variance": BOOL, "eps": FLOAT, "eps_mode": (STR, "inside_sqrt")},
    static_operands=("axes",),
)
class MVNOp(CoreOp):
    """Mean-variance normalization over `axes` (OpenVINO opset6 MVN).

    y = (x - mean) / sqrt(var + eps) (`eps_mode = "inside_sqrt"`) or / (sqrt(var) + eps)
    ("outside_sqrt"); without `normalize_variance` only the mean is subtracted. Inputs of less
    than 32-bit float precision are normalized in f32 (ONNX's stash_type). Example:

        %y = "core.MVN"(%x, %axes) {normalize_variance = true, eps = 1.0e-05 : f64}
               : (tensor<2x3x4xf32>, tensor<1xi64>) -> tensor<2x3x4xf32>
    """

    name = "core.MVN"
    VERSION = 6

    @staticmethod
    def semantics(data, axes, *, normalize_variance, eps, eps_mode):
        axes = tuple(int(a) % data.ndim for a in np.asarray(axes).reshape(-1))
        wide = data.astype(jnp.promote_types(data.dtype, jnp.float32))
        centred = wide - jnp.mean(wide, axis=axes, keepdims=True)
        if normalize_variance:
            variance = jnp.mean(centred * centred, axis=axes, keepdims=True)
            if eps_mode == "outside_sqrt":
                centred = centred / (jnp.sqrt(variance) + eps)
            else:
                centred = centred / jnp.sqrt(variance + eps)
        return centred.astype(data.dtype)


OPS: list[type[CoreOp]] = [
    ConvolutionOp,
    GroupConvolutionOp,
    MaxPoolOp,
    AvgPoolOp,
    BatchNormInferenceOp,
    MatMulOp,
    SoftmaxOp,
    LogSoftmaxOp,
    LRNOp,
    MVNOp,
]

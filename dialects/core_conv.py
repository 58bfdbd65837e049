"""Convolution core ops: Convolution, GroupConvolution and their transposes
(ConvolutionBackpropData), and Col2Im (the inverse of im2col). Data NC[D]HW, filters OI[D]HW, group filters G x O/G x I/G x [D]HW.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jax import lax
from xdsl.utils.exceptions import VerifyException

from mlconv.dialects.core_base import INTS, STR, CoreOp, core_op

PADDING = {
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


@core_op(operands=("data", "filters"), attributes={**PADDING, "dilations": INTS})
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


@core_op(operands=("data", "filters"), attributes={**PADDING, "dilations": INTS})
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


OPS: list[type[CoreOp]] = [
    ConvolutionOp,
    GroupConvolutionOp,
]


def _transposed_convolve(
    data, filters, groups, strides, pads_begin, pads_end, dilations, output_padding
):
    """Transposed convolution as a convolution of the input dilated by `strides` with the
    flipped, in/out-swapped filters. `filters` is G x C_in/G x C_out/G x k..."""
    spatial = data.ndim - 2
    g, cin, cout = filters.shape[:3]
    kernel = filters.shape[3:]
    # (G, Cin/G, Cout/G, k) -> (G*Cout/G, Cin/G, k), flipped along the spatial dims.
    merged = jnp.swapaxes(filters, 1, 2).reshape((g * cout, cin, *kernel))
    merged = jnp.flip(merged, axis=tuple(range(2, 2 + spatial)))
    padding = []
    for i in range(spatial):
        extent = (kernel[i] - 1) * dilations[i]
        padding.append((extent - pads_begin[i], extent - pads_end[i] + output_padding[i]))
    # Negative padding crops: convolve with the non-negative part, then slice.
    positive = [(max(lo, 0), max(hi, 0)) for lo, hi in padding]
    out = lax.conv_general_dilated(
        data,
        merged.astype(data.dtype),
        window_strides=(1,) * spatial,
        padding=positive,
        lhs_dilation=strides,
        rhs_dilation=dilations,
        dimension_numbers=_conv_dimension_numbers(data.ndim),
        feature_group_count=groups,
        preferred_element_type=data.dtype,
    )
    crop = [slice(None), slice(None)]
    for i, (lo, hi) in enumerate(padding):
        size = out.shape[2 + i]
        crop.append(slice(max(-lo, 0), size - max(-hi, 0)))
    return out[tuple(crop)]


def _backprop_padding(
    data, kernel, strides, dilations, pads_begin, pads_end, auto_pad, output_padding, output_shape
):
    """Explicit (pads_begin, pads_end) of a transposed convolution: from `output_shape` when
    given (split as ONNX does: the odd unit goes to the end for same_upper, to the beginning
    otherwise; a negative total extends the output), from auto_pad, else as given."""
    spatial = data.ndim - 2
    if output_shape is None and auto_pad in ("same_upper", "same_lower"):
        output_shape = [data.shape[2 + i] * strides[i] for i in range(spatial)]
    if output_shape is None:
        if auto_pad == "valid":
            return (0,) * spatial, (0,) * spatial
        return tuple(pads_begin), tuple(pads_end)
    begin, end = [], []
    for i in range(spatial):
        full = (
            strides[i] * (data.shape[2 + i] - 1)
            + (kernel[i] - 1) * dilations[i]
            + 1
            + output_padding[i]
        )
        total = full - int(output_shape[i])  # negative: the output is extended
        if auto_pad == "same_upper":
            begin.append(total // 2)
            end.append(total - total // 2)
        else:
            begin.append(total - total // 2)
            end.append(total // 2)
    return tuple(begin), tuple(end)


_BACKPROP = {
    **PADDING,
    "dilations": INTS,
    "output_padding": (INTS, ()),
}


@core_op(
    operands=("data", "filters", "?output_shape"),
    attributes=_BACKPROP,
    static_operands=("output_shape",),
)
class ConvolutionBackpropDataOp(CoreOp):
    """Transposed convolution, NC[D]HW data and C_in x C_out x [D]HW filters (OpenVINO opset1
    ConvolutionBackpropData).

    Output spatial size: stride*(in-1) + dilation*(k-1) + 1 - pads_begin - pads_end +
    output_padding; with the optional `output_shape` (spatial dims) or auto_pad same_*, the
    padding is derived so that the output has that size (same_*: in * stride). Example:

        %y = "core.ConvolutionBackpropData"(%x, %w) {strides = array<i64: 2, 2>,
               pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>,
               dilations = array<i64: 1, 1>} : (tensor<1x1x3x3xf32>, tensor<1x2x3x3xf32>)
               -> tensor<1x2x7x7xf32>
    """

    name = "core.ConvolutionBackpropData"
    VERSION = 1

    @staticmethod
    def semantics(data, filters, output_shape=None, **attributes):
        # one group: GroupConvolutionBackpropData's filters with a group dimension of 1
        return GroupConvolutionBackpropDataOp.semantics(
            data, filters[None], output_shape, **attributes
        )


@core_op(
    operands=("data", "filters", "?output_shape"),
    attributes=_BACKPROP,
    static_operands=("output_shape",),
)
class GroupConvolutionBackpropDataOp(CoreOp):
    """Grouped transposed convolution; filters G x C_in/G x C_out/G x [D]HW (OpenVINO opset1
    GroupConvolutionBackpropData). Sizes as ConvolutionBackpropData. Example:

        %y = "core.GroupConvolutionBackpropData"(%x, %w) {strides = array<i64: 1, 1>, ...}
               : (tensor<1x4x3x3xf32>, tensor<2x2x3x3x3xf32>) -> tensor<1x6x5x5xf32>
    """

    name = "core.GroupConvolutionBackpropData"
    VERSION = 1

    @staticmethod
    def semantics(
        data,
        filters,
        output_shape=None,
        *,
        strides,
        pads_begin,
        pads_end,
        dilations,
        auto_pad,
        output_padding,
    ):
        spatial = data.ndim - 2
        output_padding = tuple(output_padding) or (0,) * spatial
        begin, end = _backprop_padding(
            data,
            filters.shape[3:],
            strides,
            dilations,
            pads_begin,
            pads_end,
            auto_pad,
            output_padding,
            None if output_shape is None else np.asarray(output_shape).tolist(),
        )
        return _transposed_convolve(
            data, filters, filters.shape[0], strides, begin, end, dilations, output_padding
        )


OPS += [ConvolutionBackpropDataOp, GroupConvolutionBackpropDataOp]


@core_op(
    operands=("data", "image_shape", "block_shape"),
    attributes={
        "strides": (INTS, ()),
        "pads_begin": (INTS, ()),
        "pads_end": (INTS, ()),
        "dilations": (INTS, ()),
    },
    static_operands=("image_shape", "block_shape"),
)
class Col2ImOp(CoreOp):
    """Rearrange columns into an image, summing where blocks overlap: `data` is
    (N, C * prod(block_shape), L), each column one block of `block_shape` (row-major) at one of
    the L block positions (row-major over the positions a sliding window with `strides`,
    `dilations`, `pads_begin`/`pads_end` takes over `image_shape`); the result is
    (N, C, *image_shape). Empty attributes mean strides/dilations 1 and no padding (ONNX
    Col2Im-18; OpenVINO opset15 Col2Im for two spatial dims).

        %y = "core.Col2Im"(%x, %image, %block) {strides = array<i64: 1, 1>, ...}
               : (tensor<1x5x5xf32>, tensor<2xi64>, tensor<2xi64>) -> tensor<1x1x5x5xf32>
    """

    name = "core.Col2Im"
    VERSION = 15

    def verify_(self) -> None:
        values = self.attribute_values()
        lengths = {len(v) for v in values.values() if len(v)}
        if len(lengths) > 1:
            raise VerifyException(
                "strides, pads_begin, pads_end and dilations must have one value per spatial dim"
            )

    @staticmethod
    def semantics(data, image_shape, block_shape, *, strides, pads_begin, pads_end, dilations):
        image = [int(v) for v in np.asarray(image_shape).reshape(-1)]
        block = [int(v) for v in np.asarray(block_shape).reshape(-1)]
        rank = len(image)
        strides = tuple(strides) or (1,) * rank
        dilations = tuple(dilations) or (1,) * rank
        begin, end = tuple(pads_begin) or (0,) * rank, tuple(pads_end) or (0,) * rank
        if len(block) != rank or any(len(v) != rank for v in (strides, dilations, begin, end)):
            raise ValueError("image_shape, block_shape and the attributes differ in rank")
        padded = [image[d] + begin[d] + end[d] for d in range(rank)]
        counts = [
            (padded[d] - (dilations[d] * (block[d] - 1) + 1)) // strides[d] + 1 for d in range(rank)
        ]
        n, channels_blocks, length = data.shape
        if channels_blocks % int(np.prod(block)) or length != int(np.prod(counts)):
            raise ValueError(
                f"data {data.shape} does not hold blocks {block} at {counts} positions"
            )
        # A grouped transposed convolution (one group per channel) whose filter k is one-hot
        # at block position k: each column's values land at their block offsets, overlapping
        # blocks add up; the padding crops the image out of the padded extent.
        size = int(np.prod(block))
        channels = channels_blocks // size
        filters = np.eye(size, dtype=np.float32).reshape(1, size, 1, *block)
        filters = jnp.asarray(np.broadcast_to(filters, (channels, size, 1, *block)))
        spread = [
            padded[d] - (strides[d] * (counts[d] - 1) + dilations[d] * (block[d] - 1) + 1)
            for d in range(rank)
        ]
        return _transposed_convolve(
            data.reshape(n, channels_blocks, *counts),
            filters,
            channels,
            strides,
            begin,
            end,
            dilations,
            spread,
        )


OPS += [Col2ImOp]

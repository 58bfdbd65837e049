"""Convolution core ops: Convolution, GroupConvolution and their transposes
(ConvolutionBackpropData). Data NC[D]HW, filters OI[D]HW, group filters G x O/G x I/G x [D]HW.
"""

from __future__ import annotations

from jax import lax

from mlconv.dialects.core_base import INTS, STR, CoreOp, core_op

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


OPS: list[type[CoreOp]] = [
    ConvolutionOp,
    GroupConvolutionOp,
]

"""Neural-network TF ops: convolutions, pooling, batch norm, matmuls, softmax.

TF's NHWC data is transposed to NCHW around each layout-sensitive op (core-layout-nchw later
sinks and cancels these transposes); filters are constants in practice and are transposed
here at compile time: Conv2D's HWIO to OIHW, DepthwiseConv2dNative's HWCM to C x M x 1 x HW.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import TensorType

from mlconv.dialects import core_elementwise as ew
from mlconv.dialects import core_nn as nn
from mlconv.dialects import core_tensor as ct
from mlconv.dialects import core_tf as ctf
from mlconv.passes.tf_patterns import lowering

PADDING = {"SAME": "same_upper", "VALID": "valid", "EXPLICIT": "explicit"}


def window_attributes(op, b, data_format: str, spatial: int) -> dict:
    """strides / pads / auto_pad in core form. TF's SAME puts the odd pad at the end, which
    is OpenVINO's same_upper."""
    padding = b.attr(op, "padding")
    auto_pad = PADDING.get(padding)
    if auto_pad is None:
        raise b.fail(f"padding '{padding}' is not supported")
    pads_begin, pads_end = [0] * spatial, [0] * spatial
    if auto_pad == "explicit":
        pairs = np.asarray(b.attr(op, "explicit_paddings", []), np.int64).reshape(-1, 2)
        spatial_pairs = pairs[2:] if data_format.startswith("NC") else pairs[1:-1]
        pads_begin, pads_end = list(spatial_pairs[:, 0]), list(spatial_pairs[:, 1])
    return {
        "strides": b.spatial(b.attr(op, "strides"), data_format),
        "pads_begin": pads_begin,
        "pads_end": pads_end,
        "auto_pad": auto_pad,
    }


def reshaped(b, value, shape):
    array = b.constant(value)
    if array is not None:
        return b.const(np.ascontiguousarray(array.reshape(shape)))
    return b(ct.ReshapeOp, value, b.ints(list(shape)))


@lowering("Conv2D", "Conv3D")
def conv(op, b):
    data_format = b.attr(op, "data_format", "NHWC")
    x, w = b.input(op, 0), b.input(op, 1)
    spatial = len(data_format) - 2
    attributes = window_attributes(op, b, data_format, spatial)
    attributes["dilations"] = b.spatial(b.attr(op, "dilations", [1] * (spatial + 2)), data_format)
    x = b.to_nchw(x, data_format)
    # [spatial..., I, O] -> [O, I, spatial...]
    filters = b.transpose(w, (spatial + 1, spatial, *range(spatial)))
    w_shape = w.type.get_shape() if b.rank(w) else None
    x_shape = x.type.get_shape() if b.rank(x) else None
    if w_shape is None or x_shape is None or x_shape[1] < 0:
        raise b.fail("a convolution needs static channel counts")
    groups = x_shape[1] // w_shape[spatial]
    if groups == 1:
        y = b(nn.ConvolutionOp, x, filters, **attributes)
    else:
        out = w_shape[spatial + 1]
        filters = reshaped(
            b, filters, (groups, out // groups, w_shape[spatial], *w_shape[:spatial])
        )
        y = b(nn.GroupConvolutionOp, x, filters, **attributes)
    return [b.to_nhwc(y, data_format)]


@lowering("DepthwiseConv2dNative")
def depthwise_conv(op, b):
    data_format = b.attr(op, "data_format", "NHWC")
    x, w = b.input(op, 0), b.input(op, 1)
    attributes = window_attributes(op, b, data_format, 2)
    attributes["dilations"] = b.spatial(b.attr(op, "dilations", [1, 1, 1, 1]), data_format)
    shape = w.type.get_shape() if b.rank(w) == 4 else None
    if shape is None or min(shape) < 0:
        raise b.fail("a depthwise convolution needs a static filter shape")
    height, width, channels, multiplier = shape
    # [H, W, C, M] -> [C, M, H, W] -> groups C of M outputs from 1 input each.
    filters = reshaped(b, b.transpose(w, (2, 3, 0, 1)), (channels, multiplier, 1, height, width))
    y = b(nn.GroupConvolutionOp, b.to_nchw(x, data_format), filters, **attributes)
    return [b.to_nhwc(y, data_format)]


@lowering("BiasAdd", "BiasAddV1")
def bias_add(op, b):
    x, bias = b.input(op, 0), b.input(op, 1)
    if b.attr(op, "data_format", "NHWC").startswith("NC") and (b.rank(x) or 0) > 2:
        bias = b(ct.UnsqueezeOp, bias, b.ints(list(range(1, b.rank(x) - 1))))
    return [b(ew.AddOp, x, bias)]


@lowering("MatMul", "BatchMatMul", "BatchMatMulV2", "BatchMatMulV3")
def matmul(op, b):
    # BatchMatMul's adj_x/adj_y conjugate too, which is transposition for the real types core
    # supports.
    flags = ("transpose_a", "transpose_b") if op.name == "tf.MatMul" else ("adj_x", "adj_y")
    transpose_a, transpose_b = (b.attr(op, flag, False) for flag in flags)
    x, y = b.input(op, 0), b.input(op, 1)
    return [b(nn.MatMulOp, x, y, transpose_a=transpose_a, transpose_b=transpose_b)]


@lowering("Einsum")
def einsum(op, b):
    return [b(ctf.EinsumOp, b.inputs(op, 0), equation=b.attr(op, "equation"))]


def _pool(op, b, op_class, **extra):
    data_format = b.attr(op, "data_format", "NHWC")
    spatial = len(data_format) - 2
    kernel = b.spatial(b.attr(op, "ksize"), data_format)
    attributes = window_attributes(op, b, data_format, spatial)
    y = b(op_class, b.to_nchw(b.input(op, 0), data_format), kernel=kernel, **attributes, **extra)
    return [b.to_nhwc(y, data_format)]


@lowering("MaxPool", "MaxPool3D")
def max_pool(op, b):
    return _pool(op, b, nn.MaxPoolOp)


@lowering("AvgPool", "AvgPool3D")
def avg_pool(op, b):
    # TF never counts padding in the divisor.
    return _pool(op, b, nn.AvgPoolOp, exclude_pad=True)


@lowering("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3")
def fused_batch_norm(op, b):
    if b.attr(op, "is_training", True):
        raise b.fail("FusedBatchNorm with is_training=true is not supported (freeze for inference)")
    data_format = b.attr(op, "data_format", "NHWC")
    x = b.to_nchw(b.input(op, 0), data_format)
    scale, offset, mean, variance = (b.input(op, i) for i in range(1, 5))
    y = b(nn.BatchNormInferenceOp, x, scale, offset, mean, variance, epsilon=b.attr(op, "epsilon"))
    # The batch statistics outputs only mean something in training.
    return [b.to_nhwc(y, data_format)]


@lowering("Softmax")
def softmax(op, b):
    return [b(nn.SoftmaxOp, b.input(op, 0), axis=-1)]


@lowering("LogSoftmax")
def log_softmax(op, b):
    return [b(nn.LogSoftmaxOp, b.input(op, 0), axis=-1)]


def _block_arguments(op, b, what: str):
    """(full-rank block shape, low, high) from SpaceToBatchND/BatchToSpaceND operands."""
    rank = b.rank(b.input(op, 0))
    if rank is None:
        raise b.fail("needs the rank of its input")
    block = b.static(b.input(op, 1), "block_shape").astype(np.int64).reshape(-1)
    pairs = b.static(b.input(op, 2), what).astype(np.int64).reshape(-1, 2)
    rest = rank - 1 - block.size
    full = [1, *block, *[1] * rest]
    low = [0, *pairs[:, 0], *[0] * rest]
    high = [0, *pairs[:, 1], *[0] * rest]
    return b.ints(full), b.ints(low), b.ints(high)


@lowering("SpaceToBatchND")
def space_to_batch(op, b):
    return [b(ctf.SpaceToBatchOp, b.input(op, 0), *_block_arguments(op, b, "paddings"))]


@lowering("BatchToSpaceND")
def batch_to_space(op, b):
    return [b(ctf.BatchToSpaceOp, b.input(op, 0), *_block_arguments(op, b, "crops"))]


@lowering("Conv2DBackpropInput", "Conv3DBackpropInputV2")
def conv_backprop_input(op, b):
    """A transposed convolution (Keras ConvNDTranspose): core.ConvolutionBackpropData with
    the padding TF's forward convolution had, and output_padding for the rows a stride leaves
    over, from the static spatial sizes of the gradient and of the result."""
    data_format = b.attr(op, "data_format", "NHWC")
    spatial = len(data_format) - 2
    w, dy = b.input(op, 1), b.input(op, 2)
    padding = b.attr(op, "padding")
    if padding not in ("SAME", "VALID"):
        raise b.fail(f"padding '{padding}' is not supported")
    result = op.results[0].type
    if b.rank(w) is None or b.rank(dy) is None or not isinstance(result, TensorType):
        raise b.fail("a transposed convolution needs ranked operands")
    kernel = w.type.get_shape()[:spatial]
    grad = b.spatial(dy.type.get_shape(), data_format)
    out = b.spatial(result.get_shape(), data_format)
    if min([*kernel, *grad, *out]) < 0:
        raise b.fail("a transposed convolution needs static spatial sizes")
    strides = b.spatial(b.attr(op, "strides"), data_format)
    dilations = b.spatial(b.attr(op, "dilations", [1] * (spatial + 2)), data_format)
    begin, end, extra = [], [], []
    for g, o, k, s, d in zip(grad, out, kernel, strides, dilations, strict=True):
        full = (g - 1) * s + (k - 1) * d + 1
        total = max(full - o, 0) if padding == "SAME" else 0
        begin.append(total // 2)
        end.append(total - total // 2)
        extra.append(o - (full - total))
    # [spatial..., in, out] of the forward convolution -> [out (our C_in), in, spatial...]
    filters = b.transpose(w, (spatial + 1, spatial, *range(spatial)))
    y = b(
        nn.ConvolutionBackpropDataOp,
        b.to_nchw(dy, data_format),
        filters,
        None,
        strides=strides,
        pads_begin=begin,
        pads_end=end,
        dilations=dilations,
        auto_pad="explicit",
        output_padding=extra,
    )
    return [b.to_nhwc(y, data_format)]

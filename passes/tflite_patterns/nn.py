"""Convolution, pooling, fully connected, matmul and softmax (NHWC -> NCHW)."""

from __future__ import annotations

import numpy as np

from mlconv.dialects import core
from mlconv.passes.tflite_patterns import lowering


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
    x = b.nchw(b.x(op, 0))
    filters = b.transpose(b.x(op, 1), (0, 3, 1, 2))  # OHWI -> OIHW
    channels = b.shape(x)[1]
    out_channels, per_group = b.shape(filters)[:2]
    if per_group == channels:
        y = b(core.ConvolutionOp, x, filters, **_window(op, b))
    else:  # grouped: I = C / groups
        groups = channels // per_group
        kh, kw = b.shape(filters)[2:]
        grouped = b.reshape(filters, [groups, out_channels // groups, per_group, kh, kw])
        y = b(core.GroupConvolutionOp, x, grouped, **_window(op, b))
    y = b.fused(op, _bias(b, y, b.x(op, 2)))
    return [b.nhwc(y)]


@lowering("DEPTHWISE_CONV_2D")
def depthwise_conv_2d(op, b):
    x = b.nchw(b.x(op, 0))
    channels = b.shape(x)[1]
    _, kh, kw, total = b.shape(b.raw(op, 1))
    multiplier = total // channels
    # 1 x H x W x (C*M) -> C x M x 1 x H x W (GroupConvolution's G x O/G x I/G x H x W).
    filters = b.reshape(b.x(op, 1), [kh, kw, channels, multiplier])
    filters = b.transpose(filters, (2, 3, 0, 1))
    filters = b.reshape(filters, [channels, multiplier, 1, kh, kw])
    y = b(core.GroupConvolutionOp, x, filters, **_window(op, b))
    y = b.fused(op, _bias(b, y, b.x(op, 2)))
    return [b.nhwc(y)]


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
lowering("AVERAGE_POOL_2D")(_pool(core.AvgPoolOp, exclude_pad=True))
lowering("MAX_POOL_2D")(_pool(core.MaxPoolOp))


@lowering("FULLY_CONNECTED")
def fully_connected(op, b):
    o = op.options()
    if o["weights_format"] != "DEFAULT":
        raise b.fail(f"weights_format {o['weights_format']} is not supported")
    x = b.x(op, 0)
    weights = b.x(op, 1)
    units, depth = b.shape(weights)
    shape = b.shape(x)
    if not o["keep_num_dims"] and len(shape) != 2:
        x = b.reshape(x, [-1, depth])
    y = b(core.MatMulOp, x, weights, transpose_b=True)
    bias = b.x(op, 2)
    if bias is not None:
        y = b(core.AddOp, y, bias)
    return [b.fused(op, y)]


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

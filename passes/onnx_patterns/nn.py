"""Neural-network ONNX ops: convolution, pooling, normalization, Gemm/MatMul, softmax."""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np

from mlconv.dense import element_type
from mlconv.dialects import core_conv as conv_ops
from mlconv.dialects import core_elementwise as ew
from mlconv.dialects import core_indexing as ci
from mlconv.dialects import core_nn as nn
from mlconv.dialects import core_tensor as ct
from mlconv.passes.onnx_patterns import lowering

AUTO_PAD = {
    "NOTSET": "explicit",
    "SAME_UPPER": "same_upper",
    "SAME_LOWER": "same_lower",
    "VALID": "valid",
}


def window_attributes(op, b, spatial: int) -> dict:
    """strides / pads_begin / pads_end / auto_pad in core form from ONNX's attributes."""
    pads = b.attr(op, "pads", [0] * (2 * spatial))
    auto_pad = AUTO_PAD.get(b.attr(op, "auto_pad", "NOTSET"))
    if auto_pad is None:
        raise b.fail(f"unknown auto_pad '{op.onnx_attr('auto_pad')}'")
    return {
        "strides": b.attr(op, "strides", [1] * spatial),
        "pads_begin": pads[:spatial],
        "pads_end": pads[spatial:],
        "auto_pad": auto_pad,
    }


def spatial_rank(b, x, op) -> int:
    kernel = op.onnx_attr("kernel_shape")
    if kernel:
        return len(kernel)
    rank = b.rank(x)
    if rank is None:
        raise b.fail("needs the rank of its input or a kernel_shape")
    return rank - 2


def add_channel_bias(b, y, bias, spatial: int):
    """y + bias broadcast over N and the spatial dims (bias has one value per channel)."""
    return b(ew.AddOp, y, b(ct.UnsqueezeOp, bias, b.ints(list(range(1, spatial + 1)))))


@lowering("Conv", 1, 11, 22)
def conv(op, b):
    x, w, bias = b.input(op, "X"), b.input(op, "W"), b.input(op, "B")
    spatial = spatial_rank(b, w, op) if b.rank(w) else spatial_rank(b, x, op)
    attributes = window_attributes(op, b, spatial)
    attributes["dilations"] = b.attr(op, "dilations", [1] * spatial)
    group = b.attr(op, "group", 1)
    if group == 1:
        y = b(nn.ConvolutionOp, x, w, **attributes)
    else:
        shape = w.type.get_shape() if b.rank(w) else None
        if shape is None or shape[0] < 0:
            raise b.fail("a grouped convolution needs the static output-channel count of W")
        filters = b(ct.ReshapeOp, w, b.ints([group, shape[0] // group, -1, *shape[2:]]))
        y = b(nn.GroupConvolutionOp, x, filters, **attributes)
    if bias is not None:
        y = add_channel_bias(b, y, bias, spatial)
    return [y]


@lowering("ConvTranspose", 1, 11, 22)
def conv_transpose(op, b):
    """ConvolutionBackpropData (group 1) or GroupConvolutionBackpropData; ONNX's W is already
    C_in x C_out/group x k... . `output_shape` becomes the core op's output_shape operand."""
    x, w, bias = b.input(op, "X"), b.input(op, "W"), b.input(op, "B")
    spatial = spatial_rank(b, w, op) if b.rank(w) else spatial_rank(b, x, op)
    attributes = window_attributes(op, b, spatial)
    attributes["dilations"] = b.attr(op, "dilations", [1] * spatial)
    attributes["output_padding"] = b.attr(op, "output_padding", [0] * spatial)
    output_shape = b.attr(op, "output_shape", None)
    shape_operand = None
    if output_shape:
        shape_operand = b.ints(list(output_shape)[-spatial:])
    group = b.attr(op, "group", 1)
    if group == 1:
        y = b(nn.ConvolutionBackpropDataOp, x, w, shape_operand, **attributes)
    else:
        shape = w.type.get_shape() if b.rank(w) else None
        if shape is None or shape[0] < 0:
            raise b.fail("a grouped transposed convolution needs the static shape of W")
        filters = b(ct.ReshapeOp, w, b.ints([group, shape[0] // group, *shape[1:]]))
        y = b(nn.GroupConvolutionBackpropDataOp, x, filters, shape_operand, **attributes)
    if bias is not None:
        y = add_channel_bias(b, y, bias, spatial)
    return [y]


@lowering("MaxPool", 1, 8, 10, 11, 12, 22)
def max_pool(op, b):
    x = b.input(op, "X")
    spatial = spatial_rank(b, x, op)
    y = b(
        nn.MaxPoolOp,
        x,
        kernel=op.onnx_attr("kernel_shape"),
        rounding_type="ceil" if b.attr(op, "ceil_mode", 0) else "floor",
        dilations=b.attr(op, "dilations", [1] * spatial),
        **window_attributes(op, b, spatial),
    )
    if len(op.results) > 1 and op.results[1].uses:
        return [y, _max_pool_indices(op, b, x, y, spatial)]
    return [y, None]


def _max_pool_indices(op, b, x, pooled, spatial):
    """MaxPool's Indices: the flat index (over the whole N x C x ... input, row-major, or
    column-major over the spatial dims for storage_order 1) of the first kernel tap, in
    row-major tap order, that holds the window's maximum. Per tap: a strided slice of the
    input padded with -inf, compared with the pooled maximum; taps are taken last to first so
    that the first equal one is selected last."""
    shape = x.type.get_shape() if b.rank(x) else None
    out = pooled.type.get_shape() if b.rank(pooled) else None
    if shape is None or out is None or any(d < 0 for d in (*shape, *out)):
        raise b.fail("MaxPool's Indices output needs static input and output shapes")
    if b.attr(op, "auto_pad", "NOTSET") != "NOTSET":
        raise b.fail("MaxPool's Indices output with auto_pad is not supported")
    kernel = list(op.onnx_attr("kernel_shape"))
    strides = list(b.attr(op, "strides", [1] * spatial))
    dilations = list(b.attr(op, "dilations", [1] * spatial))
    pads = list(b.attr(op, "pads", [0] * (2 * spatial)))
    begin = pads[:spatial]
    # Enough at the end for every window (ceil_mode's last one may stick out).
    end = [
        max(
            0,
            (out[2 + d] - 1) * strides[d]
            + (kernel[d] - 1) * dilations[d]
            + 1
            - shape[2 + d]
            - begin[d],
        )
        for d in range(spatial)
    ]
    dtype = b.dtype(x)
    low = np.asarray(-np.inf if np.issubdtype(dtype, np.floating) else np.iinfo(dtype).min, dtype)
    padded = b(
        ci.PadOp, x, b.ints([0, 0, *begin]), b.ints([0, 0, *end]), b.const(low), pad_mode="constant"
    )
    column_major = bool(b.attr(op, "storage_order", 0))
    grids = np.meshgrid(*(np.arange(d) for d in out[2:]), indexing="ij")
    indices = None
    for tap in reversed(list(itertools.product(*(range(k) for k in kernel)))):
        starts = [t * dilations[d] for d, t in enumerate(tap)]
        stops = [s + (out[2 + d] - 1) * strides[d] + 1 for d, s in enumerate(starts)]
        axes = list(range(2, 2 + spatial))
        values = b(ci.SliceOp, padded, b.ints(starts), b.ints(stops), b.ints(strides), b.ints(axes))
        position = [grids[d] * strides[d] - begin[d] + starts[d] for d in range(spatial)]
        order = list(reversed(range(spatial))) if column_major else list(range(spatial))
        flat = np.zeros(out[2:], np.int64)
        for d in order:
            flat = flat * shape[2 + d] + position[d]
        flat = flat + (
            np.arange(shape[0] * shape[1]).reshape(shape[0], shape[1], *[1] * spatial)
            * int(np.prod(shape[2:]))
        )
        here = b.const(flat.astype(np.int64))
        equal = b(ew.EqualOp, values, pooled)
        indices = here if indices is None else b(ct.SelectOp, equal, here, indices)
    return indices


@lowering("AveragePool", 1, 7, 10, 11, 19, 22)
def average_pool(op, b):
    x = b.input(op, "X")
    spatial = spatial_rank(b, x, op)
    y = b(
        nn.AvgPoolOp,
        x,
        kernel=op.onnx_attr("kernel_shape"),
        rounding_type="ceil" if b.attr(op, "ceil_mode", 0) else "floor",
        exclude_pad=not b.attr(op, "count_include_pad", 0),
        dilations=b.attr(op, "dilations", [1] * spatial),
        **window_attributes(op, b, spatial),
    )
    return [y]


def _global_pool(core_class):
    def pattern(op, b):
        x = op.operands[0]
        rank = b.rank(x)
        if rank is None:
            raise b.fail("needs the rank of its input")
        return [b(core_class, x, b.ints(list(range(2, rank))), keep_dims=True)]

    return pattern


lowering("GlobalAveragePool", 1, 22)(_global_pool(ct.ReduceMeanOp))
lowering("GlobalMaxPool", 1, 22)(_global_pool(ct.ReduceMaxOp))


@lowering("LRN", 1, 13)
def lrn(op, b):
    return [
        b(
            nn.LRNOp,
            op.operands[0],
            b.ints([1]),
            alpha=b.attr(op, "alpha", 1e-4),
            beta=b.attr(op, "beta", 0.75),
            bias=b.attr(op, "bias", 1.0),
            size=op.onnx_attr("size"),
        )
    ]


@lowering("BatchNormalization", 1, 6)
def batch_norm_v1(op, b):
    """Before opset 7, `is_test` = 0 (the default) is training mode: refused."""
    if not b.attr(op, "is_test", 0):
        raise b.fail(
            "BatchNormalization with is_test=0 (the default before opset 7) runs in training "
            "mode, which is not supported: set is_test=1 for inference"
        )
    return batch_norm(op, b)


@lowering("BatchNormalization", 7, 9, 14, 15)
def batch_norm(op, b):
    """Inference with the given statistics; training mode (opset 14's `training_mode`)
    normalizes with the batch's own statistics: refused. Up to opset 7, `spatial` = 0 gives
    per-element statistics (C x D1 x ... x Dn)."""
    x, scale, bias, mean, var = (op.operands[i] for i in range(5))
    if b.attr(op, "training_mode", 0):
        return _batch_norm_training(op, b, x, scale, bias, mean, var)
    epsilon = b.attr(op, "epsilon", 1e-5)
    if b.attr(op, "spatial", 1):
        return [b(nn.BatchNormInferenceOp, x, scale, bias, mean, var, epsilon=epsilon)]
    rstd = b(ew.SqrtOp, b(ew.AddOp, var, b.const(epsilon, b.dtype(var))))
    y = b(ew.MultiplyOp, b(ew.SubtractOp, x, mean), b(ew.DivideOp, scale, rstd))
    return [b(ew.AddOp, y, bias)]


def _batch_norm_training(op, b, x, scale, bias, mean, var):
    """Opset 14's training mode: normalize with the batch's own mean and (population)
    variance over every axis but the channel's; the running statistics come out as
    `mean * momentum + batch mean * (1 - momentum)` (likewise the variance)."""
    rank = b.rank(x)
    if rank is None or rank < 2:
        raise b.fail("training mode needs the rank of its input (at least 2)")
    dtype = b.dtype(x)
    epsilon = b.attr(op, "epsilon", 1e-5)
    momentum = b.attr(op, "momentum", 0.9)
    axes = b.ints([0, *range(2, rank)])
    batch_mean = b(ct.ReduceMeanOp, x, axes, keep_dims=True)
    centered = b(ew.SubtractOp, x, batch_mean)
    batch_var = b(ct.ReduceMeanOp, b(ew.MultiplyOp, centered, centered), axes, keep_dims=True)
    per_channel = b.ints([-1, *[1] * (rank - 2)])
    rstd = b(ew.SqrtOp, b(ew.AddOp, batch_var, b.const(epsilon, dtype)))
    y = b(ew.DivideOp, b(ew.MultiplyOp, centered, b(ct.ReshapeOp, scale, per_channel)), rstd)
    y = b(ew.AddOp, y, b(ct.ReshapeOp, bias, per_channel))
    kept, new = b.const(momentum, dtype), b.const(1 - momentum, dtype)
    statistics = []
    for running, batch in ((mean, batch_mean), (var, batch_var)):
        batch = b(ct.ReshapeOp, batch, b.ints([-1]))
        statistics.append(
            b(ew.AddOp, b(ew.MultiplyOp, running, kept), b(ew.MultiplyOp, batch, new))
        )
    return [y, *statistics] + [None] * (len(op.results) - 3)


@lowering("Gemm", 1, 6, 7, 9, 11, 13)
def gemm(op, b):
    a, bb, c = b.input(op, "A"), b.input(op, "B"), b.input(op, "C")
    y = b(
        nn.MatMulOp,
        a,
        bb,
        transpose_a=bool(b.attr(op, "transA", 0)),
        transpose_b=bool(b.attr(op, "transB", 0)),
    )
    dtype = b.dtype(y)
    alpha, beta = b.attr(op, "alpha", 1.0), b.attr(op, "beta", 1.0)
    if alpha != 1.0:
        y = b(ew.MultiplyOp, y, b.const(alpha, dtype))
    if c is not None and beta != 0.0:
        if beta != 1.0:
            c = b(ew.MultiplyOp, c, b.const(beta, dtype))
        y = b(ew.AddOp, y, c)
    return [y]


@lowering("MatMul", 1, 9, 13)
def matmul(op, b):
    return [b(nn.MatMulOp, *op.operands)]


def _softmax(core_class, coerce_2d: bool):
    """Before opset 13, Softmax flattened the input to 2-D at `axis` (default 1) first."""

    def pattern(op, b):
        x = op.operands[0]
        if not coerce_2d:
            return [b(core_class, x, axis=b.attr(op, "axis", -1))]
        rank = b.rank(x)
        axis = b.attr(op, "axis", 1)
        if rank is None:
            raise b.fail("needs the rank of its input")
        axis %= max(rank, 1)
        if axis == rank - 1:
            return [b(core_class, x, axis=-1)]
        shape = x.type.get_shape()
        if any(d < 0 for d in shape):
            raise b.fail("needs a static input shape before opset 13")
        flat = b(ct.ReshapeOp, x, b.ints([int(np.prod(shape[:axis])), int(np.prod(shape[axis:]))]))
        y = b(core_class, flat, axis=-1)
        return [b(ct.ReshapeOp, y, b.ints(list(shape)))]

    return pattern


lowering("Softmax", 1, 11)(_softmax(nn.SoftmaxOp, True))
lowering("Softmax", 13)(_softmax(nn.SoftmaxOp, False))
lowering("LogSoftmax", 1, 11)(_softmax(nn.LogSoftmaxOp, True))
lowering("LogSoftmax", 13)(_softmax(nn.LogSoftmaxOp, False))


@lowering("Dropout", 1, 6)
def dropout_v1(op, b):
    """Before opset 7, `is_test` = 0 (the default) is training mode, with no seed: refused
    unless the ratio is 0."""
    if not b.attr(op, "is_test", 0) and b.attr(op, "ratio", 0.5) != 0:
        raise b.fail(
            "Dropout with is_test=0 (training mode, the default before opset 7) is not supported"
        )
    return [op.operands[0], _all_true(op, b, op.operands[0])]


@lowering("Dropout", 7, 10, 12, 13, 22)
def dropout(op, b):
    """Inference (no `training_mode`, or a false one; opset 7 and 10 have none): the identity
    and an all-true mask. In training mode, ONNX's mask is `U >= ratio` with U uniform in
    [0, 1) drawn from the `seed`, and kept values are scaled by 1 / (1 - ratio). With a seed,
    U is drawn here at compile time as onnx's reference does (numpy's RandomState(seed)), so
    every call uses the same mask; `ratio` and `training_mode` may be run-time inputs. Without
    a seed, or without a static input shape, training mode is refused."""
    x, flag = op.operands[0], b.input(op, "training_mode")
    training = None if flag is None else b.constant(flag)
    if flag is None or (training is not None and not training.any()):
        return [x, _all_true(op, b, x)]
    ratio = b.input(op, "ratio")
    ratio = b.const(0.5, np.float32) if ratio is None else ratio
    seed = b.attr(op, "seed")
    if seed is None:
        raise b.fail("Dropout in training mode needs a `seed` attribute to draw its mask")
    shape = x.type.get_shape() if hasattr(x.type, "get_shape") else None
    if shape is None or any(d < 0 for d in shape):
        raise b.fail("Dropout in training mode needs a static input shape")
    uniform = np.random.RandomState(seed).uniform(0, 1.0, shape)
    keep = b(ew.GreaterEqualOp, b.const(_rounded_down(uniform, b.dtype(ratio))), ratio)
    one = b.const(1, b.dtype(ratio))
    scale = b(ew.DivideOp, one, b(ew.SubtractOp, one, ratio))
    dtype = element_type(b.dtype(x))
    y = b(ew.MultiplyOp, x, b(ct.ConvertOp, keep, destination_type=dtype))
    if b.dtype(scale) != b.dtype(x):
        scale = b(ct.ConvertOp, scale, destination_type=dtype)
    y = b(ew.MultiplyOp, y, scale)
    if training is None:  # decided at run time
        y = b(ct.SelectOp, flag, y, x)
        keep = b(ct.SelectOp, flag, keep, b.const(True))
    return [y, keep if len(op.results) > 1 and op.results[1].uses else None]


def _rounded_down(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """`values` in `dtype`, each rounded toward -inf, so that `result >= r` equals
    `values >= r` for every `r` of that dtype (the reference compares in float64)."""
    narrow = values.astype(dtype)
    above = narrow.astype(np.float64) > values
    return np.where(above, np.nextafter(narrow, np.asarray(-np.inf, dtype)), narrow).astype(dtype)


def _all_true(op, b, x):
    if len(op.results) > 1 and op.results[1].uses:
        return b(ct.BroadcastOp, b.const(True), b(ct.ShapeOfOp, x))
    return None


def _rank_of(b, x) -> int:
    rank = b.rank(x)
    if rank is None:
        raise b.fail("needs the rank of its input")
    return rank


def _normalized(b, x, axes, epsilon):
    return b(
        nn.MVNOp, x, b.ints(axes), normalize_variance=True, eps=epsilon, eps_mode="inside_sqrt"
    )


STASH_TYPES = {1: np.float32, 10: np.float16, 11: np.float64, 16: ml_dtypes.bfloat16}


def _in_stash_type(op, b, x, default: int | None = 1):
    """`x` converted to the `stash_type` (float32 by default; `default` None: x's own type)
    the normalization is computed in, and a function converting a result back to x's type."""
    dtype, code = b.dtype(x), b.attr(op, "stash_type", default)
    stash = STASH_TYPES.get(code)
    if code is not None and stash is None:
        raise b.fail(f"stash_type {code} is not a floating-point type")
    if stash is None or dtype == stash:
        return x, lambda y: y
    back = element_type(dtype)
    wide = b(ct.ConvertOp, x, destination_type=element_type(stash))
    return wide, lambda y: b(ct.ConvertOp, y, destination_type=back)


@lowering("LayerNormalization", 17)
def layer_normalization(op, b):
    """MVN over the axes from `axis` on, then scale and bias (broadcast from the right)."""
    x, scale, bias = b.input(op, "X"), b.input(op, "Scale"), b.input(op, "B")
    rank = _rank_of(b, x)
    axis = b.attr(op, "axis", -1) % rank
    if any(r.uses for r in list(op.results)[1:]):
        return _layer_normalization_with_statistics(op, b, x, scale, bias, rank, axis)
    wide, narrow = _in_stash_type(op, b, x)
    normalized = _normalized(b, wide, list(range(axis, rank)), b.attr(op, "epsilon", 1e-5))
    y = b(ew.MultiplyOp, narrow(normalized), scale)
    if bias is not None:
        y = b(ew.AddOp, y, bias)
    return [y, None, None]


def _layer_normalization_with_statistics(op, b, x, scale, bias, rank, axis):
    """Mean and 1/sqrt(var + epsilon) over the axes from `axis` on (kept as size-1 dims, in
    the stash type, float32 by default) are outputs too: the normalization is spelled out."""
    stash = STASH_TYPES.get(b.attr(op, "stash_type", 1), np.float32)
    dtype = b.dtype(x)
    wide = x if dtype == stash else b(ct.ConvertOp, x, destination_type=element_type(stash))
    axes = b.ints(list(range(axis, rank)))
    mean = b(ct.ReduceMeanOp, wide, axes, keep_dims=True)
    centred = b(ew.SubtractOp, wide, mean)
    variance = b(ct.ReduceMeanOp, b(ew.MultiplyOp, centred, centred), axes, keep_dims=True)
    epsilon = b.const(b.attr(op, "epsilon", 1e-5), stash)
    inv_std = b(ew.DivideOp, b.const(1.0, stash), b(ew.SqrtOp, b(ew.AddOp, variance, epsilon)))
    y = b(ew.MultiplyOp, centred, inv_std)
    if dtype != stash:
        y = b(ct.ConvertOp, y, destination_type=element_type(dtype))
    y = b(ew.MultiplyOp, y, scale)
    if bias is not None:
        y = b(ew.AddOp, y, bias)
    return [y, mean, inv_std]


@lowering("RMSNormalization", 23)
def rms_normalization(op, b):
    """x / sqrt(mean(x^2 over the axes from `axis` on) + epsilon) * scale, the normalization
    in the `stash_type`."""
    x, scale = b.input(op, "X"), b.input(op, "scale")
    rank = _rank_of(b, x)
    axis = b.attr(op, "axis", -1) % rank
    wide, narrow = _in_stash_type(op, b, x)
    mean_square = b(
        ct.ReduceMeanOp,
        b(ew.MultiplyOp, wide, wide),
        b.ints(list(range(axis, rank))),
        keep_dims=True,
    )
    epsilon = b.const(b.attr(op, "epsilon", 1e-5), b.dtype(wide))
    rms = b(ew.SqrtOp, b(ew.AddOp, mean_square, epsilon))
    return [b(ew.MultiplyOp, narrow(b(ew.DivideOp, wide, rms)), scale)]


@lowering("InstanceNormalization", 1, 6, 22)
def instance_normalization(op, b):
    """MVN over the spatial axes of each (n, c), then per-channel scale and bias."""
    x, scale, bias = op.operands
    rank = _rank_of(b, x)
    y = _normalized(b, x, list(range(2, rank)), b.attr(op, "epsilon", 1e-5))
    y = b(ew.MultiplyOp, y, b(ct.UnsqueezeOp, scale, b.ints(list(range(1, rank - 1)))))
    return [add_channel_bias(b, y, bias, rank - 2)]


def _group_normalization(per_group_affine: bool):
    """Channels reshaped to (groups, C/groups * spatial), MVN per group, then per-channel scale
    and bias. Version 18 had one scale and bias per group: they are repeated per channel."""

    def pattern(op, b):
        x, scale, bias = op.operands
        rank = _rank_of(b, x)
        groups = op.onnx_attr("num_groups")
        wide, narrow = _in_stash_type(op, b, x, None if per_group_affine else 1)
        grouped = b(ct.ReshapeOp, wide, b.ints([0, groups, -1]), special_zero=True)
        y = narrow(_normalized(b, grouped, [2], b.attr(op, "epsilon", 1e-5)))
        y = b(ct.ReshapeOp, y, b(ct.ShapeOfOp, x))
        if per_group_affine:
            channels = x.type.get_shape()[1]
            if channels < 0:
                raise b.fail("needs the static channel count")
            repeat = b.ints([groups, channels // groups])
            scale, bias = (
                b(
                    ct.ReshapeOp,
                    b(ct.BroadcastOp, b(ct.UnsqueezeOp, v, b.ints([1])), repeat),
                    b.ints([-1]),
                )
                for v in (scale, bias)
            )
        y = b(ew.MultiplyOp, y, b(ct.UnsqueezeOp, scale, b.ints(list(range(1, rank - 1)))))
        return [add_channel_bias(b, y, bias, rank - 2)]

    return pattern


lowering("GroupNormalization", 18)(_group_normalization(True))
lowering("GroupNormalization", 21)(_group_normalization(False))


@lowering("Col2Im", 18)
def col2im(op, b):
    data, image, block = (b.input(op, n) for n in ("input", "image_shape", "block_shape"))
    pads = list(b.attr(op, "pads", []))
    return [
        b(
            conv_ops.Col2ImOp,
            data,
            image,
            block,
            strides=b.attr(op, "strides", []),
            pads_begin=pads[: len(pads) // 2],
            pads_end=pads[len(pads) // 2 :],
            dilations=b.attr(op, "dilations", []),
        )
    ]

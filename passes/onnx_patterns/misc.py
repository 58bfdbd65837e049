"""ONNX ops without a family of their own: GridSample, NonMaxSuppression, DFT, STFT, LpPool and
GlobalLpPool, Hardmax, LpNormalization, TfIdfVectorizer."""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects.builtin import Float32Type, i64

from mlconv.dense import element_type
from mlconv.dialects import core_elementwise as ew
from mlconv.dialects import core_indexing as ci
from mlconv.dialects import core_nn as nn
from mlconv.dialects import core_signal as signal
from mlconv.dialects import core_tensor as ct
from mlconv.dialects import core_vision as vision
from mlconv.passes.onnx_patterns import lowering
from mlconv.passes.onnx_patterns.indexing import with_element_type
from mlconv.passes.onnx_patterns.nn import spatial_rank, window_attributes

F32 = Float32Type()

_GRID_MODES = {
    "linear": "bilinear",
    "bilinear": "bilinear",
    "nearest": "nearest",
    "cubic": "bicubic",
    "bicubic": "bicubic",
}


@lowering("GridSample", 16, 20, 22)
def grid_sample(op, b):
    mode = b.attr(op, "mode", "linear")
    if mode not in _GRID_MODES:
        raise b.fail(f"unknown mode '{mode}'")
    return [
        b(
            vision.GridSampleOp,
            b.input(op, "X"),
            b.input(op, "grid"),
            align_corners=bool(b.attr(op, "align_corners", 0)),
            mode=_GRID_MODES[mode],
            padding_mode=b.attr(op, "padding_mode", "zeros"),
        )
    ]


@lowering("NonMaxSuppression", 10, 11)
def non_max_suppression(op, b):
    """The thresholds and the per-class maximum become static operands: a model that feeds
    them (or the boxes) as inputs is specialized on their values."""
    return [
        with_element_type(
            b(
                vision.NonMaxSuppressionOp,
                b.input(op, "boxes"),
                b.input(op, "scores"),
                b.input(op, "max_output_boxes_per_class"),
                b.input(op, "iou_threshold"),
                b.input(op, "score_threshold"),
                center_point_box=bool(b.attr(op, "center_point_box", 0)),
            ),
            i64,
        )
    ]


def _lp_sum_root(b, x, p, reduce):
    """(reduce(|x|^p))^(1/p), with `reduce` summing windows or axes."""
    dtype = b.dtype(x)
    powered = b(ew.PowerOp, b(ew.AbsOp, x), b.const(p, dtype))
    return b(ew.PowerOp, reduce(powered), b.const(1.0 / p, dtype))


@lowering("LpPool", 1, 2, 11, 18, 22)
def lp_pool(op, b):
    x = b.input(op, "X")
    spatial = spatial_rank(b, x, op)
    if b.attr(op, "ceil_mode", 0):
        raise b.fail("LpPool with ceil_mode is not supported")
    kernel = op.onnx_attr("kernel_shape")

    def window_sum(v):
        mean = b(
            nn.AvgPoolOp,
            v,
            kernel=kernel,
            exclude_pad=False,
            dilations=b.attr(op, "dilations", [1] * spatial),
            **window_attributes(op, b, spatial),
        )
        return b(ew.MultiplyOp, mean, b.const(math.prod(kernel), b.dtype(v)))

    return [_lp_sum_root(b, x, b.attr(op, "p", 2), window_sum)]


@lowering("GlobalLpPool", 1, 2, 22)
def global_lp_pool(op, b):
    x = op.operands[0]
    rank = b.rank(x)
    if rank is None:
        raise b.fail("needs the rank of its input")
    axes = b.ints(list(range(2, rank)))
    return [
        _lp_sum_root(b, x, b.attr(op, "p", 2), lambda v: b(ct.ReduceSumOp, v, axes, keep_dims=True))
    ]


@lowering("Hardmax", 13)
def hardmax(op, b):
    """1 at the first maximum along `axis`, 0 elsewhere."""
    x = op.operands[0]
    axis = b.ints(b.attr(op, "axis", -1))
    top = b(ct.ReduceMaxOp, x, axis, keep_dims=True)
    is_max = b(ew.EqualOp, x, top)
    count = b(ci.CumSumOp, b(ct.ConvertOp, is_max, destination_type=element_type(np.int64)), axis)
    first = b(ew.LogicalAndOp, is_max, b(ew.EqualOp, count, b.ints(1)))
    return [b(ct.ConvertOp, first, destination_type=x.type.get_element_type())]


@lowering("LpNormalization", 1, 22)
def lp_normalization(op, b):
    x = op.operands[0]
    p = b.attr(op, "p", 2)
    reduce = {1: ct.ReduceL1Op, 2: ct.ReduceL2Op}.get(p)
    if reduce is None:
        raise b.fail(f"p must be 1 or 2, not {p}")
    norm = b(reduce, x, b.ints([b.attr(op, "axis", -1)]), keep_dims=True)
    zero = b.const(0, b.dtype(x))
    # A zero norm gives 0, not 0/0 (onnx's reference).
    return [b(ct.SelectOp, b(ew.EqualOp, norm, zero), zero, b(ew.DivideOp, x, norm))]


def _dft(op, b, axis):
    return [
        b(
            signal.DFTOp,
            b.input(op, "input"),
            axis,
            b.input(op, "dft_length"),
            inverse=bool(b.attr(op, "inverse", 0)),
            onesided=bool(b.attr(op, "onesided", 0)),
        )
    ]


@lowering("DFT", 17)
def dft_17(op, b):
    """`axis` is an attribute (default 1)."""
    return _dft(op, b, b.ints(b.attr(op, "axis", 1)))


@lowering("DFT", 20)
def dft_20(op, b):
    """`axis` is an input (default -2)."""
    axis = b.input(op, "axis")
    return _dft(op, b, b.ints(-2) if axis is None else axis)


@lowering("STFT", 17)
def stft(op, b):
    return [
        b(
            signal.STFTOp,
            b.input(op, "signal"),
            b.input(op, "frame_step"),
            b.input(op, "window"),
            b.input(op, "frame_length"),
            onesided=bool(b.attr(op, "onesided", 1)),
        )
    ]


def _pool_grams(op, b, pool):
    """(size, output index, items) of the pool's n-grams with min <= size <= max, in pool
    order: `ngram_counts` gives where each size's grams start; a gram's id (its place among
    all the pool's grams) picks its output index from `ngram_indexes`."""
    counts = list(b.attr(op, "ngram_counts"))
    indexes = list(b.attr(op, "ngram_indexes"))
    low, high = b.attr(op, "min_gram_length"), b.attr(op, "max_gram_length")
    grams, gram_id = [], 0
    for size, start in enumerate(counts, start=1):
        end = counts[size] if size < len(counts) else len(pool)
        for first in range(start, end - size + 1, size):
            if low <= size <= high:
                grams.append((size, indexes[gram_id], tuple(pool[first : first + size])))
            gram_id += 1
    return grams


@lowering("TfIdfVectorizer", 9)
def tfidf_vectorizer(op, b):
    """Counts of the pool's n-grams in each row of integer tokens, weighted by `mode`. An
    n-gram of size n >= 2 is counted at every skip distance d = 1 .. max_skip_count + 1 (its
    items d apart), a unigram once. Per (size, distance): the n shifted slices of the row are
    compared with the pool's grams of that size (rows x positions x grams), and-ed, and summed
    over positions; a one-hot MatMul adds each gram's count to its output index."""
    x = op.operands[0]
    pool = b.attr(op, "pool_int64s")
    if b.attr(op, "pool_strings") or not pool:
        raise b.fail("string pools are not supported (string tensors)")
    shape = x.type.get_shape() if b.rank(x) else None
    if shape is None or len(shape) not in (1, 2) or shape[-1] < 0:
        raise b.fail("needs a [C] or [N, C] input with a static C")
    mode = b.attr(op, "mode")
    if mode not in ("TF", "IDF", "TFIDF"):
        raise b.fail(f"unknown mode '{mode}' (TF, IDF or TFIDF)")
    grams = _pool_grams(op, b, list(pool))
    size_out = max(b.attr(op, "ngram_indexes")) + 1
    rows = x if len(shape) == 2 else b(ct.UnsqueezeOp, x, b.ints([0]))
    if b.dtype(rows) != np.int64:
        rows = b(ct.ConvertOp, rows, destination_type=i64)
    length = shape[-1]
    max_skip = b.attr(op, "max_skip_count", 0)
    total = None
    for size in sorted({g[0] for g in grams}):
        chosen = [g for g in grams if g[0] == size]
        items = np.asarray([g[2] for g in chosen], np.int64)  # (grams, size)
        onehot = np.zeros((len(chosen), size_out), np.float32)
        onehot[np.arange(len(chosen)), [g[1] for g in chosen]] = 1
        for distance in range(1, (max_skip + 1 if size > 1 else 1) + 1):
            span = length - (size - 1) * distance
            if span <= 0:
                continue
            hit = None
            for j in range(size):
                part = b(
                    ci.SliceOp,
                    rows,
                    b.ints([j * distance]),
                    b.ints([j * distance + span]),
                    b.ints([1]),
                    b.ints([1]),
                )
                part = b(ct.UnsqueezeOp, part, b.ints([2]))  # (N, span, 1)
                equal = b(ew.EqualOp, part, b.const(items[:, j]))
                hit = equal if hit is None else b(ew.LogicalAndOp, hit, equal)
            found = b(ct.ConvertOp, hit, destination_type=F32)
            count = b(ct.ReduceSumOp, found, b.ints([1]), keep_dims=False)  # (N, grams)
            count = b(nn.MatMulOp, count, b.const(onehot), transpose_a=False, transpose_b=False)
            total = count if total is None else b(ew.AddOp, total, count)
    if total is None:
        total = b(
            ct.BroadcastOp,
            b.const(np.float32(0)),
            b.ints([shape[0] if len(shape) == 2 else 1, size_out]),
            None,
            mode="numpy",
        )
    weights = b.attr(op, "weights")
    if mode == "IDF":
        zero = b.const(np.float32(0))
        present = b(ew.GreaterOp, total, zero)
        value = b.const(np.asarray(weights, np.float32)) if weights else b.const(np.float32(1))
        total = b(
            ct.SelectOp,
            present,
            b(ct.BroadcastOp, value, b.ints([size_out]), None, mode="numpy"),
            zero,
        )
    elif mode == "TFIDF" and weights:
        total = b(ew.MultiplyOp, total, b.const(np.asarray(weights, np.float32)))
    if len(shape) == 1:
        total = b(ct.SqueezeOp, total, b.ints([0]))
    return [total]


@lowering("MelWeightMatrix", 17)
def mel_weight_matrix(op, b):
    names = ("num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz", "upper_edge_hertz")
    element = op.results[0].type.get_element_type()
    matrix = b(signal.MelWeightMatrixOp, *(b.input(op, n) for n in names), output_type=element)
    return [with_element_type(matrix, element)]


@lowering("DeformConv", 19, 22)
def deform_conv(op, b):
    """2-D deformable convolution as the ONNX reference computes it: each kernel tap of each
    output position samples X at its regular place plus its learned offset, bilinearly with
    zeros outside (one core.GridSample with align_corners per offset group, at all taps and
    positions at once), times the optional mask; the samples then contract with W per group
    (one Einsum), plus the bias."""
    x, w, offset = (b.input(op, n) for n in ("X", "W", "offset"))
    bias, mask = b.input(op, "B"), b.input(op, "mask")
    shapes = [v.type.get_shape() if b.rank(v) else None for v in (x, w, offset)]
    if any(s is None or any(d < 0 for d in s) for s in shapes) or len(shapes[0]) != 4:
        raise b.fail("needs the static shapes of a 2-D X, W and offset")
    (n, c, ih, iw), (oc, cg, kh, kw), (_, _, oh, ow) = shapes
    if list(b.attr(op, "kernel_shape", [kh, kw])) != [kh, kw]:
        raise b.fail(f"kernel_shape differs from W's spatial dims {kh}x{kw}")
    group = b.attr(op, "group", 1)
    og = b.attr(op, "offset_group", 1)
    sh, sw = b.attr(op, "strides", [1, 1])
    dh, dw = b.attr(op, "dilations", [1, 1])
    top, left = b.attr(op, "pads", [0, 0, 0, 0])[:2]
    if c != cg * group or oc % group or c % og or ih < 2 or iw < 2:
        raise b.fail("X, W, group and offset_group do not fit (or X is under 2x2)")
    dtype = b.dtype(x)
    taps = kh * kw
    # Regular sampling places (kh, kw, oh, ow), then the offsets (n, og, kh, kw, oh, ow).
    ky, kx, py, px = np.meshgrid(
        np.arange(kh), np.arange(kw), np.arange(oh), np.arange(ow), indexing="ij"
    )
    places = {"y": (py * sh - top + ky * dh), "x": (px * sw - left + kx * dw)}
    offsets = b(ct.ReshapeOp, offset, b.ints([n, og, kh, kw, 2, oh, ow]))
    normalized = []
    for axis, (name, size) in enumerate((("y", ih), ("x", iw))):
        moved = b(ct.GatherOp, offsets, b.ints(axis), b.ints(4))
        where = b(ew.AddOp, moved, b.const(places[name].astype(dtype)))
        scaled = b(ew.MultiplyOp, where, b.const(np.asarray(2 / (size - 1), dtype)))
        normalized.append(b(ew.SubtractOp, scaled, b.const(np.asarray(1, dtype))))
    grid = b(
        ct.ConcatOp,
        [b(ct.UnsqueezeOp, v, b.ints([-1])) for v in reversed(normalized)],  # (x, y)
        axis=-1,
    )
    grid = b(ct.ReshapeOp, grid, b.ints([n * og, taps * oh, ow, 2]))
    data = b(ct.ReshapeOp, x, b.ints([n * og, c // og, ih, iw]))
    sampled = b(
        vision.GridSampleOp, data, grid, align_corners=True, mode="bilinear", padding_mode="zeros"
    )
    sampled = b(ct.ReshapeOp, sampled, b.ints([n, og, c // og, taps, oh, ow]))
    if mask is not None:
        mask = b(ct.ReshapeOp, mask, b.ints([n, og, 1, taps, oh, ow]))
        sampled = b(ew.MultiplyOp, sampled, mask)
    sampled = b(ct.ReshapeOp, sampled, b.ints([n, group, cg, taps, oh, ow]))
    filters = b(ct.ReshapeOp, w, b.ints([group, oc // group, cg, taps]))
    y = b(ci.EinsumOp, [sampled, filters], equation="ngcshw,gocs->ngohw")
    y = b(ct.ReshapeOp, y, b.ints([n, oc, oh, ow]))
    if bias is not None:
        y = b(ew.AddOp, y, b(ct.ReshapeOp, bias, b.ints([1, oc, 1, 1])))
    return [y]

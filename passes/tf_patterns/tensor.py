"""Data-movement and shape TF ops: Const, Reshape, Squeeze, ExpandDims, Pad, ConcatV2, Pack,
Transpose, reductions, ArgMax/ArgMin, Shape, Fill, Tile, GatherV2, StridedSlice, Slice,
BroadcastTo, Range, Split, SplitV, ZerosLike, OnesLike, Size.

TF passes axes, shapes and pads as int32 or int64 tensors; core's static operands accept
either, so they are passed through and only rewritten where their meaning differs.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import TensorType

from mlconv.dense import to_numpy
from mlconv.dialects import core_elementwise as ew
from mlconv.dialects import core_indexing as ci
from mlconv.dialects import core_tensor as ct
from mlconv.dialects import core_tf as ctf
from mlconv.passes.lowering.tensor import slice_by_size
from mlconv.passes.tf_patterns import lowering
from mlconv.semantics.shapes import partial_value


@lowering("Const")
def const(op, b):
    return [b.const(to_numpy(op.attributes["value"]))]


@lowering("Reshape")
def reshape(op, b):
    return [b(ct.ReshapeOp, b.input(op, 0), b.input(op, 1), special_zero=False)]


@lowering("Squeeze")
def squeeze(op, b):
    axes = b.attr(op, "squeeze_dims", [])
    return [b(ct.SqueezeOp, b.input(op, 0), b.ints(axes) if axes else None)]


@lowering("ExpandDims")
def expand_dims(op, b):
    return [b(ct.UnsqueezeOp, b.input(op, 0), b.input(op, 1))]


@lowering("Pad", "PadV2", "MirrorPad")
def pad(op, b):
    pairs = b.static(b.input(op, 1), "paddings").astype(np.int64).reshape(-1, 2)
    value = b.input(op, 2) if op.name == "tf.PadV2" else None
    mode = b.attr(op, "mode", "CONSTANT").lower() if op.name == "tf.MirrorPad" else "constant"
    return [
        b(ctf.PadOp, b.input(op, 0), b.ints(pairs[:, 0]), b.ints(pairs[:, 1]), value, pad_mode=mode)
    ]


@lowering("ConcatV2")
def concat(op, b):
    axis = int(_shape_constant(b, b.input(op, 1), "the concat axis"))
    return [b(ct.ConcatOp, b.inputs(op, 0), axis=axis)]


def _shape_constant(b, value, what: str):
    """A constant, or a value computed from static dims only (tf.linspace's axis from a rank):
    the same under two shape probes."""
    array = b.constant(value)
    if array is not None:
        return array
    first, second = partial_value(value, 23), partial_value(value, 29)
    if first is None or second is None or not np.array_equal(first, second):
        raise b.fail(f"{what} must be a constant")
    return first


@lowering("Pack")
def pack(op, b):
    values = b.inputs(op, 0)
    rank = b.rank(values[0])
    axis = b.attr(op, "axis", 0)
    if axis < 0:
        if rank is None:
            raise b.fail("a negative axis needs the rank of the inputs")
        axis += rank + 1
    expanded = [b(ct.UnsqueezeOp, v, b.ints([axis])) for v in values]
    return [b(ct.ConcatOp, expanded, axis=axis)]


@lowering("Transpose")
def transpose(op, b):
    return [b(ct.TransposeOp, b.input(op, 0), b.input(op, 1))]


REDUCTIONS = {
    "Mean": ct.ReduceMeanOp,
    "Sum": ct.ReduceSumOp,
    "Max": ct.ReduceMaxOp,
    "Min": ct.ReduceMinOp,
    "Prod": ct.ReduceProdOp,
    "All": ct.ReduceLogicalAndOp,
    "Any": ct.ReduceLogicalOrOp,
}


@lowering(*REDUCTIONS)
def reduction(op, b):
    return [
        b(
            REDUCTIONS[op.name[3:]],
            b.input(op, 0),
            b.input(op, 1),
            keep_dims=b.attr(op, "keep_dims", False),
        )
    ]


@lowering("ArgMax", "ArgMin")
def arg_max(op, b):
    # OpenVINO has no ArgMax: TopK with k = 1, then drop the reduced axis.
    axis = int(b.static(b.input(op, 1), "the reduction axis"))
    _, indices = b(
        ctf.TopKOp,
        b.input(op, 0),
        b.ints(1),
        axis=axis,
        mode="max" if op.name == "tf.ArgMax" else "min",
        index_element_type=op.attr_or_default("output_type"),
    )
    return [b(ct.SqueezeOp, indices, b.ints([axis]))]


@lowering("Shape")
def shape(op, b):
    return [b(ct.ShapeOfOp, b.input(op, 0), output_type=op.attr_or_default("out_type"))]


@lowering("Fill")
def fill(op, b):
    return [b(ct.BroadcastOp, b.input(op, 1), b.input(op, 0))]


@lowering("Tile")
def tile(op, b):
    return [b(ctf.TileOp, b.input(op, 0), b.input(op, 1))]


@lowering("GatherV2")
def gather(op, b):
    return [
        b(
            ct.GatherOp,
            b.input(op, 0),
            b.input(op, 1),
            b.input(op, 2),
            batch_dims=b.attr(op, "batch_dims", 0),
        )
    ]


def _bits(mask: int, count: int) -> list[int]:
    return [(mask >> i) & 1 for i in range(count)]


@lowering("StridedSlice")
def strided_slice(op, b):
    begin = b.input(op, 1)
    count = begin.type.get_shape()[0] if b.rank(begin) == 1 else -1
    if count < 0:
        count = b.static(begin, "begin").size
    masks = {
        name: _bits(b.attr(op, name, 0), count)
        for name in ("begin_mask", "end_mask", "new_axis_mask", "shrink_axis_mask", "ellipsis_mask")
    }
    return [b(ctf.StridedSliceOp, b.input(op, 0), begin, b.input(op, 2), b.input(op, 3), **masks)]


@lowering("Slice")
def slice_(op, b):
    begin_value, size_value = b.input(op, 1), b.input(op, 2)
    begin, size = b.constant(begin_value), b.constant(size_value)
    if begin is None or size is None:
        return [_computed_slice(b, b.input(op, 0), begin_value, size_value)]
    return [slice_by_size(b, b.input(op, 0), begin, size)]


def _computed_slice(b, x, begin, size):
    """A Slice whose begin or size is computed (from a `None` dim's Shape): per axis, a gather
    of range(begin, stop), stop = begin + size (the end of the dim where size is -1). A gather
    of a range rather than core.Slice: shape probes larger than the dim would clamp the
    slice to it and make a dynamic dim look static."""
    count = b.rank(x)
    if count is None:
        raise b.fail("a computed Slice needs the rank of its input")
    dtype = b.dtype(size)
    shape = b(ct.ShapeOfOp, x, output_type=_element(size))
    stop = b(ew.AddOp, begin, size)
    stop = b(ct.SelectOp, b(ew.LessOp, size, b.const(np.zeros((), dtype))), shape, stop)
    one = b.const(np.ones((), dtype))
    for axis in range(count):
        first = b(ct.GatherOp, begin, b.ints(axis), b.ints(0))
        last = b(ct.GatherOp, stop, b.ints(axis), b.ints(0))
        indices = b(ci.RangeOp, first, last, one, output_type=_element(size))
        x = b(ct.GatherOp, x, indices, b.ints(axis))
    return x


def _element(value):
    return value.type.get_element_type()


@lowering("ZerosLike", "OnesLike")
def zeros_like(op, b):
    x = b.input(op, 0)
    value = b.const(np.asarray(0 if op.name == "tf.ZerosLike" else 1, b.dtype(x)))
    return [b(ct.BroadcastOp, value, b(ct.ShapeOfOp, x), mode="numpy")]


@lowering("Size")
def size(op, b):
    out_type = op.attr_or_default("out_type")
    shape = b(ct.ShapeOfOp, b.input(op, 0), output_type=out_type)
    return [b(ct.ReduceProdOp, shape, b.ints([0]), keep_dims=False)]


@lowering("BroadcastTo")
def broadcast_to(op, b):
    return [b(ct.BroadcastOp, b.input(op, 0), b.input(op, 1), mode="numpy")]


@lowering("Range")
def range_(op, b):
    start, limit, delta = (b.input(op, i) for i in range(3))
    return [b(ci.RangeOp, start, limit, delta, output_type=op.attr_or_default("Tidx"))]


@lowering("Split")
def split(op, b):
    # Split's operands are (split_dim, value), in that order.
    count = b.attr(op, "num_split")
    return b(ci.SplitOp, b.input(op, 1), b.input(op, 0), num_splits=count, results=count)


@lowering("SplitV")
def split_v(op, b):
    lengths = b.input(op, 1)
    if b.constant(lengths) is None:
        return _computed_split(op, b, b.input(op, 0), lengths, b.input(op, 2))
    count = b.static(lengths, "size_splits").size
    return b(ci.VariadicSplitOp, b.input(op, 0), b.input(op, 2), lengths, results=count)


def _computed_split(op, b, x, lengths, axis):
    """SplitV with computed sizes (tf.signal.frame under a `None` length): each part a gather
    of range(start, start + size) along the axis, as `_computed_slice` does for Slice."""
    axis = int(b.static(axis, "the split axis").reshape(()))
    dtype = _element(lengths)
    start = b.const(np.zeros((), b.dtype(lengths)))
    one = b.const(np.ones((), b.dtype(lengths)))
    parts = []
    for k in range(len(op.results)):
        size = b(ct.GatherOp, lengths, b.ints(k), b.ints(0))
        stop = b(ew.AddOp, start, size)
        parts.append(
            b(ct.GatherOp, x, b(ci.RangeOp, start, stop, one, output_type=dtype), b.ints(axis))
        )
        start = stop
    return parts


@lowering("ReverseV2")
def reverse(op, b):
    """A strided slice of stride -1 along the reversed axes (Keras's backward RNNs)."""
    x = b.input(op, 0)
    rank = b.rank(x)
    if rank is None:
        raise b.fail("needs the rank of its input")
    axes = {int(a) % rank for a in b.static(b.input(op, 1), "the axes").reshape(-1)}
    strides = [-1 if axis in axes else 1 for axis in range(rank)]
    every = [1] * rank
    zeros = b.ints([0] * rank)
    return [
        b(ctf.StridedSliceOp, x, zeros, zeros, b.ints(strides), begin_mask=every, end_mask=every)
    ]


@lowering("Bucketize")
def bucketize(op, b):
    """The number of boundaries <= x (Keras Discretization), as int32."""
    x = b.input(op, 0)
    boundaries = np.asarray(b.attr(op, "boundaries", []), b.dtype(x))
    above = b(ew.GreaterEqualOp, b(ct.UnsqueezeOp, x, b.ints([-1])), b.const(boundaries))
    counts = b(ct.ConvertOp, above, destination_type=op.results[0].type.get_element_type())
    return [b(ct.ReduceSumOp, counts, b.ints([-1]), keep_dims=False)]


@lowering("BroadcastArgs")
def broadcast_args(op, b):
    """The broadcast of two shapes: the shorter padded with leading ones, then per dim the
    other's size where one is 1."""
    shapes = [b.input(op, 0), b.input(op, 1)]
    lengths = [v.type.get_shape()[0] if b.rank(v) == 1 else -1 for v in shapes]
    if min(lengths) < 0:
        raise b.fail("needs shapes of static lengths")
    dtype = b.dtype(shapes[0])
    longest = max(lengths)
    padded = [
        v if n == longest else b(ct.ConcatOp, [b.const(np.ones(longest - n, dtype)), v], axis=0)
        for v, n in zip(shapes, lengths, strict=True)
    ]
    one = b(ew.EqualOp, padded[0], b.const(np.ones((), dtype)))
    return [b(ct.SelectOp, one, padded[1], padded[0])]


@lowering("DenseBincount")
def dense_bincount(op, b):
    """Counts (or, binary_output, presence) of each value in [0, size) per row of a 1-D or
    2-D input (Keras CategoryEncoding), without weights."""
    x, size, weights = b.input(op, 0), b.input(op, 1), b.input(op, 2)
    known = b.constant(size)
    last = op.results[0].type.get_shape()[-1] if isinstance(op.results[0].type, TensorType) else -1
    if known is None and last < 0:
        raise b.fail("needs a constant size (or a result of static width)")
    # Keras computes the size from the data (max(x) + 1 at least num_tokens); its result
    # type gives the width the model promises.
    count = int(known.reshape(())) if known is not None else last
    given = b.constant(weights)
    if given is None or given.size:
        raise b.fail("DenseBincount with weights is not supported")
    rank = b.rank(x)
    if rank not in (1, 2):
        raise b.fail("counts 1-D or 2-D inputs only")
    hits = b(
        ew.EqualOp, b(ct.UnsqueezeOp, x, b.ints([-1])), b.const(np.arange(count, dtype=b.dtype(x)))
    )
    result = op.results[0].type.get_element_type()
    if b.attr(op, "binary_output", False):
        present = b(ct.ReduceLogicalOrOp, hits, b.ints([rank - 1]), keep_dims=False)
        return [b(ct.ConvertOp, present, destination_type=result)]
    counts = b(ct.ConvertOp, hits, destination_type=result)
    return [b(ct.ReduceSumOp, counts, b.ints([rank - 1]), keep_dims=False)]

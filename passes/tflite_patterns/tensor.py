"""Shape, slicing, concatenation, padding, gathering and reductions."""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import TensorType

from mlconv.dense import element_type, numpy_dtype
from mlconv.dialects import core
from mlconv.dialects import core_tf as ctf
from mlconv.passes.lowering.tensor import slice_by_size
from mlconv.passes.tflite_patterns import lower_each, lowering


def _reduction(op_class):
    def pattern(op, b):
        axes = b.static(op, 1).reshape(-1).astype(np.int64)
        keep = bool(op.options()["keep_dims"])
        return [b(op_class, b.x(op, 0), b.ints(list(axes)), keep_dims=keep)]

    return pattern


lower_each(
    _reduction,
    {
        "REDUCE_ANY": core.ReduceLogicalOrOp,
        "REDUCE_ALL": core.ReduceLogicalAndOp,
        "MEAN": core.ReduceMeanOp,
        "SUM": core.ReduceSumOp,
        "REDUCE_MAX": core.ReduceMaxOp,
        "REDUCE_MIN": core.ReduceMinOp,
        "REDUCE_PROD": core.ReduceProdOp,
    },
)


@lowering("RESHAPE")
def reshape(op, b):
    if not b.absent(op, 1) and b.constant(b.raw(op, 1)) is None:
        # A shape computed from SHAPE (a dynamic batch's Flatten): core.Reshape reads it as a
        # static operand, evaluated with the known dims when the batch is bound.
        shape = b(core.ConvertOp, b.raw(op, 1), destination_type=element_type(np.int64))
        return [b(core.ReshapeOp, b.x(op, 0), shape)]
    if not b.absent(op, 1):
        shape = b.static(op, 1).reshape(-1)
    else:
        shape = np.asarray(op.options()["new_shape"])
    return [b.reshape(b.x(op, 0), [int(d) for d in shape])]


@lowering("TRANSPOSE")
def transpose(op, b):
    return [b.transpose(b.x(op, 0), [int(p) for p in b.static(op, 1).reshape(-1)])]


@lowering("SQUEEZE")
def squeeze(op, b):
    dims = list(op.options()["squeeze_dims"] or [])
    if not dims:
        return [b(core.SqueezeOp, b.x(op, 0))]
    return [b(core.SqueezeOp, b.x(op, 0), b.ints(dims))]


@lowering("EXPAND_DIMS")
def expand_dims(op, b):
    x = b.x(op, 0)
    axis = int(b.static(op, 1).reshape(-1)[0])
    if axis < 0:
        axis += b.ranked(x) + 1
    return [b(core.UnsqueezeOp, x, b.ints([axis]))]


@lowering("CONCATENATION")
def concatenation(op, b):
    values = [b.x(op, i) for i in range(len(op.operands))]
    return [b.fused(op, b(core.ConcatOp, values, axis=int(op.options()["axis"])))]


@lowering("PACK")
def pack(op, b):
    axis = int(op.options()["axis"])
    values = [b.x(op, i) for i in range(len(op.operands))]
    if axis < 0:
        axis += b.ranked(values[0]) + 1
    expanded = [b(core.UnsqueezeOp, v, b.ints([axis])) for v in values]
    return [b(core.ConcatOp, expanded, axis=axis)]


@lowering("GATHER")
def gather(op, b):
    o = op.options()
    return [
        b(
            core.GatherOp,
            b.x(op, 0),
            b.x(op, 1),
            b.ints(int(o["axis"])),
            batch_dims=int(o["batch_dims"]),
        )
    ]


def _take(b, x, axis: int, indices: np.ndarray):
    return b(core.GatherOp, x, b.const(indices.astype(np.int64)), b.ints(axis))


@lowering("SPLIT")
def split(op, b):
    x = b.x(op, 1)
    shape = b.shape(x)
    axis = int(b.static(op, 0).reshape(-1)[0]) % len(shape)
    count = int(op.options()["num_splits"])
    size = shape[axis] // count
    return [_take(b, x, axis, np.arange(i * size, (i + 1) * size)) for i in range(count)]


def _bits(mask: int, i: int) -> bool:
    return bool((mask >> i) & 1)


@lowering("STRIDED_SLICE")
def strided_slice(op, b):
    """A slice as one gather of the selected elements of the flattened input (static shapes):
    numpy's indexing resolves begin/end/stride, the masks and the new/shrunk axes."""
    o = op.options()
    x = b.x(op, 0)
    begin, end, strides = (b.static(op, i).reshape(-1).astype(np.int64) for i in (1, 2, 3))
    if isinstance(x.type, TensorType) and any(d < 0 for d in x.type.get_shape()):
        return [_dynamic_strided_slice(op, b, x, begin, end, strides)]
    shape = b.shape(x)
    if o["ellipsis_mask"]:
        raise b.fail("ellipsis_mask is not supported")
    index = []
    for i in range(len(begin)):
        if _bits(o["new_axis_mask"], i):
            index.append(np.newaxis)
        elif _bits(o["shrink_axis_mask"], i):
            index.append(int(begin[i]))
        else:
            start = None if _bits(o["begin_mask"], i) else int(begin[i])
            stop = None if _bits(o["end_mask"], i) else int(end[i])
            if o.get("offset") and stop is not None and start is not None:
                stop = start + stop
            index.append(slice(start, stop, int(strides[i])))
    positions = np.arange(int(np.prod(shape))).reshape(shape)[tuple(index)]
    out_shape = list(positions.shape)
    flat = b.reshape(x, [-1])
    picked = _take(b, flat, 0, positions.reshape(-1))
    return [b.reshape(picked, out_shape)]


def _dynamic_strided_slice(op, b, x, begin, end, strides):
    """A dynamic dim (the batch): one core.StridedSlice, whose type keeps the dim `?`."""
    o = op.options()
    if o.get("offset"):
        end = np.where(
            np.asarray([_bits(o["end_mask"], i) for i in range(end.size)]), end, begin + end
        )
    masks = {
        name: [int(_bits(o[name], i)) for i in range(begin.size)]
        for name in ("begin_mask", "end_mask", "new_axis_mask", "shrink_axis_mask", "ellipsis_mask")
    }
    return b(ctf.StridedSliceOp, x, b.ints(begin), b.ints(end), b.ints(strides), **masks)


def _pad(op, b, fill):
    x = b.x(op, 0)
    pads = b.static(op, 1).reshape(-1, 2).astype(np.int64)
    if isinstance(x.type, TensorType) and any(d < 0 for d in x.type.get_shape()):
        # A dynamic dim (the batch): one core.Pad, whose type keeps the dim `?`.
        value = b.const(np.zeros((), b.dtype(x))) if fill is None else fill
        return [b(core.PadOp, x, b.ints(pads[:, 0]), b.ints(pads[:, 1]), value)]
    for axis, (low, high) in enumerate(pads):
        if low == 0 and high == 0:
            continue
        shape = list(b.shape(x))
        parts = []
        for count in (low, high):
            shape[axis] = int(count)
            if count:
                value = b.const(np.zeros((), b.dtype(x))) if fill is None else fill
                parts.append(b(core.BroadcastOp, value, b.ints(list(shape))))
            else:
                parts.append(None)
        x = b(core.ConcatOp, [p for p in (parts[0], x, parts[1]) if p is not None], axis=axis)
    return [x]


@lowering("PAD")
def pad(op, b):
    return _pad(op, b, None)


@lowering("PADV2")
def padv2(op, b):
    fill = b.x(op, 2)
    return _pad(op, b, None if fill is None else b.reshape(fill, []))


@lowering("SHAPE")
def shape(op, b):
    """A constant when the input's shape is static (as `tflite-to-core` makes it by default),
    so the Keras `Shape -> StridedSlice -> Pack -> Reshape` chains fold away."""
    x = b.x(op, 0)
    out_type = op.results[0].type.get_element_type()
    dims = x.type.get_shape()
    if all(d >= 0 for d in dims):
        return [b.const(np.asarray(dims), dtype=numpy_dtype(out_type))]
    return [b(core.ShapeOfOp, x, output_type=out_type)]


def _block_arguments(op, b):
    """(block shape, begin, end) over every dim of SPACE_TO_BATCH_ND's / BATCH_TO_SPACE_ND's
    input (the batch's block 1, unpadded trailing dims), from TFLite's spatial block and its
    paddings (or crops), as Keras writes a dilated convolution."""
    rank = b.ranked(b.x(op, 0))
    block = b.static(op, 1).astype(np.int64).reshape(-1)
    pairs = b.static(op, 2).astype(np.int64).reshape(-1, 2)
    rest = [0] * (rank - 1 - block.size)
    full = [1, *block, *[1] * len(rest)]
    return b.ints(full), b.ints([0, *pairs[:, 0], *rest]), b.ints([0, *pairs[:, 1], *rest])


@lowering("SPACE_TO_BATCH_ND")
def space_to_batch(op, b):
    return [b(ctf.SpaceToBatchOp, b.x(op, 0), *_block_arguments(op, b))]


@lowering("BATCH_TO_SPACE_ND")
def batch_to_space(op, b):
    return [b(ctf.BatchToSpaceOp, b.x(op, 0), *_block_arguments(op, b))]


@lowering("TILE")
def tile(op, b):
    return [b(core.TileOp, b.x(op, 0), b.raw(op, 1))]


@lowering("BROADCAST_TO")
def broadcast_to(op, b):
    return [b(core.BroadcastOp, b.x(op, 0), b.raw(op, 1), mode="numpy")]


@lowering("SLICE")
def slice_(op, b):
    """Constant bounds: a strided slice. A computed begin with a constant size (the block read
    at a loop's counter): core.DynamicSlice, whose shape stays static (a begin that would run
    past the end is clamped, where LiteRT refuses to run)."""
    size = b.static(op, 2).astype(np.int64).reshape(-1)
    if b.constant(b.raw(op, 1)) is None:
        if (size < 0).any():
            raise b.fail("has a computed begin and a size of -1 (a value-dependent shape)")
        return [b(core.DynamicSliceOp, b.x(op, 0), b.x(op, 1), sizes=[int(s) for s in size])]
    return [slice_by_size(b, b.x(op, 0), b.static(op, 1), size)]


def _limits(dtype):
    return np.finfo(dtype) if np.issubdtype(dtype, np.floating) else np.iinfo(dtype)


def _one(dtype):
    return 1


def _zero(dtype):
    return 0


def _lowest(dtype):
    return _limits(dtype).min


def _highest(dtype):
    return _limits(dtype).max


_SEGMENT_REDUCTIONS = {
    "UNSORTED_SEGMENT_PROD": (core.ReduceProdOp, _one),
    "UNSORTED_SEGMENT_SUM": (core.ReduceSumOp, _zero),
    "UNSORTED_SEGMENT_MAX": (core.ReduceMaxOp, _lowest),
    "UNSORTED_SEGMENT_MIN": (core.ReduceMinOp, _highest),
}


@lowering(*_SEGMENT_REDUCTIONS)
def unsorted_segment(op, b):
    """out[s, ...] = reduce over j with ids[j] == s of data[j, ...], the reduction's identity
    (LiteRT's: 1, 0, lowest, highest) for an empty segment: a [segments, n] mask of
    `ids == s` selects data or the identity, reduced over n. Ids of the data's leading dim;
    ids outside [0, segments) fall in no segment."""
    reduce, identity = _SEGMENT_REDUCTIONS[op.operator]
    data, ids = b.x(op, 0), b.x(op, 1)
    segments = int(b.static(op, 2).reshape(-1)[0])
    if b.rank(ids) != 1:
        raise b.fail("needs 1-D segment ids")
    rank = b.ranked(data)
    wanted = b.const(np.arange(segments, dtype=b.dtype(ids)).reshape(-1, 1))
    mask = b(core.EqualOp, b(core.UnsqueezeOp, ids, b.ints([0])), wanted)  # [segments, n]
    if rank > 1:
        mask = b(core.UnsqueezeOp, mask, b.ints(list(range(2, rank + 1))))
    rows = b(core.UnsqueezeOp, data, b.ints([0]))  # [1, n, ...]
    fill = b.const(np.asarray(identity(b.dtype(data)), b.dtype(data)))
    return [b(reduce, b(core.SelectOp, mask, rows, fill), b.ints([1]), keep_dims=False)]


@lowering("DYNAMIC_UPDATE_SLICE")
def dynamic_update_slice(op, b):
    """`update` written into `operand` at the computed start, clamped so it fits (LiteRT's and
    XLA's semantics alike)."""
    return [b(core.DynamicUpdateSliceOp, b.x(op, 0), b.x(op, 1), b.x(op, 2))]


@lowering("REVERSE_V2")
def reverse_v2(op, b):
    """A strided slice of stride -1 along the reversed axes (Keras's backward RNNs)."""
    x = b.x(op, 0)
    rank = b.ranked(x)
    axes = {int(a) % rank for a in b.static(op, 1).reshape(-1)}
    strides = [-1 if axis in axes else 1 for axis in range(rank)]
    every = [1] * rank
    zeros = b.ints([0] * rank)
    return [
        b(ctf.StridedSliceOp, x, zeros, zeros, b.ints(strides), begin_mask=every, end_mask=every)
    ]

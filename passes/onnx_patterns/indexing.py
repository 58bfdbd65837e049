"""Indexing and data-movement ONNX ops: Slice, Split, Pad, Tile, Range, OneHot, TopK, CumSum,
Trilu, EyeLike, DepthToSpace/SpaceToDepth, ReverseSequence, Einsum, GatherElements/GatherND,
ScatterND/ScatterElements, and the data-dependent NonZero, Compress and Unique.

Old opsets carry shape-like values as attributes, new ones as inputs; inputs are passed through
as they are (a model input reaching a static operand is bound per call by mlconv.compile).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
from xdsl.dialects.builtin import UnrankedTensorType, i64
from xdsl.rewriter import Rewriter

from mlconv.dense import element_type
from mlconv.dialects import core_elementwise as ce
from mlconv.dialects import core_indexing as ci
from mlconv.dialects import core_tensor as ct
from mlconv.passes.onnx_patterns import lowering


def with_element_type(value, element):
    """`value`, its still unranked type given the element type the op produces: the builder
    guesses an unranked result's element type from the first operand, wrong for index
    outputs (TopK, NonZero, Unique) and for OneHot, until the static operands are known."""
    if isinstance(value.type, UnrankedTensorType) and value.type.element_type != element:
        value = Rewriter.replace_value_with_new_type(value, UnrankedTensorType(element))
    return value


def _length(b, value) -> int:
    """The static length of a 1-D shape-like input."""
    shape = value.type.get_shape() if b.rank(value) == 1 else (-1,)
    if shape[0] < 0:
        raise b.fail("needs a 1-D shape-like input of static length")
    return shape[0]


@lowering("Slice", 1)
def slice_v1(op, b):
    starts, ends = op.onnx_attr("starts"), op.onnx_attr("ends")
    if starts is None:  # onnx-normalize made the attributes Slice-10's inputs
        return slice_(op, b)
    axes = op.onnx_attr("axes")
    return [
        b(
            ci.SliceOp,
            op.operands[0],
            b.ints(starts),
            b.ints(ends),
            b.ints([1] * len(starts)),
            b.ints(axes) if axes is not None else None,
        )
    ]


@lowering("Slice", 10, 11, 13)
def slice_(op, b):
    data, starts, ends = b.input(op, "data"), b.input(op, "starts"), b.input(op, "ends")
    axes, steps = b.input(op, "axes"), b.input(op, "steps")
    if steps is None:
        # One step per start; from ShapeOf when the number of starts is only known later.
        static = starts.type.get_shape()[0] if b.rank(starts) == 1 else -1
        steps = (
            b.ints([1] * static)
            if static >= 0
            else b(ct.BroadcastOp, b.ints(1), b(ct.ShapeOfOp, starts))
        )
    return [b(ci.SliceOp, data, starts, ends, steps, axes)]


@lowering("Split", 1, 2, 11, 13, 18)
def split(op, b):
    data = b.input(op, "input")
    axis = b.attr(op, "axis", 0)
    count = len(op.results)
    lengths = op.onnx_attr("split") if "split" in op.attributes else b.input(op, "split")
    if lengths is not None:
        value = b.ints(lengths) if isinstance(lengths, list | tuple) else lengths
        return b(ci.VariadicSplitOp, data, b.ints(axis), value, results=count)
    rank = b.rank(data)
    size = data.type.get_shape()[axis % rank] if rank else -1
    if size < 0:
        # ceil(size / count)-sized chunks, the last one the rest, computed from ShapeOf so it
        # folds once the size is known.
        dim = b(ct.GatherOp, b(ct.ShapeOfOp, data), b.ints([axis]), b.ints(0))
        chunk = b(ce.DivideOp, b(ce.AddOp, dim, b.ints([count - 1])), b.ints([count]))
        parts = b(
            ct.ConcatOp, [b(ct.BroadcastOp, chunk, b.ints([count - 1])), b.ints([-1])], axis=0
        )
        return b(ci.VariadicSplitOp, data, b.ints(axis), parts, results=count)
    if size % count == 0:
        return b(ci.SplitOp, data, b.ints(axis), num_splits=count, results=count)
    # Opset 18's num_outputs: ceil-sized chunks, the last one smaller.
    chunk = -(-size // count)
    parts = [chunk] * (count - 1) + [size - chunk * (count - 1)]
    return b(ci.VariadicSplitOp, data, b.ints(axis), b.ints(parts), results=count)


_PAD_MODES = {"constant": "constant", "edge": "edge", "reflect": "reflect", "wrap": "wrap"}


def _pad_mode(op, b) -> str:
    mode = b.attr(op, "mode", "constant")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if mode not in _PAD_MODES:
        raise b.fail(f"Pad mode '{mode}' is not supported")
    return _PAD_MODES[mode]


@lowering("Pad", 2)
def pad_v2(op, b):
    if op.onnx_attr("pads") is None:  # onnx-normalize made the attributes Pad-11's inputs
        return pad(op, b)
    data = op.operands[0]
    pads = list(op.onnx_attr("pads"))
    half = len(pads) // 2
    value = b.const(np.asarray(b.attr(op, "value", 0.0), b.dtype(data)))
    return [
        b(
            ci.PadOp,
            data,
            b.ints(pads[:half]),
            b.ints(pads[half:]),
            value,
            pad_mode=_pad_mode(op, b),
        )
    ]


@lowering("Pad", 11, 13, 18, 19, 21, 23, 24, 25)
def pad(op, b):
    data, pads = b.input(op, "data"), b.input(op, "pads")
    value = b.input(op, "constant_value") if "constant_value" in op.INPUTS else None
    axes = b.input(op, "axes") if "axes" in op.INPUTS else None
    half = _length(b, pads) // 2
    pads = b(ct.ConvertOp, pads, destination_type=i64)
    begins = b(ci.SliceOp, pads, b.ints([0]), b.ints([half]), b.ints([1]))
    ends = b(ci.SliceOp, pads, b.ints([half]), b.ints([2 * half]), b.ints([1]))
    if axes is not None:
        # Pads of the listed axes only: scatter them into zeros of every axis.
        rank = b.rank(data)
        if rank is None:
            raise b.fail("Pad with axes needs the rank of its input")
        zeros = b.ints([0] * rank)
        begins = b(ci.ScatterElementsUpdateOp, zeros, axes, begins, b.ints(0))
        ends = b(ci.ScatterElementsUpdateOp, zeros, axes, ends, b.ints(0))
    return [b(ci.PadOp, data, begins, ends, value, pad_mode=_pad_mode(op, b))]


@lowering("Tile", 6, 13)
def tile(op, b):
    return [b(ci.TileOp, b.input(op, "input"), b.input(op, "repeats"))]


@lowering("Range", 11, 27)
def range_(op, b):
    """Opset 27 computes float16/bfloat16 ranges in the `stash_type` (float32 by default)."""
    start, limit, delta = op.operands
    result_type = start.type.get_element_type()
    dtype = b.dtype(start)
    if dtype in (np.float16, ml_dtypes.bfloat16):  # only opset 27 allows them
        stash = {1: np.float32, 11: np.float64}.get(b.attr(op, "stash_type", 1))
        if stash is None:
            raise b.fail(f"stash_type {b.attr(op, 'stash_type')} is not FLOAT or DOUBLE")
        wide = element_type(stash)
        start, limit, delta = (b(ct.ConvertOp, v, destination_type=wide) for v in op.operands)
        values = b(ci.RangeOp, start, limit, delta, output_type=wide)
        return [b(ct.ConvertOp, values, destination_type=result_type)]
    return [b(ci.RangeOp, start, limit, delta, output_type=result_type)]


@lowering("OneHot", 9, 11, 28)
def one_hot(op, b):
    indices, depth, values = op.operands
    off = b(ct.GatherOp, values, b.ints(0), b.ints(0))
    on = b(ct.GatherOp, values, b.ints(1), b.ints(0))
    encoded = b(
        ci.OneHotOp,
        indices,
        depth,
        on,
        off,
        axis=b.attr(op, "axis", -1),
        negative_indices_mode="normalize",
    )
    return [with_element_type(encoded, values.type.get_element_type())]


@lowering("TopK", 1, 10, 11, 24)
def top_k(op, b):
    data = b.input(op, "X")
    k = b.ints(b.attr(op, "k")) if "k" in op.attributes else b.input(op, "K")
    rank = b.rank(data)
    if rank is None:
        raise b.fail("needs the rank of its input")
    mode = "max" if b.attr(op, "largest", 1) else "min"
    values, indices = b(
        ci.TopKOp,
        data,
        k,
        axis=b.attr(op, "axis", -1) % rank,
        mode=mode,
        sort="value",
        index_element_type=i64,
        stable=True,
    )
    return [values, with_element_type(indices, i64)]


@lowering("CumSum", 11, 14)
def cumsum(op, b):
    x, axis = op.operands
    exclusive, reverse = bool(b.attr(op, "exclusive", 0)), bool(b.attr(op, "reverse", 0))
    return [b(ci.CumSumOp, x, axis, exclusive=exclusive, reverse=reverse)]


@lowering("Trilu", 14)
def trilu(op, b):
    return [
        b(ci.TriluOp, b.input(op, "input"), b.input(op, "k"), upper=bool(b.attr(op, "upper", 1)))
    ]


@lowering("EyeLike", 9, 22)
def eye_like(op, b):
    x = op.operands[0]
    shape = x.type.get_shape() if b.rank(x) == 2 else (-1, -1)
    if min(shape) < 0:
        raise b.fail("needs a 2-D input of static shape")
    dtype_code = b.attr(op, "dtype")
    dtype = b.dtype(x) if dtype_code is None else onnx.helper.tensor_dtype_to_np_dtype(dtype_code)
    return [b.const(np.eye(shape[0], shape[1], k=b.attr(op, "k", 0), dtype=dtype))]


_DEPTH_TO_SPACE_MODES = {"DCR": "blocks_first", "CRD": "depth_first"}


@lowering("DepthToSpace", 1, 11, 13, 28)
def depth_to_space(op, b):
    mode = _DEPTH_TO_SPACE_MODES[b.attr(op, "mode", "DCR")]
    return [b(ci.DepthToSpaceOp, op.operands[0], block_size=b.attr(op, "blocksize"), mode=mode)]


@lowering("SpaceToDepth", 1, 13, 28)
def space_to_depth(op, b):
    # Opset 28 adds DepthToSpace's `mode`; before, the order was always DCR.
    mode = _DEPTH_TO_SPACE_MODES[b.attr(op, "mode", "DCR")]
    return [b(ci.SpaceToDepthOp, op.operands[0], block_size=b.attr(op, "blocksize"), mode=mode)]


@lowering("ReverseSequence", 10, 28)
def reverse_sequence(op, b):
    x, lengths = op.operands
    return [
        b(
            ci.ReverseSequenceOp,
            x,
            lengths,
            batch_axis=b.attr(op, "batch_axis", 1),
            seq_axis=b.attr(op, "time_axis", 0),
        )
    ]


@lowering("Einsum", 12, 28)
def einsum(op, b):
    return [b(ci.EinsumOp, list(op.operands), equation=b.attr(op, "equation"))]


@lowering("GatherElements", 11, 13)
def gather_elements(op, b):
    data, indices = op.operands
    return [b(ci.GatherElementsOp, data, indices, axis=b.attr(op, "axis", 0))]


@lowering("GatherND", 11, 12, 13)
def gather_nd(op, b):
    data, indices = op.operands
    return [b(ci.GatherNDOp, data, indices, batch_dims=b.attr(op, "batch_dims", 0))]


# ONNX reduction names -> OpenVINO's.
_SCATTER_REDUCTIONS = {"none": "none", "add": "sum", "mul": "prod", "min": "min", "max": "max"}


@lowering("ScatterND", 11, 13, 16, 18)
def scatter_nd(op, b):
    data, indices, updates = op.operands
    reduction = _SCATTER_REDUCTIONS[b.attr(op, "reduction", "none")]
    return [b(ci.ScatterNDUpdateOp, data, indices, updates, reduction=reduction)]


@lowering("ScatterElements", 11, 13, 16, 18)
@lowering("Scatter", 9, 11)
def scatter_elements(op, b):
    data, indices, updates = op.operands
    reduction = _SCATTER_REDUCTIONS[b.attr(op, "reduction", "none")]
    axis = b.ints(b.attr(op, "axis", 0))
    return [b(ci.ScatterElementsUpdateOp, data, indices, updates, axis, reduction=reduction)]


# Data-dependent output shapes: the data is a static operand, so these fold when it is a
# constant (or a model input bound at call time) and core-to-tpu names the operand otherwise.


@lowering("NonZero", 9, 13)
def non_zero(op, b):
    return [with_element_type(b(ci.NonZeroOp, op.operands[0], output_type=i64), i64)]


@lowering("Compress", 9, 11, 28)
def compress(op, b):
    data, condition = op.operands
    axis = b.attr(op, "axis")
    if axis is None:
        data, axis = b(ct.ReshapeOp, data, b.ints([-1])), 0
    coordinates = with_element_type(b(ci.NonZeroOp, condition, output_type=i64), i64)
    positions = b(ct.ReshapeOp, coordinates, b.ints([-1]))
    return [b(ct.GatherOp, data, positions, b.ints(axis))]


@lowering("Unique", 11, 28)
def unique(op, b):
    axis = b.attr(op, "axis")
    values, *indices = b(
        ci.UniqueOp,
        op.operands[0],
        b.ints(axis) if axis is not None else None,
        sorted=bool(b.attr(op, "sorted", 1)),
    )
    return [values, *(with_element_type(v, i64) for v in indices)]


@lowering("MaxUnpool", 9, 11, 22)
def max_unpool(op, b):
    """Each value of X goes to its flat index (MaxPool's Indices: over the whole N x C x ...
    tensor) in zeros of the size MaxPool inverts, (in - 1) * stride - pads + kernel per spatial
    dim: one ScatterElementsUpdate on the flattened tensor. An `output_shape` larger than that
    pads the end of each dim with zeros, as the ONNX reference does."""
    x, indices, output_shape = (b.input(op, name) for name in ("X", "I", "output_shape"))
    shape = x.type.get_shape() if b.rank(x) else None
    if shape is None or any(d < 0 for d in shape):
        raise b.fail("needs the static shape of X")
    kernel = list(b.attr(op, "kernel_shape"))
    spatial = len(kernel)
    strides = list(b.attr(op, "strides", [1] * spatial))
    pads = list(b.attr(op, "pads", [0] * (2 * spatial)))
    inferred = list(shape[:2]) + [
        (shape[2 + d] - 1) * strides[d] - (pads[d] + pads[spatial + d]) + kernel[d]
        for d in range(spatial)
    ]
    dtype = b.dtype(x)
    zeros = b.const(np.zeros(int(np.prod(inferred)), dtype))
    flat = [b(ct.ReshapeOp, v, b.ints([-1])) for v in (indices, x)]
    y = b(ci.ScatterElementsUpdateOp, zeros, flat[0], flat[1], b.ints(0), reduction="none")
    y = b(ct.ReshapeOp, y, b.ints(inferred))
    if output_shape is not None:
        grow = b(ce.SubtractOp, output_shape, b.ints(inferred))
        y = b(ci.PadOp, y, b.ints([0] * len(inferred)), grow, None, pad_mode="constant")
    return [y]


@lowering("TensorScatter", 24)
def tensor_scatter(op, b):
    """A KV-cache write: along `axis`, update's positions s go to the cache at write_indices[n]
    + s (mod the cache length in `circular` mode), per sample n of the first dim. Vectorized as
    a select: cache position p takes update[p - write_indices[n]] (GatherElements of the
    clamped offset) where that offset is in [0, update length), else keeps its value."""
    cache, update, write = (b.input(op, n) for n in ("past_cache", "update", "write_indices"))
    mode = b.attr(op, "mode", "linear")
    if mode not in ("linear", "circular"):
        raise b.fail(f"unknown mode '{mode}' (linear or circular)")
    shape = cache.type.get_shape() if b.rank(cache) else None
    update_shape = update.type.get_shape() if b.rank(update) else None
    if shape is None or update_shape is None or any(d < 0 for d in (*shape, *update_shape)):
        raise b.fail("needs the static shapes of past_cache and update")
    rank = len(shape)
    axis = b.attr(op, "axis", -2) % rank
    if axis == 0:
        raise b.fail("axis must not be the batch axis 0")
    length, count = shape[axis], update_shape[axis]
    positions = np.arange(length, dtype=np.int64).reshape(
        [length if d == axis else 1 for d in range(rank)]
    )
    if write is None:
        offset = b.const(positions)
    else:
        write = (
            b(ct.ConvertOp, write, destination_type=i64) if b.dtype(write) != np.int64 else write
        )
        start = b(ct.ReshapeOp, write, b.ints([-1] + [1] * (rank - 1)))
        offset = b(ce.SubtractOp, b.const(positions), start)
        if mode == "circular":
            offset = b(ce.FloorModOp, offset, b.ints(length))
    inside = b(
        ce.LogicalAndOp,
        b(ce.GreaterEqualOp, offset, b.ints(0)),
        b(ce.LessOp, offset, b.ints(count)),
    )
    clamped = b(ce.ClampOp, offset, min=0.0, max=float(count - 1))
    gather_shape = list(shape)
    gather_shape[axis] = length
    index = b(ct.BroadcastOp, clamped, b.ints(gather_shape), None, mode="numpy")
    taken = b(ci.GatherElementsOp, update, index, axis=axis)
    return [b(ct.SelectOp, inside, taken, cache)]

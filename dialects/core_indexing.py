"""Indexing and data-movement core ops: slicing, splitting, padding, tiling, gathers and
scatters, sorting (TopK), cumulative sums, one-hot, ranges, block rearrangements (DepthToSpace,
SpaceToDepth), Einsum, and the ops with data-dependent output shapes (NonZero, Unique).

Shape-like operands (starts, pads, repeats, k, axes, ...) are `STATIC_OPERANDS`. NonZero and
Unique make their *data* static: their output shape depends on the values, so they can only be
evaluated (folded) when the data is a constant, and core-to-tpu reports the operand otherwise.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from xdsl.dialects.builtin import IntegerType, TensorType
from xdsl.utils.exceptions import VerifyException

from mlconv.dialects.core_base import BOOL, INT, INTS, STR, TYPE, CoreOp, core_op


def _ints(value) -> list[int]:
    return [int(v) for v in np.asarray(value).reshape(-1)]


def _scalar(value) -> int:
    return int(np.asarray(value).reshape(-1)[0])


def _wrap_negative(indices, dims):
    """Negative indices count from the end of their dim (ONNX and OpenVINO alike)."""
    return jnp.where(indices < 0, indices + jnp.asarray(dims, indices.dtype), indices)


@core_op(
    operands=("data", "start", "stop", "step", "?axes"),
    static_operands=("start", "stop", "step", "axes"),
)
class SliceOp(CoreOp):
    """Take `start:stop:step` along each of `axes` (all leading axes without `axes`); bounds
    clamp to the dim as in Python slicing, negative ones count from the end (OpenVINO opset8
    Slice).

        %y = "core.Slice"(%x, %b, %e, %s) : (tensor<20x10xf32>, tensor<1xi64>, tensor<1xi64>,
               tensor<1xi64>) -> tensor<5x10xf32>
    """

    name = "core.Slice"
    VERSION = 8

    @staticmethod
    def semantics(data, start, stop, step, axes=None):
        starts, stops, steps = _ints(start), _ints(stop), _ints(step)
        axis_list = list(range(len(starts))) if axes is None else _ints(axes)
        index = [slice(None)] * data.ndim
        for axis, first, last, stride in zip(axis_list, starts, stops, steps, strict=True):
            index[axis % data.ndim] = slice(first, last, stride)
        return data[tuple(index)]


def _dims(value) -> tuple[int, ...] | None:
    t = value.type
    return tuple(t.get_shape()) if isinstance(t, TensorType) else None


def _check_start(start, rank: int) -> None:
    """`start`: a 1-D integer tensor with one index per dim of the data."""
    t = start.type
    if not isinstance(t, TensorType) or not isinstance(t.get_element_type(), IntegerType):
        raise VerifyException("start must be a tensor of integers")
    shape = t.get_shape()
    if len(shape) != 1 or shape[0] not in (-1, rank):
        raise VerifyException(f"start must be 1-D with one index per data dim ({rank})")


def _start_indices(start, rank: int) -> list:
    return [start[i] for i in range(rank)]


@core_op(operands=("data", "start"), attributes={"sizes": INTS})
class DynamicSliceOp(CoreOp):
    """The `sizes`-shaped block of `data` starting at the computed `start` (one index per dim);
    a start that would run past the end is clamped so the block fits, as XLA's DynamicSlice
    does. The result shape is static whatever the start's value, so it can be carried through
    a loop. OpenVINO's Slice takes computed bounds but gives a value-dependent shape; an mlconv
    extension (XLA DynamicSlice semantics).

        %y = "core.DynamicSlice"(%x, %start) {sizes = array<i64: 1, 4>}
               : (tensor<5x4xf32>, tensor<2xi32>) -> tensor<1x4xf32>
    """

    name = "core.DynamicSlice"
    VERSION = 1

    def verify_semantics(self) -> None:
        sizes = list(self.attribute_values()["sizes"])
        dims = _dims(self.data)
        if dims is None:
            return
        if len(sizes) != len(dims):
            raise VerifyException(f"sizes has {len(sizes)} entries for data of rank {len(dims)}")
        _check_start(self.start, len(dims))
        for axis, (size, dim) in enumerate(zip(sizes, dims, strict=True)):
            if size < 0 or (dim >= 0 and size > dim):
                raise VerifyException(f"size {size} of dim {axis} is outside 0..{dim}")
        result = _dims(self.output)
        if result is not None and list(result) != sizes:
            shown = "x".join("?" if d < 0 else str(d) for d in result)
            raise VerifyException(f"result shape {shown} must equal sizes {sizes}")

    @staticmethod
    def semantics(data, start, *, sizes):
        return lax.dynamic_slice(data, _start_indices(start, data.ndim), tuple(sizes))


@core_op(operands=("data", "update", "start"))
class DynamicUpdateSliceOp(CoreOp):
    """A copy of `data` with `update` written at the computed `start` (one index per dim),
    clamped so the update fits, as XLA's DynamicUpdateSlice (and TFLite's
    DYNAMIC_UPDATE_SLICE) does; the result has the data's type. An mlconv extension.

        %y = "core.DynamicUpdateSlice"(%x, %u, %start)
               : (tensor<5x4xf32>, tensor<1x4xf32>, tensor<2xi32>) -> tensor<5x4xf32>
    """

    name = "core.DynamicUpdateSlice"
    VERSION = 1

    def verify_semantics(self) -> None:
        dims, update = _dims(self.data), _dims(self.update)
        if dims is None or update is None:
            return
        if len(update) != len(dims):
            raise VerifyException(f"update has rank {len(update)}, data rank {len(dims)}")
        _check_start(self.start, len(dims))
        for axis, (u, d) in enumerate(zip(update, dims, strict=True)):
            if u >= 0 and d >= 0 and u > d:
                raise VerifyException(f"update dim {axis} ({u}) is larger than the data's ({d})")
        if self.output.type != self.data.type:
            raise VerifyException("result type must equal the data's type")

    @staticmethod
    def semantics(data, update, start):
        return lax.dynamic_update_slice(
            data, update.astype(data.dtype), _start_indices(start, data.ndim)
        )


@core_op(
    operands=("data", "axis"),
    attributes={"num_splits": INT},
    results=("*outputs",),
    static_operands=("axis",),
)
class SplitOp(CoreOp):
    """Split into `num_splits` equal parts along `axis` (OpenVINO opset1 Split).

    %a, %b = "core.Split"(%x, %axis) {num_splits = 2 : i64}
           : (tensor<6x4xf32>, tensor<i64>) -> (tensor<3x4xf32>, tensor<3x4xf32>)
    """

    name = "core.Split"
    VERSION = 1

    @staticmethod
    def semantics(data, axis, *, num_splits):
        return tuple(jnp.split(data, num_splits, axis=_scalar(axis)))


@core_op(
    operands=("data", "axis", "split_lengths"),
    results=("*outputs",),
    static_operands=("axis", "split_lengths"),
)
class VariadicSplitOp(CoreOp):
    """Split along `axis` into parts of `split_lengths`; one length may be -1 for the rest
    (OpenVINO opset1 VariadicSplit).

        %a, %b = "core.VariadicSplit"(%x, %axis, %lengths)
               : (tensor<6xf32>, tensor<i64>, tensor<2xi64>) -> (tensor<2xf32>, tensor<4xf32>)
    """

    name = "core.VariadicSplit"
    VERSION = 1

    @staticmethod
    def semantics(data, axis, split_lengths):
        axis = _scalar(axis) % data.ndim
        lengths = _ints(split_lengths)
        if -1 in lengths:
            lengths[lengths.index(-1)] = data.shape[axis] - sum(n for n in lengths if n != -1)
        offsets = np.cumsum([0, *lengths])
        return tuple(
            lax.slice_in_dim(data, int(start), int(stop), axis=axis)
            for start, stop in zip(offsets[:-1], offsets[1:], strict=True)
        )


_JNP_PAD_MODES = {"edge": "edge", "reflect": "reflect", "symmetric": "symmetric", "wrap": "wrap"}


@core_op(
    operands=("arg", "pads_begin", "pads_end", "?pad_value"),
    attributes={"pad_mode": (STR, "constant")},
    static_operands=("pads_begin", "pads_end"),
)
class PadOp(CoreOp):
    """Pad each dim by `pads_begin`/`pads_end` elements; negative pads crop. `pad_mode` is
    constant (`pad_value`, 0 without it), edge, reflect, symmetric, or `wrap` (cyclic; an
    mlconv extension for ONNX) (OpenVINO opset12 Pad).

        %y = "core.Pad"(%x, %b, %e, %v) {pad_mode = "constant"}
               : (tensor<3x4xf32>, tensor<2xi64>, tensor<2xi64>, tensor<f32>) -> tensor<5x8xf32>
    """

    name = "core.Pad"
    VERSION = 12

    @staticmethod
    def semantics(arg, pads_begin, pads_end, pad_value=None, *, pad_mode):
        begins, ends = _ints(pads_begin), _ints(pads_end)
        if pad_mode == "constant":
            value = (
                jnp.zeros((), arg.dtype)
                if pad_value is None
                else pad_value.reshape(()).astype(arg.dtype)
            )
            return lax.pad(arg, value, [(b, e, 0) for b, e in zip(begins, ends, strict=True)])
        grow = [(max(b, 0), max(e, 0)) for b, e in zip(begins, ends, strict=True)]
        padded = jnp.pad(arg, grow, mode=_JNP_PAD_MODES[pad_mode])
        crop = tuple(
            slice(max(-b, 0), size - max(-e, 0))
            for b, e, size in zip(begins, ends, padded.shape, strict=True)
        )
        return padded[crop]


@core_op(operands=("data", "repeats"), static_operands=("repeats",))
class TileOp(CoreOp):
    """Repeat the data `repeats[i]` times along dim i; a shorter `repeats` is padded with
    leading ones (OpenVINO opset1 Tile).

        %y = "core.Tile"(%x, %r) : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<4x3xf32>
    """

    name = "core.Tile"
    VERSION = 1

    @staticmethod
    def semantics(data, repeats):
        return jnp.tile(data, _ints(repeats))


@core_op(
    operands=("start", "stop", "step"),
    attributes={"output_type": TYPE},
    static_operands=("start", "stop", "step"),
)
class RangeOp(CoreOp):
    """`start + i*step` for i in [0, max(ceil((stop-start)/step), 0)) (OpenVINO opset4 Range).

    %y = "core.Range"(%a, %b, %c) {output_type = i64}
           : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<5xi64>
    """

    name = "core.Range"
    VERSION = 4

    @staticmethod
    def semantics(start, stop, step, *, output_type):
        first, last, delta = (np.asarray(v).reshape(()) for v in (start, stop, step))
        count = max(int(np.ceil((last - first) / delta)), 0)
        return jnp.asarray((first + np.arange(count) * delta).astype(output_type))


@core_op(
    operands=("indices", "depth", "on_value", "off_value"),
    attributes={"axis": (INT, -1), "negative_indices_mode": (STR, "ignore-negative")},
    static_operands=("depth",),
)
class OneHotOp(CoreOp):
    """One-hot encoding: a new dim of size `depth` at `axis`, `on_value` where it equals the
    index, `off_value` elsewhere; negative indices are all-off (`ignore-negative`) or count
    from the end (`normalize`) (OpenVINO opset16 OneHot).

        %y = "core.OneHot"(%i, %d, %on, %off) {axis = -1 : i64}
               : (tensor<3xi64>, tensor<i64>, tensor<f32>, tensor<f32>) -> tensor<3x10xf32>
    """

    name = "core.OneHot"
    VERSION = 16

    @staticmethod
    def semantics(indices, depth, on_value, off_value, *, axis, negative_indices_mode):
        size = int(np.asarray(depth).reshape(-1)[0])
        positions = indices.astype(np.int64)
        if negative_indices_mode == "normalize":
            positions = jnp.where(positions < 0, positions + size, positions)
        axis %= indices.ndim + 1
        shape = [1] * (indices.ndim + 1)
        shape[axis] = size
        classes = jnp.arange(size, dtype=np.int64).reshape(shape)
        hot = jnp.expand_dims(positions, axis) == classes
        return jnp.where(hot, on_value.reshape(()), off_value.reshape(()).astype(on_value.dtype))


def _order_key(x, largest: bool):
    """Values whose descending order is the wanted order (ascending for `min`)."""
    if largest:
        return x
    if x.dtype == np.bool_:
        return jnp.logical_not(x)
    if jnp.issubdtype(x.dtype, jnp.integer):
        return jnp.bitwise_not(x)
    return -x


@core_op(
    operands=("data", "k"),
    attributes={
        "axis": INT,
        "mode": (STR, "max"),
        "sort": (STR, "value"),
        "index_element_type": (TYPE, np.dtype(np.int32)),
        "stable": (BOOL, False),
    },
    results=("values", "indices"),
    static_operands=("k",),
)
class TopKOp(CoreOp):
    """The `k` largest (`mode = max`) or smallest elements along `axis` and their indices,
    ordered by value or by index; equal values keep their index order (OpenVINO opset11 TopK).

        %v, %i = "core.TopK"(%x, %k) {axis = 1 : i64, mode = "max", sort = "value"}
               : (tensor<3x4xf32>, tensor<i64>) -> (tensor<3x2xf32>, tensor<3x2xi32>)
    """

    name = "core.TopK"
    VERSION = 11

    @staticmethod
    def semantics(data, k, *, axis, mode, sort, index_element_type, stable):
        axis %= data.ndim
        moved = jnp.moveaxis(data, axis, -1)
        _, indices = lax.top_k(_order_key(moved, mode == "max"), _scalar(k))
        if sort == "index":
            indices = jnp.sort(indices, axis=-1)
        values = jnp.take_along_axis(moved, indices, axis=-1)
        return (
            jnp.moveaxis(values, -1, axis),
            jnp.moveaxis(indices, -1, axis).astype(index_element_type),
        )


@core_op(
    operands=("arg", "axis"),
    attributes={"exclusive": (BOOL, False), "reverse": (BOOL, False)},
    static_operands=("axis",),
)
class CumSumOp(CoreOp):
    """Cumulative sum along `axis`; `exclusive` leaves out the element itself, `reverse` sums
    from the end (OpenVINO opset3 CumSum).

        %y = "core.CumSum"(%x, %axis) {exclusive = false, reverse = false}
               : (tensor<5xf32>, tensor<i64>) -> tensor<5xf32>
    """

    name = "core.CumSum"
    VERSION = 3

    @staticmethod
    def semantics(arg, axis, *, exclusive, reverse):
        axis = _scalar(axis) % arg.ndim
        data = jnp.flip(arg, axis) if reverse else arg
        total = jnp.cumsum(data, axis=axis, dtype=arg.dtype)
        if exclusive:
            size = arg.shape[axis]
            shifted = lax.slice_in_dim(total, 0, max(size - 1, 0), axis=axis)
            zeros = jnp.zeros_like(lax.slice_in_dim(total, 0, min(size, 1), axis=axis))
            total = jnp.concatenate([zeros, shifted], axis=axis)
        return jnp.flip(total, axis) if reverse else total


@core_op(operands=("*inputs",), attributes={"equation": STR})
class EinsumOp(CoreOp):
    """Einstein summation over the operands as written in `equation` (explicit `->` or
    implicit form, `...` for broadcast dims) (OpenVINO opset7 Einsum).

        %y = "core.Einsum"(%a, %b) {equation = "ij,jk->ik"}
               : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
    """

    name = "core.Einsum"
    VERSION = 7

    @staticmethod
    def semantics(*inputs, equation):
        dtype = inputs[0].dtype
        result = jnp.einsum(equation.replace(" ", ""), *inputs, precision=lax.Precision.HIGHEST)
        return result.astype(dtype)


def _interleave(first: list[int], second: list[int]) -> list[int]:
    return [axis for pair in zip(first, second, strict=True) for axis in pair]


@core_op(operands=("data",), attributes={"block_size": INT, "mode": (STR, "blocks_first")})
class DepthToSpaceOp(CoreOp):
    """Move channel blocks into the spatial dims: C -> C / b^k, each spatial dim *b; the
    channel is read as (block..., C') with `blocks_first` or (C', block...) with
    `depth_first` (OpenVINO opset1 DepthToSpace).

        %y = "core.DepthToSpace"(%x) {block_size = 2 : i64, mode = "blocks_first"}
               : (tensor<1x8x2x3xf32>) -> tensor<1x2x4x6xf32>
    """

    name = "core.DepthToSpace"
    VERSION = 1

    @staticmethod
    def semantics(data, *, block_size, mode):
        batch, channels, *spatial = data.shape
        k = len(spatial)
        depth = channels // block_size**k
        blocks = [block_size] * k
        if mode == "blocks_first":
            split = data.reshape(batch, *blocks, depth, *spatial)
            order = [0, k + 1, *_interleave(list(range(k + 2, 2 * k + 2)), list(range(1, k + 1)))]
        else:
            split = data.reshape(batch, depth, *blocks, *spatial)
            order = [0, 1, *_interleave(list(range(k + 2, 2 * k + 2)), list(range(2, k + 2)))]
        return split.transpose(order).reshape(batch, depth, *(d * block_size for d in spatial))


@core_op(operands=("data",), attributes={"block_size": INT, "mode": (STR, "blocks_first")})
class SpaceToDepthOp(CoreOp):
    """The inverse of DepthToSpace: spatial b×b blocks move into the channel dim, ordered
    (block..., C) with `blocks_first` or (C, block...) with `depth_first` (OpenVINO opset1
    SpaceToDepth).

        %y = "core.SpaceToDepth"(%x) {block_size = 2 : i64, mode = "blocks_first"}
               : (tensor<1x2x4x6xf32>) -> tensor<1x8x2x3xf32>
    """

    name = "core.SpaceToDepth"
    VERSION = 1

    @staticmethod
    def semantics(data, *, block_size, mode):
        batch, channels, *spatial = data.shape
        k = len(spatial)
        split_dims = [d for size in spatial for d in (size // block_size, block_size)]
        split = data.reshape(batch, channels, *split_dims)
        outer = [2 + 2 * i for i in range(k)]
        blocks = [3 + 2 * i for i in range(k)]
        order = [0, *blocks, 1, *outer] if mode == "blocks_first" else [0, 1, *blocks, *outer]
        return split.transpose(order).reshape(
            batch, channels * block_size**k, *(d // block_size for d in spatial)
        )


@core_op(operands=("data",), attributes={"axis": (INT, 1), "group": (INT, 1)})
class ShuffleChannelsOp(CoreOp):
    """Split dim `axis` (C) into (`group`, C / group), swap the two and merge them again:
    channel g * (C / group) + i moves to i * group + g (OpenVINO opset1 ShuffleChannels,
    ShuffleNet's channel shuffle).

        %y = "core.ShuffleChannels"(%x) {axis = 1 : i64, group = 2 : i64}
               : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
    """

    name = "core.ShuffleChannels"
    VERSION = 1

    @staticmethod
    def semantics(data, *, axis, group):
        axis %= data.ndim
        shape = data.shape
        split = shape[:axis] + (group, shape[axis] // group) + shape[axis + 1 :]
        return data.reshape(split).swapaxes(axis, axis + 1).reshape(shape)


@core_op(
    operands=("data", "seq_lengths"),
    attributes={"batch_axis": (INT, 0), "seq_axis": (INT, 1)},
)
class ReverseSequenceOp(CoreOp):
    """Reverse the first `seq_lengths[b]` elements along `seq_axis` of each batch entry b
    (along `batch_axis`); the rest stay in place (OpenVINO opset1 ReverseSequence).

        %y = "core.ReverseSequence"(%x, %len) {batch_axis = 1 : i64, seq_axis = 0 : i64}
               : (tensor<4x4xf32>, tensor<4xi64>) -> tensor<4x4xf32>
    """

    name = "core.ReverseSequence"
    VERSION = 1

    @staticmethod
    def semantics(data, seq_lengths, *, batch_axis, seq_axis):
        batch_axis %= data.ndim
        seq_axis %= data.ndim
        lengths_shape = [1] * data.ndim
        lengths_shape[batch_axis] = data.shape[batch_axis]
        lengths = seq_lengths.astype(np.int64).reshape(lengths_shape)
        steps_shape = [1] * data.ndim
        steps_shape[seq_axis] = data.shape[seq_axis]
        steps = jnp.arange(data.shape[seq_axis], dtype=np.int64).reshape(steps_shape)
        source = jnp.where(steps < lengths, lengths - 1 - steps, steps)
        return jnp.take_along_axis(data, jnp.broadcast_to(source, data.shape), axis=seq_axis)


def _element_index(indices, axis: int, dims) -> tuple:
    """Advanced-indexing tuple that reads/writes element `indices[p]` along `axis` at every
    position p of `indices`, and p's own coordinate along every other dim."""
    grid = [lax.broadcasted_iota(np.int64, indices.shape, d) for d in range(indices.ndim)]
    grid[axis] = _wrap_negative(indices.astype(np.int64), dims[axis])
    return tuple(grid)


@core_op(operands=("data", "indices"), attributes={"axis": INT})
class GatherElementsOp(CoreOp):
    """output[p] = data[p with its `axis` coordinate replaced by indices[p]]; the output has
    the shape of `indices` (OpenVINO opset6 GatherElements).

        %y = "core.GatherElements"(%x, %i) {axis = 1 : i64}
               : (tensor<2x2xf32>, tensor<2x2xi64>) -> tensor<2x2xf32>
    """

    name = "core.GatherElements"
    VERSION = 6

    @staticmethod
    def semantics(data, indices, *, axis):
        return data[_element_index(indices, axis % data.ndim, data.shape)]


def _batched(fn, batch_dims: int):
    for _ in range(batch_dims):
        fn = jax.vmap(fn)
    return fn


def _nd_index(data, indices) -> tuple:
    depth = indices.shape[-1]
    positions = _wrap_negative(indices.astype(np.int64), data.shape[:depth])
    return tuple(positions[..., i] for i in range(depth))


@core_op(operands=("data", "indices"), attributes={"batch_dims": (INT, 0)})
class GatherNDOp(CoreOp):
    """Gather slices of `data` at the index tuples in the last dim of `indices`, the first
    `batch_dims` dims being shared batch dims kept in the output (OpenVINO opset8 GatherND).

        %y = "core.GatherND"(%x, %i) : (tensor<2x2xf32>, tensor<2x2xi64>) -> tensor<2xf32>
    """

    name = "core.GatherND"
    VERSION = 8

    @staticmethod
    def semantics(data, indices, *, batch_dims):
        return _batched(lambda d, i: d[_nd_index(d, i)], batch_dims)(data, indices)


def _identity_of(reduction: str, dtype):
    if reduction in ("sum", "sub"):
        return np.zeros((), dtype)
    if reduction == "prod":
        return np.ones((), dtype)
    if dtype == np.bool_:
        return np.asarray(reduction == "min")
    if jnp.issubdtype(dtype, jnp.floating):
        return np.asarray(-np.inf if reduction == "max" else np.inf, dtype)
    info = np.iinfo(dtype)
    return np.asarray(info.min if reduction == "max" else info.max, dtype)


_COMBINE = {
    "sum": jnp.add,
    "sub": jnp.subtract,
    "prod": jnp.multiply,
    "min": jnp.minimum,
    "max": jnp.maximum,
}
_FOLD = {"sum": jnp.sum, "sub": jnp.sum, "prod": jnp.prod, "min": jnp.min, "max": jnp.max}


def _scatter(data, index: tuple, updates, reduction: str):
    """`data` with `updates` written at `index` (one index array per leading dim of data),
    replacing (`none`) or combined with `reduction`. The combining forms are computed densely
    (a hit mask of updates x positions, folded over the updates) rather than by lax's
    scatter-add/mul/min/max, whose combiner is a jaxpr parameter the tpu dialect cannot
    carry; that is O(updates x positions), fine for index-sized scatters."""
    data, updates = jnp.asarray(data), jnp.asarray(updates).astype(data.dtype)
    if reduction == "none":
        return data.at[index].set(updates)
    leading = data.shape[: len(index)]
    rest = data.shape[len(index) :]
    positions = int(np.prod(leading, dtype=np.int64))
    linear = jnp.ravel_multi_index(index, leading, mode="clip").reshape(-1)
    count = linear.shape[0]
    values = updates.reshape(count, *rest)
    hit = (linear[:, None] == jnp.arange(positions)[None, :]).reshape(
        count, positions, *[1] * len(rest)
    )
    identity = _identity_of(reduction, data.dtype)
    folded = _FOLD[reduction](jnp.where(hit, values[:, None], identity), axis=0)
    return _COMBINE[reduction](data.reshape(positions, *rest), folded).reshape(data.shape)


@core_op(
    operands=("data", "indices", "updates"),
    attributes={"reduction": (STR, "none")},
)
class ScatterNDUpdateOp(CoreOp):
    """Copy of `data` with the slices addressed by the index tuples of `indices` replaced by
    (or combined with, by `reduction`: sum, sub, prod, min, max) `updates` (OpenVINO opset15
    ScatterNDUpdate).

        %y = "core.ScatterNDUpdate"(%x, %i, %u) {reduction = "none"}
               : (tensor<8xf32>, tensor<4x1xi64>, tensor<4xf32>) -> tensor<8xf32>
    """

    name = "core.ScatterNDUpdate"
    VERSION = 15

    @staticmethod
    def semantics(data, indices, updates, *, reduction):
        return _scatter(data, _nd_index(data, indices), updates, reduction)


@core_op(
    operands=("data", "indices", "updates", "axis"),
    attributes={"reduction": (STR, "none"), "use_init_val": (BOOL, True)},
    static_operands=("axis",),
)
class ScatterElementsUpdateOp(CoreOp):
    """Copy of `data` where element p of `updates` goes to `data[p with its axis coordinate
    replaced by indices[p]]`, replacing or combining by `reduction` (sum, prod, min, max)
    (OpenVINO opset12 ScatterElementsUpdate).

        %y = "core.ScatterElementsUpdate"(%x, %i, %u, %axis) {reduction = "none"}
               : (tensor<3x3xf32>, tensor<2x3xi64>, tensor<2x3xf32>, tensor<i64>) -> tensor<3x3xf32>
    """

    name = "core.ScatterElementsUpdate"
    VERSION = 12

    @staticmethod
    def semantics(data, indices, updates, axis, *, reduction, use_init_val):
        axis = _scalar(axis) % data.ndim
        return _scatter(data, _element_index(indices, axis, data.shape), updates, reduction)


@core_op(operands=("input", "?k"), attributes={"upper": (BOOL, True)}, static_operands=("k",))
class TriluOp(CoreOp):
    """Keep the upper (`upper`) or lower triangle of the last two dims, from diagonal `k`
    (0 without it), zeroing the rest. OpenVINO has no such op (its ONNX frontend
    decomposes it); an mlconv extension with ONNX Trilu semantics.

        %y = "core.Trilu"(%x, %k) {upper = true} : (tensor<4x5xf32>, tensor<i64>) -> tensor<4x5xf32>
    """

    name = "core.Trilu"
    VERSION = 1

    @staticmethod
    def semantics(input, k=None, *, upper):  # noqa: A002 - ONNX's operand name
        diagonal = 0 if k is None else _scalar(k)
        return jnp.triu(input, diagonal) if upper else jnp.tril(input, diagonal)


@core_op(
    operands=("data",),
    attributes={"output_type": (TYPE, np.dtype(np.int64))},
    static_operands=("data",),
)
class NonZeroOp(CoreOp):
    """Coordinates of the non-zero elements, one row per dim, in row-major order (OpenVINO
    opset3 NonZero). The output shape depends on the values: `data` must be a constant.

        %y = "core.NonZero"(%x) : (tensor<2x2xi1>) -> tensor<2x3xi64>
    """

    name = "core.NonZero"
    VERSION = 3

    @staticmethod
    def semantics(data, *, output_type):
        array = np.asarray(data)
        coordinates = np.nonzero(array.reshape(-1) if array.ndim == 0 else array)
        return jnp.asarray(np.array(coordinates, dtype=output_type).reshape(max(array.ndim, 1), -1))


@core_op(
    operands=("data", "?axis"),
    attributes={
        "sorted": (BOOL, True),
        "index_element_type": (TYPE, np.dtype(np.int64)),
        "count_element_type": (TYPE, np.dtype(np.int64)),
    },
    results=("unique_elements", "indices", "reverse_indices", "counts"),
    static_operands=("data", "axis"),
)
class UniqueOp(CoreOp):
    """Unique elements (or slices along `axis`), sorted or in order of first occurrence, with
    the index of each one's first occurrence, each input element's position among them, and
    their counts (OpenVINO opset10 Unique). Shapes depend on the values: `data` must be a
    constant.

        %u, %i, %r, %c = "core.Unique"(%x) {sorted = true}
               : (tensor<6xf32>) -> (tensor<4xf32>, tensor<4xi64>, tensor<6xi64>, tensor<4xi64>)
    """

    name = "core.Unique"
    VERSION = 10

    @staticmethod
    def semantics(data, axis=None, *, sorted, index_element_type, count_element_type):  # noqa: A002
        array = np.asarray(data)
        axis = None if axis is None else _scalar(axis) % array.ndim
        source = array.reshape(-1) if axis is None else array
        unique, first, inverse, counts = np.unique(
            source, return_index=True, return_inverse=True, return_counts=True, axis=axis
        )
        inverse = inverse.reshape(-1)
        if not sorted:
            order = np.argsort(first, kind="stable")
            unique = np.take(unique, order, axis=0 if axis is None else axis)
            first, counts = first[order], counts[order]
            position = np.empty_like(order)
            position[order] = np.arange(order.size)
            inverse = position[inverse]
        return (
            jnp.asarray(unique),
            jnp.asarray(first.astype(index_element_type)),
            jnp.asarray(inverse.astype(index_element_type)),
            jnp.asarray(counts.astype(count_element_type)),
        )


OPS: list[type[CoreOp]] = [
    SliceOp,
    DynamicSliceOp,
    DynamicUpdateSliceOp,
    SplitOp,
    VariadicSplitOp,
    PadOp,
    TileOp,
    RangeOp,
    OneHotOp,
    TopKOp,
    CumSumOp,
    EinsumOp,
    DepthToSpaceOp,
    SpaceToDepthOp,
    ShuffleChannelsOp,
    ReverseSequenceOp,
    GatherElementsOp,
    GatherNDOp,
    ScatterNDUpdateOp,
    ScatterElementsUpdateOp,
    TriluOp,
    NonZeroOp,
    UniqueOp,
]

"""Core ops that TensorFlow models need and the other families do not declare yet: Pad,
StridedSlice, Tile, Einsum, TopK, SpaceToBatch, BatchToSpace (OpenVINO names and semantics).

Index-like operands (pads, begin/end/strides, repeats, block shapes, k) are static operands.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from mlconv.dialects.core_base import INTS, CoreOp, core_op
from mlconv.dialects.core_indexing import EinsumOp, PadOp, TileOp, TopKOp  # noqa: F401


def _ints(value) -> list[int]:
    return [int(v) for v in np.asarray(value).reshape(-1)]


def _mask(bits, rank: int) -> list[int]:
    return [*bits, *[0] * (rank - len(bits))]


def strided_slice_index(
    rank, begin, end, strides, begin_mask, end_mask, new_axis_mask, shrink_axis_mask, ellipsis_mask
) -> tuple:
    """The numpy index that OpenVINO/TF StridedSlice's specification describes."""
    n = len(begin)
    begin_mask, end_mask = _mask(begin_mask, n), _mask(end_mask, n)
    new_axis_mask, shrink_axis_mask = _mask(new_axis_mask, n), _mask(shrink_axis_mask, n)
    ellipsis_mask = _mask(ellipsis_mask, n)
    index: list = []
    for i in range(n):
        if ellipsis_mask[i]:
            index.append(Ellipsis)
        elif new_axis_mask[i]:
            index.append(None)
        elif shrink_axis_mask[i]:
            index.append(begin[i])
        else:
            index.append(
                slice(
                    None if begin_mask[i] else begin[i], None if end_mask[i] else end[i], strides[i]
                )
            )
    return tuple(index)


@core_op(
    operands=("data", "begin", "end", "?strides"),
    attributes={
        "begin_mask": INTS,
        "end_mask": INTS,
        "new_axis_mask": (INTS, ()),
        "shrink_axis_mask": (INTS, ()),
        "ellipsis_mask": (INTS, ()),
    },
    static_operands=("begin", "end", "strides"),
)
class StridedSliceOp(CoreOp):
    """numpy-style strided slicing; mask entry 1 ignores begin/end of that dim, inserts a new
    axis, takes one element (shrink) or stands for the remaining dims (ellipsis) (OpenVINO
    opset1 StridedSlice).

        %y = "core.StridedSlice"(%x, %b, %e, %s) {begin_mask = array<i64: 0>,
               end_mask = array<i64: 0>} : (tensor<10xf32>, tensor<1xi64>, tensor<1xi64>,
               tensor<1xi64>) -> tensor<4xf32>
    """

    name = "core.StridedSlice"
    VERSION = 1

    @staticmethod
    def semantics(
        data,
        begin,
        end,
        strides=None,
        *,
        begin_mask,
        end_mask,
        new_axis_mask,
        shrink_axis_mask,
        ellipsis_mask,
    ):
        begin, end = _ints(begin), _ints(end)
        strides = _ints(strides) if strides is not None else [1] * len(begin)
        index = strided_slice_index(
            data.ndim,
            begin,
            end,
            strides,
            begin_mask,
            end_mask,
            new_axis_mask,
            shrink_axis_mask,
            ellipsis_mask,
        )
        return data[index]


@core_op(
    operands=("data", "block_shape", "pads_begin", "pads_end"),
    static_operands=("block_shape", "pads_begin", "pads_end"),
)
class SpaceToBatchOp(CoreOp):
    """Zero-pad every dim, then move blocks of `block_shape` (one entry per dim, the batch's
    1) from the spatial dims into the batch (OpenVINO opset2 SpaceToBatch, NCHW or NHWC alike).

        %y = "core.SpaceToBatch"(%x, %bs, %b, %e) : (tensor<1x4x4x3xf32>, tensor<4xi64>,
               tensor<4xi64>, tensor<4xi64>) -> tensor<4x2x2x3xf32>
    """

    name = "core.SpaceToBatch"
    VERSION = 2

    @staticmethod
    def semantics(data, block_shape, pads_begin, pads_end):
        block = _ints(block_shape)
        padded = jnp.pad(data, list(zip(_ints(pads_begin), _ints(pads_end), strict=True)))
        n = padded.shape[0]
        # [N, D1/b1, b1, ..., Dk/bk, bk] -> [b1, ..., bk, N, D1/b1, ..., Dk/bk]
        split = [n]
        for size, b in zip(padded.shape[1:], block[1:], strict=True):
            split += [size // b, b]
        x = padded.reshape(split)
        rank = len(block) - 1
        order = [2 + 2 * i for i in range(rank)] + [0] + [1 + 2 * i for i in range(rank)]
        x = x.transpose(order)
        return x.reshape(
            [n * int(np.prod(block))]
            + [s // b for s, b in zip(padded.shape[1:], block[1:], strict=True)]
        )


@core_op(
    operands=("data", "block_shape", "crops_begin", "crops_end"),
    static_operands=("block_shape", "crops_begin", "crops_end"),
)
class BatchToSpaceOp(CoreOp):
    """Inverse of SpaceToBatch: move blocks from the batch back into the spatial dims, then
    crop (OpenVINO opset2 BatchToSpace).

        %y = "core.BatchToSpace"(%x, %bs, %b, %e) : (tensor<4x2x2x3xf32>, tensor<4xi64>,
               tensor<4xi64>, tensor<4xi64>) -> tensor<1x4x4x3xf32>
    """

    name = "core.BatchToSpace"
    VERSION = 2

    @staticmethod
    def semantics(data, block_shape, crops_begin, crops_end):
        block = _ints(block_shape)
        rank = len(block) - 1
        blocks = int(np.prod(block))
        n = data.shape[0] // blocks
        x = data.reshape([*block[1:], n, *data.shape[1:]])
        # [b1..bk, N, d1..dk] -> [N, d1, b1, ..., dk, bk]
        order = [rank]
        for i in range(rank):
            order += [rank + 1 + i, i]
        x = x.transpose(order)
        x = x.reshape([n] + [d * b for d, b in zip(data.shape[1:], block[1:], strict=True)])
        begin, end = _ints(crops_begin), _ints(crops_end)
        return x[
            tuple(slice(b, x.shape[i] - e) for i, (b, e) in enumerate(zip(begin, end, strict=True)))
        ]


# Pad, Tile, Einsum and TopK are the indexing family's (core_indexing.py); the TF lowerings
# reach them through this module too.

OPS: list[type[CoreOp]] = [
    StridedSliceOp,
    SpaceToBatchOp,
    BatchToSpaceOp,
]

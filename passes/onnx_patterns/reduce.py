"""ONNX reductions: ReduceX, ArgMax/ArgMin.

ReduceX takes its axes as an attribute up to opset 11/13/18 (by op) and as an input after.
An absent or empty axes list reduces over every axis unless `noop_with_empty_axes`. When
the axes input is not a constant (a model input bound at call time), "all axes if empty" is
built from ShapeOf(axes) so that it folds once the value is known. ReduceLogSum,
ReduceLogSumExp and ReduceSumSquare have no OpenVINO op and are composed from ReduceSum.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import i64

from mlconv.dialects import core_elementwise as ce
from mlconv.dialects import core_indexing as ci
from mlconv.dialects import core_tensor as ct
from mlconv.passes.onnx_patterns import lowering
from mlconv.passes.onnx_patterns.indexing import with_element_type


def _squared(b, x):
    return b(ce.MultiplyOp, x, x)


def _exp(b, x):
    return b(ce.ExpOp, x)


def _log(b, x):
    return b(ce.LogOp, x)


# op type -> (core reduction, transform before, transform after, attr-axes versions,
# input-axes versions)
REDUCTIONS = {
    "ReduceSum": (ct.ReduceSumOp, None, None, (1, 11), (13,)),
    "ReduceMean": (ct.ReduceMeanOp, None, None, (1, 11, 13), (18,)),
    "ReduceMax": (ct.ReduceMaxOp, None, None, (1, 11, 12, 13), (18, 20)),
    "ReduceMin": (ct.ReduceMinOp, None, None, (1, 11, 12, 13), (18, 20)),
    "ReduceProd": (ct.ReduceProdOp, None, None, (1, 11, 13), (18,)),
    "ReduceL1": (ct.ReduceL1Op, None, None, (1, 11, 13), (18,)),
    "ReduceL2": (ct.ReduceL2Op, None, None, (1, 11, 13), (18,)),
    "ReduceSumSquare": (ct.ReduceSumOp, _squared, None, (1, 11, 13), (18,)),
    "ReduceLogSum": (ct.ReduceSumOp, None, _log, (1, 11, 13), (18, 28)),
    "ReduceLogSumExp": (ct.ReduceSumOp, _exp, _log, (1, 11, 13), (18, 28)),
}


# Ranks beyond this are not expected; the slice below takes the first rank(x) of them.
_MAX_RANK = 64


def every_axis(b, x):
    """range(rank(x)) as a 1-D i64 value. Without a known rank (an expanded function body
    before shape inference) it is sliced from an iota by ShapeOf(ShapeOf(x)), which folds
    once the rank is known."""
    rank = b.rank(x)
    if rank is not None:
        return b.ints(list(range(rank)))
    rank_value = b(ct.ShapeOfOp, b(ct.ShapeOfOp, x))
    return b(ci.SliceOp, b.ints(list(range(_MAX_RANK))), b.ints([0]), rank_value, b.ints([1]))


def _all_axes_if_empty(b, axes, every):
    """`axes`, or `every` axis when `axes` turns out empty: Concat(axes, every[:n]) with
    n = len(every) if size(axes) == 0 else 0, from the shape of `axes` only."""
    size = b(ct.ShapeOfOp, axes)
    empty = b(ce.EqualOp, size, b.ints([0]))
    count = b(ct.SelectOp, empty, b(ct.ShapeOfOp, every), b.ints([0]))
    head = b(ci.SliceOp, every, b.ints([0]), count, b.ints([1]))
    return b(ct.ConcatOp, [b(ct.ConvertOp, axes, destination_type=i64), head], axis=0)


def reduction_axes(op, b, x):
    """The axes value to reduce `x` over, or None for "no reduction" (noop_with_empty_axes)."""
    attribute = op.onnx_attr("axes")
    axes = (
        b.ints(attribute)
        if attribute is not None
        else (b.input(op, "axes") if "axes" in op.INPUTS else None)
    )
    noop = b.attr(op, "noop_with_empty_axes", 0)
    known = b.constant(axes) if axes is not None else None
    if axes is None or (known is not None and known.size == 0):
        return None if noop else every_axis(b, x)
    if known is None and not noop:
        return _all_axes_if_empty(b, axes, every_axis(b, x))
    return axes


def _reduction(core_class, before, after):
    def pattern(op, b):
        x = op.operands[0]
        axes = reduction_axes(op, b, x)
        if axes is None:
            return [x]
        value = before(b, x) if before else x
        value = b(core_class, value, axes, keep_dims=bool(b.attr(op, "keepdims", 1)))
        return [after(b, value) if after else value]

    return pattern


for _name, (_core, _before, _after, _attr_versions, _input_versions) in REDUCTIONS.items():
    lowering(_name, *_attr_versions, *_input_versions)(_reduction(_core, _before, _after))


def _arg_extreme(mode: str):
    """ArgMax/ArgMin as TopK(k=1) indices; `select_last_index` searches the reversed axis
    (TopK keeps the first of equal values) and maps the index back."""

    def pattern(op, b):
        x = op.operands[0]
        rank = b.rank(x)
        if rank is None:
            raise b.fail("needs the rank of its input")
        axis = b.attr(op, "axis", 0) % max(rank, 1)
        last = bool(b.attr(op, "select_last_index", 0))
        size = x.type.get_shape()[axis]
        if last and size < 0:
            raise b.fail("select_last_index needs a static size of the reduced axis")
        data = (
            b(
                ci.SliceOp,
                x,
                b.ints([-1]),
                b.ints([np.iinfo(np.int64).min]),
                b.ints([-1]),
                b.ints([axis]),
            )
            if last
            else x
        )
        _, indices = b(
            ci.TopKOp, data, b.ints(1), axis=axis, mode=mode, sort="none", index_element_type=i64
        )
        if last:
            indices = b(ce.SubtractOp, b.ints(size - 1), indices)
        if not b.attr(op, "keepdims", 1):
            indices = b(ct.SqueezeOp, indices, b.ints([axis]))
        return [with_element_type(indices, i64)]

    return pattern


lowering("ArgMax", 1, 11, 12, 13)(_arg_extreme("max"))
lowering("ArgMin", 1, 11, 12, 13)(_arg_extreme("min"))

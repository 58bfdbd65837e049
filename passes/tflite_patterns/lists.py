"""TensorList writes as TFLiteConverter lowers them: one DYNAMIC_UPDATE_SLICE.

Keras RNNs that the converter does not fuse become a WHILE whose body writes step t's output
into the sequence buffer L (TensorListSetItem) as

    CONCATENATION(SLICE(L, 0, [t, -1, ...]), item, SLICE(L, [t + 1, 0, ...], [-1, d1, ...]))

The two SLICEs have value-dependent shapes (t rows, n - t - 1 rows), which no static program
carries through a loop; their concatenation has L's static shape. `fold_list_writes` rewrites
each such concatenation, before the lowering, into DYNAMIC_UPDATE_SLICE(L, item, start) with
start = the second SLICE's begin minus the item's rows along the axis, and erases the SLICEs
left unused.

Why it is the same value: the concatenation's static shape equals L's, so on every other axis
both SLICEs span L whole (hence begin there at 0). The first begins at 0 and takes p rows; the
second runs to the end of L (its constant size is -1 on the axis), so with k item rows it
takes n - p - k rows and begins at p + k. The result is L with rows p .. p + k - 1 replaced.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, StringAttr, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from mlconv.dense import numpy_dtype, to_dense_attr
from mlconv.dialects import tflite
from mlconv.dialects.core_base import constant_value
from mlconv.dialects.core_tensor import ConstantOp


def _static(value: SSAValue) -> tuple[int, ...] | None:
    t = value.type
    if isinstance(t, TensorType) and all(d >= 0 for d in t.get_shape()):
        return tuple(t.get_shape())
    return None


def _slice_of(value: SSAValue) -> tflite.SliceOp | None:
    owner = value.owner
    return owner if isinstance(owner, tflite.SliceOp) else None


def _write(concat: Operation) -> tuple[SSAValue, SSAValue, SSAValue, int, int] | None:
    """(L, item, second begin, axis, item rows) when `concat` is a list write, else None."""
    if len(concat.operands) != 3 or concat.options()["fused_activation_function"] != "NONE":
        return None
    head, item, tail = (_slice_of(v) for v in concat.operands)
    if head is None or tail is None or _slice_of(concat.operands[1]) is not None:
        return None
    source = head.operands[0]
    shape, item_shape = _static(source), _static(concat.operands[1])
    if tail.operands[0] is not source or shape is None or item_shape is None:
        return None
    if _static(concat.results[0]) != shape or len(item_shape) != len(shape):
        return None
    axis = int(concat.options()["axis"]) % len(shape)
    head_begin = constant_value(head.operands[1])
    tail_size = constant_value(tail.operands[2])
    if head_begin is None or tail_size is None or np.any(np.asarray(head_begin) != 0):
        return None
    if int(np.asarray(tail_size).reshape(-1)[axis]) != -1:
        return None
    if any(d != s for i, (d, s) in enumerate(zip(item_shape, shape, strict=True)) if i != axis):
        return None
    return source, concat.operands[1], tail.operands[1], axis, item_shape[axis]


def _constant(array: np.ndarray, before: Operation) -> SSAValue:
    attr = to_dense_attr(array)
    op = ConstantOp.create(attributes={"value": attr}, result_types=[attr.type])
    Rewriter.insert_op(op, InsertPoint.before(before))
    return op.results[0]


def fold_list_writes(function: func.FuncOp) -> int:
    """Rewrite every list-write concatenation of `function` (its regions too); the count."""
    count = 0
    for concat in [op for op in function.walk() if isinstance(op, tflite.ConcatenationOp)]:
        found = _write(concat)
        if found is None:
            continue
        source, item, begin, axis, rows = found
        shift = np.zeros(begin.type.get_shape(), numpy_dtype(begin.type.get_element_type()))
        shift[axis] = rows
        version = IntegerAttr(1, 32)
        start = tflite.SubOp.create(
            operands=[begin, _constant(shift, concat)],
            result_types=[begin.type],
            attributes={"version": version, "fused_activation_function": StringAttr("NONE")},
        )
        update = tflite.DynamicUpdateSliceOp.create(
            operands=[source, item, start.results[0]],
            result_types=[concat.results[0].type],
            attributes={"version": version},
        )
        update.location = concat.location
        start.location = concat.location
        Rewriter.insert_op([start, update], InsertPoint.before(concat))
        slices = [o.owner for o in (concat.operands[0], concat.operands[2])]
        concat.results[0].replace_all_uses_with(update.results[0])
        Rewriter.erase_op(concat)
        for op in slices:
            if not op.results[0].uses:
                Rewriter.erase_op(op)
        count += 1
    return count

"""Tensor and shape ONNX ops: constants, reshapes, transposes, concats, squeezes, gathers, casts,
Expand, Size. Reductions are in reduce.py, slicing/padding/scatter/... in indexing.py."""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr

from mlconv.dialects import core_indexing as ci
from mlconv.dialects import core_tensor as ct
from mlconv.passes.onnx_patterns import lowering

_CONSTANT_ATTRIBUTES = {
    "value_float": np.float32,
    "value_floats": np.float32,
    "value_int": np.int64,
    "value_ints": np.int64,
}


@lowering("Constant", 1, 9, 11, 12, 13, 19, 21, 23, 24, 25)
def constant(op, b):
    dense = op.attributes.get("value")
    if isinstance(dense, DenseIntOrFPElementsAttr):  # weights: the same bytes, not a copy
        constant = ct.ConstantOp.create(attributes={"value": dense}, result_types=[dense.type])
        return [b.insert(constant).results[0]]
    value = op.onnx_attr("value")
    if value is None:
        for name, dtype in _CONSTANT_ATTRIBUTES.items():
            if op.onnx_attr(name) is not None:
                value = np.asarray(op.onnx_attr(name), dtype)
                break
    if value is None:
        raise b.fail("Constant without a tensor, float or int value is not supported")
    return [b.const(value)]


# A ConstantOfShape of a constant shape up to this many elements is made a constant here (what
# core-fold-constants would fold it to): the light models of the onnx wheel build every weight
# so (DenseNet-121: 836), and a Broadcast per weight shape was traced to type it, then folded.
_FILL_LIMIT = 1 << 27


@lowering("ConstantOfShape", 9, 20, 21, 23, 24, 25)
def constant_of_shape(op, b):
    value = op.onnx_attr("value")
    scalar = np.zeros((), np.float32) if value is None else np.asarray(value).reshape(())
    shape = b.constant(op.operands[0])
    if (
        shape is not None
        and shape.ndim == 1
        and np.all(shape >= 0)
        and np.prod(shape, dtype=np.int64) <= _FILL_LIMIT
    ):
        return [b.const(np.full(tuple(int(d) for d in shape), scalar, scalar.dtype))]
    return [b(ct.BroadcastOp, b.const(scalar), op.operands[0])]


@lowering("Identity", 1, 13, 14, 16, 19, 21, 23, 24, 25)
def identity(op, b):
    return [op.operands[0]]


@lowering("OptionalGetElement", 15, 18, 28)
def optional_get_element(op, b):
    """On a tensor (optional values are refused at import) the element is the tensor itself."""
    return [op.operands[0]]


@lowering("OptionalHasElement", 15, 18, 28)
def optional_has_element(op, b):
    """True for a tensor input, false without an input (the empty optional): optional-typed
    values are refused at import, so that is every case that reaches here."""
    return [b.const(np.asarray(bool(op.operands)))]


@lowering("Reshape", 1)
def reshape_v1(op, b):
    if len(op.operands) > 1:  # onnx-normalize moved the shape to an input
        return [b(ct.ReshapeOp, *op.operands, special_zero=True)]
    return [b(ct.ReshapeOp, op.operands[0], b.ints(op.onnx_attr("shape")), special_zero=True)]


@lowering("Reshape", 5, 13, 14, 19, 21, 23, 24, 25)
def reshape(op, b):
    data, shape = op.operands
    return [b(ct.ReshapeOp, data, shape, special_zero=not b.attr(op, "allowzero", 0))]


@lowering("Flatten", 1, 9, 11, 13, 21, 23, 24, 25)
def flatten(op, b):
    x = op.operands[0]
    axis = b.attr(op, "axis", 1)
    rank = b.rank(x)
    if rank is None:
        raise b.fail("needs the rank of its input")
    axis %= max(rank, 1) if axis < 0 else rank + 1
    shape = x.type.get_shape()
    if all(d >= 0 for d in shape):
        outer = int(np.prod(shape[:axis], dtype=np.int64))
        return [b(ct.ReshapeOp, x, b.ints([outer, -1 if outer else int(np.prod(shape[axis:]))]))]
    if all(d >= 0 for d in shape[:axis]):
        outer = int(np.prod(shape[:axis], dtype=np.int64))
        return [b(ct.ReshapeOp, x, b.ints([outer, -1]))]
    if axis == 1:  # a dynamic batch: copy it (special_zero), flatten the rest
        return [b(ct.ReshapeOp, x, b.ints([0, -1]), special_zero=True)]
    # Dynamic leading dims: ShapeOf -> gather the leading dims -> ReduceProd -> Concat(-1).
    dims = b(ct.GatherOp, b(ct.ShapeOfOp, x), b.ints(list(range(axis))), b.ints(0))
    outer = b(ct.ReduceProdOp, dims, b.ints([0]), keep_dims=True)
    target = b(ct.ConcatOp, [outer, b.ints([-1])], axis=0)
    return [b(ct.ReshapeOp, x, target)]


@lowering("Transpose", 1, 13, 21, 23, 24, 25)
def transpose(op, b):
    x = op.operands[0]
    perm = op.onnx_attr("perm")
    if perm is None and b.rank(x) is None:
        # core.Transpose with an empty order reverses the dims, ONNX's default, at any rank.
        return [b(ct.TransposeOp, x, b.const(np.zeros(0, np.int64)))]
    if perm is None:
        rank = b.rank(x)
        perm = list(reversed(range(rank)))
    return [b(ct.TransposeOp, x, b.ints(perm))]


@lowering("Concat", 1, 4, 11, 13)
def concat(op, b):
    return [b(ct.ConcatOp, list(op.operands), axis=b.attr(op, "axis", 1))]


def _axes(op, b, name="axes"):
    """Axes from the attribute (old opsets) or the second input (new opsets)."""
    attribute = op.onnx_attr(name)
    if attribute is not None:
        return b.ints(attribute)
    return b.input(op, name) if name in op.INPUTS else None


@lowering("Unsqueeze", 1, 11, 13, 21, 23, 24, 25)
def unsqueeze(op, b):
    return [b(ct.UnsqueezeOp, op.operands[0], _axes(op, b))]


@lowering("Squeeze", 1, 11, 13, 21, 23, 24, 25)
def squeeze(op, b):
    return [b(ct.SqueezeOp, op.operands[0], _axes(op, b))]


@lowering("Shape", 1, 13, 15, 19, 21, 23, 24, 25)
def shape(op, b):
    x = op.operands[0]
    result = b(ct.ShapeOfOp, x)
    start, end = b.attr(op, "start", 0), op.onnx_attr("end")
    if start == 0 and end is None:
        return [result]
    # Slice clamps start/end to the rank as ONNX does, so the rank need not be known yet.
    stop = np.iinfo(np.int64).max if end is None else end
    return [b(ci.SliceOp, result, b.ints([start]), b.ints([stop]), b.ints([1]))]


@lowering("Gather", 1, 11, 13)
def gather(op, b):
    data, indices = op.operands
    return [b(ct.GatherOp, data, indices, b.ints(b.attr(op, "axis", 0)))]


@lowering("Expand", 8, 13)
def expand(op, b):
    data, shape = op.operands
    return [b(ct.BroadcastOp, data, shape, mode="bidirectional")]


@lowering("Size", 1, 13, 19, 21, 23, 24, 25)
def size(op, b):
    shape = b(ct.ShapeOfOp, op.operands[0])
    return [b(ct.ReduceProdOp, shape, b.ints([0]), keep_dims=False)]

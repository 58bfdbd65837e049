"""TensorList ops (the TensorArrays of Keras RNNs' while loops) as tensors.

A list of n elements of shape E is the tensor [n, *E]: TensorListFromTensor and
TensorListStack are the tensor itself, TensorListGetItem a gather of one row,
TensorListSetItem a ScatterNDUpdate of one row, TensorListReserve zeros [n, *E].

Reserve's element shape may leave dims unknown (-1: the batch of a Keras model with a `None`
batch). They are taken from the loop that fills the list: the list is a carried value of a
While whose body sets items of a type that another carried value has (the RNN's state), and
that value's shape is the element shape. A list whose element shape cannot be found so is
refused in one line.
"""

from __future__ import annotations

import numpy as np

from mlconv.dense import element_type, numpy_dtype
from mlconv.dialects import core_indexing as ci
from mlconv.dialects import core_tensor as ct
from mlconv.dialects import tf as tf_dialect
from mlconv.passes.lowering.builder import Builder
from mlconv.passes.tf_patterns import lowering


def is_list(value) -> bool:
    element = getattr(value.type, "element_type", None)
    return isinstance(element, tf_dialect.VariantType)


@lowering("TensorListFromTensor", "TensorListStack")
def as_tensor(op, b):
    return [b.input(op, 0)]


@lowering("TensorListGetItem")
def get_item(op, b):
    return [b(ct.GatherOp, b.input(op, 0), b.input(op, 1), b.ints(0))]


@lowering("TensorListSetItem")
def set_item(op, b):
    index = b(ct.ReshapeOp, b.input(op, 1), b.ints([1, 1]), special_zero=False)
    item = b(ct.UnsqueezeOp, b.input(op, 2), b.ints([0]))
    return [b(ci.ScatterNDUpdateOp, b.input(op, 0), index, item)]


@lowering("TensorListLength")
def length(op, b):
    shape = b(ct.ShapeOfOp, b.input(op, 0), output_type=op.results[0].type.get_element_type())
    return [b(ct.GatherOp, shape, b.ints(0), b.ints(0))]


def _users(value):
    """The ops using `value`, through Identity ops."""
    for use in list(value.uses):
        if use.operation.name == "tf.Identity":
            yield from _users(use.operation.results[0])
        else:
            yield use.operation, use.index


def _element_shape_source(op):
    """(the While, the carried operand whose shape the list's elements have), or None."""
    for user, index in _users(op.results[0]):
        if user.name not in ("tf.While", "tf.StatelessWhile"):
            continue
        body = user.regions[1].block
        for item_user, position in _users(body.args[index]):
            if item_user.name != "tf.TensorListSetItem" or position != 0:
                continue
            item_type = item_user.operands[2].type
            for other, arg in zip(user.operands, body.args, strict=True):
                if arg is not body.args[index] and arg.type == item_type and not is_list(other):
                    return user, other
    return None


@lowering("TensorListReserve")
def reserve(op, b):
    element_shape = b.static(b.input(op, 0), "the element shape").astype(np.int64).reshape(-1)
    zero = b.const(np.zeros((), numpy_dtype(op.attr_or_default("element_dtype"))))
    if (element_shape >= 0).all():
        at, dims = b, b.ints(element_shape)
    else:
        found = _element_shape_source(op)
        if found is None:
            raise b.fail(
                "a TensorList with unknown element dims needs a While loop setting items of "
                "the shape of another carried value"
            )
        loop, source = found
        at = Builder(loop)  # before the While, where the source value is defined
        dims = at(ct.ShapeOfOp, source)
    count = at(ct.ReshapeOp, b.input(op, 1), at.ints([1]), special_zero=False)
    count = at(ct.ConvertOp, count, destination_type=element_type(np.int64))
    shape = at(ct.ConcatOp, [count, dims], axis=0)
    return [at(ct.BroadcastOp, zero, shape, mode="numpy")]

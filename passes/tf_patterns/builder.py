"""TfReader: how a TF lowering pattern reads its op (composed into `lowering.Builder`).

TF operands are addressed by their OpDef input index (`b.input(op, 1)` is Conv2D's filter);
attributes are decoded to Python values with TensorFlow's defaults filled in from the OpDef.
`to_nchw`/`to_nhwc` wrap NHWC data in core.Transpose ops; `transpose` folds a constant
operand at once, so HWIO weights arrive in the IR already OIHW.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ArrayAttr, FloatAttr, IntegerAttr, StringAttr
from xdsl.ir import Attribute, Operation, SSAValue, TypeAttribute

from mlconv.dense import numpy_dtype
from mlconv.dialects import core_tensor as ct
from mlconv.passes.lowering.builder import Builder, SlotReader

# NHWC <-> NCHW for 4-D data; the 5-D (NDHWC) forms for 3-D convolutions.
TO_NCHW = {4: (0, 3, 1, 2), 5: (0, 4, 1, 2, 3)}
TO_NHWC = {4: (0, 2, 3, 1), 5: (0, 2, 3, 4, 1)}


def decode(attr: Attribute | None) -> Any:
    """A TF attribute as a Python value (ints, floats, bools, strings, numpy dtypes, lists)."""
    if attr is None:
        return None
    if isinstance(attr, IntegerAttr):
        value = attr.value.data
        return bool(value) if attr.type.width.data == 1 else value
    if isinstance(attr, FloatAttr):
        return attr.value.data
    if isinstance(attr, StringAttr):
        return attr.data
    if isinstance(attr, ArrayAttr):
        return [decode(a) for a in attr.data]
    if isinstance(attr, TypeAttribute):
        return numpy_dtype(attr)
    return attr


class TfReader(SlotReader):
    """TF operands by OpDef input index, attributes with TensorFlow's defaults, NHWC helpers."""

    def attr(self, op: Any, name: str, default: Any = None) -> Any:
        """The node's attribute, else TensorFlow's default, else `default`."""
        value = decode(op.attr_or_default(name))
        return default if value is None else value

    def static(self, value: SSAValue, what: str) -> np.ndarray:
        """The constant value of an operand that must be known at compile time."""
        array = self.b.constant(value)
        if array is None:
            raise self.b.fail(f"{what} must be a constant")
        return array

    # --- layout ------------------------------------------------------------------------------
    def transpose(self, value: SSAValue, order: Sequence[int]) -> SSAValue:
        if list(order) == list(range(len(order))):
            return value
        array = self.b.constant(value)
        if array is not None:
            return self.b.const(np.ascontiguousarray(np.transpose(array, order)))
        return self.b(ct.TransposeOp, value, self.b.ints(list(order)))

    def to_nchw(self, value: SSAValue, data_format: str) -> SSAValue:
        """`value` in NC... layout (a no-op for data already NCHW/NCDHW)."""
        if data_format.startswith("NC"):
            return value
        return self.transpose(value, TO_NCHW[len(data_format)])

    def to_nhwc(self, value: SSAValue, data_format: str) -> SSAValue:
        if data_format.startswith("NC"):
            return value
        return self.transpose(value, TO_NHWC[len(data_format)])

    @staticmethod
    def spatial(values: Sequence[int], data_format: str) -> list[int]:
        """The spatial entries of a per-dim list (strides, dilations, ksize) in `data_format`."""
        if data_format.startswith("NC"):
            return list(values[2:])
        return list(values[1:-1])


def tf_builder(op: Operation) -> Builder:
    """The builder a TF pattern gets: core ops before `op`, TF operands read by index."""
    return Builder(op, TfReader)

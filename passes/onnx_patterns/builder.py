"""CoreBuilder: how a lowering pattern creates core ops.

Ops are inserted before the ONNX op being lowered, at its location, with result types derived
from each core op's semantics (dynamic dims stay `?`). A shape operand that is not a constant
but computed from ShapeOf and small arithmetic is evaluated with probe sizes for the dynamic
dims (`core_semantics.partial_value`); only a shape that depends on data leaves a result
unranked (or ranked with `?` dims where its length gives the rank). `refine` then gives each
value that replaces a framework result at least the framework's type (type knowledge never
shrinks through a lowering).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import Float32Type, TensorType, UnrankedTensorType
from xdsl.ir import Attribute, BlockArgument, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from mlconv.dense import numpy_dtype
from mlconv.dialects.core_base import CoreOp, constant_value
from mlconv.dialects.core_tensor import ConstantOp
from mlconv.dialects.segments import operand_groups
from mlconv.errors import PassFailure
from mlconv.passes.core_semantics import infer_result_types, meet_types


class CoreBuilder:
    def __init__(self, anchor: Operation):
        self.anchor = anchor

    # --- reading the ONNX op ------------------------------------------------------------------
    def input(self, op: Any, name: str) -> SSAValue | None:
        """The operand in ONNX input slot `name` (None when absent)."""
        values = self.inputs(op, name)
        return values[0] if values else None

    def inputs(self, op: Any, name: str) -> list[SSAValue]:
        """All operands of slot `name` (a variadic slot may have many)."""
        slot = op.INPUTS.index(name)
        return list(operand_groups(op)[slot])

    def attr(self, op: Any, name: str, default: Any = None) -> Any:
        """The attribute's value when the node sets it, else `default`. Patterns give the
        default of the versions they handle: the dialect's defaults are the newest schema's,
        and some changed (Softmax's axis was 1 before opset 13, -1 since)."""
        if name not in op.attributes:
            return default
        return op.onnx_attr(name)

    def fail(self, message: str) -> PassFailure:
        return PassFailure.at(self.anchor, message)

    # --- building core ops --------------------------------------------------------------------
    def insert(self, op: Operation) -> Operation:
        op.location = self.anchor.location
        Rewriter.insert_op(op, InsertPoint.before(self.anchor))
        return op

    def __call__(
        self,
        op_class: type[CoreOp],
        *operands: SSAValue | Sequence[SSAValue] | None,
        results: int | None = None,
        **attributes: Any,
    ) -> Any:
        """Create `op_class(operands, attributes)`; returns its result, or the list of results
        when the op has several (or `results` is given for a variadic one)."""
        count = results if results is not None else len(op_class.RESULTS)
        first = next(
            (v for v in _flatten(operands) if isinstance(v.type, TensorType | UnrankedTensorType)),
            None,
        )
        element = first.type.get_element_type() if first is not None else Float32Type()
        placeholder = [UnrankedTensorType(element)] * count
        op = op_class.build_op(list(operands), placeholder, **attributes)
        inferred = infer_result_types(op)
        if inferred is not None and len(inferred) == count:
            for result, new_type in zip(list(op.results), inferred, strict=True):
                Rewriter.replace_value_with_new_type(result, new_type)
        self.insert(op)
        results_list = list(op.results)
        return results_list[0] if results is None and count == 1 else results_list

    def refine(self, value: SSAValue, known: Attribute) -> SSAValue:
        """`value` typed with what both its type and `known` (the framework result's type it
        replaces) say: a core result never knows less than the framework op did. A rank or a
        static dim the two disagree on is an error at the op's location. Block arguments and
        values of other types are left alone."""
        if isinstance(value, BlockArgument) or not isinstance(
            value.type, TensorType | UnrankedTensorType
        ):
            return value
        try:
            refined = meet_types(value.type, known)
        except ValueError as error:
            raise self.fail(
                f"the lowering gives {value.type}, inconsistent with the result type: {error}"
            ) from None
        if refined == value.type:
            return value
        return Rewriter.replace_value_with_new_type(value, refined)

    def const(self, value: Any, dtype: Any = None) -> SSAValue:
        array = np.asarray(value, dtype=dtype)
        return self.insert(ConstantOp.from_numpy(array)).results[0]

    def ints(self, values: Sequence[int] | int) -> SSAValue:
        """A 1-D (or, for an int, 0-D) i64 constant: shapes, axes, pads."""
        return self.const(values, np.int64)

    @staticmethod
    def constant(value: SSAValue | None) -> np.ndarray | None:
        return None if value is None else constant_value(value)

    @staticmethod
    def rank(value: SSAValue) -> int | None:
        return len(value.type.get_shape()) if isinstance(value.type, TensorType) else None

    @staticmethod
    def dtype(value: SSAValue) -> np.dtype:
        return numpy_dtype(value.type.get_element_type())

    @staticmethod
    def result_type(op: Any, index: int = 0) -> Attribute:
        return op.results[index].type


def _flatten(values: Sequence[Any]) -> list[SSAValue]:
    flat: list[SSAValue] = []
    for value in values:
        if value is None:
            continue
        if isinstance(value, SSAValue):
            flat.append(value)
        else:
            flat.extend(value)
    return flat

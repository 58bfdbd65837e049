"""Builder: how a lowering pattern creates core ops, whatever framework it reads.

`b(OpClass, *operands, **attributes)` inserts the op before the op being lowered (the anchor),
at its location, with result types derived from the op's semantics (dynamic dims stay `?`; a
shape operand computed from ShapeOf and small arithmetic is evaluated with probe sizes,
`mlconv.semantics.shapes.partial_value`). With `fold=True` an op whose operands are all constants is
folded at once, through numpy for the weight arithmetic (dequantize, permute, reshape) and
through the shared semantics evaluator for the rest. `refine` gives each value that replaces a
framework result at least the framework's type (type knowledge never shrinks).

What is framework-specific (how operands are addressed, how attributes decode, layout and
quantization helpers) is a small *reader* composed in: `Builder(op, OnnxReader)` answers
`b.input(op, "X")` from the reader, built with the builder it serves.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import Float32Type, TensorType, UnrankedTensorType
from xdsl.ir import Attribute, BlockArgument, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from mlconv.dense import numpy_dtype
from mlconv.dialects import core
from mlconv.dialects.core_base import CoreOp, constant_value
from mlconv.dialects.core_tensor import ConstantOp, reshape_target
from mlconv.dialects.segments import operand_groups
from mlconv.errors import PassFailure
from mlconv.semantics.shapes import infer_result_types, meet_types
from mlconv.semantics.tracing import evaluate


def insert_with_regions(
    b: Any,
    core_class: type[CoreOp],
    operands: Sequence[Any],
    result_types: Sequence[Attribute],
    attributes: dict[str, Any],
    regions: Sequence[Any],
) -> list[SSAValue]:
    """A core control op (`core_class` with `regions`) inserted by `b`; its results typed by its
    semantics where the regions can be evaluated already, else `result_types`."""
    encoded = {k: core_class.ATTRIBUTES[k].encode(v) for k, v in attributes.items()}
    built = core_class.build(
        operands=operands, result_types=[result_types], attributes=encoded, regions=regions
    )
    inferred = infer_result_types(built)
    if inferred is not None and len(inferred) == len(built.results):
        for result, new_type in zip(list(built.results), inferred, strict=True):
            Rewriter.replace_value_with_new_type(result, new_type)
    b.insert(built)
    return list(built.results)


class Builder:
    """Creates (or folds) core ops before `anchor`; framework readers are composed in."""

    def __init__(
        self,
        anchor: Operation,
        reader: Callable[[Builder], Any] | None = None,
        *,
        fold: bool = False,
    ):
        self.anchor = anchor
        self.fold = fold
        self.reader = reader(self) if reader is not None else None

    def __getattr__(self, name: str) -> Any:
        reader = self.__dict__.get("reader")
        if reader is None or name.startswith("__"):
            raise AttributeError(name)
        return getattr(reader, name)

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
        if self.fold:
            folded = _fold_numpy(self, op_class, operands, attributes)
            if folded is not None:
                return folded
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
        values = list(op.results)
        if self.fold and all(constant_value(v) is not None for v in op.operands):
            values = _fold_evaluate(op, values)
        return values[0] if results is None and count == 1 else values

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


# --- folding (fold=True) --------------------------------------------------------------------------
def _reshape(data: np.ndarray, shape: np.ndarray, special_zero: bool = False) -> np.ndarray:
    return data.reshape(reshape_target(data.shape, shape, special_zero))


def _transpose(data: np.ndarray, order: np.ndarray) -> np.ndarray:
    return np.transpose(data, [int(a) for a in order.reshape(-1)] or None)


def _convert(data: np.ndarray, destination_type: Any) -> np.ndarray:
    dtype = numpy_dtype(destination_type)
    return data != 0 if dtype == np.bool_ else data.astype(dtype)


_NUMPY_FOLDS: dict[type, Any] = {
    core.AddOp: np.add,
    core.SubtractOp: np.subtract,
    core.MultiplyOp: np.multiply,
    core.ReshapeOp: _reshape,
    core.TransposeOp: _transpose,
    core.ConvertOp: _convert,
}


def _fold_numpy(
    b: Builder, op_class: type[CoreOp], operands: tuple[Any, ...], attributes: dict[str, Any]
) -> SSAValue | None:
    """Weights (dequantize, OHWI -> OIHW, reshapes) fold in numpy: the same IEEE f32 arithmetic
    as the op's semantics, without one XLA compilation per weight shape."""
    fold = _NUMPY_FOLDS.get(op_class)
    if fold is None or not all(isinstance(v, SSAValue) for v in operands):
        return None
    arrays = [constant_value(v) for v in operands]
    if any(a is None for a in arrays):
        return None
    value = np.asarray(fold(*arrays, **attributes))
    if value.dtype != np.result_type(*arrays) and op_class is not core.ConvertOp:
        return None  # leave type promotion questions to the op's semantics
    return b.insert(ConstantOp.from_numpy(value)).results[0]


def _fold_evaluate(op: Operation, values: list[SSAValue]) -> list[SSAValue]:
    """`op`, all of whose operands are constants, replaced by constants of its value."""
    folded = evaluate(op)
    if folded is None:
        return values
    constants = [ConstantOp.from_numpy(np.asarray(v)) for v in folded]
    for constant in constants:
        constant.location = op.location
    Rewriter.replace_op(op, constants, [c.output for c in constants])
    return [c.output for c in constants]


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


class SlotReader:
    """The base of a framework's reader (composed into `Builder`): operands by input slot,
    each slot one operand group of the op; `slot(op, key)` turns the framework's key (ONNX's
    input name, TF's OpDef input index) into the group's index."""

    def __init__(self, b: Builder):
        self.b = b

    def slot(self, op: Any, key: Any) -> int:
        return key

    def inputs(self, op: Any, key: Any) -> list[SSAValue]:
        """All operands of the slot (a variadic slot may have many)."""
        return list(operand_groups(op)[self.slot(op, key)])

    def input(self, op: Any, key: Any) -> SSAValue | None:
        """The slot's operand (None when absent)."""
        values = self.inputs(op, key)
        return values[0] if values else None

"""A core op's `semantics` bound to the op: its attributes (and, for ops with bodies, the body
runner) as keywords, its static operands (shapes, axes, pads) as numpy values, and the dynamic
operands left as the arguments of the returned function. Tracing, folding, shape inference and
the body runner all call `semantics` through `bound_semantics`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from xdsl.ir import SSAValue

from mlconv.dialects.core_base import CoreOp, constant_value


def semantics_attributes(op: CoreOp) -> dict[str, Any]:
    """The keyword arguments of `type(op).semantics`: the op's attribute values and, for an op
    with bodies (`BODIES`: core.If/Loop/Scan), the body runner `run_block`."""
    values = op.attribute_values()
    if getattr(op, "BODIES", ()):
        from mlconv.semantics.bodies import run_block  # bodies call back into this module

        values["run_block"] = run_block
    return values


class StaticOperandMissing(Exception):
    """A static operand (shape, axes, ...) is not a constant."""

    def __init__(self, operand: str):
        super().__init__(operand)
        self.operand = operand


def bound_semantics(
    op: CoreOp, statics: dict[str, np.ndarray] | None = None
) -> tuple[Callable[..., Any], list[SSAValue]]:
    """`semantics` with attributes and static operands bound, and the remaining (dynamic) SSA
    operands in the order the returned function takes them. `statics` gives values of static
    operands (by name) that are not constants in the IR (`shapes.partial_value`, a body's captured constants)."""
    groups = op.operand_groups()
    names = [spec.lstrip("*?") for spec in op.OPERANDS]
    layout: list[tuple[str, Any]] = []  # ("static", value) | ("dynamic", None) | ("absent", None)
    dynamic: list[SSAValue] = []
    for spec, name, values in zip(op.OPERANDS, names, groups, strict=True):
        if name in op.STATIC_OPERANDS:
            if not values:
                layout.append(("absent", None))
                continue
            value = constant_value(values[0])
            if value is None and statics is not None:
                value = statics.get(name)
            if value is None:
                raise StaticOperandMissing(name)
            layout.append(("static", value))
        elif spec.startswith("*"):
            layout.extend(("dynamic", None) for _ in values)
            dynamic.extend(values)
        elif not values:
            layout.append(("absent", None))
        else:
            layout.append(("dynamic", None))
            dynamic.append(values[0])
    attributes = semantics_attributes(op)
    semantics = type(op).semantics

    def fn(*arrays: Any) -> Any:
        it = iter(arrays)
        args = [next(it) if kind == "dynamic" else value for kind, value in layout]
        return semantics(*args, **attributes)

    # What the bound function depends on besides the op kind, attributes and dynamic operand
    # types: the static operands' values (the trace cache's key).
    fn.static_key = tuple(  # type: ignore[attr-defined]
        array_key(value) if kind == "static" else kind
        for kind, value in layout
        if kind != "dynamic"
    )
    return fn, dynamic


def array_key(value: Any) -> tuple[Any, ...]:
    """A hashable key of an array's shape, dtype and bytes."""
    array = np.asarray(value)
    return (array.shape, array.dtype.str, array.tobytes())

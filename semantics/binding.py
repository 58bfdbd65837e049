"""A core op's `semantics` bound to the op: its attributes (and, for ops with bodies, the body
runner) as keywords, its static operands (shapes, axes, pads) as numpy values, and the dynamic
operands left as the arguments of the returned function. Tracing, folding, shape inference and
the body runner all call `semantics` through `bound_semantics`.

The body runner of control-flow core ops (core.If, core.Loop, core.Scan) lives here too, because
it and `bound_semantics` call each other: a body op is bound like any op, and a control op's
keywords hand it `run_block`. A body is a single block of core ops ending in `core.Yield`;
`run_block` evaluates it on arrays or tracers by calling each body op's own `semantics`, and the
control ops' `semantics` run it inside `lax.cond` / `lax.while_loop` / `lax.scan`. Dialects do
not import this module. Captured operands that are constants reach the body as numpy arrays, so
body ops whose static operands (shapes, axes) are outer constants still evaluate; a body op
whose static operand is computed in the body is a located error (`BodyStaticOperandMissing`),
not a Python traceback.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from xdsl.ir import Block, Operation, SSAValue

from mlconv.dialects.core_base import CoreOp, constant_value
from mlconv.dialects.core_control import YieldOp
from mlconv.errors import PassFailure


def semantics_attributes(op: CoreOp) -> dict[str, Any]:
    """The keyword arguments of `type(op).semantics`: the op's attribute values and, for an op
    with bodies (`BODIES`: core.If/Loop/Scan), the body runner `run_block`."""
    values = op.attribute_values()
    if getattr(op, "BODIES", ()):
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


# --------------------------------------------------------------------------- bodies


class BodyStaticOperandMissing(PassFailure):
    """A body op's static operand (shape, axes, step ...) is not a constant: it is computed in
    the body. Located at the body op; `operand` names the operand."""

    def __init__(self, op: Operation, operand: str):
        error = PassFailure.at(op, f"in a body: static operand '{operand}' is not a constant")
        super().__init__(error.message, error.location)
        self.operand = operand


def _statics_from_env(op: CoreOp, env: dict[SSAValue, Any]) -> dict[str, np.ndarray]:
    """Static operands (by name) that the body binds to numpy arrays (captured constants):
    body ops may use them where a core.Constant is required."""
    found = {}
    names = [spec.lstrip("*?") for spec in op.OPERANDS]
    for name, group in zip(names, op.operand_groups(), strict=True):
        if name in op.STATIC_OPERANDS and group and constant_value(group[0]) is None:
            value = env.get(group[0])
            if isinstance(value, np.ndarray):
                found[name] = value
    return found


def _evaluate(op: CoreOp, env: dict[SSAValue, Any]) -> list[Any]:
    try:
        fn, dynamic = bound_semantics(op, _statics_from_env(op, env))
    except StaticOperandMissing as missing:
        raise BodyStaticOperandMissing(op, missing.operand) from None
    out = fn(*(env[v] for v in dynamic))
    return list(out) if isinstance(out, tuple | list) else [out]


def run_block(block: Block, args: list[Any]) -> list[Any]:
    """Evaluate a body (core ops ending in core.Yield) on `args`: arrays or tracers."""
    env: dict[SSAValue, Any] = dict(zip(block.args, args, strict=True))
    for op in block.ops:
        if isinstance(op, YieldOp):
            return [env[v] for v in op.values]
        if op.name == "core.Constant":
            env[op.results[0]] = constant_value(op.results[0])
            continue
        if not isinstance(op, CoreOp):
            raise PassFailure.at(op, "cannot run in a core control-flow body")
        env.update(zip(op.results, _evaluate(op, env), strict=True))
    owner = block.parent_op()
    raise PassFailure("a control-flow body does not end with core.Yield", owner and owner.location)

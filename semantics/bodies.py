"""The body runner of control-flow core ops (core.If, core.Loop, core.Scan).

A body is a single block of core ops ending in `core.Yield`. `run_block` evaluates it on
arrays or tracers by calling each body op's own `semantics`; the control ops' `semantics` run
it inside `lax.cond` / `lax.while_loop` / `lax.scan`. Dialects do not import this module: every
caller of `semantics` binds it with `binding.bound_semantics`, whose keywords
(`binding.semantics_attributes`) hand `run_block` to ops that declare bodies (`BODIES`).

Captured operands that are constants reach the body as numpy arrays, so body ops whose static
operands (shapes, axes) are outer constants still evaluate. A body op whose static operand is
computed in the body is a located error (`BodyStaticOperandMissing`), not a Python traceback.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.ir import Block, Operation, SSAValue

from mlconv.dialects.core_base import CoreOp, constant_value
from mlconv.dialects.core_control import YieldOp
from mlconv.errors import PassFailure
from mlconv.semantics.binding import StaticOperandMissing, bound_semantics


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

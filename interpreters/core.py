"""The core-level interpreter: each core op runs its own `semantics` eagerly, op by op.

Nothing is traced, jitted or lowered: no core-infer-shapes, core-fold-constants or
core-to-tpu runs before it, so it is an independent reference for each of them. Static
operands (shapes, axes, pads) are bound to the numpy values computed before the op, whether
or not a core.Constant defines them, and dynamic dims take the sizes of the concrete inputs.
`core.If` runs the branch its condition selects, op by op; `core.Loop` and `core.Scan` run
their `semantics` (lax.while_loop / lax.scan over the body ops' own semantics).

    from mlconv.interpreters import Recorder, run_module
    recorder = Recorder()
    outputs = run_module(core_module, [x], recorder)   # recorder.by_location()["conv1"] ...
"""

from __future__ import annotations

import numpy as np
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    OpImplResult,
    PythonValues,
    impl,
    impl_terminator,
    register_impls,
)

from mlconv.dense import to_numpy
from mlconv.dialects import core
from mlconv.dialects.core_base import CoreOp
from mlconv.dialects.core_control import IfOp, YieldOp
from mlconv.dialects.core_tensor import ConstantOp
from mlconv.interpreters.common import LevelFunctions, checked, yield_operands
from mlconv.semantics.tracing import run_with


def run_core_op(
    ft: InterpreterFunctions, interpreter: Interpreter, op: CoreOp, values: PythonValues
) -> OpImplResult:
    """Any core op: its semantics on the operand values, results checked against the types.
    The semantics is traced at the values' shapes and its equations run one by one
    (`jaxpr_numpy`): numpy where numpy's result is bit-identical to XLA's, each other primitive
    bound eagerly through JAX. (Calling the semantics on arrays directly gives the same values,
    but JAX then compiles an executable for every primitive of every op at every shape: 30 s
    for a small CNN here.)"""
    return OpImplResult(checked(op, run_with(op, values, cached=False)), None)


@register_impls
class CoreFunctions(LevelFunctions):
    """Implementations of every core op (`run_core_op`), with core.Constant, core.If and
    core.Yield written out."""

    OPS = [op_class for op_class in core.OPS if issubclass(op_class, CoreOp)]
    RUN_OP = run_core_op

    @impl(ConstantOp)
    def run_constant(self, interpreter: Interpreter, op: ConstantOp, args: PythonValues):
        return (to_numpy(op.value),)

    @impl(IfOp)
    def run_if(self, interpreter: Interpreter, op: IfOp, args: PythonValues):
        condition, captured = args[0], args[1:]
        if np.asarray(condition).size != 1:
            raise ValueError(f"condition has {np.asarray(condition).size} elements, expected 1")
        region = op.then_branch if bool(np.asarray(condition).reshape(())) else op.else_branch
        return checked(op, interpreter.run_ssacfg_region(region, captured, "core.If"))

    run_yield = impl_terminator(YieldOp)(yield_operands)

"""The tpu-level interpreter: each tpu op binds its jax primitive eagerly, op by op.

The parameters are decoded from the op's attributes as the JAX backend decodes them
(`tpu.PrimitiveOp.params`/`bind`), but nothing is traced or jitted: each primitive runs on
concrete arrays as soon as its operands are known, in numpy where that is bit-identical to
XLA (data movement, exact arithmetic, comparisons) and through JAX otherwise, so a result
can be looked at op by op. `tpu.region`
runs its body in place; `tpu.cond` runs the branch its index selects, `tpu.while` and
`tpu.scan` iterate their bodies in Python, one interpreted op at a time.
"""

from __future__ import annotations

from typing import Any

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

from mlconv.dense import numpy_dtype, to_numpy
from mlconv.dialects import tpu
from mlconv.interpreters.common import LevelFunctions, checked, yield_operands
from mlconv.semantics.jaxpr_numpy import NUMPY_PRIMITIVES


def evaluate_primitive(op: tpu.PrimitiveOp, values: PythonValues) -> list[Any]:
    """The op's primitive on concrete arrays: in numpy where numpy's result is bit-identical
    to XLA's (`jaxpr_numpy.NUMPY_PRIMITIVES`, which core-fold-constants uses too), else bound
    eagerly through JAX (one small XLA executable per primitive and shape, cached by JAX)."""
    numpy_fn = NUMPY_PRIMITIVES.get(op.PRIMITIVE)
    if numpy_fn is not None and len(op.results) == 1:
        arrays = [np.asarray(v) for v in values]
        result = numpy_fn(*arrays, **op.params())
        if result is not None:
            result = np.asarray(result)
            declared = op.results[0].type
            if result.shape == tuple(declared.get_shape()) and result.dtype == numpy_dtype(
                declared.get_element_type()
            ):
                return [result]
    return op.bind(*values)


def run_primitive(
    ft: InterpreterFunctions, interpreter: Interpreter, op: tpu.PrimitiveOp, values: PythonValues
) -> OpImplResult:
    return OpImplResult(checked(op, evaluate_primitive(op, values)), None)


def _value(attr: Any) -> int:
    return int(attr.value.data)


@register_impls
class TpuFunctions(LevelFunctions):
    """Implementations of every tpu primitive op (`run_primitive`) and the structural ops."""

    OPS = list(tpu.PRIMITIVE_OPS.values())
    RUN_OP = run_primitive

    @impl(tpu.ConstantOp)
    def run_constant(self, interpreter: Interpreter, op: tpu.ConstantOp, args: PythonValues):
        return (to_numpy(op.value),)

    @impl(tpu.RegionOp)
    def run_region(self, interpreter: Interpreter, op: tpu.RegionOp, args: PythonValues):
        return interpreter.run_ssacfg_region(op.body, args, "tpu.region")

    @impl(tpu.BatchOp)
    def run_batch(self, interpreter: Interpreter, op: tpu.BatchOp, args: PythonValues):
        # One call: the body once on the call's rows (the batcher batches calls at run time).
        return interpreter.run_ssacfg_region(op.body, args, "tpu.batch")

    @impl(tpu.CondOp)
    def run_cond(self, interpreter: Interpreter, op: tpu.CondOp, args: PythonValues):
        count = len(op.branches)
        index = min(max(int(np.asarray(args[0]).reshape(())), 0), count - 1)  # lax.switch clamps
        return checked(op, interpreter.run_ssacfg_region(op.branches[index], args[1:], "tpu.cond"))

    @impl(tpu.WhileOp)
    def run_while(self, interpreter: Interpreter, op: tpu.WhileOp, args: PythonValues):
        cond_n, body_n = _value(op.cond_nconsts), _value(op.body_nconsts)
        cond_consts, body_consts = args[:cond_n], args[cond_n : cond_n + body_n]
        carry = tuple(args[cond_n + body_n :])
        while bool(np.asarray(interpreter.run_ssacfg_region(op.cond, (*cond_consts, *carry))[0])):
            carry = tuple(interpreter.run_ssacfg_region(op.body, (*body_consts, *carry)))
        return checked(op, carry)

    @impl(tpu.ScanOp)
    def run_scan(self, interpreter: Interpreter, op: tpu.ScanOp, args: PythonValues):
        n_consts, n_carry = _value(op.num_consts), _value(op.num_carry)
        length, reverse = _value(op.length), bool(_value(op.reverse))
        consts, carry = args[:n_consts], tuple(args[n_consts : n_consts + n_carry])
        xs = [np.asarray(x) for x in args[n_consts + n_carry :]]
        stacked: list[list[np.ndarray]] = []
        for step in reversed(range(length)) if reverse else range(length):
            out = interpreter.run_ssacfg_region(op.body, (*consts, *carry, *(x[step] for x in xs)))
            carry = tuple(out[:n_carry])
            stacked.append([np.asarray(y) for y in out[n_carry:]])
        if reverse:
            stacked.reverse()
        count = len(op.outputs) - n_carry
        ys = []
        for k in range(count):
            result_type = op.outputs[n_carry + k].type
            if stacked:
                ys.append(np.stack([row[k] for row in stacked]))
            else:
                ys.append(
                    np.zeros(result_type.get_shape(), numpy_dtype(result_type.get_element_type()))
                )
        return checked(op, [*carry, *ys])

    run_yield = impl_terminator(tpu.YieldOp)(yield_operands)

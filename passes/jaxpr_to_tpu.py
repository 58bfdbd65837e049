"""Emit tpu ops for a jaxpr: the mechanism behind `core-to-tpu`.

A core op's `semantics` is traced with `jax.make_jaxpr` at the op's static operand shapes; each
equation becomes the tpu op of its primitive, with the primitive's parameters as attributes.
Nested calls (`jit`, `custom_jvp_call`, ...) are inlined, identities dropped, literals and
closed-over constants become `tpu.constant`. The control-flow primitives `cond`, `while` and
`scan` become `tpu.cond`, `tpu.while`, `tpu.scan`, their jaxpr parameters regions emitted by
the same rules.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from jax.extend.core import ClosedJaxpr
from xdsl.dialects.builtin import BoolAttr, IntegerAttr, TensorType, i64
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from mlconv.dense import element_type, shared_tensor_type
from mlconv.dialects import tpu


def aval_type(aval: Any) -> TensorType:
    return shared_tensor_type(element_type(np.dtype(aval.dtype)), tuple(aval.shape))


class JaxprEmitter:
    """Appends tpu ops for jaxpr equations through `insert(op)`."""

    def __init__(self, insert: Callable[[Operation], None], location: Attribute | None = None):
        self.insert = insert
        self.location = location

    def _add(self, op: Operation) -> Operation:
        if self.location is not None:
            op.location = self.location
        self.insert(op)
        return op

    def constant(self, value: Any, dtype: Any = None) -> SSAValue:
        array = np.asarray(value, dtype=dtype)
        return self._add(tpu.ConstantOp.from_numpy(array)).results[0]

    def emit(self, closed_jaxpr: Any, args: Sequence[SSAValue]) -> list[SSAValue]:
        """Emit `closed_jaxpr` applied to `args`; return the SSA values of its outputs."""
        jaxpr = closed_jaxpr.jaxpr
        env: dict[Any, SSAValue] = {}
        for var, const in zip(jaxpr.constvars, closed_jaxpr.consts, strict=True):
            env[var] = self.constant(np.asarray(const), np.dtype(var.aval.dtype))
        for var, arg in zip(jaxpr.invars, args, strict=True):
            env[var] = arg
        return self._emit_equations(jaxpr, env)

    def _read(self, env: dict[Any, SSAValue], atom: Any) -> SSAValue:
        if hasattr(atom, "val"):  # a Literal
            return self.constant(atom.val, np.dtype(atom.aval.dtype))
        return env[atom]

    def _emit_equations(self, jaxpr: Any, env: dict[Any, SSAValue]) -> list[SSAValue]:
        for eqn in jaxpr.eqns:
            name = eqn.primitive.name
            inputs = [self._read(env, atom) for atom in eqn.invars]
            if name in tpu.IDENTITIES:
                outputs = inputs[: len(eqn.outvars)]
            elif name in tpu.INLINED:
                outputs = self._inline(eqn, inputs)
            elif name in CONTROL_EMITTERS:
                outputs = CONTROL_EMITTERS[name](self, eqn, inputs)
            else:
                outputs = self._primitive(eqn, inputs)
            for var, value in zip(eqn.outvars, outputs, strict=True):
                env[var] = value
        return [self._read(env, atom) for atom in jaxpr.outvars]

    def _inline(self, eqn: Any, inputs: list[SSAValue]) -> list[SSAValue]:
        params = eqn.params
        inner = params.get("jaxpr") or params.get("call_jaxpr") or params.get("fun_jaxpr")
        if inner is None:
            raise NotImplementedError(f"cannot inline primitive '{eqn.primitive.name}'")
        if not hasattr(inner, "consts"):  # an open Jaxpr
            inner = ClosedJaxpr(inner, ())
        return self.emit(inner, inputs)

    def _primitive(self, eqn: Any, inputs: list[SSAValue]) -> list[SSAValue]:
        name = eqn.primitive.name
        op_class = tpu.PRIMITIVE_OPS.get(name)
        if op_class is None:
            raise NotImplementedError(f"jax primitive '{name}' has no tpu op")
        attributes = {key: tpu.encode_param(value) for key, value in eqn.params.items()}
        op = op_class.create(
            operands=inputs,
            result_types=[aval_type(var.aval) for var in eqn.outvars],
            attributes=attributes,
        )
        return list(self._add(op).results)

    # --- control flow: each jaxpr parameter becomes a region ----------------------------------
    def region(self, closed_jaxpr: Any) -> Region:
        """A region running `closed_jaxpr`: block arguments for its inputs, `tpu.yield` of its
        outputs (its constants are emitted inside)."""
        block = Block(arg_types=[aval_type(v.aval) for v in closed_jaxpr.jaxpr.invars])
        inner = JaxprEmitter(block.add_op, self.location)
        block.add_op(tpu.YieldOp.create(operands=inner.emit(closed_jaxpr, list(block.args))))
        return Region(block)

    def control(
        self,
        op_class: type[Operation],
        eqn: Any,
        inputs: list[SSAValue],
        regions: list[Region],
        **attributes: Any,
    ) -> list[SSAValue]:
        op = op_class.create(
            operands=inputs,
            result_types=[aval_type(var.aval) for var in eqn.outvars],
            regions=regions,
            attributes=attributes,
        )
        return list(self._add(op).results)


def _emit_cond(emitter: JaxprEmitter, eqn: Any, inputs: list[SSAValue]) -> list[SSAValue]:
    regions = [emitter.region(branch) for branch in eqn.params["branches"]]
    return emitter.control(tpu.CondOp, eqn, inputs, regions)


def _emit_while(emitter: JaxprEmitter, eqn: Any, inputs: list[SSAValue]) -> list[SSAValue]:
    params = eqn.params
    regions = [emitter.region(params["cond_jaxpr"]), emitter.region(params["body_jaxpr"])]
    counts = {key: IntegerAttr(params[key], i64) for key in ("cond_nconsts", "body_nconsts")}
    return emitter.control(tpu.WhileOp, eqn, inputs, regions, **counts)


def _emit_scan(emitter: JaxprEmitter, eqn: Any, inputs: list[SSAValue]) -> list[SSAValue]:
    params = eqn.params
    counts = {key: IntegerAttr(params[key], i64) for key in ("length", "num_consts", "num_carry")}
    reverse = BoolAttr.from_bool(bool(params["reverse"]))
    return emitter.control(
        tpu.ScanOp, eqn, inputs, [emitter.region(params["jaxpr"])], reverse=reverse, **counts
    )


CONTROL_EMITTERS = {"cond": _emit_cond, "while": _emit_while, "scan": _emit_scan}
"""jax control-flow primitive -> how its structural tpu op is emitted."""


def replace_with_jaxpr(op: Operation, closed_jaxpr: Any, operands: Sequence[SSAValue]) -> None:
    """Replace single-result `op` by the tpu ops of `closed_jaxpr` applied to `operands`,
    emitted right before it with its location: how a target pass swaps an op for another
    form of the same function, traced from JAX. The form must keep the result's type."""
    from xdsl.rewriter import InsertPoint, Rewriter

    emitter = JaxprEmitter(lambda new: Rewriter.insert_op(new, InsertPoint.before(op)), op.location)
    (result,) = emitter.emit(closed_jaxpr, operands)
    if result.type != op.results[0].type:
        raise AssertionError(f"a rewrite changed the result type of {op.name}")
    op.results[0].replace_all_uses_with(result)
    Rewriter.erase_op(op)

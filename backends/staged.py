"""Compile the shape-static prefix of @main once per input shapes; run its data-dependent tail
eagerly, op by op, on every call.

A detector's post-processing (NonZero, NonMaxSuppression, a TopK whose k is a count of boxes,
then the Slices, Reshapes and Gathers whose shapes those results give) makes @main's static
operands depend on the input's value. Compiling the whole network per input value (what
`SpecializingModule` does for inputs whose values reach a static operand) recompiles the
backbone for every image: SSDlite took 3 s per image. Here, at the concrete input shapes
(after core-infer-shapes and core-fold-constants), the tail is the data-dependent ops
(`DATA_DEPENDENT`: NonZero, Unique, NonMaxSuppression, or a core.If holding one) and every
op downstream of them, the prefix is the rest. The prefix is lowered through
the usual core-to-tpu pipeline and compiled once per input-shape key; the tail runs per call
on the prefix's outputs (numpy arrays) through each op's `semantics`
(`mlconv.semantics.tracing.run_with`, whose trace cache is keyed by the op and its operand
shapes and static values), a core.If running the branch its condition selects.

`plan_stages` returns None when staging does not apply: no data-dependent op, or an input
whose value reaches a static operand other than through a data-dependent op (those keep
compiling per value).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue

from mlconv.backends.jax_backend import CompiledModule, compile_module
from mlconv.backends.module_binding import bind_module
from mlconv.dense import to_numpy
from mlconv.dialects import make_context
from mlconv.dialects.core_base import CoreOp, constant_value
from mlconv.dialects.core_control import IfOp, YieldOp
from mlconv.dialects.core_tensor import ConstantOp
from mlconv.errors import BackendError
from mlconv.passes.core_fold_constants import CoreFoldConstantsPass
from mlconv.passes.core_infer_shapes import CoreInferShapesPass
from mlconv.semantics.tracing import run_with
from mlconv.signature.module_io import find_main

DATA_DEPENDENT = frozenset({"core.NonZero", "core.Unique", "core.NonMaxSuppression"})
"""Ops whose result shapes depend on their operands' values (their data is a static operand)."""


def _data_dependent(op: Operation) -> bool:
    """`op` is, or holds in a body, an op of `DATA_DEPENDENT`."""
    return any(nested.name in DATA_DEPENDENT for nested in op.walk())


def _top(op: Operation, block: Block) -> Operation:
    """`op`'s ancestor (or itself) among `block`'s ops."""
    while op.parent_block() is not block:
        op = op.parent_op()
    return op


def _static_operands(op: CoreOp) -> list[SSAValue]:
    return [
        value
        for spec, group in zip(op.OPERANDS, op.operand_groups(), strict=True)
        if spec.lstrip("*?") in op.STATIC_OPERANDS
        for value in group
    ]


def _inputs_of(op: Operation) -> list[SSAValue]:
    """The values `op` reads, its nested ops' reads of outer values included."""
    inner = {r for nested in op.walk() for r in nested.results} | {
        a for region in op.regions for b in region.blocks for a in b.args
    }
    reads = list(op.operands)
    for nested in op.walk():
        if nested is not op:
            reads += [v for v in nested.operands if v not in inner]
    return list(dict.fromkeys(reads))


class StagedProgram:
    """@main at one input-shape key: the compiled prefix and the tail to run eagerly."""

    def __init__(
        self,
        prefix: CompiledModule,
        prefix_outputs: list[SSAValue],
        tail: list[Operation],
        constants: dict[SSAValue, np.ndarray],
        args: list[SSAValue],
        returned: list[SSAValue],
    ):
        self.prefix, self.prefix_outputs, self.tail = prefix, prefix_outputs, tail
        self.constants, self.args, self.returned = constants, args, returned

    def __call__(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
        env: dict[SSAValue, Any] = dict(self.constants)
        env.update(zip(self.args, arrays, strict=True))
        if self.prefix_outputs:
            outputs = self.prefix._program(*arrays)
            env.update(zip(self.prefix_outputs, map(np.asarray, outputs), strict=True))
        _run_ops(self.tail, env)
        return [np.asarray(env[v]) for v in self.returned]


def _run_ops(ops: list[Operation], env: dict[SSAValue, Any]) -> list[Any] | None:
    """Run `ops` eagerly in `env` (updated); a core.Yield's values are returned."""
    for op in ops:
        if isinstance(op, YieldOp):
            return [env[v] for v in op.operands]
        if isinstance(op, ConstantOp):
            env[op.output] = to_numpy(op.value)
            continue
        values = [env[v] for v in op.operands]
        if isinstance(op, IfOp):
            condition = np.asarray(values[0])
            if condition.size != 1:
                raise BackendError.at(op, f"condition has {condition.size} elements, expected 1")
            region = op.then_branch if bool(condition.reshape(())) else op.else_branch
            block = region.block
            env.update(zip(block.args, values[1:], strict=True))
            results = _run_ops(list(block.ops), env)
        elif isinstance(op, CoreOp):
            try:
                results = run_with(op, values)
            except BackendError:
                raise
            except Exception as err:  # the semantics refuse these values: one located line
                message = str(err).splitlines()[0] if str(err) else type(err).__name__
                raise BackendError.at(op, message) from None
        else:
            raise BackendError.at(op, "cannot run in a staged tail")
        # Not `check_result`: the declared element type of a result whose values the
        # importer could not see may be a guess (NonMaxSuppression's ?x3xf32 indices).
        env.update((r, np.asarray(v)) for r, v in zip(op.results, results, strict=True))
    return None


def plan_stages(
    module: ModuleOp, arrays: list[np.ndarray], device: str | None
) -> StagedProgram | None:
    """The staged program of `module` (core level) at the arrays' shapes, or None where
    staging does not apply (see the module's docstring)."""

    module = bind_module(module, arrays, [])
    CoreInferShapesPass().apply(make_context(), module)
    CoreFoldConstantsPass(static_shape=True).apply(make_context(), module)
    main = find_main(module)
    block = main.body.block
    ops = list(block.ops)
    returned = list(ops[-1].operands)
    # The data-dependent ops and what is downstream of them. Another op's static operand
    # that no constant gives and the tail does not feed: an input's value reaches it directly,
    # and the whole module compiles per value.
    downstream: set[Operation] = set()
    for op in ops[:-1]:
        if isinstance(op, ConstantOp):
            continue
        if _data_dependent(op) or any(v.owner in downstream for v in _inputs_of(op)):
            downstream.add(op)
        elif isinstance(op, CoreOp) and any(
            constant_value(v) is None for v in _static_operands(op)
        ):
            return None
    if not downstream:
        return None
    tail = [op for op in ops if op in downstream]
    prefix = [op for op in ops[:-1] if op not in downstream]
    wanted = [
        v
        for op in [*tail, ops[-1]]
        for v in _inputs_of(op)
        if isinstance(v.owner, Operation)
        and v.owner.parent_block() is block
        and v.owner not in downstream
        and not isinstance(v.owner, ConstantOp)
    ]
    wanted = list(dict.fromkeys(wanted))
    constants = {
        v: to_numpy(v.owner.value)
        for op in [*tail, ops[-1]]
        for v in _inputs_of(op)
        if isinstance(v.owner, ConstantOp)
    }
    return StagedProgram(
        _compile_prefix(main, prefix, wanted, device),
        wanted,
        tail,
        constants,
        list(block.args),
        returned,
    )


def _compile_prefix(
    main: func.FuncOp, prefix: list[Operation], wanted: list[SSAValue], device: str | None
) -> CompiledModule:
    """The prefix ops as a module returning `wanted`, lowered and compiled."""
    # lazy: loads 8 more modules (dialects, passes)
    from mlconv.passes.pipelines import CoreToTpuPipeline, target_device

    args = main.body.block.args
    block = Block(arg_types=[a.type for a in args])
    mapping: dict[SSAValue, SSAValue] = dict(zip(args, block.args, strict=True))
    for op in prefix:
        block.add_op(op.clone(value_mapper=mapping))
    block.add_op(func.ReturnOp(*[mapping[v] for v in wanted]))
    function = func.FuncOp(
        "main",
        func.FunctionType.from_lists([a.type for a in args], [v.type for v in wanted]),
        Region(block),
        arg_attrs=main.arg_attrs,
        res_attrs=ArrayAttr([DictionaryAttr({}) for _ in wanted]),
    )
    module = ModuleOp([function])
    CoreToTpuPipeline(device=target_device(device)).apply(make_context(), module)
    return compile_module(module, device)

"""core-fold-constants: replace core ops whose operands are all constants by `core.Constant`
(seed 000's partial inference). Input/output: core dialect.

Ops are visited in topological order, each first retyped from its semantics (as
core-infer-shapes does) so that what a folded shape subgraph feeds gets its static type.
A `core.ShapeOf` is folded only with `static-shape=true` (and a static operand shape), so by
default subgraphs that start at ShapeOf stay in the graph and a model keeps working for other
input shapes, as OpenVINO's Model Optimizer does. Ops that would materialize a constant much
larger than their inputs (beyond 2^27 elements) are not folded either. Weights that a model
builds at run time (ONNX ConstantOfShape) are folded below that bound: XLA:CPU miscompiles
convolutions whose filters are broadcasts of a scalar (it returned inf where the folded
weights give the right result, on light_squeezenet).

Control-flow bodies (core.If, core.Loop, core.Scan) are folded too, before the op that owns
them: a captured operand that is a small constant (shape-like, at most `INLINE_CAPTURED`
elements) is copied into each body that uses it as a `core.Constant`, so a body op whose
static operand (a Slice's step, an Unsqueeze's axes) is computed from outer constants
(TorchScript's Constant -> Unsqueeze -> Slice in SSD's batched NMS) folds to a constant. The
block argument stays (unused), so the op's operands and its bodies' signatures do not change.
A core.If whose condition is a constant is replaced by the ops of the branch it takes (as
MLIR's scf.if canonicalization does), which are then folded in turn.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from mlconv.dense import static_shape
from mlconv.dialects.core_base import CoreOp, constant_value
from mlconv.dialects.core_control import IfOp, YieldOp
from mlconv.dialects.core_tensor import ConstantOp, ShapeOfOp
from mlconv.passes.core_infer_shapes import check_acyclic, infer_op, update_signature
from mlconv.semantics.tracing import evaluate

# Folding may grow data at most this much, beyond an absolute allowance.
_MAX_GROWTH = 4
_LARGE = 1 << 27
# Captured constants up to this many elements are copied into the bodies that use them.
INLINE_CAPTURED = 1 << 10


def folded_values(op: CoreOp, fold_shapes: bool) -> list[np.ndarray] | None:
    """The op's constant results, or None where it must stay."""
    if isinstance(op, ShapeOfOp):
        shape = static_shape(op.arg.type)
        if not fold_shapes or shape is None:
            return None
        return [np.array(shape, dtype=op.attribute_values()["output_type"])]
    inputs = [constant_value(v) for v in op.operands]
    if any(v is None for v in inputs):
        return None
    values = evaluate(op)
    if values is None:
        return None
    produced = sum(v.size for v in values)
    if produced > _LARGE and produced > _MAX_GROWTH * sum(v.size for v in inputs):
        return None
    return values


def fold_op(op: Operation, fold_shapes: bool) -> None:
    if not isinstance(op, CoreOp) or isinstance(op, ConstantOp):
        return
    infer_op(op)
    values = folded_values(op, fold_shapes)
    if values is None:
        return
    constants = [ConstantOp.from_numpy(v) for v in values]
    for constant in constants:
        constant.location = op.location
    Rewriter.replace_op(op, constants, [c.output for c in constants])


def inline_captured_constants(op: CoreOp) -> None:
    """Copy small constant captured operands of a control-flow op into each body using them."""
    captured = op.operand_groups()[-1]
    for region in op.regions:
        block = region.block
        tail = block.args[len(block.args) - len(captured) :] if captured else ()
        first = block.first_op
        for arg, value in zip(tail, captured, strict=True):
            array = constant_value(value)
            if array is None or array.size > INLINE_CAPTURED or not arg.uses:
                continue
            constant = ConstantOp.from_numpy(array)
            constant.location = value.owner.location
            block.insert_op_before(constant, first)
            arg.replace_all_uses_with(constant.output)


def inline_taken_branch(op: IfOp) -> list[Operation] | None:
    """A core.If whose condition is a constant replaced by the ops of the branch it takes (the
    captured operands in place of the block arguments); the moved ops, or None."""
    cond = constant_value(op.cond)
    if cond is None or cond.size != 1:
        return None
    branch = op.then_branch if bool(cond.reshape(-1)[0]) else op.else_branch
    block = branch.block
    for arg, value in zip(block.args, op.captured, strict=True):
        arg.replace_all_uses_with(value)
    terminator = block.last_op
    assert isinstance(terminator, YieldOp)
    moved = []
    for inner in list(block.ops):
        if inner is terminator:
            break
        inner.detach()
        Rewriter.insert_op(inner, InsertPoint.before(op))
        moved.append(inner)
    for result, value in zip(op.results, terminator.values, strict=True):
        result.replace_all_uses_with(value)
    Rewriter.erase_op(op)
    return moved


def fold_ops(ops: list[Operation], fold_shapes: bool) -> None:
    """Fold ops in order; an op with bodies has them folded first, and a core.If with a
    constant condition becomes the ops of its taken branch (folded in turn)."""
    for op in ops:
        if isinstance(op, YieldOp):
            continue
        if isinstance(op, IfOp) and (moved := inline_taken_branch(op)) is not None:
            fold_ops(moved, fold_shapes)
            continue
        if op.regions and isinstance(op, CoreOp):
            inline_captured_constants(op)
            for region in op.regions:
                for inner in region.blocks:
                    fold_ops(list(inner.ops), fold_shapes)
        fold_op(op, fold_shapes)


@dataclass(frozen=True)
class CoreFoldConstantsPass(ModulePass):
    name = "core-fold-constants"
    static_shape: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in list(op.walk()):
            if not isinstance(function, func.FuncOp) or function.is_declaration:
                continue
            check_acyclic(function.body.block)
            fold_ops(list(function.body.block.ops), self.static_shape)
            update_signature(function)

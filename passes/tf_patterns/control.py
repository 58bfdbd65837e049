"""Functional control flow: If / StatelessIf -> core.If, While / StatelessWhile -> core.Loop,
tf.Yield -> core.Yield.

The importer gives each TF function a region whose block arguments are the function's inputs
and which ends in tf.Yield; TF functions are closed (they use nothing from outside), so the
regions move onto the core op as they are, their inputs becoming its `captured` operands (If)
or carried values (Loop). tf-to-core lowers nested ops before the op that holds them, so the
regions are core ops already when these patterns run.

A While becomes a Loop without a trip count: the `cond` function is evaluated once on the
initial values before the loop (its ops inlined there) and once at the end of each iteration
on the body's results (inlined into the body), which is ONNX/OpenVINO Loop's condition.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import IntegerType, TensorType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from mlconv.dialects import core_control as cc
from mlconv.dialects import core_elementwise as ew
from mlconv.dialects import core_tensor as ct
from mlconv.passes.lowering.builder import Builder, insert_with_regions
from mlconv.passes.tf_patterns import lowering
from mlconv.passes.tf_patterns.lists import is_list


@lowering("Yield")
def yield_(op, b):
    b.insert(cc.YieldOp.create(operands=list(op.operands)))
    return []


def _predicate(b, value: SSAValue) -> SSAValue:
    """A one-element boolean: TF takes a nonzero number as true."""
    if b.dtype(value) == np.bool_:
        return value
    return b(ew.NotEqualOp, value, b.const(np.zeros((), b.dtype(value))))


def _retype_arguments(block: Block, values: list[SSAValue]) -> None:
    """Block arguments typed as the operands that feed them (the lowered, refined types)."""
    for arg, value in zip(list(block.args), values, strict=True):
        if arg.type != value.type:
            Rewriter.replace_value_with_new_type(arg, value.type)


def _inline(block: Block, values: list[SSAValue], before: Operation) -> list[SSAValue]:
    """A copy of `block`'s ops before `before`, its arguments bound to `values`; the values
    its terminator yields."""
    copy = block.parent.clone().block
    for arg, value in zip(copy.args, values, strict=True):
        arg.replace_all_uses_with(value)
    terminator = copy.last_op
    for inner in list(copy.ops):
        if inner is terminator:
            break
        inner.detach()
        Rewriter.insert_op(inner, InsertPoint.before(before))
    return list(terminator.operands)


def _build(b, op, core_class, operands, regions, types=None, **attributes):
    types = types or [r.type for r in op.results]
    return insert_with_regions(b, core_class, operands, types, attributes, regions)


@lowering("If", "StatelessIf")
def if_(op, b):
    inputs = b.inputs(op, 1)
    regions = [op.detach_region(r) for r in list(op.regions)]
    for region in regions:
        _retype_arguments(region.block, inputs)
    return _build(b, op, cc.IfOp, [_predicate(b, b.input(op, 0)), inputs], regions)


@lowering("While", "StatelessWhile")
def while_(op, b):
    inputs = b.inputs(op, 0)
    cond, body = op.regions
    keep_going = _predicate(b, _inline(cond.block, inputs, b.anchor)[0])
    region = op.detach_region(body)
    block = region.block
    # TensorLists carried through the loop are tensors now (`lists.py`): their block arguments
    # and results take the lowered initial value's type.
    for arg, value in zip(list(block.args), inputs, strict=True):
        if is_list(arg):
            Rewriter.replace_value_with_new_type(arg, value.type)
    block.insert_arg(TensorType(IntegerType(64), []), 0)  # the iteration number
    block.insert_arg(TensorType(IntegerType(1), []), 1)  # the condition
    terminator = block.last_op
    following = list(terminator.operands)
    inner = Builder(terminator)
    again = _inline(cond.block, following, terminator)[0]
    again = _predicate(inner, again)
    if b.rank(again) != 0:
        again = inner(ct.ReshapeOp, again, inner.ints([]), special_zero=False)
    new = cc.YieldOp.create(operands=[again, *following])
    Rewriter.replace_op(terminator, new, [])
    trip = b.const(np.iinfo(np.int64).max, np.int64)
    types = [v.type if is_list(r) else r.type for r, v in zip(op.results, inputs, strict=True)]
    return _build(
        b, op, cc.LoopOp, [trip, keep_going, inputs, []], [region], types, max_iterations=-1
    )

"""What the control-flow lowerings of every framework share (TF If/While, TFLite IF/WHILE ->
core.If / core.Loop): frameworks whose functions (subgraphs) are closed regions ending in a
yield, moved onto the core op as they are.

- `predicate(b, v)`: a one-element boolean (a nonzero number is true, as TF and TFLite take it).
- `retype_arguments(block, values)`: block arguments typed as the (lowered) values feeding them.
- `inline(block, values, before)`: a copy of a region's ops before an op, its arguments bound
  to `values`; the values it yields (a While's `cond`, evaluated before the loop and at the end
  of the body: ONNX/OpenVINO Loop's condition).
- `build(b, op, core_class, operands, regions, types, **attributes)`: the core op, its result
  types inferred where the semantics can.
- `while_to_loop(b, op, inputs, cond, body, types)`: a While (cond and body regions of core ops
  ending in core.Yield, or in the source's yield whose operands are core values) as core.Loop
  without a trip count.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import IntegerType, TensorType
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from mlconv.dialects import core_control as cc
from mlconv.dialects import core_elementwise as ew
from mlconv.dialects import core_tensor as ct
from mlconv.passes.lowering.builder import Builder, insert_with_regions


def predicate(b, value: SSAValue) -> SSAValue:
    """A one-element boolean: a nonzero number is true."""
    if b.dtype(value) == np.bool_:
        return value
    return b(ew.NotEqualOp, value, b.const(np.zeros((), b.dtype(value))))


def retype_arguments(block: Block, values: Sequence[SSAValue]) -> None:
    """Block arguments typed as the operands that feed them (the lowered, refined types)."""
    for arg, value in zip(list(block.args), values, strict=True):
        if arg.type != value.type:
            Rewriter.replace_value_with_new_type(arg, value.type)


def inline(block: Block, values: Sequence[SSAValue], before: Operation) -> list[SSAValue]:
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


def build(b, op, core_class, operands, regions, types=None, **attributes) -> list[SSAValue]:
    """`core_class` with `operands` and `regions` in place of `op`; its result types are
    `types` (default: `op`'s) unless the semantics infer them."""
    types = types or [r.type for r in op.results]
    return insert_with_regions(b, core_class, operands, types, attributes, regions)


def while_to_loop(
    b,
    op: Operation,
    inputs: Sequence[SSAValue],
    cond: Region,
    body: Region,
    types: Sequence[Attribute] | None = None,
) -> list[SSAValue]:
    """A While as core.Loop with no trip count: `cond` inlined before the loop on `inputs` and
    at the end of `body` (detached from `op`) on the values it yields."""
    keep_going = predicate(b, inline(cond.block, inputs, b.anchor)[0])
    region = op.detach_region(body)
    block = region.block
    block.insert_arg(TensorType(IntegerType(64), []), 0)  # the iteration number
    block.insert_arg(TensorType(IntegerType(1), []), 1)  # the condition
    terminator = block.last_op
    following = list(terminator.operands)
    inner = Builder(terminator)
    again = predicate(inner, inline(cond.block, following, terminator)[0])
    if b.rank(again) != 0:
        again = inner(ct.ReshapeOp, again, inner.ints([]), special_zero=False)
    Rewriter.replace_op(terminator, cc.YieldOp.create(operands=[again, *following]), [])
    trip = b.const(np.iinfo(np.int64).max, np.int64)
    operands = [trip, keep_going, list(inputs), []]
    return build(b, op, cc.LoopOp, operands, [region], types, max_iterations=-1)


__all__ = ["build", "inline", "predicate", "retype_arguments", "while_to_loop"]

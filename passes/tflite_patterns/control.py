"""Control flow: IF -> core.If, WHILE -> core.Loop, YIELD -> core.Yield.

The importer gives each subgraph an IF / WHILE holds a region whose block arguments are the
subgraph's inputs and which ends in tflite.YIELD; subgraphs are closed, so the regions move
onto the core op as they are (`lowering/control.py`, shared with TF's If / While), the IF's
inputs after the condition becoming core.If's captured operands, the WHILE's inputs
core.Loop's carried values. tflite-to-core lowers the ops of a region before the op that holds
it. A WHILE's `cond` is evaluated before the loop and at the end of each iteration (inlined
there); the loop has no trip count.
"""

from __future__ import annotations

from mlconv.dialects import core_control as cc
from mlconv.passes.lowering.control import build, predicate, retype_arguments, while_to_loop
from mlconv.passes.tflite_patterns import lowering


@lowering("YIELD")
def yield_(op, b):
    b.insert(cc.YieldOp.create(operands=list(op.operands)))
    return []


def _inputs(op, b, start: int):
    values = [b.x(op, i) for i in range(start, len(op.operands))]
    if any(v is None for v in values):
        raise b.fail("has an absent input")
    return values


@lowering("IF")
def if_(op, b):
    inputs = _inputs(op, b, 1)
    regions = [op.detach_region(r) for r in list(op.regions)]
    for region in regions:
        retype_arguments(region.block, inputs)
    return build(b, op, cc.IfOp, [predicate(b, b.x(op, 0)), inputs], regions)


@lowering("WHILE")
def while_(op, b):
    inputs = _inputs(op, b, 0)
    cond, body = op.regions
    return while_to_loop(b, op, inputs, cond, body)

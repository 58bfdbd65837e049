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

from xdsl.rewriter import Rewriter

from mlconv.dialects import core_control as cc
from mlconv.passes.lowering.control import build, predicate, retype_arguments, while_to_loop
from mlconv.passes.tf_patterns import lowering
from mlconv.passes.tf_patterns.lists import is_list


@lowering("Yield")
def yield_(op, b):
    b.insert(cc.YieldOp.create(operands=list(op.operands)))
    return []


@lowering("If", "StatelessIf")
def if_(op, b):
    inputs = b.inputs(op, 1)
    regions = [op.detach_region(r) for r in list(op.regions)]
    for region in regions:
        retype_arguments(region.block, inputs)
    return build(b, op, cc.IfOp, [predicate(b, b.input(op, 0)), inputs], regions)


@lowering("While", "StatelessWhile")
def while_(op, b):
    inputs = b.inputs(op, 0)
    cond, body = op.regions
    # TensorLists carried through the loop are tensors now (`lists.py`): their block arguments
    # and results take the lowered initial value's type.
    for arg, value in zip(list(body.block.args), inputs, strict=True):
        if is_list(arg):
            Rewriter.replace_value_with_new_type(arg, value.type)
    types = [v.type if is_list(r) else r.type for r, v in zip(op.results, inputs, strict=True)]
    return while_to_loop(b, op, inputs, cond, body, types)

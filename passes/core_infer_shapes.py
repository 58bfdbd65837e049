"""core-infer-shapes: refine the result types of core ops from their semantics (seed 000's
partial inference). Input: core ops whose operand types may be more precise than their result
types. Output: every core op's results typed by its semantics, dynamic dims kept as `?`, and
function signatures updated to what they return. Ops are visited in topological order; a use
before definition (a cycle) is an error.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlconv.dialects.core_base import CoreOp
from mlconv.errors import PassFailure
from mlconv.passes.core_semantics import infer_result_types
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter


def check_acyclic(block: Block) -> None:
    """Raise if an op uses a value defined later in its block (only possible through a cycle
    in a graph that was not topologically sorted)."""
    seen = set(block.args)
    for op in block.ops:
        for operand in op.operands:
            if operand.owner is not None and operand.owner.parent_block() is block and operand not in seen:
                raise PassFailure.at(op, "is part of a cycle: it uses a value defined after it")
        seen.update(op.results)


def infer_op(op: Operation) -> bool:
    """Retype one core op's results; True if something changed."""
    if not isinstance(op, CoreOp) or op.name == "core.Constant":
        return False
    inferred = infer_result_types(op)
    if inferred is None or len(inferred) != len(op.results):
        return False
    changed = False
    for result, new_type in zip(list(op.results), inferred, strict=True):
        if result.type != new_type:
            Rewriter.replace_value_with_new_type(result, new_type)
            changed = True
    return changed


def update_signature(function: func.FuncOp) -> None:
    returns = [op for op in function.body.walk() if isinstance(op, func.ReturnOp) and op.parent_op() is function]
    if not returns:
        return
    outputs = [v.type for v in returns[0].arguments]
    inputs = [a.type for a in function.body.block.args]
    function.function_type = func.FunctionType.from_lists(inputs, outputs)


@dataclass(frozen=True)
class CoreInferShapesPass(ModulePass):
    name = "core-infer-shapes"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in op.walk():
            if not isinstance(function, func.FuncOp) or function.is_declaration:
                continue
            check_acyclic(function.body.block)
            for inner in function.body.walk():
                infer_op(inner)
            update_signature(function)

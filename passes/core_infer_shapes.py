"""core-infer-shapes: refine the result types of core ops from their semantics (seed 000's
partial inference). Input: core ops whose operand types may be more precise than their result
types. Output: every core op's results typed by its semantics, dynamic dims kept as `?`, and
function signatures updated to what they return. Ops are visited in topological order; a use
before definition (a cycle) is an error.

`input-shapes=x:1,3,224,224;y:1,10` (as ovc's --input) first fixes the shapes of `@main`'s
inputs, named by their `mlconv.name`; a `?` keeps a dim dynamic.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import DYNAMIC_INDEX, ModuleOp, TensorType
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from mlconv.dialects.core_base import CoreOp
from mlconv.errors import OptionError, PassFailure
from mlconv.semantics.shapes import infer_result_types, meet_types


def check_acyclic(block: Block) -> None:
    """Raise if an op uses a value defined later in its block (only possible through a cycle
    in a graph that was not topologically sorted)."""
    seen = set(block.args)
    for op in block.ops:
        for operand in op.operands:
            if (
                operand.owner is not None
                and operand.owner.parent_block() is block
                and operand not in seen
            ):
                raise PassFailure.at(op, "is part of a cycle: it uses a value defined after it")
        seen.update(op.results)


def infer_op(op: Operation) -> bool:
    """Retype one core op's results; True if something changed. A result keeps what its type
    already knew (the meet of the old and the inferred type); a contradiction is an error."""
    if not isinstance(op, CoreOp) or op.name == "core.Constant":
        return False
    inferred = infer_result_types(op)
    if inferred is None or len(inferred) != len(op.results):
        return False
    changed = False
    for result, inferred_type in zip(list(op.results), inferred, strict=True):
        try:
            new_type = meet_types(inferred_type, result.type)
        except ValueError as error:
            raise PassFailure.at(
                op,
                f"result #{result.index} has type {result.type}, but its semantics give {inferred_type}: {error}",
            ) from None
        if result.type != new_type:
            Rewriter.replace_value_with_new_type(result, new_type)
            changed = True
    return changed


def update_signature(function: func.FuncOp) -> None:
    returns = [
        op
        for op in function.body.walk()
        if isinstance(op, func.ReturnOp) and op.parent_op() is function
    ]
    if not returns:
        return
    outputs = [v.type for v in returns[0].arguments]
    inputs = [a.type for a in function.body.block.args]
    function.function_type = func.FunctionType.from_lists(inputs, outputs)


def parse_input_shapes(text: str) -> dict[str, list[int]]:
    """`x:1,3,224,224;y:1,10` (or with `,` before the next `name:`) -> {"x": [1,3,224,224], ...};
    `?` or -1 is a dynamic dim."""
    shapes: dict[str, list[int]] = {}
    current: list[int] | None = None
    for token in text.replace(";", ",").split(","):
        token = token.strip()
        if not token:
            continue
        if ":" in token:
            name, _, token = token.rpartition(":")
            current = shapes.setdefault(name.strip(), [])
        if current is None:
            raise OptionError(f"input-shapes '{text}': expected name:dims, e.g. x:1,3,224,224")
        try:
            current.append(-1 if token in ("?", "-1") else int(token))
        except ValueError:
            raise OptionError(f"input-shapes '{text}': '{token}' is not a dimension") from None
    return shapes


def set_input_shapes(function: func.FuncOp, shapes: dict[str, list[int]]) -> None:
    # lazy: loads 4 more modules (dialects, passes)
    from mlconv.passes.core_to_tpu import input_name

    block = function.body.block
    names = [input_name(function, i) for i in range(len(block.args))]
    unknown = sorted(set(shapes) - set(names))
    if unknown:
        raise OptionError(
            f"input-shapes names unknown input(s) {', '.join(unknown)}; inputs: {', '.join(names)}"
        )
    for arg, name in zip(list(block.args), names, strict=True):
        if name not in shapes:
            continue
        old = arg.type
        dims = shapes[name]
        if isinstance(old, TensorType) and len(old.get_shape()) != len(dims):
            raise OptionError(
                f"input '{name}' has rank {len(old.get_shape())}, input-shapes gives {len(dims)} dims"
            )
        for i, (was, new) in enumerate(zip(old.get_shape(), dims, strict=True)):
            if was >= 0 and new >= 0 and was != new:
                raise OptionError(
                    f"input '{name}' dimension {i} is {was}, input-shapes gives {new}"
                )
        new_type = TensorType(old.get_element_type(), [DYNAMIC_INDEX if d < 0 else d for d in dims])
        Rewriter.replace_value_with_new_type(arg, new_type)


@dataclass(frozen=True)
class CoreInferShapesPass(ModulePass):
    name = "core-infer-shapes"
    input_shapes: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        shapes = parse_input_shapes(self.input_shapes) if self.input_shapes else None
        for function in op.walk():
            if (
                shapes is not None
                and isinstance(function, func.FuncOp)
                and not function.is_declaration
            ):
                set_input_shapes(function, shapes)
        for function in op.walk():
            if not isinstance(function, func.FuncOp) or function.is_declaration:
                continue
            check_acyclic(function.body.block)
            for inner in function.body.walk():
                infer_op(inner)
            update_signature(function)

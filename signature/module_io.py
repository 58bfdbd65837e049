"""The model function of a module and the names of its inputs and outputs: what every backend
and writer (JAX, OpenVINO IR, TFLite, calibration) reads the same way."""

from __future__ import annotations

from typing import Any

from xdsl.dialects import func
from xdsl.dialects.builtin import DictionaryAttr, ModuleOp, StringAttr, TensorType
from xdsl.ir import BlockArgument, SSAValue

from mlconv.dialects.core_base import CoreOp
from mlconv.dialects.core_control import IfOp
from mlconv.dialects.core_tensor import ShapeOfOp
from mlconv.errors import BackendError


def find_main(module: ModuleOp, purpose: str = "run") -> func.FuncOp:
    """`@main`, or the module's only function; `purpose` words the error when there is none."""
    functions = [op for op in module.ops if isinstance(op, func.FuncOp) and not op.is_declaration]
    for function in functions:
        if function.sym_name.data == "main":
            return function
    if len(functions) == 1:
        return functions[0]
    raise BackendError(f"module has no func.func @main to {purpose}")


def value_names(attrs: Any, count: int, prefix: str) -> list[str]:
    """The `mlconv.name` of each of `count` arguments or results (`arg_attrs`/`res_attrs`),
    `<prefix><index>` where there is none."""
    names = []
    for index in range(count):
        entry = attrs.data[index] if attrs is not None and index < len(attrs.data) else None
        name = entry.data.get("mlconv.name") if isinstance(entry, DictionaryAttr) else None
        names.append(name.data if isinstance(name, StringAttr) else f"{prefix}{index}")
    return names


def value_inputs(main: func.FuncOp) -> list[int]:
    """Indices of @main's arguments whose values reach a static operand (ShapeOf cuts the
    chain: its result depends on the shape only), or that is itself the condition of a core.If
    whose results have no static shape: the branch taken may decide them (optimum's merged
    decoders pick the first step or the cached step by their `use_cache_branch` input; bound,
    the If folds to one branch, so at most two programs per input shapes). A condition computed
    from the data (tf.cond) is left alone: binding it would bind the data, one program per
    input value."""
    reached: set[int] = set()
    seen: set[SSAValue] = set()

    def visit(value: SSAValue) -> None:
        stack = [value]
        while stack:
            current = stack.pop()
            if current in seen:
                continue
            seen.add(current)
            if isinstance(current, BlockArgument):
                if current.block is main.body.block:
                    reached.add(current.index)
                continue
            owner = current.owner
            if isinstance(owner, ShapeOfOp):
                continue
            stack.extend(owner.operands)

    for op in main.body.walk():
        if (
            isinstance(op, IfOp)
            and isinstance(op.cond, BlockArgument)
            and op.cond.block is main.body.block
            and any(
                isinstance(r.type, TensorType) and any(d < 0 for d in r.type.get_shape())
                for r in op.results
            )
        ):
            reached.add(op.cond.index)
        if not isinstance(op, CoreOp):
            continue
        groups = op.operand_groups()
        for spec, group in zip(op.OPERANDS, groups, strict=True):
            if spec.lstrip("*?") in op.STATIC_OPERANDS:
                for value in group:
                    visit(value)
    return sorted(reached)

"""The model function of a module and the names of its inputs and outputs: what every backend
and writer (JAX, OpenVINO IR, TFLite, calibration) reads the same way."""

from __future__ import annotations

from typing import Any

from xdsl.dialects import func
from xdsl.dialects.builtin import DictionaryAttr, ModuleOp, StringAttr

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

"""onnx-to-core: ONNX ops to the core opset.

Input: onnx dialect at the opset of the module's `onnx.opset_import` (the newest opset the
installed onnx package knows when absent). Output: no onnx ops left, or, before anything is
rewritten, one error naming every (op type, since-version) without a lowering, with its node
count and the first nodes. With `allow-partial=true` such ops are left in place.

Patterns are keyed by ("onnx", op type, since-version) in the lowering registry
(`mlconv.passes.lowering`, patterns in `onnx_patterns/`); each op's since-version comes from the
model's opset, so an op whose semantics changed in a later opset never meets the wrong pattern.
The driver is `lowering.driver.lower_ops`, shared with tf-to-core and tflite-to-core.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import onnx
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from mlconv.dialects import onnx as onnx_dialect
from mlconv.passes.core_infer_shapes import update_signature
from mlconv.passes.lowering import driver
from mlconv.passes.onnx_patterns.builder import onnx_builder


def default_opset(module: ModuleOp) -> int:
    """The default-domain opset the module imports."""
    imports = module.attributes.get("onnx.opset_import")
    if isinstance(imports, DictionaryAttr):
        for domain in ("", "ai.onnx"):
            entry = imports.data.get(domain)
            if isinstance(entry, IntegerAttr):
                return entry.value.data
    return onnx.defs.onnx_opset_version()


def onnx_ops(module: ModuleOp) -> list[onnx_dialect.OnnxOp]:
    return [op for op in module.walk() if isinstance(op, onnx_dialect.OnnxOp)]


def op_type(op: Operation) -> str:
    return op.ONNX_OP_TYPE  # type: ignore[attr-defined]


def since_version(opset: int) -> Callable[[Operation], int | None]:
    """The op's since-version at `opset` (None when the opset does not have the op)."""
    return lambda op: op.since_version(opset)  # type: ignore[attr-defined]


def unsupported(module: ModuleOp) -> driver.Missing:
    """(op type, since-version) -> node names, for every ONNX op without a lowering."""
    return driver.unsupported(
        onnx_ops(module), "onnx", version=since_version(default_opset(module)), name=op_type
    )


def check_legalizable(module: ModuleOp) -> list[str]:
    """One line per unsupported (op type, since-version) of the module; empty when all lower."""
    return driver.describe(unsupported(module), "onnx")


def lower(module: ModuleOp, allow_partial: bool = False, **options: Any) -> None:
    """Every ONNX op of `module` to core (options: the driver's `fallback`, `keep_going`)."""
    opset = default_opset(module)
    # Inner ops first is not needed: patterns only read their own op's operands.
    driver.lower_ops(
        onnx_ops(module),
        "onnx",
        onnx_builder,
        version=since_version(opset),
        name=op_type,
        allow_partial=allow_partial,
        context=f"at opset {opset}",
        **options,
    )
    for function in module.walk():
        if isinstance(function, func.FuncOp) and not function.is_declaration:
            update_signature(function)


@dataclass(frozen=True)
class OnnxToCorePass(ModulePass):
    name = "onnx-to-core"
    allow_partial: bool = False
    allow_custom: bool = False  # an op without a lowering becomes core.Custom

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        lower(op, self.allow_partial, **driver.custom_options(self.allow_custom))


__all__ = ["OnnxToCorePass", "check_legalizable", "unsupported"]

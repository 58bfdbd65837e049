"""onnx-to-core: ONNX ops to the core opset.

Input: onnx dialect at the opset of the module's `onnx.opset_import` (the newest opset the
installed onnx package knows when absent). Output: no onnx ops left, or, before anything is
rewritten, one error naming every (op type, since-version) without a lowering, with its node
count and the first nodes. With `allow-partial=true` such ops are left in place.

Patterns are keyed by (op type, since-version) in `onnx_patterns.PATTERNS`; each op's
since-version comes from the model's opset, so an op whose semantics changed in a later opset
never meets the wrong pattern.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import onnx
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, ModuleOp
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from mlconv.dialects import onnx as onnx_dialect
from mlconv.errors import PassFailure, describe_location
from mlconv.passes.core_infer_shapes import update_signature
from mlconv.passes.onnx_patterns import load_patterns
from mlconv.passes.onnx_patterns.builder import CoreBuilder


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


def unsupported(module: ModuleOp) -> dict[tuple[str, int | None], list[str]]:
    """(op type, since-version) -> node names, for every ONNX op without a lowering."""
    patterns = load_patterns()
    opset = default_opset(module)
    missing: dict[tuple[str, int | None], list[str]] = defaultdict(list)
    for op in onnx_ops(module):
        version = op.since_version(opset)
        if (op.ONNX_OP_TYPE, version) not in patterns:
            missing[(op.ONNX_OP_TYPE, version)].append(describe_location(op.location) or "?")
    return dict(missing)


def describe_unsupported(missing: dict[tuple[str, int | None], list[str]], opset: int) -> list[str]:
    lines = []
    for (op_type, version), nodes in sorted(
        missing.items(), key=lambda kv: (kv[0][0], kv[0][1] or 0)
    ):
        label = (
            f"{op_type}-{version}" if version is not None else f"{op_type} (not in opset {opset})"
        )
        shown = ", ".join(nodes[:3]) + (", ..." if len(nodes) > 3 else "")
        plural = "node" if len(nodes) == 1 else "nodes"
        lines.append(f"{label} ({len(nodes)} {plural}: {shown})")
    return lines


def check_legalizable(module: ModuleOp) -> list[str]:
    """One line per unsupported (op type, since-version) of the module; empty when all lower."""
    return describe_unsupported(unsupported(module), default_opset(module))


def lower_op(op: onnx_dialect.OnnxOp, opset: int) -> bool:
    pattern = load_patterns().get((op.ONNX_OP_TYPE, op.since_version(opset)))
    if pattern is None:
        return False
    builder = CoreBuilder(op)
    values: list[SSAValue | None] = list(pattern(op, builder))
    # Patterns list every ONNX output; optional ones the node omits are absent from the op.
    values = (values + [None] * len(op.results))[: len(op.results)]
    for result, value in zip(op.results, values, strict=True):
        if value is None:
            if result.uses:
                raise builder.fail(
                    f"output #{result.index} is used but the lowering does not produce it"
                )
            continue
        result.replace_all_uses_with(builder.refine(value, result.type))
    Rewriter.erase_op(op)
    return True


@dataclass(frozen=True)
class OnnxToCorePass(ModulePass):
    name = "onnx-to-core"
    allow_partial: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        opset = default_opset(op)
        missing = unsupported(op)
        if missing and not self.allow_partial:
            lines = describe_unsupported(missing, opset)
            raise PassFailure(
                f"no lowering to core for {len(lines)} ONNX op version(s) at opset {opset}: "
                + "; ".join(lines)
            )
        # Inner ops first is not needed: patterns only read their own op's operands.
        for onnx_op in onnx_ops(op):
            lower_op(onnx_op, opset)
        for function in op.walk():
            if isinstance(function, func.FuncOp) and not function.is_declaration:
                update_signature(function)


__all__ = ["OnnxToCorePass", "check_legalizable", "unsupported"]

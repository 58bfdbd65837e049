"""tf-to-core: TensorFlow ops to the core opset.

Input: tf dialect as the SavedModel importer writes it (a frozen graph: weights are tf.Const).
Output: no tf ops left, or, before anything is rewritten, one error naming every TF op type
without a lowering, with its node count and the first nodes. With `allow-partial=true` such
ops are left in place.

Patterns are keyed by TF op name in `tf_patterns.PATTERNS`. TF's NHWC ops become NCHW core
ops wrapped in core.Transpose; run core-layout-nchw afterwards to sink and cancel them.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from mlconv.dialects import tf as tf_dialect
from mlconv.errors import PassFailure, describe_location
from mlconv.passes.tf_patterns import load_patterns
from mlconv.passes.tf_patterns.builder import TfBuilder


def tf_ops(module: ModuleOp) -> list[tf_dialect.TFOp]:
    return [op for op in module.walk() if isinstance(op, tf_dialect.TFOp | tf_dialect.YieldOp)]


def op_type(op) -> str:
    return op.name.split(".", 1)[1]


def unsupported(module: ModuleOp) -> dict[str, list[str]]:
    """TF op type -> node names, for every TF op without a lowering."""
    patterns = load_patterns()
    missing: dict[str, list[str]] = defaultdict(list)
    for op in tf_ops(module):
        if op_type(op) not in patterns:
            missing[op_type(op)].append(describe_location(op.location) or "?")
    return dict(missing)


def describe_unsupported(missing: dict[str, list[str]]) -> list[str]:
    lines = []
    for name, nodes in sorted(missing.items()):
        shown = ", ".join(nodes[:3]) + (", ..." if len(nodes) > 3 else "")
        plural = "node" if len(nodes) == 1 else "nodes"
        lines.append(f"tf.{name} ({len(nodes)} {plural}: {shown})")
    return lines


def lower_op(op: tf_dialect.TFOp) -> bool:
    pattern = load_patterns().get(op_type(op))
    if pattern is None:
        return False
    builder = TfBuilder(op)
    values: list[SSAValue | None] = list(pattern(op, builder))
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
class TfToCorePass(ModulePass):
    name = "tf-to-core"
    allow_partial: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        missing = unsupported(op)
        if missing and not self.allow_partial:
            lines = describe_unsupported(missing)
            raise PassFailure(
                f"no lowering to core for {len(lines)} TF op type(s): " + "; ".join(lines)
            )
        # Producers come before users in a block, so each pattern sees lowered operands
        # (constants it can fold, static shapes).
        for tf_op in tf_ops(op):
            lower_op(tf_op)


__all__ = ["TfToCorePass", "unsupported"]

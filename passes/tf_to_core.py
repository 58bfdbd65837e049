"""tf-to-core: TensorFlow ops to the core opset.

Input: tf dialect as the SavedModel importer writes it (a frozen graph: weights are tf.Const).
Output: no tf ops left, or, before anything is rewritten, one error naming every TF op type
without a lowering, with its node count and the first nodes. With `allow-partial=true` such
ops are left in place.

Patterns are keyed by ("tf", op name) in the lowering registry (`mlconv.passes.lowering`,
patterns in `tf_patterns/`), run by the driver shared with onnx-to-core. TF's NHWC ops become NCHW core
ops wrapped in core.Transpose; run core-layout-nchw afterwards to sink and cancel them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from mlconv.dialects import tf as tf_dialect
from mlconv.passes.lowering import driver
from mlconv.passes.tf_patterns.builder import tf_builder


def tf_ops(module: ModuleOp) -> list[tf_dialect.TFOp]:
    return [op for op in module.walk() if isinstance(op, tf_dialect.TFOp | tf_dialect.YieldOp)]


def unsupported(module: ModuleOp) -> driver.Missing:
    """(TF op type, None) -> node names, for every TF op without a lowering."""
    return driver.unsupported(tf_ops(module), "tf")


def lower(module: ModuleOp, allow_partial: bool = False, **options: Any) -> None:
    """Every TF op of `module` to core (options: the driver's `fallback`, `keep_going`)."""
    # Producers come before users in a block, so each pattern sees lowered operands
    # (constants it can fold, static shapes).
    driver.lower_ops(tf_ops(module), "tf", tf_builder, allow_partial=allow_partial, **options)


@dataclass(frozen=True)
class TfToCorePass(ModulePass):
    name = "tf-to-core"
    allow_partial: bool = False
    allow_custom: bool = False  # an op without a lowering becomes core.Custom

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        lower(op, self.allow_partial, **driver.custom_options(self.allow_custom))


__all__ = ["TfToCorePass", "unsupported"]

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
from xdsl.dialects.builtin import ComplexType, ModuleOp, TensorType
from xdsl.ir import Attribute, SSAValue
from xdsl.passes import ModulePass

from mlconv.dialects import tf as tf_dialect
from mlconv.errors import PassFailure, describe_location
from mlconv.passes.lowering import driver
from mlconv.passes.tf_patterns.builder import tf_builder
from mlconv.passes.tf_patterns.lists import is_list
from mlconv.passes.tf_patterns.signal import COMPLEX_OPS


def tf_ops(module: ModuleOp) -> list[tf_dialect.TFOp]:
    """The TF ops, those inside a control-flow op's regions before the op (so its pattern
    moves regions of core ops)."""
    return [
        op
        for op in module.walk(region_first=True)
        if isinstance(op, tf_dialect.TFOp | tf_dialect.YieldOp)
    ]


def unsupported(module: ModuleOp) -> driver.Missing:
    """(TF op type, None) -> node names, for every TF op without a lowering."""
    return driver.unsupported(tf_ops(module), "tf")


def _complex(type_: Attribute) -> bool:
    return isinstance(getattr(type_, "element_type", None), ComplexType)


def core_type(type_: Attribute) -> Attribute:
    """The core form of a TF value's type: a complex tensor is a float tensor with a trailing
    dim of 2 (real, imaginary), as core.DFT has it."""
    if not _complex(type_):
        return type_
    element = type_.element_type.element_type
    if isinstance(type_, TensorType):
        return TensorType(element, [*type_.get_shape(), 2])
    return type_.__class__(element)


def _check_complex(ops: list) -> None:
    """Refuse TF ops outside `COMPLEX_OPS` that read or give complex tensors, all at once."""
    found: dict[str, list[str]] = {}
    for op in ops:
        if op.name[3:] in COMPLEX_OPS:
            continue
        if any(_complex(v.type) for v in (*op.operands, *op.results)):
            found.setdefault(op.name, []).append(describe_location(op.location) or "?")
    if found:
        listed = "; ".join(
            f"{name} ({', '.join(nodes[:3])})" for name, nodes in sorted(found.items())
        )
        raise PassFailure(f"complex tensors are supported by the FFT family only, not by: {listed}")


def _finish(b, result: SSAValue, value: SSAValue) -> SSAValue:
    if is_list(result):
        return value  # a TensorList is a tensor now; the variant type says nothing of it
    return b.refine(value, core_type(result.type))


def lower(module: ModuleOp, allow_partial: bool = False, **options: Any) -> None:
    """Every TF op of `module` to core (options: the driver's `fallback`, `keep_going`)."""
    ops = tf_ops(module)
    if not allow_partial and "keep_going" not in options:
        _check_complex(ops)
    # Producers come before users in a block, so each pattern sees lowered operands
    # (constants it can fold, static shapes).
    driver.lower_ops(ops, "tf", tf_builder, allow_partial=allow_partial, finish=_finish, **options)


@dataclass(frozen=True)
class TfToCorePass(ModulePass):
    name = "tf-to-core"
    allow_partial: bool = False
    allow_custom: bool = False  # an op without a lowering becomes core.Custom

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        lower(op, self.allow_partial, **driver.custom_options(self.allow_custom))


__all__ = ["TfToCorePass", "unsupported"]

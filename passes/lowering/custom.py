"""allow-custom: the driver fallback that keeps an op nobody lowers as `core.Custom`.

`onnx-to-core{allow-custom=true}` (and tf-to-core, tflite-to-core) hand `custom_fallback` to
`driver.lower_ops`: an op without a pattern becomes `core.Custom` with the same operands and
result types, its domain (the ONNX domain; "" for the default one; "tf" / "tflite" for those
dialects), its op type and its attributes. What it computes is then the host implementation
registered in `mlconv.custom_ops`, unless a plugin lowers core.Custom: a pattern registered as
("custom", "<domain>.<op_type>") (`lowering("custom", "com.acme.Foo")`, no version) gets the
core.Custom op and the builder, whatever framework the op came from, and its values replace it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from xdsl.dialects.builtin import DictionaryAttr
from xdsl.ir import Attribute, Operation, SSAValue

from mlconv.dialects.core_custom import CustomOp
from mlconv.passes.lowering.registry import lookup

# Bookkeeping attributes of variadic ops, not attributes of the source op.
_STRUCTURAL = frozenset({"operandSegmentSizes", "resultSegmentSizes"})


def describe(op: Operation) -> tuple[str, str, dict[str, Any]]:
    """(domain, op type, attributes) of a framework op, as core.Custom carries them."""
    # lazy: loads onnx, which this module does not
    from mlconv.dialects import onnx as onnx_dialect
    from mlconv.dialects import tflite

    if isinstance(op, onnx_dialect.CustomOp):
        return op.domain.data, op.op_type.data, dict(op.attrs.data)
    if isinstance(op, tflite.CustomOp):  # its code and decoded options, not the CUSTOM wrapper
        raw = {"raw_options": op.raw_options} if op.raw_options is not None else {}
        return "tflite", op.custom_code.data, {**op.custom_options.data, **raw}
    attributes = {k: v for k, v in op.attributes.items() if k not in _STRUCTURAL}
    dialect, name = op.name.split(".", 1)
    if isinstance(op, onnx_dialect.OnnxOp):
        return "", op.ONNX_OP_TYPE, attributes
    return dialect, name, attributes


def custom_fallback(
    op: Operation,
    b: Any,
    operands: Sequence[SSAValue] | None = None,
    result_types: Sequence[Attribute] | None = None,
) -> list[SSAValue]:
    """`op` as core.Custom, inserted by the builder `b` at the op's location (`operands`,
    `result_types`: the framework's own view of them, e.g. TFLite's dequantized values)."""
    if op.regions:
        raise b.fail("has subgraphs; allow-custom keeps only ops without regions")
    domain, op_type, attributes = describe(op)
    custom = CustomOp.build_op(
        [list(op.operands if operands is None else operands)],
        [r.type for r in op.results] if result_types is None else list(result_types),
        domain=domain,
        op_type=op_type,
        attrs=DictionaryAttr(attributes),
    )
    b.insert(custom)
    # lazy: loads 1 more module (custom_ops)
    from mlconv.custom_ops import label

    pattern = lookup("custom", label(domain, op_type), None)
    if pattern is None:
        return list(custom.results)
    values = list(pattern(custom, b))  # the plugin's core ops, built before the source op
    custom.detach()
    custom.erase()
    return values


__all__ = ["custom_fallback", "describe"]

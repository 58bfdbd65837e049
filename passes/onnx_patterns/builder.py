"""OnnxReader: how an ONNX lowering pattern reads its op (composed into `lowering.Builder`).

Operands are addressed by ONNX input slot name (`b.input(op, "X")`, `b.inputs(op, "inputs")`
for a variadic slot); attributes by name with the default the pattern gives for the versions it
handles (`b.attr(op, "axis", 1)`).
"""

from __future__ import annotations

from typing import Any

from xdsl.ir import Operation

from mlconv.passes.lowering.builder import Builder, SlotReader


class OnnxReader(SlotReader):
    """ONNX operands by input slot name (`b.input(op, "X")`), attributes as the node sets them."""

    def slot(self, op: Any, key: str) -> int:
        return op.INPUTS.index(key)

    def attr(self, op: Any, name: str, default: Any = None) -> Any:
        """The attribute's value when the node sets it, else `default`. Patterns give the
        default of the versions they handle: the dialect's defaults are the newest schema's,
        and some changed (Softmax's axis was 1 before opset 13, -1 since)."""
        if name not in op.attributes:
            return default
        return op.onnx_attr(name)


def onnx_builder(op: Operation) -> Builder:
    """The builder an ONNX pattern gets: core ops before `op`, ONNX slots read by name."""
    return Builder(op, OnnxReader)

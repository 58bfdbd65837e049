"""TFLite -> core lowering patterns, keyed by builtin operator name.

A pattern is a function `(op, b: Builder) -> list[SSAValue]` giving the values that
replace the op's outputs, in float (or the op's own integer type for index/shape tensors).
Quantization is not the pattern's business: `b.x(i)` hands it operand `i` dequantized,
`(q - zero_point) * scale`, and the pass quantizes every quantized output after it,
`clamp(round(x / scale) + zero_point)`. Register a pattern for every operator it handles:

    @lowering("LOGISTIC")
    def logistic(op, b):
        return [b(core.SigmoidOp, b.x(0))]

The semantics of these operators did not change across their versions (versions add types and
parameters), so the registry's key is ("tflite", operator, None); a parameter a pattern cannot handle is
refused with `raise b.fail("why")`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from mlconv.passes.lowering import Pattern
from mlconv.passes.lowering import lowering as _lowering

FAMILIES = ("nn", "elementwise", "image", "tensor", "control", "rnn")


def lowering(*operators: str) -> Callable[[Pattern], Pattern]:
    """`@lowering("ADD", "SUB")`: the registry's decorator for dialect "tflite", target core,
    one builtin operator name or several."""
    return _lowering("tflite", operators)


def lower_each(family: Callable[[type], Pattern], operators: Mapping[str, type]) -> None:
    """Register `family(op_class)` as the lowering of each operator -> core op class of
    `operators` (a family of builtins that differ only in the core op they become)."""
    for operator, op_class in operators.items():
        lowering(operator)(family(op_class))

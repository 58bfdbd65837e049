"""TFLite -> core lowering patterns, keyed by builtin operator name.

A pattern is a function `(op, b: TfliteBuilder) -> list[SSAValue]` giving the values that
replace the op's outputs, in float (or the op's own integer type for index/shape tensors).
Quantization is not the pattern's business: `b.x(i)` hands it operand `i` dequantized,
`(q - zero_point) * scale`, and the pass quantizes every quantized output after it,
`clamp(round(x / scale) + zero_point)`. Register a pattern for every operator it handles:

    @lowering("LOGISTIC")
    def logistic(op, b):
        return [b(core.SigmoidOp, b.x(0))]

The semantics of these operators did not change across their versions (versions add types and
parameters), so the table is keyed by name alone; a parameter a pattern cannot handle is
refused with `raise b.fail("why")`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

Pattern = Callable[..., list[Any]]

PATTERNS: dict[str, Pattern] = {}

FAMILIES = ("nn", "elementwise", "tensor")


def lowering(*operators: str) -> Callable[[Pattern], Pattern]:
    """Register a pattern for each builtin operator name in `operators`."""

    def register(pattern: Pattern) -> Pattern:
        for operator in operators:
            if operator in PATTERNS:
                raise ValueError(f"two lowerings for {operator}")
            PATTERNS[operator] = pattern
        return pattern

    return register


def load_patterns() -> dict[str, Pattern]:
    for family in FAMILIES:
        importlib.import_module(f"mlconv.passes.tflite_patterns.{family}")
    return PATTERNS

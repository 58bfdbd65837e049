"""ONNX -> core lowering patterns, keyed by (op type, since-version).

A pattern is a function `(op, b: CoreBuilder) -> list[SSAValue | None]` giving the values
that replace the op's results, in ONNX output order (None for an absent optional output).
Register it for every since-version whose semantics it handles:

    @lowering("Relu", 1, 6, 13, 14)
    def relu(op, b):
        return [b(core.ReluOp, b.input(op, "X"))]

The families live in one module each (nn, math, tensor, ...), imported below.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

Pattern = Callable[..., list[Any]]

PATTERNS: dict[tuple[str, int], Pattern] = {}

FAMILIES = (
    "elementwise",
    "activations",
    "nn",
    "tensor",
    "control",
    "reduce",
    "indexing",
    "image",
    "rnn",
    "misc",
    "quant",
)


def lowering(op_type: str, *since_versions: int) -> Callable[[Pattern], Pattern]:
    """Register a pattern for `op_type` at each of `since_versions`."""

    def register(pattern: Pattern) -> Pattern:
        for version in since_versions:
            key = (op_type, version)
            if key in PATTERNS:
                raise ValueError(f"two lowerings for {op_type}-{version}")
            PATTERNS[key] = pattern
        return pattern

    return register


def load_patterns() -> dict[tuple[str, int], Pattern]:
    for family in FAMILIES:
        importlib.import_module(f"mlconv.passes.onnx_patterns.{family}")
    return PATTERNS

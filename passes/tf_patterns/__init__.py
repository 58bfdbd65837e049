"""TF -> core lowering patterns, keyed by TensorFlow op name.

A pattern is a function `(op, b: TfBuilder) -> list[SSAValue | None]` giving the values that
replace the op's results, in TensorFlow output order (None for an output nothing may use):

    @lowering("Relu")
    def relu(op, b):
        return [b(core.ReluOp, b.input(op, 0))]

TF ops have no since-versions (the GraphDef's producer version does not change an op's
semantics), so the key is the op name alone. NHWC ops become NCHW core ops between
`b.to_nchw` / `b.to_nhwc` transposes; core-layout-nchw later sinks and cancels them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

Pattern = Callable[..., list[Any]]

PATTERNS: dict[str, Pattern] = {}

FAMILIES = ("elementwise", "nn", "tensor")


def lowering(*op_types: str) -> Callable[[Pattern], Pattern]:
    """Register a pattern for each TF op name in `op_types`."""

    def register(pattern: Pattern) -> Pattern:
        for op_type in op_types:
            if op_type in PATTERNS:
                raise ValueError(f"two lowerings for tf.{op_type}")
            PATTERNS[op_type] = pattern
        return pattern

    return register


def load_patterns() -> dict[str, Pattern]:
    for family in FAMILIES:
        importlib.import_module(f"mlconv.passes.tf_patterns.{family}")
    return PATTERNS

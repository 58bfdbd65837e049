"""ONNX -> core lowering patterns, keyed by (op type, since-version).

A pattern is a function `(op, b: Builder) -> list[SSAValue | None]` giving the values
that replace the op's results, in ONNX output order (None for an absent optional output).
Register it for every since-version whose semantics it handles:

    @lowering("Relu", 1, 6, 13, 14)
    def relu(op, b):
        return [b(core.ReluOp, b.input(op, "X"))]

The patterns live in `mlconv.passes.lowering`'s registry under ("onnx", op type, since-version);
the families (one module each: nn, tensor, ...) are imported on first lookup.
"""

from __future__ import annotations

import functools

from mlconv.passes.lowering import lowering as _lowering

FAMILIES = (
    "ml",
    "detection",
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
    "training",
)

# `@lowering("Relu", 1, 6, 13, 14)`: the registry's decorator for dialect "onnx", target core.
lowering = functools.partial(_lowering, "onnx")


def lower_unary(table: dict[str, tuple[type, tuple[int, ...]]]) -> None:
    """Register each op of `table` (op type -> (core op class, since-versions)) as that core
    op applied to the op's one input."""

    def unary(core_class: type):
        def pattern(op, b):
            return [b(core_class, op.operands[0])]

        return pattern

    for name, (core_class, versions) in table.items():
        lowering(name, *versions)(unary(core_class))

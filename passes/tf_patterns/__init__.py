"""TF -> core lowering patterns, keyed by TensorFlow op name.

A pattern is a function `(op, b: Builder) -> list[SSAValue | None]` giving the values that
replace the op's results, in TensorFlow output order (None for an output nothing may use):

    @lowering("Relu")
    def relu(op, b):
        return [b(core.ReluOp, b.input(op, 0))]

TF ops have no since-versions (the GraphDef's producer version does not change an op's
semantics), so the key is ("tf", op name, None) in `mlconv.passes.lowering`'s registry. NHWC ops become NCHW core ops between
`b.to_nchw` / `b.to_nhwc` transposes; core-layout-nchw later sinks and cancels them.
"""

from __future__ import annotations

from collections.abc import Callable

from mlconv.passes.lowering import Pattern
from mlconv.passes.lowering import lowering as _lowering

FAMILIES = ("control", "elementwise", "image", "lists", "nn", "signal", "tensor")


def lowering(*op_types: str) -> Callable[[Pattern], Pattern]:
    """`@lowering("Relu", "Relu6")`: the registry's decorator for dialect "tf", target core,
    one name or several (TF ops have no since-versions)."""
    return _lowering("tf", op_types)

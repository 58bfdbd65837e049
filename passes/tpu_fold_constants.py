"""tpu-fold-constants: evaluate tpu ops whose operands are all constants, at compile time.

Input/output: tpu dialect. The JAX backend passes `tpu.constant`s as arguments of the jitted
program, so XLA cannot fold what is computed from them: a weight reshaped or transposed by a
lowering is reshaped again on every call. This pass runs such ops once (eagerly, on the CPU)
and replaces them by a `tpu.constant` holding the result: weights arrive pre-transposed and
pre-packed. Ops whose result would be larger than `max-elements`, expansions (a result larger
than its inputs, above 1024 elements: XLA fuses a broadcast for free), control flow and ops
with regions are left alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from mlconv.dense import to_numpy
from mlconv.dialects import tpu


def constant_value(value: SSAValue) -> np.ndarray | None:
    """The numpy value of a `tpu.constant` result, else None."""
    owner = value.owner
    if isinstance(owner, tpu.ConstantOp):
        return to_numpy(owner.value)
    return None


def constant(array: np.ndarray, location) -> tpu.ConstantOp:
    op = tpu.ConstantOp.from_numpy(np.ascontiguousarray(array))
    op.location = location
    return op


def evaluate(op: tpu.PrimitiveOp, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Run one primitive eagerly on the CPU."""
    import jax

    with jax.default_device(jax.devices("cpu")[0]):
        out = tpu.primitive(op.PRIMITIVE).bind(*inputs, **op.params())
    outputs = out if op.MULTIPLE_RESULTS else [out]
    return [np.asarray(o) for o in outputs]


class FoldConstantOperands(RewritePattern):
    def __init__(self, max_elements: int):
        self.max_elements = max_elements

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tpu.PrimitiveOp, rewriter: PatternRewriter) -> None:
        if op.regions or not op.operands:
            return
        inputs = [constant_value(v) for v in op.operands]
        if any(i is None for i in inputs):
            return
        sizes = [int(np.prod(r.type.get_shape())) for r in op.results]
        if any(size > self.max_elements for size in sizes):
            return
        if sum(sizes) > max(sum(i.size for i in inputs), 1024):
            return  # an expansion (broadcast, iota-like): cheaper fused at run time than stored
        try:
            outputs = evaluate(op, inputs)
        except Exception:  # noqa: BLE001 - leave it to run at run time, where errors surface
            return
        new: list[Operation] = [constant(o, op.location) for o in outputs]
        if [c.output.type for c in new] != [r.type for r in op.results]:
            return
        rewriter.replace(op, new, [c.output for c in new])


def erase_dead(module: ModuleOp) -> None:
    """Erase unused tpu primitive ops and constants, nested regions included (xDSL's region_dce
    stops at `tpu.region`, which has no side-effect interface)."""
    for op in reversed(list(module.walk())):
        if isinstance(op, tpu.PrimitiveOp | tpu.ConstantOp) and all(not r.uses for r in op.results):
            op.detach()
            op.erase()


def fold_constants(module: ModuleOp, max_elements: int = 1 << 27) -> None:
    PatternRewriteWalker(FoldConstantOperands(max_elements)).rewrite_module(module)
    erase_dead(module)


@dataclass(frozen=True)
class TpuFoldConstantsPass(ModulePass):
    """tpu-fold-constants: evaluate tpu ops of constant operands at compile time (pre-transposed,
    pre-packed weights). Input/output: tpu dialect."""

    name = "tpu-fold-constants"
    max_elements: int = 1 << 27

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fold_constants(op, self.max_elements)


__all__ = [
    "TpuFoldConstantsPass",
    "constant",
    "constant_value",
    "erase_dead",
    "evaluate",
    "fold_constants",
]

"""tpu-fold-constants: evaluate tpu ops whose operands are all constants, at compile time.

Input/output: tpu dialect. The JAX backend passes `tpu.constant`s as arguments of the jitted
program, so XLA cannot fold what is computed from them: a weight reshaped or transposed by a
lowering is reshaped again on every call. This pass runs such ops once (eagerly, on the CPU)
and replaces them by a `tpu.constant` holding the result: weights arrive pre-transposed and
pre-packed. Ops whose result would be larger than `max-elements`, expansions (a result larger
than its inputs, above 1024 elements: XLA fuses a broadcast for free), control flow and ops
with regions are left alone.

A `transpose` of a weight feeding a `dot_general` (Gemm transB=1, MatMul of a transposed
initializer) is not folded but absorbed into the dot's dimension numbers first: the dot takes
the untransposed constant and contracts over its other axis. Folding it copied the weight
(vgg19's 25088x4096 fc6: ~1.5 s of a 1.8 s pass) and XLA:CPU runs the transposed contraction
(a row-major matrix-vector product) as fast or faster.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
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
from mlconv.semantics.jaxpr_numpy import FLOAT_UFUNCS


def constant_value(value: SSAValue) -> np.ndarray | None:
    """The numpy value of a `tpu.constant` result, else None."""
    owner = value.owner
    if isinstance(owner, tpu.ConstantOp):
        return to_numpy(owner.value)
    return None


def constant(array: np.ndarray, location) -> tpu.ConstantOp:
    # not ascontiguousarray, which makes a 0-d array 1-d: from_numpy takes the bytes in C order
    op = tpu.ConstantOp.from_numpy(array)
    op.location = location
    return op


def _broadcast_in_dim(
    x: np.ndarray, shape: tuple[int, ...], broadcast_dimensions: tuple[int, ...], **_
) -> np.ndarray:
    expanded = [1] * len(shape)
    for source, target in enumerate(broadcast_dimensions):
        expanded[target] = x.shape[source]
    return np.broadcast_to(x.reshape(expanded), shape)


def _pad(x: np.ndarray, value: np.ndarray, padding_config: Any, **_) -> np.ndarray:
    """lax.pad: interior padding between elements, then edges (negative ones crop)."""
    fill = np.asarray(value).item()
    if any(interior for _, _, interior in padding_config):
        spread = [
            n + (n - 1) * i if n else 0
            for n, (_, _, i) in zip(x.shape, padding_config, strict=True)
        ]
        inner = np.full(spread, fill, x.dtype)
        inner[tuple(slice(None, None, i + 1) for _, _, i in padding_config)] = x
        x = inner
    crop = tuple(
        slice(max(-lo, 0), x.shape[d] - max(-hi, 0)) for d, (lo, hi, _) in enumerate(padding_config)
    )
    widths = [(max(lo, 0), max(hi, 0)) for lo, hi, _ in padding_config]
    return np.pad(x[crop], widths, constant_values=fill)


# The layout primitives weights go through, in numpy: jax's eager dispatch compiles one XLA
# program per primitive and shape (~10-50 ms each), which made this pass the slowest of all.
NUMPY: dict[str, Any] = {
    "reshape": lambda x, new_sizes, **_: x.reshape(new_sizes),
    "transpose": lambda x, permutation, **_: np.transpose(x, permutation),
    "broadcast_in_dim": _broadcast_in_dim,
    "squeeze": lambda x, dimensions, **_: np.squeeze(x, tuple(dimensions)),
    "expand_dims": lambda x, dimensions, **_: np.expand_dims(x, tuple(dimensions)),
    "convert_element_type": lambda x, new_dtype, **_: x.astype(new_dtype),
    "slice": lambda x, start_indices, limit_indices, strides, **_: x[
        tuple(
            slice(a, b, c)
            for a, b, c in zip(start_indices, limit_indices, strides or [1] * x.ndim, strict=True)
        )
    ],
    "rev": lambda x, dimensions, **_: np.flip(x, tuple(dimensions)),
    "concatenate": lambda *xs, dimension, **_: np.concatenate(xs, dimension),
    "pad": _pad,
}


def evaluate(op: tpu.PrimitiveOp, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Run one primitive on the CPU: in numpy for layout and exact float ops, else eagerly
    through jax."""
    name = op.PRIMITIVE
    if name in NUMPY:
        return [np.asarray(NUMPY[name](*inputs, **op.params()))]
    if name in FLOAT_UFUNCS and all(i.dtype.kind == "f" and i.dtype.itemsize >= 4 for i in inputs):
        same = all(i.shape == inputs[0].shape or i.ndim == 0 for i in inputs)
        if same and len({i.dtype for i in inputs}) == 1:
            return [np.asarray(FLOAT_UFUNCS[name](*inputs), dtype=inputs[0].dtype)]

    with jax.default_device(jax.devices("cpu")[0]):
        out = tpu.primitive(op.PRIMITIVE).bind(*inputs, **op.params())
    outputs = out if op.MULTIPLE_RESULTS else [out]
    return [np.asarray(o) for o in outputs]


def _foldable(value: SSAValue, depth: int = 8) -> bool:
    """Whether `value` is a constant or computed from constants only (what this pass folds)."""
    owner = value.owner
    if isinstance(owner, tpu.ConstantOp):
        return True
    if depth == 0 or not isinstance(owner, tpu.PrimitiveOp) or owner.regions or not owner.operands:
        return False
    return all(_foldable(v, depth - 1) for v in owner.operands)


class AbsorbWeightTranspose(RewritePattern):
    """dot_general(x, transpose(W, p)) -> dot_general(x, W) with W's axes in the dimension
    numbers (either operand), when W is constant-foldable and `p` keeps the order of the free
    (non-contracting, non-batch) axes, which fixes the order of the result's axes."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tpu.PrimitiveOp, rewriter: PatternRewriter) -> None:
        if op.PRIMITIVE != "dot_general":
            return
        params = op.params()
        (contracting, batch) = params["dimension_numbers"]
        contracting, batch = [list(c) for c in contracting], [list(b) for b in batch]
        operands = list(op.operands)
        changed = False
        for side in (0, 1):
            transpose = operands[side].owner
            if not (isinstance(transpose, tpu.PrimitiveOp) and transpose.PRIMITIVE == "transpose"):
                continue
            source = transpose.operands[0]
            if not _foldable(source):
                continue
            perm = tuple(transpose.params()["permutation"])
            used = set(contracting[side]) | set(batch[side])
            free = [perm[d] for d in range(len(perm)) if d not in used]
            if free != sorted(free):
                continue
            contracting[side] = [perm[d] for d in contracting[side]]
            batch[side] = [perm[d] for d in batch[side]]
            operands[side] = source
            changed = True
        if not changed:
            return
        params["dimension_numbers"] = (
            tuple(tuple(c) for c in contracting),
            tuple(tuple(b) for b in batch),
        )
        new = type(op).create(
            operands=operands,
            result_types=[r.type for r in op.results],
            attributes={k: tpu.encode_param(v) for k, v in params.items()},
        )
        new.location = op.location
        rewriter.replace(op, new)


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
    PatternRewriteWalker(AbsorbWeightTranspose(), apply_recursively=False).rewrite_module(module)
    erase_dead(module)  # the absorbed transposes, before anything folds them
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

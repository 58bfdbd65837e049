"""core-layout-nchw: sink and cancel the layout transposes that NHWC frontends insert (seed
000's NHWC -> NCHW middle phase). Input/output: core dialect, same numerics.

tf-to-core lowers each NHWC op to its NCHW core op between Transpose(0,3,1,2) and
Transpose(0,2,3,1). This pass moves every Transpose below its users wherever the user's
semantics can be re-expressed in the transposed layout, and cancels inverse pairs, so that
an NHWC CNN keeps one Transpose at its input (and one at an NHWC output):

- Transpose(Transpose(x, p), q) -> Transpose(x, p∘q), dropped when the identity;
  Transpose(Constant) -> Constant;
- elementwise ops (unary, binary, Select, Convert, Clamp...) whose operands are Transposes by
  the same permutation or constants: the op runs untransposed, constants are permuted at
  compile time (after rank alignment), and one Transpose follows;
- reductions and Squeeze: axes permuted, the Transpose follows with the kept dims (none when
  they stay in order, as global pooling's NHWC [1, 2] does);
- Softmax/LogSoftmax axis, Concat axis, Pad pads, SpaceToBatch/BatchToSpace blocks (batch
  dim fixed), Reshape that only drops unit dims.

Nothing is fused here. Run core-fold-constants first (the tf-to-tpu pipeline does), so the
broadcast operands of a decomposed batch norm are plain constants; dead ops are removed last.
A pass never runs another pass inside itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)
from xdsl.rewriter import Rewriter

from mlconv.dialects import core_elementwise as ew
from mlconv.dialects import core_nn as nn
from mlconv.dialects import core_tensor as ct
from mlconv.dialects import core_tf as ctf
from mlconv.dialects.core_base import CoreOp, constant_value
from mlconv.passes.lowering.builder import Builder

Perm = tuple[int, ...]


def permutation(value: SSAValue) -> Perm | None:
    """The permutation of a core.Transpose producing `value` (None for anything else)."""
    owner = value.owner
    if not isinstance(owner, ct.TransposeOp):
        return None
    order = constant_value(owner.input_order)
    rank = len(owner.arg.type.get_shape()) if isinstance(owner.arg.type, TensorType) else None
    if order is None or rank is None:
        return None
    perm = tuple(int(a) for a in order.reshape(-1))
    return perm or tuple(reversed(range(rank)))


def inverse(perm: Perm) -> Perm:
    result = [0] * len(perm)
    for i, p in enumerate(perm):
        result[p] = i
    return tuple(result)


def rank(value: SSAValue) -> int | None:
    return len(value.type.get_shape()) if isinstance(value.type, TensorType) else None


def permuted_type(value: SSAValue, perm: Perm) -> TensorType:
    """The type of Transpose(value, perm)."""
    shape = value.type.get_shape()
    return TensorType(value.type.get_element_type(), [shape[p] for p in perm])


def typed(b: Builder, op_class: type[CoreOp], result_type, *operands, **attributes) -> SSAValue:
    """One-result op whose type is known: deriving it from semantics costs a jax trace, and
    sinking rewrites hundreds of ops of a CNN."""
    return b.insert(op_class.build_op(list(operands), [result_type], **attributes)).results[0]


def transposed(b: Builder, value: SSAValue, perm: Perm) -> SSAValue:
    """Transpose(value, perm), folded for constants and dropped for the identity."""
    if perm == tuple(range(len(perm))):
        return value
    array = constant_value(value)
    if array is not None:
        return b.const(np.ascontiguousarray(np.transpose(array, perm)))
    return typed(b, ct.TransposeOp, permuted_type(value, perm), value, b.ints(list(perm)))


def kept_order(perm: Perm, removed: set[int]) -> Perm:
    """After removing the dims `removed` (positions in the transposed value), the permutation
    that maps the untransposed remainder onto the transposed one."""
    kept = [perm[i] for i in range(len(perm)) if i not in removed]
    ordered = sorted(kept)
    return tuple(ordered.index(d) for d in kept)


def explicit_attributes(op: CoreOp) -> dict:
    return {k: v for k, v in op.attribute_values().items() if k in op.attributes}


# ------------------------------------------------------------------------------- sink handlers
# Each handler gets the op, the permutation of (one of) its transposed operands and a builder
# inserting before the op; it returns the values replacing the op's results, or None when the
# op cannot absorb the transpose.

Handler = Callable[[CoreOp, Perm, Builder], list[SSAValue] | None]


def sink_elementwise(op: CoreOp, perm: Perm, b: Builder) -> list[SSAValue] | None:
    if rank(op.results[0]) != len(perm):
        return None
    inv = inverse(perm)
    operands = []
    for value in op.operands:
        if permutation(value) == perm:
            operands.append(value.owner.arg)
            continue
        array = constant_value(value)
        if array is None and rank(value) == len(perm) and moves_unit_dims_only(value, inv):
            # A [1, 1, 1, C] gate in NHWC is a [1, C, 1, 1] one in NCHW: a Reshape.
            operands.append(reshaped(b, value, permuted_type(value, inv)))
            continue
        if array is None or array.ndim > len(perm):
            return None
        if array.ndim == 0:
            operands.append(value)
            continue
        aligned = array.reshape((1,) * (len(perm) - array.ndim) + array.shape)
        operands.append(b.const(np.ascontiguousarray(np.transpose(aligned, inv))))
    groups, index = [], 0
    for group in op.operand_groups():
        groups.append(operands[index : index + len(group)] if len(group) != 1 else operands[index])
        index += len(group)
    result_type = op.results[0].type
    if isinstance(result_type, TensorType):
        # The untransposed result: dim perm[i] of it is dim i of the old one.
        result = typed(
            b,
            type(op),
            permuted_type(op.results[0], inverse(perm)),
            *groups,
            **explicit_attributes(op),
        )
    else:
        result = b(type(op), *groups, **explicit_attributes(op))
    return [transposed(b, result, perm)]


def sink_reduction(op: CoreOp, perm: Perm, b: Builder) -> list[SSAValue] | None:
    if permutation(op.data) != perm:
        return None
    axes = constant_value(op.axes)
    if axes is None:
        return None
    axes_set = {int(a) % len(perm) for a in axes.reshape(-1)}
    new_axes = b.ints(sorted(perm[a] for a in axes_set))
    attributes = explicit_attributes(op)
    result = b(type(op), op.data.owner.arg, new_axes, **attributes)
    if op.attribute_values()["keep_dims"]:
        return [transposed(b, result, perm)]
    return [transposed(b, result, kept_order(perm, axes_set))]


def sink_squeeze(op: CoreOp, perm: Perm, b: Builder) -> list[SSAValue] | None:
    shape = op.data.type.get_shape() if isinstance(op.data.type, TensorType) else None
    if permutation(op.data) != perm or shape is None:
        return None
    if op.axes is None:
        removed = {i for i, d in enumerate(shape) if d == 1}
    else:
        axes = constant_value(op.axes)
        if axes is None:
            return None
        removed = {int(a) % len(perm) for a in axes.reshape(-1)}
    result = b(ct.SqueezeOp, op.data.owner.arg, b.ints(sorted(perm[a] for a in removed)))
    return [transposed(b, result, kept_order(perm, removed))]


def sink_reshape(op: CoreOp, perm: Perm, b: Builder) -> list[SSAValue] | None:
    """Only a reshape that drops unit dims (the order of the others unchanged) commutes."""
    source, target = op.data.type, op.results[0].type
    if permutation(op.data) != perm or not isinstance(target, TensorType):
        return None
    in_shape, out_shape = list(source.get_shape()), list(target.get_shape())
    removed, j = set(), 0
    for i, d in enumerate(in_shape):
        if j < len(out_shape) and out_shape[j] == d:
            j += 1
        elif d == 1:
            removed.add(i)
        else:
            return None
    if j != len(out_shape) or any(d < 0 for d in in_shape):
        return None
    result = b(ct.SqueezeOp, op.data.owner.arg, b.ints(sorted(perm[a] for a in removed)))
    return [transposed(b, result, kept_order(perm, removed))]


def sink_axis(op: CoreOp, perm: Perm, b: Builder) -> list[SSAValue] | None:
    """Softmax/LogSoftmax: one operand, one axis attribute."""
    if permutation(op.arg) != perm:
        return None
    axis = op.attribute_values()["axis"] % len(perm)
    result = b(type(op), op.arg.owner.arg, **{**explicit_attributes(op), "axis": perm[axis]})
    return [transposed(b, result, perm)]


def sink_concat(op: CoreOp, perm: Perm, b: Builder) -> list[SSAValue] | None:
    inv = inverse(perm)
    inputs = []
    for value in op.args:
        if permutation(value) == perm:
            inputs.append(value.owner.arg)
        elif constant_value(value) is not None and rank(value) == len(perm):
            inputs.append(transposed(b, value, inv))
        else:
            return None
    axis = op.attribute_values()["axis"] % len(perm)
    return [transposed(b, b(ct.ConcatOp, inputs, axis=perm[axis]), perm)]


def _permuted_operand(b: Builder, value: SSAValue, inv: Perm) -> SSAValue | None:
    array = constant_value(value)
    if array is None:
        return None
    return b.ints([int(array.reshape(-1)[i]) for i in inv])


def sink_pad(op: CoreOp, perm: Perm, b: Builder) -> list[SSAValue] | None:
    if permutation(op.arg) != perm:
        return None
    inv = inverse(perm)
    begin = _permuted_operand(b, op.pads_begin, inv)
    end = _permuted_operand(b, op.pads_end, inv)
    if begin is None or end is None:
        return None
    result = b(ctf.PadOp, op.arg.owner.arg, begin, end, op.pad_value, **explicit_attributes(op))
    return [transposed(b, result, perm)]


def sink_space_batch(op: CoreOp, perm: Perm, b: Builder) -> list[SSAValue] | None:
    """SpaceToBatch/BatchToSpace act per dim except the batch, which must stay first."""
    if permutation(op.data) != perm or perm[0] != 0:
        return None
    inv = inverse(perm)
    statics = [_permuted_operand(b, v, inv) for v in op.operands[1:]]
    if any(v is None for v in statics):
        return None
    return [transposed(b, b(type(op), op.data.owner.arg, *statics), perm)]


ELEMENTWISE = (*ew.BINARY, *ew.UNARY, ct.ConvertOp, ct.SelectOp)

SINK: dict[str, Handler] = {
    **{cls.name: sink_elementwise for cls in ELEMENTWISE},
    **{cls.name: sink_reduction for cls in ct.REDUCTIONS},
    ct.SqueezeOp.name: sink_squeeze,
    ct.ReshapeOp.name: sink_reshape,
    nn.SoftmaxOp.name: sink_axis,
    nn.LogSoftmaxOp.name: sink_axis,
    ct.ConcatOp.name: sink_concat,
    ctf.PadOp.name: sink_pad,
    ctf.SpaceToBatchOp.name: sink_space_batch,
    ctf.BatchToSpaceOp.name: sink_space_batch,
}


# ------------------------------------------------------------------------------------ patterns


def replace(op: Operation, values: list[SSAValue], rewriter: PatternRewriter) -> None:
    for result, value in zip(op.results, values, strict=True):
        result.replace_all_uses_with(value)
    rewriter.erase(op)


class FoldTranspose(RewritePattern):
    """Transpose of a constant -> constant; Transpose of Transpose -> one (or none)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, ct.TransposeOp):
            return
        perm = permutation(op.results[0])
        if perm is None:
            return
        b = Builder(op)
        if constant_value(op.arg) is not None:
            replace(op, [transposed(b, op.arg, perm)], rewriter)
            return
        inner = permutation(op.arg)
        if inner is None and moves_unit_dims_only(op.arg, perm):
            # E.g. [N, C] -> Reshape [N, 1, 1, C] -> Transpose to [N, C, 1, 1] (a squeeze-and-
            # excitation block after global pooling): one Reshape does it.
            replace(op, [reshaped(b, op.arg, op.results[0].type)], rewriter)
        elif inner is not None:
            composed = tuple(inner[i] for i in perm)
            replace(op, [transposed(b, op.arg.owner.arg, composed)], rewriter)
        elif perm == tuple(range(len(perm))):
            replace(op, [op.arg], rewriter)


def static_dims(value: SSAValue) -> list[int] | None:
    if not isinstance(value.type, TensorType):
        return None
    shape = list(value.type.get_shape())
    return None if any(d < 0 for d in shape) else shape


def moves_unit_dims_only(value: SSAValue, perm: Perm) -> bool:
    """Whether Transpose(value, perm) keeps the order of the dims larger than 1: then it is a
    Reshape."""
    shape = static_dims(value)
    if shape is None:
        return False
    moved = [p for p in perm if shape[p] != 1]
    return moved == sorted(moved)


def reshaped(b: Builder, value: SSAValue, result_type: TensorType) -> SSAValue:
    """Reshape(value) to a static type, merged into a Reshape producing `value`."""
    if isinstance(value.owner, ct.ReshapeOp) and static_dims(value.owner.data) is not None:
        value = value.owner.data
    if value.type == result_type:
        return value
    return typed(b, ct.ReshapeOp, result_type, value, b.ints(list(result_type.get_shape())))


class SinkTranspose(RewritePattern):
    """An op with a transposed operand absorbs the transpose, which moves below it."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        handler = SINK.get(op.name)
        if handler is None or not isinstance(op, CoreOp):
            return
        perm = next((p for p in map(permutation, op.operands) if p is not None), None)
        if perm is None:
            return
        values = handler(op, perm, Builder(op))
        if values is not None:
            replace(op, values, rewriter)


def remove_dead_ops(function: func.FuncOp) -> None:
    """Core ops have no side effects: drop every one whose results are unused."""
    for op in reversed(list(function.body.walk())):
        if isinstance(op, CoreOp) and op.parent is not None and all(not r.uses for r in op.results):
            Rewriter.erase_op(op)


def count_transposes(module: ModuleOp) -> int:
    return sum(isinstance(op, ct.TransposeOp) for op in module.walk())


@dataclass(frozen=True)
class CoreLayoutNchwPass(ModulePass):
    name = "core-layout-nchw"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier([FoldTranspose(), SinkTranspose()]),
            apply_recursively=True,
        ).rewrite_module(op)
        for function in op.walk():
            if isinstance(function, func.FuncOp) and not function.is_declaration:
                remove_dead_ops(function)


__all__ = ["CoreLayoutNchwPass", "count_transposes"]

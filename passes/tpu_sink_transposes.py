"""tpu-sink-transposes: move `tpu.transpose` ops down past layout-agnostic ops and cancel them.

Input/output: tpu dialect. After `tpu-conv-strategy` every convolution sits between an
NCHW->NHWC and an NHWC->NCHW transpose. This pass pushes each transpose below the ops that do
not care about layout, rewriting them to work on the untransposed value:

- elementwise ops (their other operands being the same transpose, scalars, constants, which
  are transposed here at compile time, `broadcast_in_dim`s, whose dimensions are remapped, or
  values that are transposed the inverse way elsewhere anyway: a residual input),
- `reduce_window_*` (pooling), `concatenate`, `reduce_*`, `pad`,
- `reshape`s that split or merge dimensions (a channel shuffle keeps one small transpose),

and composes consecutive transposes (inverse pairs vanish; one that only moves size-1
dimensions becomes a reshape). Bias, batch-norm and activation ops thus stay next to the
convolution they follow, in one XLA fusion, and the model is NHWC from its first convolution
to its last.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from mlconv.dense import shared_tensor_type
from mlconv.dialects import tpu
from mlconv.passes.tpu_fold_constants import constant, constant_value, erase_dead

ELEMENTWISE = frozenset(
    """abs acos acosh add and asin asinh atan atan2 atanh cbrt ceil clamp convert_element_type cos
    cosh div eq erf erf_inv erfc exp exp2 expm1 floor ge gt imag integer_pow is_finite le lgamma
    log log1p logistic lt max min mul ne neg nextafter not or pow real reduce_precision rem round
    rsqrt select_n sign sin sinh sqrt square sub tan tanh xor""".split()
)
WINDOWS = ("reduce_window_max", "reduce_window_min", "reduce_window_sum")
REDUCTIONS = ("reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "argmax", "argmin")
LIBRARY_CALLS = frozenset({"conv_general_dilated", "dot_general"})
"""What XLA hands to a library (Eigen, YNNPACK, cuDNN) instead of compiling a loop for it."""

P = tpu.PRIMITIVE_OPS


def _perm(op: Operation) -> tuple[int, ...] | None:
    if isinstance(op, P["transpose"]):
        return tuple(op.params()["permutation"])
    return None


def _inverse(perm: tuple[int, ...]) -> tuple[int, ...]:
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    return tuple(inverse)


def value_shape(value: SSAValue) -> list[int]:
    return list(value.type.get_shape())


def tensor_like(value_type: Any, shape: list[int]) -> TensorType:
    return shared_tensor_type(value_type.get_element_type(), tuple(shape))


def make_primitive(
    name: str, operands: list[SSAValue], result_types: list[Any], params: dict[str, Any], location
) -> Operation:
    op = P[name].create(
        operands=operands,
        result_types=result_types,
        attributes={k: tpu.encode_param(v) for k, v in params.items()},
    )
    op.location = location
    return op


def transpose(value: SSAValue, perm: tuple[int, ...], location) -> Operation:
    shape = value_shape(value)
    return make_primitive(
        "transpose",
        [value],
        [tensor_like(value.type, [shape[p] for p in perm])],
        {"permutation": perm},
        location,
    )


class ComposeTransposes(RewritePattern):
    """transpose(transpose(x, p), q) -> transpose(x, p o q); identity -> x; a transpose that
    keeps the order of the non-unit dimensions -> reshape."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tpu.PrimitiveOp, rewriter: PatternRewriter) -> None:
        outer = _perm(op)
        if outer is None:
            return
        source = op.operands[0]
        inner = _perm(source.owner) if isinstance(source.owner, Operation) else None
        if inner is not None:
            perm = tuple(inner[q] for q in outer)
            source = source.owner.operands[0]
        else:
            perm = outer
        if perm == tuple(range(len(perm))):
            rewriter.replace(op, [], [source])
            return
        shape = value_shape(source)
        moved = [p for p in perm if shape[p] != 1]
        if moved == sorted(moved):
            new = make_primitive(
                "reshape",
                [source],
                [op.results[0].type],
                {
                    "new_sizes": tuple(value_shape(op.results[0])),
                    "dimensions": None,
                    "sharding": None,
                },
                op.location,
            )
            rewriter.replace(op, [new], new.results)
        elif inner is not None:
            rewriter.replace(op, [new := transpose(source, perm, op.location)], new.results)


def _untransposed(
    value: SSAValue, perm: tuple[int, ...], rank: int, location, single_use: bool
) -> tuple[list[Operation], SSAValue] | None:
    """`value` (an operand of an op whose transposed operand has permutation `perm`) in the
    untransposed layout: (ops to insert, new value), or None when that would cost a transpose."""
    if len(value_shape(value)) == 0:
        return [], value
    if len(value_shape(value)) != rank:
        return None
    owner = value.owner
    if _perm(owner) == perm:
        return [], owner.operands[0]
    inverse = _inverse(perm)
    array = constant_value(value)
    if array is not None:
        new = constant(np.transpose(array, inverse), location)
        return [new], new.output
    if isinstance(owner, P["broadcast_in_dim"]):
        params = owner.params()
        shape = params["shape"]
        dims = params["broadcast_dimensions"]
        # operand dim k lands on result dim dims[k]; after transposing by `inverse`, result
        # dim d moves to position perm[d].
        new_dims = tuple(perm[d] for d in dims)
        if list(new_dims) != sorted(new_dims):
            return None
        new_shape = tuple(shape[i] for i in inverse)
        new = make_primitive(
            "broadcast_in_dim",
            [owner.operands[0]],
            [tensor_like(value.type, list(new_shape))],
            {**params, "shape": new_shape, "broadcast_dimensions": new_dims},
            location,
        )
        return [new], new.results[0]
    inverse_users = [
        u.operation
        for u in value.uses
        if _perm(u.operation) == inverse and u.operation.results[0].uses
    ]
    if (
        inverse_users and single_use
    ):  # the value is transposed this way anyway: XLA's CSE shares the copy
        new = transpose(value, inverse, location)
        return [new], new.results[0]
    return None


def _transposed_operand(op: Operation) -> tuple[int, ...] | None:
    for operand in op.operands:
        if isinstance(operand.owner, Operation):
            perm = _perm(operand.owner)
            if perm is not None:
                return perm
    return None


class SinkThroughElementwise(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tpu.PrimitiveOp, rewriter: PatternRewriter) -> None:
        if op.PRIMITIVE not in ELEMENTWISE or op.MULTIPLE_RESULTS:
            return
        perm = _transposed_operand(op)
        if perm is None or len(value_shape(op.results[0])) != len(perm):
            return
        # Only a transposed operand used by this op alone may bring in an inverse transpose of
        # another operand (it then dies): this keeps the rewrite from going back and forth.
        single_use = all(
            v.uses.get_length() == 1
            for v in op.operands
            if isinstance(v.owner, Operation) and _perm(v.owner) == perm
        )
        new_ops: list[Operation] = []
        operands = []
        for operand in op.operands:
            found = _untransposed(operand, perm, len(perm), op.location, single_use)
            if found is None:
                return
            new_ops += found[0]
            operands.append(found[1])
        result = op.results[0]
        inverse = _inverse(perm)
        shape = value_shape(result)
        inner = P[op.PRIMITIVE].create(
            operands=operands,
            result_types=[tensor_like(result.type, [shape[i] for i in inverse])],
            attributes=dict(op.attributes),
        )
        inner.location = op.location
        outer = transpose(inner.results[0], perm, op.location)
        rewriter.replace(op, [*new_ops, inner, outer], outer.results)


class SinkThroughLayoutOps(RewritePattern):
    """Pooling windows, pads, reductions and concatenations of transposed values."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tpu.PrimitiveOp, rewriter: PatternRewriter) -> None:
        name = op.PRIMITIVE
        if name not in (*WINDOWS, *REDUCTIONS, "concatenate", "pad"):
            return
        first = op.operands[0].owner
        perm = _perm(first) if isinstance(first, Operation) else None
        if perm is None:
            return
        params = op.params()
        inverse = _inverse(perm)
        result = op.results[0]
        shape = value_shape(result)
        if name in WINDOWS or name == "pad":
            keys = (
                (
                    "window_dimensions",
                    "window_strides",
                    "padding",
                    "base_dilation",
                    "window_dilation",
                )
                if name != "pad"
                else ("padding_config",)
            )
            new_params = {**params, **{k: tuple(params[k][i] for i in inverse) for k in keys}}
            operands = [first.operands[0], *op.operands[1:]]
            result_shape = [shape[i] for i in inverse]
            outer_perm = perm
        elif name == "concatenate":
            operands = []
            for operand in op.operands:
                if _perm(operand.owner) != perm:
                    return
                operands.append(operand.owner.operands[0])
            new_params = {**params, "dimension": perm[params["dimension"]]}
            result_shape = [shape[i] for i in inverse]
            outer_perm = perm
        else:
            axes = set(params["axes"])
            new_axes = tuple(sorted(perm[a] for a in axes))
            new_params = {**params, "axes": new_axes}
            kept_source = [perm[i] for i in range(len(perm)) if i not in axes]
            remaining = sorted(kept_source)
            outer_perm = tuple(remaining.index(d) for d in kept_source)
            source_shape = value_shape(first.operands[0])
            operands = [first.operands[0]]
            result_shape = [source_shape[d] for d in remaining]
        inner = make_primitive(
            name, operands, [tensor_like(result.type, result_shape)], new_params, op.location
        )
        if outer_perm == tuple(range(len(outer_perm))):
            rewriter.replace(op, [inner], inner.results)
        else:
            outer = transpose(inner.results[0], outer_perm, op.location)
            rewriter.replace(op, [inner, outer], outer.results)


def _groups(source: list[int], target: list[int]) -> list[tuple[list[int], list[int]]] | None:
    """Split a reshape source -> target into groups of consecutive dims with equal products;
    a group with no dims on one side (unit dims) joins its neighbour. None if none exists."""
    groups: list[tuple[list[int], list[int]]] = []
    i = j = 0
    while i < len(source) or j < len(target):
        gi, gj, ps, pt = [], [], 1, 1
        if i < len(source):
            gi, ps, i = [i], source[i], i + 1
        if j < len(target):
            gj, pt, j = [j], target[j], j + 1
        while ps != pt:
            if ps < pt and i < len(source):
                gi, ps, i = [*gi, i], ps * source[i], i + 1
            elif pt < ps and j < len(target):
                gj, pt, j = [*gj, j], pt * target[j], j + 1
            else:
                return None
        groups.append((gi, gj))
    merged: list[tuple[list[int], list[int]]] = []
    for gi, gj in groups:
        if merged and (not gi or not gj):
            merged[-1] = (merged[-1][0] + gi, merged[-1][1] + gj)
        else:
            merged.append((gi, gj))
    if merged and (not merged[0][0] or not merged[0][1]):
        if len(merged) == 1:
            return None
        first = merged.pop(0)
        merged[0] = (first[0] + merged[0][0], first[1] + merged[0][1])
    return merged


class SinkThroughReshape(RewritePattern):
    """reshape(transpose(a, p)) -> transpose(reshape(transpose(a, q))) where the middle
    transpose q only gathers the dims each reshape group merges (often the identity)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tpu.PrimitiveOp, rewriter: PatternRewriter) -> None:
        if op.PRIMITIVE != "reshape" or op.params().get("dimensions") is not None:
            return
        first = op.operands[0].owner
        perm = _perm(first) if isinstance(first, Operation) else None
        if perm is None:
            return
        source = first.operands[0]
        mid_shape, out_shape = value_shape(op.operands[0]), value_shape(op.results[0])
        groups = _groups(mid_shape, out_shape)
        if groups is None:
            return
        # Each group's dims of `source`, in the group's order; groups ordered by where they
        # start in `source`.
        source_dims = [[perm[i] for i in gi] for gi, _ in groups]
        order = sorted(range(len(groups)), key=lambda g: min(source_dims[g]))
        q = tuple(d for g in order for d in source_dims[g])
        if q == perm:
            return  # the transpose is what the reshape needs: nothing to sink
        new_ops: list[Operation] = []
        value = source
        if q != tuple(range(len(q))):
            pre = transpose(source, q, op.location)
            new_ops.append(pre)
            value = pre.results[0]
        new_shape = [out_shape[j] for g in order for j in groups[g][1]]
        reshape = make_primitive(
            "reshape",
            [value],
            [tensor_like(op.results[0].type, new_shape)],
            {**op.params(), "new_sizes": tuple(new_shape)},
            op.location,
        )
        new_ops.append(reshape)
        # position in new_shape of each output dim
        position = {}
        k = 0
        for g in order:
            for j in groups[g][1]:
                position[j] = k
                k += 1
        outer_perm = tuple(position[j] for j in range(len(out_shape)))
        if outer_perm == tuple(range(len(outer_perm))):
            rewriter.replace(op, new_ops, reshape.results)
        else:
            outer = transpose(reshape.results[0], outer_perm, op.location)
            rewriter.replace(op, [*new_ops, outer], outer.results)


def sink_transposes(module: ModuleOp) -> None:
    patterns = [
        ComposeTransposes(),
        SinkThroughElementwise(),
        SinkThroughLayoutOps(),
        SinkThroughReshape(),
    ]
    PatternRewriteWalker(GreedyRewritePatternApplier(patterns)).rewrite_module(module)
    erase_dead(module)


@dataclass(frozen=True)
class TpuSinkTransposesPass(ModulePass):
    """tpu-sink-transposes: push transposes below layout-agnostic ops and cancel inverse pairs.
    Input/output: tpu dialect."""

    name = "tpu-sink-transposes"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        sink_transposes(op)


__all__ = ["TpuSinkTransposesPass", "sink_transposes"]

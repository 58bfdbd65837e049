"""tpu-merge-epilogues: one elementwise epilogue over a concatenation instead of one per part.

Input/output: tpu dialect. SqueezeNet's fire module, Inception's blocks and their kin end each
branch in the same epilogue (bias add, ReLU) and then concatenate the branches:

    concatenate(max(add(conv_a, b_a), 0), max(add(conv_b, b_b), 0))

XLA compiles that as one loop kernel per branch epilogue plus one for the concatenation (it
does not fuse a concatenate into its operands), each a distinct kernel for each branch shape.
This pass moves the concatenation up, above elementwise ops that all its operands end in, one
op at a time, until the branches differ:

    max(add(concatenate(conv_a, conv_b), concatenate(b_a, b_b)), 0)

which XLA compiles as one loop fusion that reads the convolutions' outputs and writes the
result once. The rule, for a concatenate whose operands are all produced by ops of one
elementwise kind with equal parameters, each used by the concatenate alone: every operand
position of those ops must be

- the parts' full-shape values: they are concatenated (a new concatenate, merged in turn);
- constants (rank 0 or the parts' rank, numpy-broadcast): equal ones that do not vary along
  the concatenated axis stay one; otherwise each is broadcast along that axis to its part's
  size and they are concatenated at compile time;
- one value, the same for every part, of rank 0 or of size 1 along the concatenated axis.

Anything else (branches that end differently, a part used twice, a dynamic shape) stops the
merge where it is.

Example (two parts of 64 channels, NHWC):

    %a = "tpu.max"(%p, %z) : (tensor<1x55x55x64xf32>, tensor<f32>) -> tensor<1x55x55x64xf32>
    %b = "tpu.max"(%q, %z) : (tensor<1x55x55x64xf32>, tensor<f32>) -> tensor<1x55x55x64xf32>
    %c = "tpu.concatenate"(%a, %b) {dimension = 3 : i64} : ... -> tensor<1x55x55x128xf32>

becomes

    %pq = "tpu.concatenate"(%p, %q) {dimension = 3 : i64} : ... -> tensor<1x55x55x128xf32>
    %c = "tpu.max"(%pq, %z) : (tensor<1x55x55x128xf32>, tensor<f32>) -> tensor<1x55x55x128xf32>
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

from mlconv.dialects import tpu
from mlconv.passes.tpu_fold_constants import constant, constant_value, erase_dead
from mlconv.passes.tpu_sink_transposes import ELEMENTWISE, make_primitive, tensor_like, value_shape


def _merged_constant(
    arrays: list[np.ndarray], parts: list[list[int]], axis: int
) -> np.ndarray | None:
    """One constant standing for `arrays`, each of which broadcasts against the part of shape
    `parts[k]`, over the parts concatenated on `axis`; None if one is of another rank."""
    rank = len(parts[0])
    if any(a.ndim not in (0, rank) for a in arrays):
        return None
    full = [a.reshape((1,) * rank) if a.ndim == 0 else a for a in arrays]
    if all(a.shape[axis] == 1 for a in full) and all(
        a.shape == arrays[0].shape and np.array_equal(a, arrays[0]) for a in arrays
    ):
        return arrays[0]
    others = [max(a.shape[d] for a in full) for d in range(rank)]
    pieces = []
    for array, part in zip(full, parts, strict=True):
        shape = [part[axis] if d == axis else others[d] for d in range(rank)]
        if any(n not in (1, shape[d]) for d, n in enumerate(array.shape)):
            return None
        pieces.append(np.broadcast_to(array, shape))
    return np.concatenate(pieces, axis=axis)


class MergeConcatenatedEpilogues(RewritePattern):
    """concatenate(f(a_1, c_1), ..., f(a_n, c_n)) -> f(concatenate(a_1, ..., a_n), c) for an
    elementwise f (see the module docstring for which operands merge)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tpu.PrimitiveOp, rewriter: PatternRewriter) -> None:
        if op.PRIMITIVE != "concatenate" or len(op.operands) < 2:
            return
        parts = list(op.operands)
        producers = [part.owner for part in parts]
        first = producers[0]
        if (
            not isinstance(first, tpu.PrimitiveOp)
            or first.PRIMITIVE not in ELEMENTWISE
            or first.MULTIPLE_RESULTS
        ):
            return
        for part, producer in zip(parts, producers, strict=True):
            if (
                type(producer) is not type(first)
                or producer.attributes != first.attributes
                or len(producer.operands) != len(first.operands)
                or part.uses.get_length() != 1
            ):
                return
        part_shapes = [value_shape(part) for part in parts]
        if any(d < 0 for shape in part_shapes for d in shape):
            return
        axis = op.params()["dimension"]
        new_ops: list[Operation] = []
        operands: list[SSAValue] = []
        for position in range(len(first.operands)):
            merged = self._merge(
                [p.operands[position] for p in producers], part_shapes, axis, op.location
            )
            if merged is None:
                return
            new_ops += merged[0]
            operands.append(merged[1])
        epilogue = type(first).create(
            operands=operands,
            result_types=[op.results[0].type],
            attributes=dict(first.attributes),
        )
        epilogue.location = first.location
        rewriter.replace(op, [*new_ops, epilogue], epilogue.results)
        for producer in producers:
            rewriter.erase(producer)

    @staticmethod
    def _merge(
        values: list[SSAValue], part_shapes: list[list[int]], axis: int, location
    ) -> tuple[list[Operation], SSAValue] | None:
        """The operand of the merged op standing for `values` (one per part): (ops to insert,
        value), or None."""
        shapes = [value_shape(v) for v in values]
        if all(v is values[0] for v in values) and (
            not shapes[0] or (len(shapes[0]) == len(part_shapes[0]) and shapes[0][axis] == 1)
        ):
            return [], values[0]
        arrays = [constant_value(v) for v in values]
        if all(a is not None for a in arrays):
            array = _merged_constant(arrays, part_shapes, axis)
            if array is None:
                return None
            if array is arrays[0]:
                return [], values[0]
            new = constant(array, location)
            return [new], new.output
        if shapes == part_shapes:
            out_shape = list(part_shapes[0])
            out_shape[axis] = sum(shape[axis] for shape in part_shapes)
            new = make_primitive(
                "concatenate",
                values,
                [tensor_like(values[0].type, out_shape)],
                {"dimension": axis},
                location,
            )
            return [new], new.results[0]
        return None


def merge_epilogues(module: ModuleOp) -> None:
    PatternRewriteWalker(MergeConcatenatedEpilogues()).rewrite_module(module)
    erase_dead(module)


@dataclass(frozen=True)
class TpuMergeEpiloguesPass(ModulePass):
    """tpu-merge-epilogues: concatenations move above the elementwise epilogue all their parts
    end in, which then runs once over the whole. Input/output: tpu dialect."""

    name = "tpu-merge-epilogues"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        merge_epilogues(op)


__all__ = ["MergeConcatenatedEpilogues", "TpuMergeEpiloguesPass", "merge_epilogues"]

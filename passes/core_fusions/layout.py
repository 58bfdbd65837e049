"""Data-movement fusions: Reshape -> Transpose -> Reshape chains that are a ShuffleChannels
(ShuffleNet's channel shuffle: (N, G, C/G, H, W), swap G and C/G) or a DepthToSpace
(PixelShuffle and its exports: (N, b, b, C', H, W) permuted to (N, C', H, b, W, b),
`blocks_first`, or (N, C', b, b, H, W), `depth_first`).

A candidate op is read off the shapes and accepted only if it moves every element where the
chain does: both run on the indices 0..n-1 (numpy, at compile time), so no layout is matched by
a guess.
"""

from __future__ import annotations

import numpy as np
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from mlconv.dense import static_shape
from mlconv.dialects import core_indexing as ci
from mlconv.dialects import core_tensor as ct
from mlconv.dialects.core_base import constant_value
from mlconv.passes.core_fusions.common import build, owner, single

# Above this many elements the index check would cost more than the fusion is worth.
MAX_ELEMENTS = 1 << 24


def _candidates(source: tuple[int, ...], split: tuple[int, ...], target: tuple[int, ...]):
    """(op class, attributes) that could map `source` to `target` through `split`."""
    if source == target:
        for axis in range(len(source)):
            if split[:axis] == source[:axis] and axis < len(split) and split[axis] > 1:
                group = split[axis]
                if source[axis] % group == 0:
                    yield ci.ShuffleChannelsOp, {"axis": axis, "group": group}
    if (
        len(source) == len(target) >= 3
        and source[0] == target[0]
        and source[2]
        and target[2] % source[2] == 0
    ):
        block = target[2] // source[2]
        if block > 1:
            for mode in ("blocks_first", "depth_first"):
                yield ci.DepthToSpaceOp, {"block_size": block, "mode": mode}


class FuseReshapeTransposeReshape(RewritePattern):
    """Reshape(Transpose(Reshape(x))) -> ShuffleChannels(x) or DepthToSpace(x)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ct.ReshapeOp, rewriter: PatternRewriter) -> None:
        transpose = owner(op.data, ct.TransposeOp)
        if transpose is None or not single(op.data):
            return
        first = owner(transpose.arg, ct.ReshapeOp)
        order = constant_value(transpose.input_order)
        if first is None or not single(transpose.arg) or order is None:
            return
        x = first.data
        source = static_shape(x.type)
        split = static_shape(first.output.type)
        target = static_shape(op.output.type)
        if None in (source, split, target) or int(np.prod(source)) > MAX_ELEMENTS:
            return
        order = [int(a) for a in order.reshape(-1)] or list(range(len(split)))[::-1]
        indices = np.arange(int(np.prod(source))).reshape(source)
        moved = indices.reshape(split).transpose(order).reshape(target)
        for op_class, attributes in _candidates(tuple(source), tuple(split), tuple(target)):
            try:
                candidate = np.asarray(op_class.semantics(indices, **attributes))
            except (ValueError, TypeError):
                continue
            if candidate.shape == moved.shape and np.array_equal(candidate, moved):
                fused = build(op_class, [x], op.output.type, op.location, **attributes)
                rewriter.replace(op, fused, [fused.output])
                return


PATTERNS = (FuseReshapeTransposeReshape(),)

__all__ = ["PATTERNS"]

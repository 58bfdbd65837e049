"""Pad fused into the op that consumes it: a constant Pad of the spatial dims only, with
non-negative pads, becomes extra `pads_begin`/`pads_end` of the Convolution, GroupConvolution
or AvgPool after it when it pads with 0 (AvgPool then counts the padding: `exclude_pad`
false), or of the MaxPool after it when it pads with -inf. Keras writes ZeroPadding2D before
its strided convolutions (EfficientNet, MobileNetV2); TensorFlow's explicit padding and
tf2onnx's Pad nodes look the same.

An `auto_pad` of same_upper/same_lower keeps its Pad (its padding depends on the input size),
and an AvgPool or MaxPool with `rounding_type = "ceil"` too (where a last window may start
changes with the padding).
"""

from __future__ import annotations

import numpy as np
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from mlconv.dialects import core_conv as cc
from mlconv.dialects import core_indexing as ci
from mlconv.dialects import core_pool as cp
from mlconv.dialects.core_base import constant_value
from mlconv.passes.core_fusions.common import build, explicit_attributes, owner, single


def _spatial_pads(pad: ci.PadOp, fill: float) -> tuple[list[int], list[int]] | None:
    """The spatial pads of a constant Pad of `fill` that leaves dims 0 and 1 alone."""
    if pad.attribute_values()["pad_mode"] != "constant":
        return None
    begins, ends = constant_value(pad.pads_begin), constant_value(pad.pads_end)
    if begins is None or ends is None:
        return None
    value = 0.0 if pad.pad_value is None else constant_value(pad.pad_value)
    if value is None or np.size(value) != 1 or float(np.asarray(value).reshape(-1)[0]) != fill:
        return None
    begins, ends = [int(v) for v in begins.reshape(-1)], [int(v) for v in ends.reshape(-1)]
    if len(begins) < 3 or any(begins[:2]) or any(ends[:2]) or min(begins + ends) < 0:
        return None
    return begins[2:], ends[2:]


class FusePad(RewritePattern):
    """Convolution/GroupConvolution/AvgPool/MaxPool(Pad(x)) -> the op with larger pads."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self,
        op: cc.ConvolutionOp | cc.GroupConvolutionOp | cp.AvgPoolOp | cp.MaxPoolOp,
        rewriter: PatternRewriter,
    ) -> None:
        data = op.operands[0]
        pad = owner(data, ci.PadOp)
        if pad is None or not single(data):
            return
        attributes = op.attribute_values()
        explicit = explicit_attributes(op)
        fill = -np.inf if isinstance(op, cp.MaxPoolOp) else 0.0
        pads = _spatial_pads(pad, fill)
        if pads is None or attributes["auto_pad"] not in ("explicit", "notset", "valid"):
            return
        if attributes.get("rounding_type", "floor") != "floor":
            return
        valid = attributes["auto_pad"] == "valid"
        rank = len(pads[0])
        old_begin = (0,) * rank if valid else attributes["pads_begin"]
        old_end = (0,) * rank if valid else attributes["pads_end"]
        if isinstance(op, cp.AvgPoolOp) and attributes["exclude_pad"]:
            if any(old_begin) or any(old_end):
                return  # the existing padding is not counted, the Pad's zeros would be
            explicit["exclude_pad"] = False
        explicit["pads_begin"] = [a + b for a, b in zip(old_begin, pads[0], strict=True)]
        explicit["pads_end"] = [a + b for a, b in zip(old_end, pads[1], strict=True)]
        explicit["auto_pad"] = "explicit"
        fused = build(
            type(op), [pad.arg, *op.operands[1:]], op.results[0].type, op.location, **explicit
        )
        rewriter.replace(op, fused, [fused.output])


PATTERNS = (FusePad(),)

__all__ = ["PATTERNS"]

"""Normalization fusions: mean-variance normalization (LayerNorm) into MVN, L2 normalization
into NormalizeL2.

- MVN: (x - mean) / sqrt(var + eps) (or / (sqrt(var) + eps), or * (var + eps)^-0.5), mean and
  var ReduceMean over the same constant axes with keep_dims, var of (x - mean)^2 written as
  Power, a product or SquaredDifference (torch.onnx before opset 17, tf2onnx); and Keras'
  LayerNormalization, which folds gamma into the scale: x * s + (beta - mean * s) with
  s = gamma / sqrt(var + eps), becomes MVN(x) * gamma + beta.
- NormalizeL2: x / max(ReduceL2(x), eps) (torch's F.normalize: Clip then Expand), x /
  sqrt(max(sum(x^2), eps)), x * rsqrt(max(sum(x^2), eps)) (TensorFlow's l2_normalize) and the
  `add` forms with + eps.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.ir import SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from mlconv.dialects import core_elementwise as ew
from mlconv.dialects import core_norm as norm
from mlconv.dialects import core_tensor as ct
from mlconv.dialects.core_base import CoreOp, constant_value
from mlconv.passes.core_fusions.common import (
    build,
    constant,
    is_scalar,
    operand_pairs,
    owner,
    scalar,
    single,
)


def _axes(reduce: CoreOp, rank: int) -> tuple[int, ...] | None:
    axes = constant_value(reduce.axes)
    if axes is None:
        return None
    return tuple(sorted({int(a) % rank for a in axes.reshape(-1)}))


@dataclass
class _Deviation:
    """x - mean with mean = ReduceMean(x, axes, keep_dims)."""

    x: SSAValue
    mean: SSAValue
    axes: tuple[int, ...]


def _mean_of(mean: SSAValue, x: SSAValue) -> tuple[int, ...] | None:
    reduce = owner(mean, ct.ReduceMeanOp)
    if reduce is None or reduce.data is not x or not reduce.attribute_values()["keep_dims"]:
        return None
    return _axes(reduce, len(x.type.get_shape()))


def _deviation(value: SSAValue) -> _Deviation | None:
    subtract = owner(value, ew.SubtractOp)
    if subtract is None:
        return None
    axes = _mean_of(subtract.input_2, subtract.input_1)
    return None if axes is None else _Deviation(subtract.input_1, subtract.input_2, axes)


def _is_variance(var: SSAValue, dev: _Deviation, deviation: SSAValue | None) -> bool:
    """var = ReduceMean((x - mean)^2) over dev's axes; `deviation` is the value x - mean where
    the graph computes it."""
    reduce = owner(var, ct.ReduceMeanOp)
    if reduce is None or not reduce.attribute_values()["keep_dims"]:
        return False
    if _axes(reduce, len(dev.x.type.get_shape())) != dev.axes:
        return False
    square = reduce.data.owner
    if isinstance(square, ew.SquaredDifferenceOp):
        return {id(square.input_1), id(square.input_2)} == {id(dev.x), id(dev.mean)}
    if deviation is None:
        return False
    if isinstance(square, ew.PowerOp):
        return square.input_1 is deviation and is_scalar(square.input_2, 2.0)
    if isinstance(square, ew.MultiplyOp):
        return square.input_1 is deviation and square.input_2 is deviation
    return False


def _std(value: SSAValue) -> tuple[SSAValue, float, str] | None:
    """(var, eps, eps_mode) for sqrt(var + eps) (inside) or sqrt(var) + eps (outside)."""
    if isinstance(value.owner, ew.SqrtOp):
        add = owner(value.owner.arg, ew.AddOp)
        for var, eps in operand_pairs(add) if add is not None else ():
            if scalar(eps) is not None:
                return var, scalar(eps), "inside_sqrt"
    if isinstance(value.owner, ew.AddOp):
        for root, eps in operand_pairs(value.owner):
            if isinstance(root.owner, ew.SqrtOp) and scalar(eps) is not None:
                return root.owner.arg, scalar(eps), "outside_sqrt"
    return None


def _inverse_std(value: SSAValue) -> tuple[SSAValue, float, str] | None:
    """(var, eps, eps_mode) for 1 / std(var) or (var + eps)^-0.5."""
    if isinstance(value.owner, ew.DivideOp) and is_scalar(value.owner.input_1, 1.0):
        return _std(value.owner.input_2)
    if isinstance(value.owner, ew.PowerOp) and is_scalar(value.owner.input_2, -0.5):
        add = owner(value.owner.input_1, ew.AddOp)
        for var, eps in operand_pairs(add) if add is not None else ():
            if scalar(eps) is not None:
                return var, scalar(eps), "inside_sqrt"
    return None


def _mvn(dev: _Deviation, eps: float, mode: str, like: CoreOp) -> list[CoreOp]:
    axes = constant(np.asarray(dev.axes, np.int64), like.location)
    mvn = build(
        norm.MVNOp,
        [dev.x, axes.output],
        dev.x.type,
        like.location,
        normalize_variance=True,
        eps=eps,
        eps_mode=mode,
    )
    return [axes, mvn]


class FuseMVN(RewritePattern):
    """(x - mean) / std or (x - mean) * inverse std -> MVN(x)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ew.DivideOp | ew.MultiplyOp, rewriter: PatternRewriter) -> None:
        pairs = [(op.input_1, op.input_2)] if isinstance(op, ew.DivideOp) else operand_pairs(op)
        for deviation, scale in pairs:
            dev = _deviation(deviation)
            if dev is None or op.results[0].type != dev.x.type or not single(scale):
                continue
            found = _std(scale) if isinstance(op, ew.DivideOp) else _inverse_std(scale)
            if found is None or not _is_variance(found[0], dev, deviation):
                continue
            new = _mvn(dev, found[1], found[2], op)
            rewriter.replace(op, new, [new[-1].output])
            return


class FuseLayerNormKeras(RewritePattern):
    """Keras' x * s + (beta - mean * s), s = gamma * inverse std -> MVN(x) * gamma + beta."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ew.AddOp, rewriter: PatternRewriter) -> None:
        for scaled, shift in operand_pairs(op):
            mul = owner(scaled, ew.MultiplyOp)
            if mul is None or not single(scaled):
                continue
            for x, s in operand_pairs(mul):
                match = self._match(x, s, shift)
                if match is not None:
                    dev, eps, mode, gamma, beta = match
                    new = _mvn(dev, eps, mode, op)
                    value = new[-1].output
                    for array, op_class in ((gamma, ew.MultiplyOp), (beta, ew.AddOp)):
                        if array is None:
                            continue
                        const = constant(array, op.location)
                        new += [
                            const,
                            build(op_class, [value, const.output], op.output.type, op.location),
                        ]
                        value = new[-1].output
                    if value.type != op.output.type:
                        return
                    rewriter.replace(op, new, [value])
                    return

    @staticmethod
    def _match(x: SSAValue, s: SSAValue, shift: SSAValue):
        # s = inverse std, or inverse std * gamma
        gamma = None
        found = _inverse_std(s)
        if found is None and isinstance(s.owner, ew.MultiplyOp):
            for inverse, g in operand_pairs(s.owner):
                if constant_value(g) is not None and single(inverse):
                    found, gamma = _inverse_std(inverse), constant_value(g)
                    if found is not None:
                        break
        if found is None or s.uses.get_length() != 2:
            return None
        var, eps, mode = found
        # shift = -mean * s (+ beta), or beta - mean * s
        beta = None
        term, sign = shift, 1.0
        if isinstance(shift.owner, ew.AddOp):
            for t, b in operand_pairs(shift.owner):
                if constant_value(b) is not None and isinstance(t.owner, ew.MultiplyOp):
                    term, beta = t, constant_value(b)
                    break
        elif (
            isinstance(shift.owner, ew.SubtractOp)
            and constant_value(shift.owner.input_1) is not None
        ):
            term, beta, sign = shift.owner.input_2, constant_value(shift.owner.input_1), -1.0
        product = owner(term, ew.MultiplyOp)
        if product is None or not single(term) or not single(shift):
            return None
        for mean_term, other_s in operand_pairs(product):
            if other_s is not s:
                continue
            mean = mean_term
            if sign > 0:
                if not isinstance(mean_term.owner, ew.NegativeOp):
                    continue
                mean = mean_term.owner.arg
            axes = _mean_of(mean, x)
            if axes is None:
                continue
            dev = _Deviation(x, mean, axes)
            if _is_variance(var, dev, None):
                return dev, eps, mode, gamma, beta
        return None


# --- NormalizeL2 ---------------------------------------------------------------------------------


def _sum_of_squares(value: SSAValue, x: SSAValue) -> tuple[int, ...] | None:
    reduce = owner(value, ct.ReduceSumOp)
    if reduce is None or not reduce.attribute_values()["keep_dims"] or not single(value):
        return None
    square = reduce.data.owner
    if isinstance(square, ew.MultiplyOp) and square.input_1 is x and square.input_2 is x:
        return _axes(reduce, len(x.type.get_shape()))
    if isinstance(square, ew.PowerOp) and square.input_1 is x and is_scalar(square.input_2, 2.0):
        return _axes(reduce, len(x.type.get_shape()))
    return None


def _bounded(value: SSAValue) -> tuple[SSAValue, float, str] | None:
    """(inner, eps, mode) for max(inner, eps), Clamp(inner, eps, +big) or inner + eps."""
    if isinstance(value.owner, ew.MaximumOp | ew.AddOp):
        for inner, eps in operand_pairs(value.owner):
            if scalar(eps) is not None and scalar(eps) >= 0:
                return inner, scalar(eps), "max" if isinstance(value.owner, ew.MaximumOp) else "add"
    if isinstance(value.owner, ew.ClampOp):
        bounds = value.owner.attribute_values()
        if bounds["min"] >= 0 and bounds["max"] >= np.finfo(np.float32).max:
            return value.owner.arg, bounds["min"], "max"
    return None


def _l2_denominator(value: SSAValue, x: SSAValue) -> tuple[tuple[int, ...], float, str] | None:
    """(axes, eps, mode) of NormalizeL2 for a denominator over x."""
    if isinstance(value.owner, ct.BroadcastOp) and single(value):
        value = value.owner.data
    if not single(value):
        return None
    if isinstance(value.owner, ew.SqrtOp):  # sqrt(max(sum(x^2), eps)) or sqrt(sum + eps)
        bounded = _bounded(value.owner.arg)
        if bounded is not None and single(value.owner.arg):
            axes = _sum_of_squares(bounded[0], x)
            return None if axes is None else (axes, bounded[1], bounded[2])
        return None
    bounded = _bounded(value)  # max(ReduceL2(x), eps) = sqrt(max(sum, eps^2))
    if bounded is not None and bounded[2] == "max" and single(bounded[0]):
        reduce = owner(bounded[0], ct.ReduceL2Op)
        if reduce is not None and reduce.data is x and reduce.attribute_values()["keep_dims"]:
            return _axes(reduce, len(x.type.get_shape())), bounded[1] ** 2, "max"
    return None


class FuseNormalizeL2(RewritePattern):
    """x / l2-norm(x) or x * rsqrt(...) -> NormalizeL2(x)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ew.DivideOp | ew.MultiplyOp, rewriter: PatternRewriter) -> None:
        found = None
        if isinstance(op, ew.DivideOp):
            x = op.input_1
            found = _l2_denominator(op.input_2, x)
        else:
            for x, inverse in operand_pairs(op):
                if (
                    isinstance(inverse.owner, ew.DivideOp)
                    and is_scalar(inverse.owner.input_1, 1.0)
                    and single(inverse)
                ):
                    found = _l2_denominator(inverse.owner.input_2, x)
                elif isinstance(inverse.owner, ew.PowerOp) and is_scalar(
                    inverse.owner.input_2, -0.5
                ):
                    bounded = _bounded(inverse.owner.input_1)
                    if bounded is not None and single(inverse):
                        axes = _sum_of_squares(bounded[0], x)
                        found = None if axes is None else (axes, bounded[1], bounded[2])
                if found is not None:
                    break
        if found is None or op.results[0].type != x.type:
            return
        axes, eps, mode = found
        axes_op = constant(np.asarray(axes, np.int64), op.location)
        fused = build(
            norm.NormalizeL2Op, [x, axes_op.output], x.type, op.location, eps=eps, eps_mode=mode
        )
        rewriter.replace(op, [axes_op, fused], [fused.output])


PATTERNS = (FuseMVN(), FuseLayerNormKeras(), FuseNormalizeL2())

__all__ = ["PATTERNS"]

"""core-fuse: fuse core subgraphs into cheaper equivalents (seed 000's custom
transformations, seed 004's Conv+BatchNorm fusion). Input/output: core dialect.

- Convolution / GroupConvolution followed by a BatchNormInference with constant statistics
  becomes one convolution with rescaled filters plus a per-channel bias:
  scale = gamma / sqrt(variance + epsilon), W' = W * scale, b = beta - mean * scale.
- x * sigmoid(x), x * sigmoid(beta * x) and x / (1 + exp(-beta * x)) become core.Swish.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.transforms.dead_code_elimination import region_dce

from mlconv.dialects import core_elementwise as ew
from mlconv.dialects import core_nn as nn
from mlconv.dialects import core_tensor as ct
from mlconv.dialects.core_base import CoreOp, constant_value


def _build(op_class: type[CoreOp], operands: list, result_type, location, **attributes) -> CoreOp:
    op = op_class.build_op(operands, [result_type], **attributes)
    op.location = location
    return op


def _constant(array: np.ndarray, location) -> ct.ConstantOp:
    constant = ct.ConstantOp.from_numpy(array)
    constant.location = location
    return constant


class FuseConvolutionBatchNorm(RewritePattern):
    """BatchNormInference(Convolution(x, W)) with constant W and statistics."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.BatchNormInferenceOp, rewriter: PatternRewriter) -> None:
        conv = op.data.owner
        if not isinstance(conv, nn.ConvolutionOp | nn.GroupConvolutionOp) or conv.output.uses.get_length() != 1:
            return
        weights = constant_value(conv.filters)
        stats = [constant_value(v) for v in (op.gamma, op.beta, op.mean, op.variance)]
        if weights is None or any(s is None for s in stats):
            return
        gamma, beta, mean, variance = (s.astype(np.float64) for s in stats)
        scale = gamma / np.sqrt(variance + op.attribute_values()["epsilon"])
        # Output channels are W's dim 0, or dims 0-1 (G x O/G) for a group convolution.
        leading = 2 if isinstance(conv, nn.GroupConvolutionOp) else 1
        channel_shape = weights.shape[:leading]
        if int(np.prod(channel_shape)) != scale.size:
            return
        scaled = weights * scale.reshape(channel_shape + (1,) * (weights.ndim - leading))
        bias = (beta - mean * scale).astype(weights.dtype)
        spatial = op.data.type.get_shape()[2:]
        new_weights = _constant(scaled.astype(weights.dtype), conv.location)
        new_bias = _constant(bias.reshape((-1,) + (1,) * len(spatial)), op.location)
        new_conv = _build(
            type(conv), [conv.data, new_weights.output], conv.output.type, conv.location,
            **conv.attribute_values(),
        )
        add = _build(ew.AddOp, [new_conv.output, new_bias.output], op.output.type, op.location)
        rewriter.replace(op, [new_weights, new_bias, new_conv, add], [add.output])
        rewriter.erase(conv)


def _scalar(value: SSAValue) -> float | None:
    array = constant_value(value)
    return float(array.reshape(-1)[0]) if array is not None and array.size == 1 else None


def _other(op: Operation, value: SSAValue) -> SSAValue | None:
    a, b = op.operands
    return b if a is value else a if b is value else None


def _sigmoid_argument(x: SSAValue, sigmoid_input: SSAValue) -> SSAValue | None | bool:
    """For sigmoid(t): None if t is x (beta 1), the beta value if t = beta * x, else False."""
    if sigmoid_input is x:
        return None
    owner = sigmoid_input.owner
    if isinstance(owner, ew.MultiplyOp):
        beta = _other(owner, x)
        if beta is not None and _scalar(beta) is not None:
            return beta
    return False


class FuseSwishFromSigmoid(RewritePattern):
    """x * sigmoid(x) and x * sigmoid(beta * x), beta a constant scalar."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ew.MultiplyOp, rewriter: PatternRewriter) -> None:
        for x, gate in ((op.input_1, op.input_2), (op.input_2, op.input_1)):
            if not isinstance(gate.owner, ew.SigmoidOp):
                continue
            beta = _sigmoid_argument(x, gate.owner.arg)
            if beta is False:
                continue
            operands = [x] if beta is None else [x, _as_scalar(beta, op, rewriter)]
            swish = _build(ew.SwishOp, operands, op.output.type, op.location)
            rewriter.replace(op, swish, [swish.output])
            return


def _as_scalar(beta: SSAValue, anchor: Operation, rewriter: PatternRewriter) -> SSAValue:
    """Swish takes beta as a 0-d tensor; a constant of another shape becomes one."""
    array = constant_value(beta)
    if array is not None and array.ndim == 0:
        return beta
    constant = _constant(np.asarray(array).reshape(()), anchor.location)
    rewriter.insert(constant)
    return constant.output


class FuseSwishFromDivision(RewritePattern):
    """x / (1 + exp(-(beta * x))) (seed 000's example), beta a constant scalar."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ew.DivideOp, rewriter: PatternRewriter) -> None:
        x, denominator = op.input_1, op.input_2
        add = denominator.owner
        if not isinstance(add, ew.AddOp):
            return
        for one, exp in ((add.input_1, add.input_2), (add.input_2, add.input_1)):
            if _scalar(one) != 1.0 or not isinstance(exp.owner, ew.ExpOp):
                continue
            negative = exp.owner.arg.owner
            if not isinstance(negative, ew.NegativeOp):
                continue
            beta = _sigmoid_argument(x, negative.arg)
            if beta is False:
                continue
            operands = [x] if beta is None else [x, _as_scalar(beta, op, rewriter)]
            swish = _build(ew.SwishOp, operands, op.output.type, op.location)
            rewriter.replace(op, swish, [swish.output])
            return


PATTERNS = (FuseConvolutionBatchNorm(), FuseSwishFromSigmoid(), FuseSwishFromDivision())


@dataclass(frozen=True)
class CoreFusePass(ModulePass):
    name = "core-fuse"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(GreedyRewritePatternApplier(list(PATTERNS))).rewrite_module(op)
        # What the fusions bypassed (the sigmoid, exp chains) is left without uses.
        region_dce(op.body)

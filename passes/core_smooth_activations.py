"""core-smooth-activations: move per-channel range differences of quantized activations into
the weights (SmoothQuant, Xiao et al. 2023), before `core-quantize`.

Input/output: core dialect. Option `alpha` (0..1, default 0.5). Int8 activations are quantized
per tensor, so one channel that reaches 40 while its neighbours stay below 1 leaves those
neighbours a handful of levels; weights are quantized per output channel, so they can take a
per-input-channel factor at little cost. For every `core.Convolution`, `core.GroupConvolution`
and `core.MatMul` with constant float weights whose data input carries calibrated per-channel
ranges (`mlconv.channel_ranges = dense<[[min_0, ...], [max_0, ...]]> : tensor<2xCxf32>`, the
channel being the axis the weights contract: axis 1 of a convolution's data, the last axis of
MatMul's `a`, which `mlconv.converter.calibration` writes), with

    s_c = max|x_c| ** alpha / max|w_c| ** (1 - alpha)     (scaled to a geometric mean of 1)

the data is divided by s (a `core.Multiply` by 1/s, which the int8 lowering fuses into the
quantization of the data) and each weight of input channel c multiplied by s_c, so the float
result is unchanged: conv(x / s, w * s) = conv(x, w). The op's per-tensor `mlconv.input_range`
becomes the range of x / s that the channel ranges imply, `mlconv.channel_ranges` goes, and
channel means (`mlconv.channel_means`, for core-quantize's bias correction) are divided by s.
Depthwise convolutions lose nothing to it (one input channel per output channel: the
per-channel weight range absorbs s whole).

Example (alpha 0.5, channel maxima 4 and 1, weights of the two input channels at most 1):

    %y = "core.Convolution"(%x, %w) {..., mlconv.channel_ranges = dense<[[0.0, 0.0], [4.0, 1.0]]>
      : tensor<2x2xf32>} : (tensor<1x2x8x8xf32>, tensor<3x2x1x1xf32>) -> tensor<1x3x8x8xf32>

becomes, with s = [sqrt(2), 1/sqrt(2)]:

    %s = core.Constant {value = dense<[[[[0.707106769]], [[1.41421354]]]]> : tensor<1x2x1x1xf32>}
    %xs = "core.Multiply"(%x, %s)
    %y = "core.Convolution"(%xs, %ws) {..., mlconv.input_range = array<f32: 0.0, 2.82842708>}
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import DenseArrayBase, DenseIntOrFPElementsAttr, ModuleOp, f32
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from mlconv.dense import to_dense_attr, to_numpy
from mlconv.dialects.core_elementwise import MultiplyOp
from mlconv.dialects.core_tensor import ConstantOp
from mlconv.errors import PassFailure
from mlconv.passes.core_quantize import (
    CHANNEL_MEANS_ATTR,
    QUANTIZABLE,
    RANGE_ATTR,
    channel_means,
    data_channel_axis,
    weight_factor_shape,
)

CHANNEL_RANGES_ATTR = "mlconv.channel_ranges"
# Factors are kept within this ratio of 1 either way: a channel that never left 0 in
# calibration must not blow its weights up.
MAX_FACTOR = 1e4


def weight_channel_bounds(op: Operation, weights: np.ndarray) -> np.ndarray:
    """max|w| over the weights of each input channel, in the data's channel order."""
    shape = weight_factor_shape(op, weights)
    per_channel = np.abs(weights.astype(np.float64))
    for axis, size in enumerate(shape):
        if size == 1:
            per_channel = per_channel.max(axis=axis, keepdims=True)
    return per_channel.reshape(-1)


def smoothing_factors(
    low: np.ndarray, high: np.ndarray, weight_bounds: np.ndarray, alpha: float
) -> np.ndarray:
    """s per channel (see the module docstring); 1 where the data or the weights are all 0."""
    reach = np.maximum(np.abs(low), np.abs(high)).astype(np.float64)
    usable = (reach > 0) & (weight_bounds > 0)
    if not usable.any():
        return np.ones_like(reach)
    logs = np.zeros_like(reach)
    logs[usable] = alpha * np.log(reach[usable]) - (1 - alpha) * np.log(weight_bounds[usable])
    logs[usable] -= logs[usable].mean()
    bound = np.log(MAX_FACTOR)
    return np.exp(np.clip(logs, -bound, bound))


def channel_ranges(op: Operation, channels: int) -> tuple[np.ndarray, np.ndarray]:
    attr = op.attributes[CHANNEL_RANGES_ATTR]
    values = to_numpy(attr) if isinstance(attr, DenseIntOrFPElementsAttr) else None
    if values is None or values.shape != (2, channels):
        raise PassFailure.at(
            op, f"{CHANNEL_RANGES_ATTR} must be a 2x{channels} dense f32 tensor (min row, max row)"
        )
    low, high = values.astype(np.float64)
    if not (low <= high).all():
        raise PassFailure.at(op, f"{CHANNEL_RANGES_ATTR} has a channel whose min is above its max")
    return low, high


def smooth_op(op: Operation, alpha: float) -> bool:
    """Smooth one op's data input (see the module docstring); False when it has no channel
    ranges or no constant float weights."""
    data, weights_value = op.operands[0], op.operands[1]
    owner = weights_value.owner
    if CHANNEL_RANGES_ATTR not in op.attributes or not isinstance(owner, ConstantOp):
        return False
    weights = to_numpy(owner.value)
    if weights.dtype.kind != "f":
        return False
    rank = len(data.type.get_shape())
    axis = data_channel_axis(op, rank)
    channels = data.type.get_shape()[axis]
    low, high = channel_ranges(op, channels)
    means = channel_means(op)
    factors = smoothing_factors(low, high, weight_channel_bounds(op, weights), alpha)
    scaled = (weights * factors.reshape(weight_factor_shape(op, weights))).astype(weights.dtype)
    divide = np.reshape(1 / factors, [channels if i == axis else 1 for i in range(rank)])
    new_weights = ConstantOp.from_numpy(scaled)
    inverse = ConstantOp.from_numpy(divide.astype(weights.dtype))
    smoothed = MultiplyOp.build_op([data, inverse.output], [data.type])
    for created in (new_weights, inverse, smoothed):
        created.location = op.location
    block = op.parent_block()
    assert block is not None
    block.insert_ops_before([new_weights, inverse, smoothed], op)
    op.operands = [smoothed.results[0], new_weights.output, *op.operands[2:]]
    if not owner.output.uses:
        owner.detach()
        owner.erase()
    op.attributes[RANGE_ATTR] = DenseArrayBase.from_list(
        f32, [float((low / factors).min()), float((high / factors).max())]
    )
    del op.attributes[CHANNEL_RANGES_ATTR]
    if means is not None:
        op.attributes[CHANNEL_MEANS_ATTR] = to_dense_attr((means / factors).astype(np.float32))
    return True


def smooth_module(module: ModuleOp, alpha: float = 0.5) -> int:
    """Smooth every quantizable op that carries channel ranges; returns how many."""
    if not 0 <= alpha <= 1:
        raise PassFailure(f"core-smooth-activations: alpha must be within [0, 1], got {alpha}")
    return sum(smooth_op(op, alpha) for op in list(module.walk()) if isinstance(op, QUANTIZABLE))


@dataclass(frozen=True)
class CoreSmoothActivationsPass(ModulePass):
    """core-smooth-activations: per-channel activation ranges moved into the weights
    (SmoothQuant) before core-quantize."""

    name = "core-smooth-activations"
    alpha: float = 0.5

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        smooth_module(op, float(self.alpha))


__all__ = [
    "CHANNEL_RANGES_ATTR",
    "CoreSmoothActivationsPass",
    "smooth_module",
    "smoothing_factors",
]

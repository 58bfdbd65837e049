"""core-quantize: post-training int8 quantization in OpenVINO's form (core.FakeQuantize).

Input: core dialect with constant weights. Output: the same ops, with `core.FakeQuantize` on
the weights and (static, dynamic) the data input of every `core.Convolution`,
`core.GroupConvolution` and `core.MatMul` whose weights are a float `core.Constant`:
- weights: per output channel, symmetric, 255 levels (int8 -127..127): ranges +-max|w| of
  the channel (`[O,1,1,1]` for a convolution, `[G,O/G,1,1,1]` grouped, per column for MatMul);
- `mode=static`: the data input, per tensor, asymmetric, 256 levels (int8 -128..127), over
  the range calibration observed, which the op carries as `mlconv.input_range =
  array<f32: min, max>` (`mlconv.converter.calibration` writes it); the range is widened to hold 0 and
  nudged so that 0 is exactly a level (as TFLite does). An op without it is an error;
- `mode=dynamic`: the data input over its own range at run time (ReduceMin/ReduceMax of the
  tensor, widened to hold 0);
- `mode=weight-only`: the weights only; activations stay float.
With `float-input-layers=true` an op that reads a model input (through layout changes, padding
and arithmetic with constants alone: `reads_model_input`) keeps its data in float in every mode,
its weights int8, as TVM's quantizer leaves its first convolution (`skip_conv_layers=[0]`): the
model input is the one activation whose rounding every later op sees, and an input layer has
few input channels, so float costs it little. Measured on test_quantization's trained Keras
models, leaving one op's activations float at a time (static range, mean relative error of the
logits): the input layer is the most sensitive op of both (ResNet50 1.56% -> 1.43%, the next
best the classifier at 1.48%; MobileNetV2 1.44% -> 1.34%).
An op whose data input carries calibrated per-channel means (`mlconv.channel_means`, written by
`mlconv.converter.calibration`) gets its bias corrected, as OpenVINO's FastBiasCorrection does: the mean
shift the weights' rounding error causes on such data (per output channel: the op applied to
its error weights and to data holding each channel's mean everywhere, averaged over output
positions) is subtracted by a `core.Add` after the op.
The IR exports to OpenVINO IR as it is; `tpu-quantize` lowers it to integer arithmetic.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import DenseArrayBase, DenseIntOrFPElementsAttr, ModuleOp, TensorType
from xdsl.dialects.func import FuncOp
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass

from mlconv.dense import numpy_dtype, to_numpy
from mlconv.dialects.core_conv import ConvolutionOp, GroupConvolutionOp
from mlconv.dialects.core_elementwise import (
    AddOp,
    DivideOp,
    MaximumOp,
    MinimumOp,
    MultiplyOp,
    SubtractOp,
)
from mlconv.dialects.core_indexing import PadOp
from mlconv.dialects.core_nn import MatMulOp
from mlconv.dialects.core_quant import FakeQuantizeOp
from mlconv.dialects.core_tensor import (
    ConstantOp,
    ConvertOp,
    ReduceMaxOp,
    ReduceMinOp,
    ReshapeOp,
    SqueezeOp,
    TransposeOp,
    UnsqueezeOp,
)
from mlconv.errors import PassFailure

MODES = ("static", "dynamic", "weight-only")
RANGE_ATTR = "mlconv.input_range"
CHANNEL_MEANS_ATTR = "mlconv.channel_means"
QUANTIZABLE = (ConvolutionOp, GroupConvolutionOp, MatMulOp)
# Ranges narrower than this (a constant activation) are widened to it.
MIN_WIDTH = 1e-6


# Ops between a model input and an input layer that keep it a model input: layout changes,
# padding, and (with constants) the input's preprocessing and core-smooth-activations' scaling.
INPUT_PREPARATION = (
    TransposeOp,
    ReshapeOp,
    SqueezeOp,
    UnsqueezeOp,
    PadOp,
    ConvertOp,
    AddOp,
    SubtractOp,
    MultiplyOp,
    DivideOp,
)


def reads_model_input(op: Operation) -> bool:
    """Whether the op's data input is a model input (an argument of its function), through
    INPUT_PREPARATION ops whose other operands are constants."""
    value = op.operands[0]
    while not isinstance(value, BlockArgument):
        owner = value.owner
        if not isinstance(owner, INPUT_PREPARATION):
            return False
        varying = [v for v in owner.operands if not isinstance(v.owner, ConstantOp)]
        if len(varying) != 1:
            return False
        value = varying[0]
    return isinstance(value.owner.parent_op(), FuncOp)


def weight_operand(op: Operation) -> int:
    return 1


def channel_axes(op: Operation, rank: int) -> tuple[int, ...]:
    """The weight axes that index output channels (kept in the per-channel range)."""
    if isinstance(op, ConvolutionOp):
        return (0,)
    if isinstance(op, GroupConvolutionOp):
        return (0, 1)
    transpose_b = op.attribute_values()["transpose_b"]
    if rank == 1:
        return ()
    return (rank - 2,) if transpose_b else (rank - 1,)


def data_channel_axis(op: Operation, rank: int) -> int:
    """The axis of the op's data input that its weights contract (the channel axis)."""
    if isinstance(op, ConvolutionOp | GroupConvolutionOp):
        return 1
    if rank == 1:
        return 0
    return rank - 2 if op.attribute_values()["transpose_a"] else rank - 1


def weight_factor_shape(op: Operation, weights: np.ndarray) -> tuple[int, ...]:
    """The shape that broadcasts one value per input channel over the weights."""
    ones = [1] * weights.ndim
    if isinstance(op, ConvolutionOp):
        return (1, weights.shape[1], *ones[2:])
    if isinstance(op, GroupConvolutionOp):
        return (weights.shape[0], 1, weights.shape[2], *ones[3:])
    if weights.ndim == 1:
        return (weights.shape[0],)
    axis = weights.ndim - 1 if op.attribute_values()["transpose_b"] else weights.ndim - 2
    return tuple(weights.shape[axis] if i == axis else 1 for i in range(weights.ndim))


def channel_means(op: Operation) -> np.ndarray | None:
    """The op's calibrated per-channel means of its data input (`mlconv.channel_means`), one
    per channel of the axis its weights contract; None when it has none."""
    attr = op.attributes.get(CHANNEL_MEANS_ATTR)
    if attr is None:
        return None
    data_shape = op.operands[0].type.get_shape()
    channels = data_shape[data_channel_axis(op, len(data_shape))]
    values = to_numpy(attr) if isinstance(attr, DenseIntOrFPElementsAttr) else None
    if values is None or values.shape != (channels,):
        raise PassFailure.at(
            op,
            f"{CHANNEL_MEANS_ATTR} must be a dense f32 tensor of {channels} values (one per channel)",
        )
    return values.astype(np.float64)


def output_shift(op: Operation, weight_error: np.ndarray, means: np.ndarray) -> np.ndarray | None:
    """How much the weights' quantization error moves the op's output on average, per output
    channel, for data whose channels hold their means everywhere: a convolution runs its own
    semantics on such data (its zero padding included) and averages over positions; None for
    a MatMul whose weights are not a matrix or a convolution of dynamic spatial size."""
    error = weight_error.astype(np.float32)
    if isinstance(op, ConvolutionOp | GroupConvolutionOp):
        shape = list(op.operands[0].type.get_shape())
        if any(d < 0 for d in shape[2:]):
            return None
        field = np.broadcast_to(
            means.astype(np.float32).reshape(1, -1, *[1] * (len(shape) - 2)), [1, *shape[1:]]
        )
        moved = np.asarray(type(op).semantics(field, error, **op.attribute_values()))
        return moved.mean(axis=tuple(i for i in range(moved.ndim) if i != 1), dtype=np.float64)
    if error.ndim != 2:
        return None
    error64 = error.astype(np.float64)
    return error64 @ means if op.attribute_values()["transpose_b"] else means @ error64


def _correct_bias(op: Operation, shift: np.ndarray, dtype: np.dtype) -> list[Operation]:
    """Subtract `shift` (per output channel) from the op's result, after it."""
    result = op.results[0]
    rank = len(result.type.get_shape())
    axis = 1 if isinstance(op, ConvolutionOp | GroupConvolutionOp) else rank - 1
    shape = [shift.size if i == axis else 1 for i in range(rank)]
    correction = _constant((0.0 - shift).reshape(shape).astype(dtype), op.location)
    corrected = AddOp.build_op([result, correction.output], [result.type])
    corrected.location = op.location
    result.replace_uses_with_if(corrected.results[0], lambda use: use.operation is not corrected)
    return [correction, corrected]


def weight_ranges(weights: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """max|w| per output channel, in the weights' rank (1 where a channel is all zeros)."""
    reduce = tuple(i for i in range(weights.ndim) if i not in axes)
    bound = np.abs(weights.astype(np.float32)).max(axis=reduce, keepdims=True)
    return np.where(bound > 0, bound, np.float32(1)).astype(weights.dtype)


def nudged_range(low: float, high: float) -> tuple[float, float]:
    """[low, high] widened to hold 0, at least MIN_WIDTH wide, moved so 0 is a level of 256."""
    low, high = min(float(low), 0.0), max(float(high), 0.0)
    if high - low < MIN_WIDTH:
        high = low + MIN_WIDTH
    scale = (high - low) / 255.0
    zero = round(-low / scale)
    return -zero * scale, (255 - zero) * scale


def _constant(array: np.ndarray, location) -> ConstantOp:
    op = ConstantOp.from_numpy(np.ascontiguousarray(array))
    op.location = location
    return op


def _fake_quantize(x: SSAValue, low: SSAValue, high: SSAValue, levels: int, location):
    return FakeQuantizeOp.build_op([x, low, high, low, high], [x.type], levels=levels)


def input_range(op: Operation) -> tuple[float, float] | None:
    attr = op.attributes.get(RANGE_ATTR)
    if attr is None:
        return None
    if not isinstance(attr, DenseArrayBase) or len(attr) != 2:
        raise PassFailure.at(op, f"{RANGE_ATTR} must be array<f32: min, max>")
    low, high = (float(v) for v in attr.get_values())
    if not low <= high:
        raise PassFailure.at(op, f"{RANGE_ATTR} has min {low} above max {high}")
    return low, high


def quantize_op(op: Operation, mode: str) -> None:
    weights_value = op.operands[weight_operand(op)]
    owner = weights_value.owner
    if not isinstance(owner, ConstantOp):
        return
    weights = to_numpy(owner.value)
    if weights.dtype.kind != "f" or weights.ndim == 0:
        return
    data = op.operands[0]
    if isinstance(data.owner, FakeQuantizeOp):
        return  # quantized already
    new: list[Operation] = []
    location = op.location
    bound = weight_ranges(weights, channel_axes(op, weights.ndim))
    low_w, high_w = _constant(-bound, location), _constant(bound, location)
    fq_w = _fake_quantize(weights_value, low_w.output, high_w.output, 255, location)
    new += [low_w, high_w, fq_w]
    replacements = {weight_operand(op): fq_w.results[0]}
    after: list[Operation] = []
    means = channel_means(op)
    if means is not None:
        # lazy: loads 1 more module (fake_quant)
        from mlconv.fake_quant import fake_quantize_reference

        quantized = np.asarray(
            fake_quantize_reference(weights, -bound, bound, -bound, bound, levels=255)
        )
        shift = output_shift(op, quantized - weights, means)
        if shift is not None and np.any(shift):
            after = _correct_bias(op, shift, weights.dtype)
        del op.attributes[CHANNEL_MEANS_ATTR]
    if mode == "static":
        observed = input_range(op)
        if observed is None:
            raise PassFailure.at(
                op,
                f"has no calibrated input range ({RANGE_ATTR}): calibrate first "
                "(mlconv-convert's quantization_options, or mlconv.converter.calibration)",
            )
        low, high = nudged_range(*observed)
        dtype = to_numpy_dtype(data.type)
        low_c = _constant(np.array(low, dtype), location)
        high_c = _constant(np.array(high, dtype), location)
        fq_x = _fake_quantize(data, low_c.output, high_c.output, 256, location)
        new += [low_c, high_c, fq_x]
        replacements[0] = fq_x.results[0]
    elif mode == "dynamic":
        dtype = to_numpy_dtype(data.type)
        rank = len(data.type.get_shape())
        axes = _constant(np.arange(rank, dtype=np.int64), location)
        scalar = TensorType(data.type.element_type, [])
        ranged = TensorType(data.type.element_type, [1])
        lowest = ReduceMinOp.build_op([data, axes.output], [scalar], keep_dims=False)
        highest = ReduceMaxOp.build_op([data, axes.output], [scalar], keep_dims=False)
        zero = _constant(np.array(0, dtype), location)
        width = _constant(np.array(MIN_WIDTH, dtype), location)
        low = MinimumOp.build_op([lowest.results[0], zero.output], [ranged])
        high = MaximumOp.build_op([highest.results[0], width.output], [ranged])
        fq_x = _fake_quantize(data, low.results[0], high.results[0], 256, location)
        new += [axes, lowest, highest, zero, width, low, high, fq_x]
        replacements[0] = fq_x.results[0]
    for created in new:
        created.location = location
    block = op.parent_block()
    assert block is not None
    block.insert_ops_before(new, op)
    if after:
        block.insert_ops_after(after, op)
    operands = list(op.operands)
    for index, value in replacements.items():
        operands[index] = value
    op.operands = operands
    if RANGE_ATTR in op.attributes:
        del op.attributes[RANGE_ATTR]


def to_numpy_dtype(type_) -> np.dtype:
    return np.dtype(numpy_dtype(type_.element_type))


def quantize_module(module: ModuleOp, mode: str, float_input_layers: bool = False) -> int:
    """Insert the FakeQuantize ops of `mode` (weight-only on the ops that read a model input
    with `float_input_layers`); returns how many ops were quantized."""
    if mode not in MODES:
        raise PassFailure(f"core-quantize: mode must be one of {', '.join(MODES)}, got '{mode}'")
    targets = [op for op in module.walk() if isinstance(op, QUANTIZABLE)]
    count = 0
    for op in targets:
        before = op.operands[weight_operand(op)]
        float_data = float_input_layers and reads_model_input(op)
        quantize_op(op, "weight-only" if float_data else mode)
        count += op.operands[weight_operand(op)] is not before
    return count


@dataclass(frozen=True)
class CoreQuantizePass(ModulePass):
    """core-quantize: int8 FakeQuantize on weights (per channel) and activations (mode=static|dynamic|weight-only; float-input-layers keeps the data of ops that read a model input float)."""

    name = "core-quantize"
    mode: str = "static"
    float_input_layers: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        quantize_module(op, self.mode, self.float_input_layers)


__all__ = [
    "CHANNEL_MEANS_ATTR",
    "CoreQuantizePass",
    "MODES",
    "RANGE_ATTR",
    "channel_means",
    "data_channel_axis",
    "nudged_range",
    "output_shift",
    "quantize_module",
    "reads_model_input",
    "weight_factor_shape",
]

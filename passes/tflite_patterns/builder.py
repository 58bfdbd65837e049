"""TfliteReader: how a TFLite lowering pattern reads its op (composed into `lowering.Builder`,
which tflite-to-core makes with `fold=True`: an op whose operands are all constants becomes a
`core.Constant`, so weights are dequantized and permuted at compile time).

- `b.x(i)`: operand `i` as a float value, dequantized `(q - zero_point) * scale` (per tensor or
  per axis) when the operand is quantized; `b.raw(i)` the operand unchanged; `b.absent(i)`.
- `b.nchw(v)` / `b.nhwc(v)`: the NHWC <-> NCHW `core.Transpose`s around layout-sensitive ops
  (`core-layout-nchw` sinks and cancels them).
- `b.activation(v, name)`: a fused activation function (NONE, RELU, RELU6, RELU_N1_TO_1, TANH).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import NoneType, TensorType
from xdsl.ir import Operation, SSAValue

from mlconv.dense import element_type
from mlconv.dialects import core
from mlconv.dialects.core_base import constant_value
from mlconv.dialects.quant import UniformQuantizedType
from mlconv.passes.lowering.builder import Builder

TO_NCHW = (0, 3, 1, 2)
TO_NHWC = (0, 2, 3, 1)


class TfliteReader:
    """TFLite operands by index, dequantized on request; options; layout and activations."""

    def __init__(self, b: Builder, qtypes: dict[SSAValue, UniformQuantizedType]):
        self.b = b
        self.qtypes = qtypes

    # --- reading the TFLite op ------------------------------------------------------------------
    def raw(self, op: Any, index: int) -> SSAValue | None:
        if index >= len(op.operands) or isinstance(op.operands[index].type, NoneType):
            return None
        return op.operands[index]

    def absent(self, op: Any, index: int) -> bool:
        return self.raw(op, index) is None

    def x(self, op: Any, index: int) -> SSAValue | None:
        """Operand `index`, dequantized to f32 when it is quantized."""
        value = self.raw(op, index)
        if value is None:
            return None
        qtype = self.qtypes.get(value)
        return value if qtype is None else self.dequantize(value, qtype)

    def static(self, op: Any, index: int) -> np.ndarray:
        """The value of operand `index`, which must be a constant."""
        value = self.raw(op, index)
        array = None if value is None else constant_value(value)
        if array is None:
            raise self.b.fail(f"needs operand #{index} to be a constant")
        return array

    def option(self, op: Any, name: str) -> Any:
        return op.options()[name]

    def shape(self, value: SSAValue) -> tuple[int, ...]:
        """The value's static shape (every dim known)."""
        t = value.type
        if not isinstance(t, TensorType) or any(d < 0 for d in t.get_shape()):
            raise self.b.fail("needs static shapes here (give input shapes)")
        return tuple(t.get_shape())

    def dim(self, value: SSAValue, axis: int) -> int:
        """One static dim (a channel count); the others may be dynamic (a `?` batch)."""
        t = value.type
        if isinstance(t, TensorType) and -len(t.get_shape()) <= axis < len(t.get_shape()):
            size = t.get_shape()[axis]
            if size >= 0:
                return size
        raise self.b.fail(f"needs a static dimension {axis} here (give input shapes)")

    def ranked(self, value: SSAValue) -> int:
        """The value's rank (its dims may be dynamic)."""
        rank = self.b.rank(value)
        if rank is None:
            raise self.b.fail("needs the rank of its input")
        return rank

    # --- quantization ---------------------------------------------------------------------------
    def _params(self, qtype: UniformQuantizedType, rank: int) -> tuple[np.ndarray, np.ndarray]:
        scales = np.asarray(qtype.scale_values(), np.float32)
        zero_points = np.asarray(qtype.zero_point_values(), np.float32)
        if qtype.is_per_axis and rank:
            shape = [1] * rank
            shape[qtype.quantized_dimension.data] = -1
            return scales.reshape(shape), zero_points.reshape(shape)
        return scales.reshape(()), zero_points.reshape(())

    def dequantize(self, value: SSAValue, qtype: UniformQuantizedType) -> SSAValue:
        scale, zero_point = self._params(qtype, len(value.type.get_shape()))
        real = self.b(core.ConvertOp, value, destination_type=element_type(np.float32))
        if np.any(zero_point != 0):
            real = self.b(core.SubtractOp, real, self.b.const(zero_point))
        return self.b(core.MultiplyOp, real, self.b.const(scale))

    def quantize(self, value: SSAValue, qtype: UniformQuantizedType) -> SSAValue:
        scale, zero_point = self._params(qtype, len(value.type.get_shape()))
        storage = qtype.storage_type
        bits = storage.width.data
        unsigned = storage.signedness.data.name == "UNSIGNED"
        low, high = (0, 2**bits - 1) if unsigned else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
        dtype = np.dtype(f"{'u' if unsigned else 'i'}{bits // 8}")
        scaled = self.b(core.DivideOp, value, self.b.const(scale))
        rounded = self.b(core.RoundOp, scaled, mode="half_away_from_zero")
        if np.any(zero_point != 0):
            rounded = self.b(core.AddOp, rounded, self.b.const(zero_point))
        clamped = self.b(core.ClampOp, rounded, min=float(low), max=float(high))
        return self.b(core.ConvertOp, clamped, destination_type=element_type(dtype))

    def transpose(self, value: SSAValue, order: Sequence[int]) -> SSAValue:
        return self.b(core.TransposeOp, value, self.b.ints(list(order)))

    def nchw(self, value: SSAValue) -> SSAValue:
        return self.transpose(value, TO_NCHW)

    def nhwc(self, value: SSAValue) -> SSAValue:
        return self.transpose(value, TO_NHWC)

    def reshape(self, value: SSAValue, shape: Sequence[int]) -> SSAValue:
        return self.b(core.ReshapeOp, value, self.b.ints([int(d) for d in shape]))

    def activation(self, value: SSAValue, name: str) -> SSAValue:
        if name in ("NONE", None):
            return value
        if name == "RELU":
            return self.b(core.ReluOp, value)
        if name == "RELU6":
            return self.b(core.ClampOp, value, min=0.0, max=6.0)
        if name == "RELU_N1_TO_1":
            return self.b(core.ClampOp, value, min=-1.0, max=1.0)
        if name == "TANH":
            return self.b(core.TanhOp, value)
        raise self.b.fail(f"fused activation {name} is not supported")

    def fused(self, op: Any, value: SSAValue) -> SSAValue:
        return self.activation(value, op.options().get("fused_activation_function", "NONE"))


def tflite_builder(op: Operation, qtypes: dict[SSAValue, UniformQuantizedType]) -> Builder:
    """The builder a TFLite pattern gets: folding core ops before `op`, operands dequantized
    with the quantization parameters in `qtypes`."""
    return Builder(op, lambda b: TfliteReader(b, qtypes), fold=True)

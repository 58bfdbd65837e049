"""TfliteBuilder: how a TFLite lowering pattern reads its op and creates core ops.

It extends the ONNX `CoreBuilder` (ops inserted before the TFLite op, at its location, result
types from each core op's semantics) with what TFLite needs:

- `b.x(i)`: operand `i` as a float value, dequantized `(q - zero_point) * scale` (per tensor or
  per axis) when the operand is quantized; `b.raw(i)` the operand unchanged; `b.absent(i)`.
- Constant folding as ops are built: an op whose operands are all `core.Constant`s becomes a
  `core.Constant` of its value, so weights are dequantized and permuted (OHWI -> OIHW) at
  compile time and never reach the graph as ops.
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
from xdsl.rewriter import Rewriter

from mlconv.dense import element_type, numpy_dtype
from mlconv.dialects import core
from mlconv.dialects.core_base import CoreOp, constant_value
from mlconv.dialects.core_tensor import ConstantOp, reshape_target
from mlconv.dialects.quant import UniformQuantizedType
from mlconv.passes.core_semantics import evaluate
from mlconv.passes.onnx_patterns.builder import CoreBuilder

TO_NCHW = (0, 3, 1, 2)
TO_NHWC = (0, 2, 3, 1)


def _reshape(data: np.ndarray, shape: np.ndarray, special_zero: bool = False) -> np.ndarray:
    return data.reshape(reshape_target(data.shape, shape, special_zero))


def _transpose(data: np.ndarray, order: np.ndarray) -> np.ndarray:
    return np.transpose(data, [int(a) for a in order.reshape(-1)] or None)


def _convert(data: np.ndarray, destination_type: Any) -> np.ndarray:
    dtype = numpy_dtype(destination_type)
    return data != 0 if dtype == np.bool_ else data.astype(dtype)


_NUMPY_FOLDS: dict[type, Any] = {
    core.AddOp: np.add,
    core.SubtractOp: np.subtract,
    core.MultiplyOp: np.multiply,
    core.ReshapeOp: _reshape,
    core.TransposeOp: _transpose,
    core.ConvertOp: _convert,
}


class TfliteBuilder(CoreBuilder):
    def __init__(self, anchor: Operation, qtypes: dict[SSAValue, UniformQuantizedType]):
        super().__init__(anchor)
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
            raise self.fail(f"needs operand #{index} to be a constant")
        return array

    def option(self, op: Any, name: str) -> Any:
        return op.options()[name]

    def shape(self, value: SSAValue) -> tuple[int, ...]:
        """The value's static shape (every dim known)."""
        t = value.type
        if not isinstance(t, TensorType) or any(d < 0 for d in t.get_shape()):
            raise self.fail("needs static shapes here (give input shapes)")
        return tuple(t.get_shape())

    def dim(self, value: SSAValue, axis: int) -> int:
        """One static dim (a channel count); the others may be dynamic (a `?` batch)."""
        t = value.type
        if isinstance(t, TensorType) and -len(t.get_shape()) <= axis < len(t.get_shape()):
            size = t.get_shape()[axis]
            if size >= 0:
                return size
        raise self.fail(f"needs a static dimension {axis} here (give input shapes)")

    def ranked(self, value: SSAValue) -> int:
        """The value's rank (its dims may be dynamic)."""
        rank = self.rank(value)
        if rank is None:
            raise self.fail("needs the rank of its input")
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
        real = self(core.ConvertOp, value, destination_type=element_type(np.float32))
        if np.any(zero_point != 0):
            real = self(core.SubtractOp, real, self.const(zero_point))
        return self(core.MultiplyOp, real, self.const(scale))

    def quantize(self, value: SSAValue, qtype: UniformQuantizedType) -> SSAValue:
        scale, zero_point = self._params(qtype, len(value.type.get_shape()))
        storage = qtype.storage_type
        bits = storage.width.data
        unsigned = storage.signedness.data.name == "UNSIGNED"
        low, high = (0, 2**bits - 1) if unsigned else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
        dtype = np.dtype(f"{'u' if unsigned else 'i'}{bits // 8}")
        scaled = self(core.DivideOp, value, self.const(scale))
        rounded = self(core.RoundOp, scaled, mode="half_away_from_zero")
        if np.any(zero_point != 0):
            rounded = self(core.AddOp, rounded, self.const(zero_point))
        clamped = self(core.ClampOp, rounded, min=float(low), max=float(high))
        return self(core.ConvertOp, clamped, destination_type=element_type(dtype))

    # --- building core ops ----------------------------------------------------------------------
    def __call__(
        self, op_class: type[CoreOp], *operands: Any, results: int | None = None, **attributes: Any
    ) -> Any:
        folded = self._fold_numpy(op_class, operands, attributes)
        if folded is not None:
            return folded
        made = super().__call__(op_class, *operands, results=results, **attributes)
        values = made if isinstance(made, list) else [made]
        owner = values[0].owner
        if all(constant_value(v) is not None for v in owner.operands):
            folded = evaluate(owner)
            if folded is not None:
                constants = [ConstantOp.from_numpy(np.asarray(v)) for v in folded]
                for constant in constants:
                    constant.location = owner.location
                Rewriter.replace_op(owner, constants, [c.output for c in constants])
                values = [c.output for c in constants]
        return values if isinstance(made, list) else values[0]

    def _fold_numpy(
        self, op_class: type[CoreOp], operands: tuple[Any, ...], attributes: dict[str, Any]
    ) -> SSAValue | None:
        """Weights (dequantize, OHWI -> OIHW, reshapes) fold in numpy: the same IEEE f32
        arithmetic as the op's semantics, without one XLA compilation per weight shape."""
        fold = _NUMPY_FOLDS.get(op_class)
        if fold is None or not all(isinstance(v, SSAValue) for v in operands):
            return None
        arrays = [constant_value(v) for v in operands]
        if any(a is None for a in arrays):
            return None
        value = np.asarray(fold(*arrays, **attributes))
        if value.dtype != np.result_type(*arrays) and op_class is not core.ConvertOp:
            return None  # leave type promotion questions to the op's semantics
        constant = ConstantOp.from_numpy(value)
        self.insert(constant)
        return constant.output

    def const(self, value: Any, dtype: Any = None) -> SSAValue:
        return super().const(np.asarray(value, dtype=dtype))

    def transpose(self, value: SSAValue, order: Sequence[int]) -> SSAValue:
        return self(core.TransposeOp, value, self.ints(list(order)))

    def nchw(self, value: SSAValue) -> SSAValue:
        return self.transpose(value, TO_NCHW)

    def nhwc(self, value: SSAValue) -> SSAValue:
        return self.transpose(value, TO_NHWC)

    def reshape(self, value: SSAValue, shape: Sequence[int]) -> SSAValue:
        return self(core.ReshapeOp, value, self.ints([int(d) for d in shape]))

    def activation(self, value: SSAValue, name: str) -> SSAValue:
        if name in ("NONE", None):
            return value
        if name == "RELU":
            return self(core.ReluOp, value)
        if name == "RELU6":
            return self(core.ClampOp, value, min=0.0, max=6.0)
        if name == "RELU_N1_TO_1":
            return self(core.ClampOp, value, min=-1.0, max=1.0)
        if name == "TANH":
            return self(core.TanhOp, value)
        raise self.fail(f"fused activation {name} is not supported")

    def fused(self, op: Any, value: SSAValue) -> SSAValue:
        return self.activation(value, op.options().get("fused_activation_function", "NONE"))

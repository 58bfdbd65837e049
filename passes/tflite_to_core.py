"""tflite-to-core: TFLite builtin operators to the core opset (float and int8 models).

Input: tflite dialect (as `import_tflite` writes it). Output: core ops only, or, before
anything is rewritten, one error naming every operator without a lowering (with its op count
and the first locations).

- Layout: TFLite is NHWC; core is NCHW. Layout-sensitive ops (convolutions, pooling) get a
  `core.Transpose` on each side; filters (OHWI, 1HW(C*M)) are permuted at compile time by
  folding. `core-layout-nchw` sinks and cancels the transposes.
- Quantization: a quantized tensor (`!quant.uniform` element type) becomes its storage integers
  (i8); each op computes in f32 on dequantized operands, `(q - zero_point) * scale`, and each
  quantized result is requantized, `clamp(round(x / scale) + zero_point)` rounding half away
  from zero, as LiteRT's reference kernels do. Constants (weights, int32 biases) fold to f32.
  Exceptions compute the integers as LiteRT's default (XNNPACK) kernels do and return storage
  values: int8 CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED (exact integer accumulation, fp32
  requantization, `tflite_patterns/nn.py`), int8 ADD / SUB, MUL, AVERAGE_POOL_2D, RESIZE_BILINEAR
  and SQRT, f32 -> int8 and int8 -> int8 QUANTIZE, and the int8 operators whose LiteRT rule
  is a fixed-point one of its own (LEAKY_RELU, HARD_SWISH, RSQRT, RELU / RELU6 / RELU_N1_TO_1
  that rescale): those are tabulated over the 256 int8 inputs at compile time and looked up
  (`tflite_patterns/fixed_point.py`); int8 L2_NORMALIZATION's per-row inverse square root is
  built from the same fixed-point steps as int64 core ops, and int8 DIV is a table over all
  65536 operand pairs.
- Shapes: a dynamic dim (TFLite's shape signature -1, e.g. Keras's `None` batch) stays `?`
  and is bound per call (`backends/specialize.py`); every core value keeps at least the type
  the .tflite gives its tensor. `keep-dynamic=false` gives such input dims the size TFLite
  itself runs with, 1.
- Locations: every core op is located at its TFLite op's (its first output tensor's name).
- Control flow: IF / WHILE become core.If / core.Loop holding their (lowered) regions
  (`tflite_patterns/control.py`); the ops of a region are lowered before the op holding it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from mlconv.dense import element_type
from mlconv.dialects import tflite
from mlconv.dialects.core_tensor import ConstantOp
from mlconv.dialects.quant import UniformQuantizedType
from mlconv.passes.core_infer_shapes import update_signature
from mlconv.passes.lowering import driver
from mlconv.passes.tflite_patterns.builder import tflite_builder
from mlconv.passes.tflite_patterns.lists import fold_list_writes


def _qtype(value: SSAValue) -> UniformQuantizedType | None:
    t = value.type
    if isinstance(t, TensorType) and isinstance(t.get_element_type(), UniformQuantizedType):
        return t.get_element_type()
    return None


def _storage(t: TensorType, static: bool) -> TensorType:
    element = t.get_element_type()
    if isinstance(element, UniformQuantizedType):
        element = element.storage_type
    dims = [1 if static and d < 0 else d for d in t.get_shape()]
    return TensorType(element, dims)


def _is_storage(value: SSAValue, qtype: UniformQuantizedType) -> bool:
    """A pattern that computes the integers itself (as LiteRT does) returns storage values."""
    t = value.type
    return isinstance(t, TensorType) and t.get_element_type() == qtype.storage_type


def tflite_ops(module: ModuleOp | Operation) -> list[Operation]:
    """The TFLite ops to lower, those inside an IF / WHILE's regions before the op (so its
    pattern moves regions of core ops)."""
    return [
        op
        for op in module.walk(region_first=True)
        if isinstance(op, tflite.TFLiteOperation | tflite.YieldOp)
    ]


def operator(op: Operation) -> str:
    """The registry key: the builtin operator name, a custom op's code."""
    return op.key  # type: ignore[attr-defined]


def unsupported(module: ModuleOp) -> driver.Missing:
    """(builtin operator, None) -> locations, for every tflite op without a lowering."""
    return driver.unsupported(tflite_ops(module), "tflite", name=operator)


def _real(t: Attribute) -> Attribute:
    """A quantized tensor type's real (f32) counterpart; other types as they are."""
    if isinstance(t, TensorType) and isinstance(t.get_element_type(), UniformQuantizedType):
        return TensorType(element_type(np.float32), t.get_shape())
    return t


def _dequantized(fallback: driver.Fallback, op: Operation, b: Any) -> Sequence[SSAValue | None]:
    """allow-custom's fallback as every TFLite lowering computes: on dequantized operands,
    giving real results (`finish` requantizes the quantized ones)."""
    real = [b.x(op, i) for i in range(len(op.operands))]  # None: an absent input stays
    operands = [op.operands[i] if v is None else v for i, v in enumerate(real)]
    return fallback(op, b, operands, [_real(r.type) for r in op.results])


def lower_function(function: func.FuncOp, keep_dynamic: bool, **options: Any) -> None:
    block = function.body.block
    qtypes: dict[SSAValue, UniformQuantizedType] = {}
    blocks = [block, *(r.block for op in function.walk() for r in op.regions if op is not function)]
    for inner in blocks:  # @main's arguments, and the regions' (IF / WHILE subgraphs)
        for arg in list(inner.args):
            qtype = _qtype(arg)
            static = inner is block and not keep_dynamic
            Rewriter.replace_value_with_new_type(arg, _storage(arg.type, static))
            if qtype is not None:
                qtypes[inner.args[arg.index]] = qtype
    for op in list(function.walk()):
        if isinstance(op, tflite.ConstOp):
            qtype = _qtype(op.output)
            constant = ConstantOp.create(
                attributes={"value": op.value}, result_types=[op.value.type]
            )
            constant.location = op.location
            Rewriter.replace_op(op, constant)
            if qtype is not None:
                qtypes[constant.output] = qtype
    fold_list_writes(function)

    def finish(b: Any, result: SSAValue, value: SSAValue) -> SSAValue:
        """Quantized outputs are requantized (unless the pattern computed the integers)."""
        qtype = _qtype(result)
        if qtype is None:
            return b.refine(value, _storage(result.type, False))
        if not _is_storage(value, qtype):
            value = b.quantize(value, qtype)
        qtypes[value] = qtype
        return value

    if options.get("fallback") is not None:
        options["fallback"] = partial(_dequantized, options["fallback"])
    driver.lower_ops(
        tflite_ops(function),
        "tflite",
        lambda op: tflite_builder(op, qtypes),
        name=operator,
        finish=finish,
        **options,
    )
    for op in reversed(list(function.walk())):  # constants left unused by folding
        if isinstance(op, tflite.NoValueOp | ConstantOp) and not op.results[0].uses:
            Rewriter.erase_op(op)
    update_signature(function)


def lower(module: ModuleOp, keep_dynamic: bool = True, **options: Any) -> None:
    """Every TFLite op of `module` to core; refused, before anything is rewritten, when any
    has no lowering (options: the driver's `fallback`, `keep_going`)."""
    if "keep_going" not in options and "fallback" not in options:
        driver.check(tflite_ops(module), "tflite", name=operator)
    for function in list(module.walk()):
        if isinstance(function, func.FuncOp) and not function.is_declaration:
            lower_function(function, keep_dynamic, **options)


@dataclass(frozen=True)
class TfliteToCorePass(ModulePass):
    name = "tflite-to-core"
    keep_dynamic: bool = True
    allow_custom: bool = False  # an op without a lowering becomes core.Custom

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        lower(op, self.keep_dynamic, **driver.custom_options(self.allow_custom))


__all__ = ["TfliteToCorePass", "unsupported"]

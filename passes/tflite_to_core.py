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
  requantization, `tflite_patterns/nn.py`) and int8 -> int8 QUANTIZE.
- Shapes: a dynamic dim (TFLite's shape signature -1, e.g. Keras's `None` batch) stays `?`
  and is bound per call (`backends/specialize.py`); every core value keeps at least the type
  the .tflite gives its tensor. `keep-dynamic=false` gives such input dims the size TFLite
  itself runs with, 1.
- Locations: every core op is located at its TFLite op's (its first output tensor's name).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from mlconv.dialects import tflite
from mlconv.dialects.core_tensor import ConstantOp
from mlconv.dialects.quant import UniformQuantizedType
from mlconv.errors import PassFailure, describe_location
from mlconv.passes.core_infer_shapes import update_signature
from mlconv.passes.tflite_patterns import load_patterns
from mlconv.passes.tflite_patterns.builder import TfliteBuilder


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


def unsupported(module: ModuleOp) -> dict[str, list[str]]:
    """Builtin operator -> locations, for every tflite op without a lowering."""
    patterns = load_patterns()
    missing: dict[str, list[str]] = defaultdict(list)
    for op in module.walk():
        if isinstance(op, tflite.TFLiteOperation) and op.operator not in patterns:
            missing[op.operator].append(describe_location(op.location) or "?")
    return dict(missing)


def describe_unsupported(missing: dict[str, list[str]]) -> str:
    lines = []
    for operator, where in sorted(missing.items()):
        shown = ", ".join(where[:3]) + (", ..." if len(where) > 3 else "")
        lines.append(f"{operator} ({len(where)} op{'s' if len(where) != 1 else ''}: {shown})")
    return f"no lowering to core for {len(lines)} TFLite operator(s): " + "; ".join(lines)


def lower_function(function: func.FuncOp, keep_dynamic: bool) -> None:
    patterns = load_patterns()
    block = function.body.block
    qtypes: dict[SSAValue, UniformQuantizedType] = {}
    for arg in block.args:
        qtype = _qtype(arg)
        Rewriter.replace_value_with_new_type(arg, _storage(arg.type, not keep_dynamic))
        if qtype is not None:
            qtypes[block.args[arg.index]] = qtype
    for op in list(block.ops):
        if isinstance(op, tflite.ConstOp):
            qtype = _qtype(op.output)
            constant = ConstantOp.create(
                attributes={"value": op.value}, result_types=[op.value.type]
            )
            constant.location = op.location
            Rewriter.replace_op(op, constant)
            if qtype is not None:
                qtypes[constant.output] = qtype
        elif isinstance(op, tflite.TFLiteOperation):
            builder = TfliteBuilder(op, qtypes)
            values = list(patterns[op.operator](op, builder))
            if len(values) != len(op.results):
                raise builder.fail(
                    f"the lowering gave {len(values)} values for {len(op.results)} outputs"
                )
            for result, value in zip(op.results, values, strict=True):
                qtype = _qtype(result)
                if qtype is not None:
                    if not _is_storage(value, qtype):
                        value = builder.quantize(value, qtype)
                    qtypes[value] = qtype
                else:
                    value = builder.refine(value, _storage(result.type, False))
                result.replace_all_uses_with(value)
            Rewriter.erase_op(op)
    for op in reversed(list(block.ops)):  # constants left unused by folding
        if isinstance(op, tflite.NoValueOp | ConstantOp) and not op.results[0].uses:
            Rewriter.erase_op(op)
    update_signature(function)


@dataclass(frozen=True)
class TfliteToCorePass(ModulePass):
    name = "tflite-to-core"
    keep_dynamic: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        missing = unsupported(op)
        if missing:
            raise PassFailure(describe_unsupported(missing))
        for function in list(op.walk()):
            if isinstance(function, func.FuncOp) and not function.is_declaration:
                lower_function(function, self.keep_dynamic)


__all__ = ["TfliteToCorePass", "unsupported"]

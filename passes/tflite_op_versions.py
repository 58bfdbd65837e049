"""tflite-op-versions: set each tflite op's `version` to the minimum it needs.

Input: tflite dialect. Output: the same ops, `version` rewritten. The rules follow TensorFlow's
`lite/tools/versioning/op_version.cc` (seed 002: an op gets a new version when it gains a
parameter or a type; the converter writes the *minimum* version the op's attributes and element
types need, so new files without new features still run on old runtimes). They are a table of
small functions keyed by operator name (`VERSION_RULES`); an operator without a rule is at
version 1. `dialects/tflite_versions.py`'s `RUNTIME_VERSIONS` (from `runtime_version.cc`) gives
each (operator, version) the oldest TFLite runtime that runs it; the importer, the writer and
`tflite-check-runtime` use it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from xdsl.context import Context
from xdsl.dialects.builtin import (
    AnyFloat,
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    NoneType,
    ShapedType,
    Signedness,
    i32,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.passes import ModulePass

from mlconv.dialects.quant import UniformQuantizedType
from mlconv.dialects.tflite import TFLiteOperation


# -- the op signature the rules read ----------------------------------------------------------
@dataclass
class Tensor:
    """What a rule sees of one operand or result: TFLite type name, rank, quantization."""

    type: str  # FLOAT32, INT8, UINT8, INT16, INT32, INT64, BOOL, NOTYPE ...
    rank: int
    dims: tuple[int, ...] | None
    scales: tuple[float, ...] = ()

    @property
    def per_channel(self) -> bool:
        return len(self.scales) > 1


def tflite_type(element: Attribute) -> str:
    """The TFLite TensorType name of an element type (quantized: its storage type)."""
    if isinstance(element, UniformQuantizedType):
        element = element.storage_type
    if isinstance(element, IntegerType):
        width = element.width.data
        if width == 1:
            return "BOOL"
        prefix = "UINT" if element.signedness.data == Signedness.UNSIGNED else "INT"
        return f"{prefix}{width}"
    names = {Float32Type: "FLOAT32", Float16Type: "FLOAT16", Float64Type: "FLOAT64"}
    names[BFloat16Type] = "BFLOAT16"
    return names.get(type(element), "UNKNOWN" if isinstance(element, AnyFloat) else "NOTYPE")


def describe(value: SSAValue) -> Tensor:
    t = value.type
    if isinstance(t, NoneType) or not isinstance(t, ShapedType):
        return Tensor("NOTYPE", 0, None)
    element = t.get_element_type()
    scales = tuple(element.scale_values()) if isinstance(element, UniformQuantizedType) else ()
    shape = tuple(t.get_shape())
    return Tensor(tflite_type(element), len(shape), shape, scales)


@dataclass
class Sig:
    """An op's signature: its operands, results and options (TFLite's OpSignature)."""

    inputs: list[Tensor]
    outputs: list[Tensor]
    options: dict[str, Any]

    def i(self, n: int) -> str:
        return self.inputs[n].type if n < len(self.inputs) else "NOTYPE"

    def o(self, n: int) -> str:
        return self.outputs[n].type if n < len(self.outputs) else "NOTYPE"

    def broadcast_over_4d(self) -> bool:
        """Binary inputs of different shapes with more than 4 dimensions."""
        if len(self.inputs) < 2:
            return False
        differ = self.inputs[0].dims != self.inputs[1].dims
        return differ and max(t.rank for t in self.inputs) > 4


def signature(op: TFLiteOperation) -> Sig:
    return Sig([describe(v) for v in op.operands], [describe(r) for r in op.results], op.options())


# -- the rules (op_version.cc), one small function per operator or family ----------------------
Rule = Callable[[Sig], int]


def _first(*cases: tuple[bool, int]) -> int:
    """The version of the first case that holds, else 1."""
    return next((version for holds, version in cases if holds), 1)


def _conv_2d(s: Sig) -> int:
    x, w, y = s.i(0), s.i(1), s.o(0)
    return _first(
        (x == "INT16" and w == "INT8" and y == "INT16" and s.options["quantized_bias_type"] != "FLOAT32", 8),
        (s.inputs[0].dims is not None and s.inputs[1].dims is not None
         and s.inputs[0].rank == 4 and s.inputs[1].rank == 4
         and s.inputs[0].dims[3] > 0 and s.inputs[0].dims[3] != s.inputs[1].dims[3], 6),
        (x == "INT16" and w == "INT16" and y == "INT16", 4),
        (x == "INT8" and w == "INT8" and y == "INT8", 3),
        (x == "INT8" and w == "INT4" and y == "INT8", 7),
        (x == "FLOAT32" and w == "INT8" and y == "FLOAT32" and s.inputs[1].per_channel, 5),
        (x == "FLOAT32" and w == "INT8" and y == "FLOAT32", 2),
    )  # fmt: skip


def _depthwise_conv_2d(s: Sig) -> int:
    x, w, y = s.i(0), s.i(1), s.o(0)
    dilated = s.options["dilation_w_factor"] != 1 or s.options["dilation_h_factor"] != 1
    return _first(
        (x == "INT16" and w == "INT16" and y == "INT16", 5),
        (x == "FLOAT32" and w == "INT8" and y == "FLOAT32" and s.inputs[1].per_channel, 6),
        (x == "FLOAT32" and w == "INT8" and y == "FLOAT32", 4),
        (x == "INT8" and w == "INT8" and y == "INT8", 3),
        (x == "INT8" and w == "INT4" and y == "INT8", 7),
        (dilated, 2),
    )


def _fully_connected(s: Sig) -> int:
    x, w, y, o = s.i(0), s.i(1), s.o(0), s.options
    hybrid = x == "FLOAT32" and w == "INT8" and y == "FLOAT32"
    return _first(
        (hybrid and s.inputs[1].per_channel, 12),
        (x == "INT16" and w == "INT8" and y == "INT16" and o["quantized_bias_type"] != "FLOAT32", 11),
        (x == "INT16" and w == "INT16" and y == "INT16", 7),
        (len(s.inputs) == 2, 6),
        (o["keep_num_dims"], 5),
        (x == "INT8" and w == "INT8" and y == "INT8", 4),
        (x == "INT8" and w == "INT4" and y == "INT8", 10),
        (hybrid and o["asymmetric_quantize_inputs"], 9),
        (hybrid, 3),
        (o["weights_format"] == "SHUFFLED4x16INT8", 2),
    )  # fmt: skip


def _add(s: Sig) -> int:
    x, y = s.i(0), s.o(0)
    quantized = bool(s.inputs[0].scales)
    return _first(
        (x == "INT16" and not quantized, 5),
        (x == "INT64", 4),
        (x == "INT16" and y == "INT16" and not s.options["pot_scale_int16"], 3),
        (x == "INT8", 2),
    )


def _sub(s: Sig) -> int:
    x, y = s.i(0), s.o(0)
    return _first(
        (x == "INT16" and y == "INT16" and not s.options["pot_scale_int16"], 5),
        (x == "INT64", 4),
        (s.broadcast_over_4d(), 3),
        (x == "INT8", 2),
    )


def _mul(s: Sig) -> int:
    x = s.i(0)
    scales = [t.scales[0] if t.scales else 0.0 for t in (*s.inputs[:2], s.outputs[0])]
    rescale_ge_1 = all(scales) and scales[0] * scales[1] / scales[2] >= 1.0
    return _first(
        ((x == "INT16" and not s.inputs[0].scales) or x == "UINT32", 7),
        (x == "COMPLEX64", 6),
        (x == "INT64", 5),
        (x == "INT16", 4),
        (rescale_ge_1, 3),
        (x == "INT8", 2),
    )


def _int8_int16(int16: int) -> Rule:
    """int16 in -> `int16`, int8 in -> 2 (SOFTMAX, MEAN, RELU6, ...)."""
    return lambda s: _first((s.i(0) == "INT16", int16), (s.i(0) == "INT8", 2))


def _int16_io_int8(s: Sig) -> int:
    """int16 in and out -> 3, int8 -> 2 (pools, TANH, LOGISTIC)."""
    return _first((s.i(0) == "INT16" and s.o(0) == "INT16", 3), (s.i(0) == "INT8", 2))


def _int8_only(s: Sig) -> int:
    return _first((s.i(0) == "INT8", 2))


def _transpose(s: Sig) -> int:
    rank = s.inputs[0].rank
    return _first(
        (rank > 5, 6), (s.i(0) == "INT16", 5), (rank > 4, 4), (s.i(0) == "BOOL", 3),
        (s.i(0) == "INT8", 2),
    )  # fmt: skip


def _strided_slice(s: Sig) -> int:
    o = s.options
    return _first(
        (o.get("offset", False), 8),
        (s.i(0) == "UINT32", 7),
        (o["ellipsis_mask"] != 0 or o["new_axis_mask"] != 0, 6),
        (s.i(0) == "STRING", 5),
        (s.inputs[0].rank > 4, 4),
        (s.i(0) == "BOOL", 3),
        (s.i(0) == "INT8", 2),
    )


def _concatenation(s: Sig) -> int:
    return _first((s.i(0) == "UINT32", 4), (s.i(0) == "INT16", 3), (s.i(0) == "INT8", 2))


def _pad(s: Sig) -> int:
    return _first((s.inputs[0].rank > 4, 4), (s.i(0) == "INT16", 3), (s.i(0) == "INT8", 2))


def _quantize(s: Sig) -> int:
    return _first(
        (s.i(0) == "INT4" or s.o(0) == "INT4", 4),
        (s.outputs[0].per_channel, 3),
        (s.o(0) == "INT16", 2),
    )


def _dequantize(s: Sig) -> int:
    x = s.i(0)
    return _first(
        (x == "INT4", 6),
        (x in ("INT16", "FLOAT16"), 3),
        (x == "INT8" and s.inputs[0].per_channel, 5),
        (x == "INT8", 2),
    )


def _batch_matmul(s: Sig) -> int:
    hybrid = s.i(0) == "FLOAT32" and s.i(1) == "INT8" and s.o(0) == "FLOAT32"
    return _first(
        (s.i(0) == "INT16", 3),
        (s.i(0) == "INT8", 2),
        (hybrid and s.options["asymmetric_quantize_inputs"], 4),
    )


def _gelu(s: Sig) -> int:
    return _first((s.i(0) in ("INT8", "UINT8"), 2))


def _relu(s: Sig) -> int:
    return _first((s.i(0) == "INT16", 3), (s.i(0) in ("INT8", "UINT8"), 2))


def _squeeze(s: Sig) -> int:
    return _first((s.i(0) == "STRING", 2))


def _gather(s: Sig) -> int:
    return _first(
        (s.i(0) == "INT4", 7),
        (s.i(1) == "INT16", 6),
        (s.options["batch_dims"] != 0, 5),
        (s.i(0) == "INT16", 4),
        (s.i(0) == "BOOL", 3),
        (s.i(0) == "INT8", 2),
    )


def _slice(s: Sig) -> int:
    return _first(
        (s.i(0) == "UINT32", 6),
        (s.inputs[0].rank > 4, 5),
        (s.i(0) == "INT16", 4),
        (s.i(0) == "STRING", 3),
        (s.i(0) == "INT8", 2),
    )


def _split(s: Sig) -> int:
    x = s.i(1)  # input 0 is the axis
    return _first((x == "INT16", 4), (x == "INT32", 3), (x == "INT8", 2))


def _max_min(s: Sig) -> int:
    return _first(
        (s.i(0) == "INT16" and s.o(0) == "INT16", 4),
        (s.broadcast_over_4d(), 3),
        (s.i(0) == "INT8", 2),
    )


def _pack(s: Sig) -> int:
    return _first(
        (s.i(0) == "INT8", 2), (s.i(0) == "INT16" and s.o(0) == "INT16", 3), (s.i(0) == "UINT32", 4)
    )


def _exp_log(s: Sig) -> int:
    return _first((s.i(0) in ("INT8", "INT16"), 2))


VERSION_RULES: dict[str, Rule] = {
    "CONV_2D": _conv_2d,
    "DEPTHWISE_CONV_2D": _depthwise_conv_2d,
    "FULLY_CONNECTED": _fully_connected,
    "ADD": _add,
    "SUB": _sub,
    "MUL": _mul,
    "DIV": lambda s: _first((s.broadcast_over_4d(), 2)),
    "AVERAGE_POOL_2D": _int16_io_int8,
    "MAX_POOL_2D": _int16_io_int8,
    "TANH": _int16_io_int8,
    "LOGISTIC": _int16_io_int8,
    "SOFTMAX": _int8_int16(3),
    "MEAN": _int8_int16(3),
    "MIRROR_PAD": _int8_int16(3),
    "REDUCE_MAX": _int8_int16(3),
    "REDUCE_MIN": _int8_int16(3),
    "RELU6": _int8_int16(3),
    "RSQRT": _int8_int16(3),
    "RELU": _relu,
    "TRANSPOSE": _transpose,
    "STRIDED_SLICE": _strided_slice,
    "CONCATENATION": _concatenation,
    "PAD": _pad,
    "PADV2": _pad,
    "QUANTIZE": _quantize,
    "DEQUANTIZE": _dequantize,
    "BATCH_MATMUL": _batch_matmul,
    "GELU": _gelu,
    "SQUEEZE": _squeeze,
    "GATHER": _gather,
    "SLICE": _slice,
    "SPLIT": _split,
    "MAXIMUM": _max_min,
    "MINIMUM": _max_min,
    "PACK": _pack,
    "EXP": _exp_log,
    "LOG": _exp_log,
    "REDUCE_PROD": _exp_log,
    **dict.fromkeys(
        [
            "SPACE_TO_DEPTH",
            "SPLIT_V",
            "SUM",
            "LOG_SOFTMAX",
            "GREATER",
            "LESS_EQUAL",
            "SQUARED_DIFFERENCE",
            "DEPTH_TO_SPACE",
        ],
        _int8_only,
    ),  # fmt: skip
    "LESS": _int8_int16(3),
    "GREATER_EQUAL": _int8_int16(3),
    "ARG_MAX": lambda s: _first((s.i(0) == "BOOL", 3), (s.i(0) == "INT8", 2)),
    "ARG_MIN": lambda s: _first((s.i(0) == "BOOL", 3), (s.i(0) == "INT8", 2)),
    "LEAKY_RELU": lambda s: _first((s.i(0) == "INT16", 2)),
    "L2_NORMALIZATION": lambda s: _first((s.o(0) == "INT8", 2)),
    "BROADCAST_TO": lambda s: 3 if s.i(0) in ("INT8", "INT16") else 2,
    "WHERE": lambda s: 1 if s.i(0) == "BOOL" else 2,
}


def required_version(op: TFLiteOperation) -> int:
    """The minimum version `op` needs (1 for operators without a rule)."""
    rule = VERSION_RULES.get(op.operator)
    return rule(signature(op)) if rule else 1


@dataclass(frozen=True)
class TfliteOpVersionsPass(ModulePass):
    """Set every tflite op's `version` to the minimum its options and element types need."""

    name = "tflite-op-versions"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for child in op.walk():
            if isinstance(child, TFLiteOperation):
                child.attributes["version"] = IntegerAttr(required_version(child), i32)

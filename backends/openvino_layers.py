"""The core -> OpenVINO IR layer table: one emitter per core op, in the lowering registry.

    @lowering("core", "core.AvgPool", target="openvino")
    def avg_pool(op, w):
        return w.layer(op, rename={"exclude_pad": "exclude-pad"})

An emitter gets the core op and the IR writer (`backends.openvino_ir._Writer`) and returns a
`Layer`: the OpenVINO type, `opsetN` (the core op's VERSION), the `<data>` attributes already
formatted as the opset specification writes them, the input values (one port each) and the
output values. Core ops follow OpenVINO's opset specifications, so most ops are `generic`: the
type is the core name, every declared attribute is written under its own name. The others
rename an attribute (AvgPool's `exclude-pad`), drop ONNX-only attributes at their default
(Interpolate) or are refused with a reason (`UNSUPPORTED`). The reader (`import_openvino`)
inverts the same table: `OV_TYPES` and `RENAMES`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.ir import SSAValue

from mlconv.dense import element_type
from mlconv.dialects.core import OPS_BY_NAME
from mlconv.dialects.core_base import (
    BOOL,
    FLOAT,
    FLOATS,
    INT,
    INTS,
    STR,
    STRS,
    TYPE,
    CoreOp,
    constant_value,
)
from mlconv.passes.core_op_versions import op_version
from mlconv.passes.lowering import lowering

TARGET = "openvino"

# OpenVINO spells a few types differently from the core op's name.
OV_TYPES = {"core.Relu": "ReLU", "core.Constant": "Const"}

# numpy dtype -> (OpenVINO element_type, port precision)
ELEMENT_TYPES: dict[np.dtype, tuple[str, str]] = {
    np.dtype(name): pair
    for name, pair in {
        "float32": ("f32", "FP32"),
        "float16": ("f16", "FP16"),
        "float64": ("f64", "FP64"),
        "int8": ("i8", "I8"),
        "int16": ("i16", "I16"),
        "int32": ("i32", "I32"),
        "int64": ("i64", "I64"),
        "uint8": ("u8", "U8"),
        "uint16": ("u16", "U16"),
        "uint32": ("u32", "U32"),
        "uint64": ("u64", "U64"),
        "bool": ("boolean", "BOOL"),
    }.items()
}
try:  # bf16 through ml_dtypes, as mlconv.dense stores it
    import ml_dtypes

    ELEMENT_TYPES[np.dtype(ml_dtypes.bfloat16)] = ("bf16", "BF16")
except ImportError:  # pragma: no cover - ml_dtypes comes with jax
    pass
DTYPES = {name: dtype for dtype, (name, _) in ELEMENT_TYPES.items()}

# Core op -> {core attribute: OpenVINO attribute} where the spec spells it differently.
RENAMES: dict[str, dict[str, str]] = {"core.AvgPool": {"exclude_pad": "exclude-pad"}}

# Core ops OpenVINO has no layer for (or a different contract), with the reason.
UNSUPPORTED: dict[str, str] = {
    "core.If": "regions (then/else bodies) are not written yet",
    "core.Loop": "regions (the body) are not written yet",
    "core.Scan": "mlconv-only op (ONNX Scan); OpenVINO has TensorIterator with a body region",
    "core.CumProd": "mlconv-only op; OpenVINO has no cumulative product",
    "core.QuantizeLinear": "mlconv-only op; OpenVINO quantizes with FakeQuantize",
    "core.DequantizeLinear": "mlconv-only op; OpenVINO dequantizes with Convert+Subtract+Multiply",
    "core.BitCast": "mlconv-only op; OpenVINO has no bit cast",
    "core.Trilu": "mlconv-only op (ONNX Trilu); OpenVINO has no Trilu",
    "core.DynamicSlice": "mlconv-only op (XLA DynamicSlice); OpenVINO's Slice has no static size",
    "core.DynamicUpdateSlice": "mlconv-only op (XLA DynamicUpdateSlice); OpenVINO has none",
    "core.NonMaxSuppression": "OpenVINO's NonMaxSuppression-9 has three outputs, core's one",
}


@dataclass
class Layer:
    """One `<layer>`: type, version, `<data>` attributes, input and output values."""

    type: str
    version: str
    data: dict[str, str]
    inputs: list[SSAValue]
    outputs: list[SSAValue]
    rt_info: dict[str, str] = field(default_factory=dict)


def format_value(kind, value) -> str:
    """An attribute value as the opset specification writes it in `<data>`."""
    if kind is BOOL:
        return "true" if value else "false"
    if kind is INT:
        return str(int(value))
    if kind is FLOAT:
        return repr(float(value))
    if kind is INTS:
        return ", ".join(str(int(v)) for v in value)
    if kind is FLOATS:
        return ", ".join(repr(float(v)) for v in value)
    if kind is STRS:
        return ",".join(str(v) for v in value)
    if kind is TYPE:
        return ELEMENT_TYPES[np.dtype(value)][0]
    return str(value)


def parse_value(kind, text: str):
    """The inverse of `format_value`."""
    if kind is BOOL:
        return text.strip().lower() == "true"
    if kind is INT:
        return int(text)
    if kind is FLOAT:
        return float(text)
    if kind is INTS:
        return tuple(int(v) for v in text.replace(" ", "").split(",") if v)
    if kind is FLOATS:
        return tuple(float(v) for v in text.replace(" ", "").split(",") if v)
    if kind is STRS:
        return tuple(v for v in text.split(",") if v)
    if kind is TYPE:  # the element type attribute core ops hold (`destination_type = i32`)
        if text not in DTYPES:
            raise ValueError(f"element type '{text}' is not known")
        return element_type(DTYPES[text])
    if kind is STR:
        return text
    raise ValueError(f"attribute kind {kind.name} is not read")


def ov_type(op_name: str) -> str:
    return OV_TYPES.get(op_name, op_name.removeprefix("core."))


# Attributes an op gained at a later opset: dropped when the op is written at an older one
# (core-op-versions sets that version; `op_version` reads it).
INTRODUCED = {
    ("core.Gelu", "approximation_mode"): 7,
    ("core.ShapeOf", "output_type"): 3,
    ("core.TopK", "stable"): 11,
    ("core.Gather", "batch_dims"): 7,
    ("core.ScatterElementsUpdate", "reduction"): 12,
    ("core.ScatterElementsUpdate", "use_init_val"): 12,
    ("core.MaxPool", "dilations"): 8,
}

# Where core's VERSION names an opset that lacks the op, the opset OpenVINO introduced it in.
OV_SINCE = {
    "core.Asinh": 4,
    "core.Acosh": 4,
    "core.Atanh": 4,
    "core.ReduceL1": 4,
    "core.ReduceL2": 4,
}


def layer(op: CoreOp, *, rename: dict[str, str] | None = None, drop: Sequence[str] = ()) -> Layer:
    """The layer of a core op whose attributes are OpenVINO's: every declared attribute with a
    value (explicit or default) under its (renamed) name."""

    version = max(op_version(op), OV_SINCE.get(op.name, 0))
    rename = {**RENAMES.get(op.name, {}), **(rename or {})}
    data: dict[str, str] = {}
    for key, value in op.attribute_values().items():
        if value is None or key in drop or version < INTRODUCED.get((op.name, key), 0):
            continue
        data[rename.get(key, key)] = format_value(op.ATTRIBUTES[key], value)
    type_ = "SoftMax" if (op.name, version) == ("core.Softmax", 1) else ov_type(op.name)
    return Layer(type_, f"opset{version}", data, list(op.operands), list(op.results))


def generic(op: CoreOp, w) -> Layer:
    return layer(op)


SPECIAL = {
    "core.Custom",
    "core.Constant",
    "core.Interpolate",
    "core.MaxPool",
    "core.TopK",
    "core.OneHot",
    "core.RNNSequence",
    "core.GRUSequence",
    "core.LSTMSequence",
}
GENERIC = sorted(
    name for name in OPS_BY_NAME if name not in UNSUPPORTED and name not in {"core.Yield"}
)
GENERIC = [
    name for name in GENERIC if name not in SPECIAL and hasattr(OPS_BY_NAME[name], "ATTRIBUTES")
]
lowering("core", GENERIC, target=TARGET)(generic)


@lowering("core", "core.Custom", target=TARGET)
def custom(op: CoreOp, w) -> Layer:
    """core.Custom (allow-custom) as an extension layer, OpenVINO's convention for custom ops:
    the op type as `type`, its domain as `version` (the extension's opset name), its attributes
    in `<data>`; a runtime reading the IR needs the extension that implements it."""
    values = op.attribute_values()
    data = {
        key: ",".join(map(str, value)) if isinstance(value, tuple) else str(value)
        for key, value in values["attrs"]
    }
    version = values["domain"] or "extension"
    return Layer(values["op_type"], version, data, list(op.operands), list(op.results))


class Refused(Exception):
    """An op this table cannot write (the writer turns it into an error at the op)."""


@lowering("core", "core.MaxPool", target=TARGET)
def max_pool(op: CoreOp, w) -> Layer:
    """MaxPool-1 has no dilations; written as opset1 when they are absent or all 1."""
    dilations = op.attribute_values()["dilations"] or ()
    if any(d != 1 for d in dilations):
        raise Refused("dilated MaxPool needs MaxPool-8 (two outputs), not written yet")
    return layer(op, drop=("dilations",))


_INTERPOLATE_ONNX = {
    "exclude_outside": False,
    "extrapolation_value": 0.0,
    "keep_aspect_ratio_policy": "stretch",
}


@lowering("core", "core.Interpolate", target=TARGET)
def interpolate(op: CoreOp, w) -> Layer:
    """Interpolate-11 lacks ONNX's exclude_outside, extrapolation_value, keep_aspect_ratio_policy
    and roi: written only at their defaults."""
    values = op.attribute_values()
    for key, default in _INTERPOLATE_ONNX.items():
        if values[key] not in (None, default):
            raise Refused(f"{key}={values[key]!r} has no OpenVINO Interpolate-11 equivalent")
    if op.roi is not None:
        raise Refused("a roi operand has no OpenVINO Interpolate-11 equivalent")
    result = layer(op, drop=tuple(_INTERPOLATE_ONNX))
    return result


def _constant(op: CoreOp, index: int, what: str) -> np.ndarray:
    value = constant_value(op.operands[index])
    if value is None:
        raise Refused(f"{what} must be a constant")
    return value


@lowering("core", "core.TopK", target=TARGET)
def top_k(op: CoreOp, w) -> Layer:
    """TopK-11 takes k as a scalar (core, like ONNX, accepts [1])."""
    result = layer(op)
    result.inputs[1] = _constant(op, 1, "k").reshape(()).astype(np.int64)
    return result


@lowering("core", "core.OneHot", target=TARGET)
def one_hot(op: CoreOp, w) -> Layer:
    """OneHot-16 needs an integral scalar depth (core, like ONNX, accepts a float [1])."""
    result = layer(op)
    result.inputs[1] = _constant(op, 1, "depth").reshape(()).astype(np.int64)
    return result


@lowering("core", ["core.RNNSequence", "core.GRUSequence", "core.LSTMSequence"], target=TARGET)
def sequence(op: CoreOp, w) -> Layer:
    """OpenVINO's *Sequence-5 need the sequence_lengths input (core's is optional: the full
    length) and have no peepholes."""
    if getattr(op, "p", None) is not None:
        raise Refused("LSTMSequence-5 has no peepholes (core's P operand)")
    if op.attribute_values().get("cell_clip"):
        raise Refused("LSTMSequence-5 has no cell-state clip (core's cell_clip, from TFLite)")
    result = layer(op, drop=("cell_clip",))
    if op.sequence_lengths is None:
        shape = op.x.type.get_shape()
        if shape[0] < 0 or shape[1] < 0:
            raise Refused("without sequence_lengths the batch and sequence sizes must be static")
        position = 3 if op.name == "core.LSTMSequence" else 2
        result.inputs.insert(position, np.full((shape[0],), shape[1], dtype=np.int32))
    return result

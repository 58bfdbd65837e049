"""core-to-tflite: the core ops of a float CNN/MLP/transformer back to TFLite builtins.

Input: core dialect (NCHW, static shapes). Output: tflite ops (NHWC), each at version 1 until
`tflite-op-versions` sets the minimum it needs (`export_tflite` runs both).

Layout without a transpose pass: each core value is tracked as a TFLite tensor `t` and a
permutation `p` with `core = transpose(t, p)`. A `core.Transpose` only composes `p` (it emits
nothing); convolutions and pools take their input in NHWC (`p = (0, 3, 1, 2)` for free after
the NCHW transpose tflite-to-core inserted) and give NHWC; elementwise ops keep their operand's
`p` (constants are permuted at compile time); other ops take the identity layout, and a
`TRANSPOSE` is emitted only where a tensor must change layout. So NHWC -> NCHW -> NHWC pairs
cancel. A bias `core.Add` and an activation (Relu, Clamp 0..6 / -1..1) after a
convolution, FULLY_CONNECTED or binary op with no other use fold into that op.

Patterns live in the lowering registry's "tflite" table, keyed by ("core", op name); ops
without one: the driver's one-line report listing every core op name (with count and locations).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    DictionaryAttr,
    IntegerAttr,
    ModuleOp,
    NoneType,
    StringAttr,
    TensorType,
    i32,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from mlconv.dense import numpy_dtype, to_dense_attr
from mlconv.dialects import tflite
from mlconv.dialects.core_base import CoreOp, constant_value
from mlconv.dialects.core_nn import resolve_padding
from mlconv.errors import PassFailure
from mlconv.passes.lowering import Pattern, driver, lookup
from mlconv.passes.lowering import lowering as _lowering

Perm = tuple[int, ...]

_ACTIVATIONS = {"NONE", "RELU", "RELU6", "RELU_N1_TO_1", "TANH"}


def _identity(rank: int) -> Perm:
    return tuple(range(rank))


def _inverse(p: Sequence[int]) -> Perm:
    return tuple(int(i) for i in np.argsort(p))


def _shape(value: SSAValue) -> tuple[int, ...]:
    return tuple(value.type.get_shape())


class _Lowering:
    def __init__(self, function: func.FuncOp):
        self.function = function
        self.block = function.body.block
        self.ret = self.block.last_op
        self.state: dict[SSAValue, tuple[SSAValue, Perm]] = {}
        self.consts: dict[tuple[int, Perm], SSAValue] = {}
        self.anchor: Operation | None = None
        self.no_value: SSAValue | None = None

    # --- emitting ---------------------------------------------------------------------------
    def emit(
        self,
        operator: str,
        operands: Sequence[SSAValue],
        result_types: Sequence[Attribute],
        **options: Any,
    ):
        attributes: dict[str, Attribute] = {"version": IntegerAttr(1, i32)}
        fields = {f["name"]: f for f in tflite.fields_of(operator)}
        for key, value in options.items():
            attributes[key] = (
                tflite.option_attr(fields[key], value)
                if fields[key]["kind"] != "enum"
                else StringAttr(value)
            )
        op = tflite.op_class(operator).create(
            operands=list(operands), result_types=list(result_types), attributes=attributes
        )
        if self.anchor is not None:
            op.location = self.anchor.location
        Rewriter.insert_op(op, InsertPoint.before(self.ret))
        return op

    def const(self, array: np.ndarray, before: Operation | None = None) -> SSAValue:
        array = np.ascontiguousarray(array)
        op = tflite.ConstOp(to_dense_attr(array))
        if self.anchor is not None:
            op.location = self.anchor.location
        Rewriter.insert_op(op, InsertPoint.before(before or self.ret))
        return op.output

    def none(self) -> SSAValue:
        if self.no_value is None:
            op = tflite.NoValueOp()
            Rewriter.insert_op(op, InsertPoint.before(self.ret))
            self.no_value = op.output
        return self.no_value

    # --- layouts ----------------------------------------------------------------------------
    def get(self, value: SSAValue, q: Sequence[int] | None = None) -> SSAValue:
        """A TFLite tensor holding `transpose(core value, q)` (identity when q is None)."""
        rank = len(_shape(value))
        q = _identity(rank) if q is None else tuple(q)
        array = constant_value(value)
        if array is not None:
            key = (id(value), q)
            if key not in self.consts:
                self.consts[key] = self.const(np.transpose(array, q))
            return self.consts[key]
        tensor, p = self.state[value]
        need = tuple(p[i] for i in q)
        if need == _identity(rank):
            return tensor
        shape = [tensor.type.get_shape()[i] for i in need]
        order = self.const(np.array(need, np.int32))
        out = self.emit(
            "TRANSPOSE", [tensor, order], [TensorType(tensor.type.get_element_type(), shape)]
        )
        return out.results[0]

    def set(self, value: SSAValue, tensor: SSAValue, p: Perm | None = None) -> None:
        self.state[value] = (tensor, _identity(len(_shape(value))) if p is None else tuple(p))

    def frame_type(self, value: SSAValue, p: Perm) -> TensorType:
        shape = _shape(value)
        inverse = _inverse(p)
        return TensorType(
            value.type.get_element_type(), [shape[inverse[i]] for i in range(len(shape))]
        )

    def perm_of(self, value: SSAValue) -> Perm | None:
        if constant_value(value) is not None:
            return None
        return self.state[value][1]

    # --- fusion -----------------------------------------------------------------------------
    def fusable(self, value: SSAValue) -> Operation | None:
        """The tflite op producing `value`'s tensor when the core value has a single use and
        that op takes a fused activation not yet set."""
        if value not in self.state or len(list(value.uses)) != 1:
            return None
        owner = self.state[value][0].owner
        if isinstance(owner, tflite.TFLiteOperation) and "fused_activation_function" in {
            f["name"] for f in tflite.fields_of(owner.operator)
        }:
            current = owner.attributes.get("fused_activation_function")
            if current is None or current.data == "NONE":
                return owner
        return None


def lowering(*names: str) -> Callable[[Pattern], Pattern]:
    """Register a pattern `(lo: _Lowering, op) -> None` for core ops (`core.Add`, ...) in the
    lowering registry's "tflite" table; a name registered twice is an error."""
    return _lowering("core", names, target="tflite")


def _padding(
    lo: _Lowering, op: CoreOp, data: SSAValue, window: Sequence[int], dilations: Sequence[int]
):
    """('SAME' | 'VALID', data in NHWC maybe padded) for the op's padding attributes."""
    a = op.attribute_values()
    spatial = _shape(data)[2:]
    pads = resolve_padding(
        spatial,
        tuple(window),
        a["strides"],
        tuple(dilations),
        a["pads_begin"] or (0, 0),
        a["pads_end"] or (0, 0),
        a["auto_pad"],
        a.get("rounding_type") == "ceil",
    )
    same = resolve_padding(
        spatial, tuple(window), a["strides"], tuple(dilations), (0, 0), (0, 0), "same_upper"
    )
    x = lo.get(data, (0, 2, 3, 1))
    if all(p == (0, 0) for p in pads):
        return "VALID", x, pads
    if list(pads) == list(same):
        return "SAME", x, pads
    return "PAD", x, pads


def _explicit_pad(lo: _Lowering, x: SSAValue, pads) -> SSAValue:
    paddings = np.array([[0, 0], *pads, [0, 0]], np.int32)
    shape = [int(d + lo_ + hi) for d, (lo_, hi) in zip(x.type.get_shape(), paddings, strict=True)]
    out = lo.emit("PAD", [x, lo.const(paddings)], [TensorType(x.type.get_element_type(), shape)])
    return out.results[0]


@lowering("core.Convolution", "core.GroupConvolution")
def convolution(lo: _Lowering, op: CoreOp) -> None:
    data, filters = op.operands
    w = constant_value(filters)
    if w is None or len(_shape(data)) != 4:
        raise PassFailure.at(op, "needs 2-D convolution with constant filters to become TFLite")
    a = op.attribute_values()
    grouped = op.name == "core.GroupConvolution"
    window = w.shape[-2:]
    mode, x, pads = _padding(lo, op, data, window, a["dilations"])
    if mode == "PAD":
        x, mode = _explicit_pad(lo, x, pads), "VALID"
    channels = _shape(data)[1]
    options = {
        "padding": mode,
        "stride_h": a["strides"][0],
        "stride_w": a["strides"][1],
        "dilation_h_factor": a["dilations"][0],
        "dilation_w_factor": a["dilations"][1],
        "fused_activation_function": "NONE",
    }
    if grouped and w.shape[2] == 1 and w.shape[0] == channels:
        groups, multiplier = w.shape[:2]
        kernel = w.reshape(groups * multiplier, *window).transpose(1, 2, 0)[None]
        operator, options["depth_multiplier"] = "DEPTHWISE_CONV_2D", int(multiplier)
    else:
        if grouped:
            w = w.reshape(w.shape[0] * w.shape[1], *w.shape[2:])
        kernel = w.transpose(0, 2, 3, 1)
        operator = "CONV_2D"
    out_type = lo.frame_type(op.results[0], (0, 3, 1, 2))
    conv = lo.emit(
        operator, [x, lo.const(kernel.astype(np.float32)), lo.none()], [out_type], **options
    )
    lo.set(op.results[0], conv.results[0], (0, 3, 1, 2))


def _pool(operator: str):
    def lower(lo: _Lowering, op: CoreOp) -> None:
        a = op.attribute_values()
        (data,) = op.operands
        mode, x, pads = _padding(lo, op, data, a["kernel"], (1, 1))
        if mode == "PAD":
            if operator == "AVERAGE_POOL_2D":
                raise PassFailure.at(op, "explicit padding has no TFLite average pooling")
            raise PassFailure.at(op, "explicit padding has no TFLite max pooling")
        if operator == "AVERAGE_POOL_2D" and mode == "SAME" and not a["exclude_pad"]:
            raise PassFailure.at(op, "TFLite SAME average pooling excludes the padding")
        out = lo.emit(
            operator,
            [x],
            [lo.frame_type(op.results[0], (0, 3, 1, 2))],
            padding=mode,
            stride_h=a["strides"][0],
            stride_w=a["strides"][1],
            filter_height=a["kernel"][0],
            filter_width=a["kernel"][1],
            fused_activation_function="NONE",
        )
        lo.set(op.results[0], out.results[0], (0, 3, 1, 2))

    return lower


lowering("core.MaxPool")(_pool("MAX_POOL_2D"))
lowering("core.AvgPool")(_pool("AVERAGE_POOL_2D"))

_BINARY = {
    "core.Add": "ADD",
    "core.Subtract": "SUB",
    "core.Multiply": "MUL",
    "core.Divide": "DIV",
    "core.Maximum": "MAXIMUM",
    "core.Minimum": "MINIMUM",
    "core.Power": "POW",
    "core.SquaredDifference": "SQUARED_DIFFERENCE",
}
_WITH_ACTIVATION = {"ADD", "SUB", "MUL", "DIV"}


def _fuse_bias(lo: _Lowering, op: CoreOp) -> bool:
    """Add(conv or FC result, constant per-channel bias) -> the producer's bias input."""
    if op.name != "core.Add":
        return False
    for value, other in (op.operands, op.operands[::-1]):
        bias = constant_value(other)
        if bias is None or value not in lo.state or len(list(value.uses)) != 1:
            continue
        producer = lo.state[value][0].owner
        if not isinstance(
            producer, tflite.Conv2DOp | tflite.DepthwiseConv2DOp | tflite.FullyConnectedOp
        ):
            continue
        if not isinstance(producer.operands[2].type, NoneType):
            continue
        rank = len(_shape(value))
        channels = producer.results[0].type.get_shape()[-1]
        axis = rank - 1 if isinstance(producer, tflite.FullyConnectedOp) else 1
        expected = [1] * rank
        expected[axis] = channels
        if bias.ndim > rank or list((1,) * (rank - bias.ndim) + bias.shape) != expected:
            continue
        producer.operands[2] = lo.const(bias.reshape(-1).astype(np.float32), before=producer)
        lo.state[op.results[0]] = lo.state[value]
        return True
    return False


@lowering(*_BINARY)
def binary(lo: _Lowering, op: CoreOp) -> None:
    if _fuse_bias(lo, op):
        return
    a, b = op.operands
    rank = len(_shape(op.results[0]))
    pa, pb = lo.perm_of(a), lo.perm_of(b)
    p = (
        pa
        if pa is not None and len(_shape(a)) == rank
        else pb
        if pb is not None and len(_shape(b)) == rank
        else None
    )
    p = p or _identity(rank)

    def operand(value: SSAValue) -> SSAValue:
        array = constant_value(value)
        if array is not None:
            full = array.reshape((1,) * (rank - array.ndim) + array.shape)
            if p != _identity(rank) and array.size > 1:
                return lo.const(np.transpose(full, _inverse(p)))
            return lo.const(array)
        if len(_shape(value)) != rank:
            if p != _identity(rank):
                raise PassFailure.at(op, "mixes ranks across a layout change")
            return lo.get(value)
        return lo.get(value, _inverse(p))

    operator = _BINARY[op.name]
    options = {"fused_activation_function": "NONE"} if operator in _WITH_ACTIVATION else {}
    out = lo.emit(operator, [operand(a), operand(b)], [lo.frame_type(op.results[0], p)], **options)
    lo.set(op.results[0], out.results[0], p)


_UNARY = {
    "core.Relu": "RELU",
    "core.Sigmoid": "LOGISTIC",
    "core.Tanh": "TANH",
    "core.HSwish": "HARD_SWISH",
    "core.Exp": "EXP",
    "core.Sqrt": "SQRT",
    "core.Negative": "NEG",
    "core.Abs": "ABS",
    "core.Log": "LOG",
    "core.Gelu": "GELU",
    "core.Clamp": None,
}


@lowering(*_UNARY)
def unary(lo: _Lowering, op: CoreOp) -> None:
    (x,) = op.operands
    p = lo.perm_of(x)
    a = op.attribute_values()
    operator = _UNARY[op.name]
    if op.name == "core.Clamp":
        operator = {(0.0, 6.0): "RELU6", (-1.0, 1.0): "RELU_N1_TO_1"}.get((a["min"], a["max"]))
    # TANH is a fused activation in the schema, but LiteRT's FULLY_CONNECTED refuses it.
    fused = {"RELU": "RELU", "RELU6": "RELU6", "RELU_N1_TO_1": "RELU_N1_TO_1"}
    producer = lo.fusable(x) if operator in fused else None
    if producer is not None:
        producer.attributes["fused_activation_function"] = StringAttr(fused[operator])
        lo.state[op.results[0]] = lo.state[x]
        return
    tensor = lo.state[x][0]
    out_type = lo.frame_type(op.results[0], p)
    if operator is None:  # a general clamp: MINIMUM(MAXIMUM(x, min), max)
        dtype = numpy_dtype(out_type.get_element_type())
        low = lo.emit("MAXIMUM", [tensor, lo.const(np.array(a["min"], dtype))], [out_type])
        out = lo.emit("MINIMUM", [low.results[0], lo.const(np.array(a["max"], dtype))], [out_type])
    elif operator == "GELU":
        out = lo.emit(
            "GELU", [tensor], [out_type], approximate=a["approximation_mode"].upper() == "TANH"
        )
    else:
        out = lo.emit(operator, [tensor], [out_type])
    lo.set(op.results[0], out.results[0], p)


@lowering("core.Transpose")
def transpose(lo: _Lowering, op: CoreOp) -> None:
    x, order = op.operands
    q = [int(i) for i in constant_value(order).reshape(-1)]
    tensor, p = lo.state[x]
    lo.state[op.results[0]] = (tensor, tuple(p[i] for i in q))


def _static_shape(op: CoreOp) -> list[int]:
    shape = _shape(op.results[0])
    if sum(d < 0 for d in shape) > 1:
        raise PassFailure.at(op, "needs at most one dynamic result dim to become a TFLite RESHAPE")
    # one dynamic dim (a None batch) is -1 in new_shape, as TF's converter writes it
    return [int(d) if d >= 0 else -1 for d in shape]


@lowering("core.Reshape", "core.Squeeze", "core.Unsqueeze")
def reshape(lo: _Lowering, op: CoreOp) -> None:
    shape = _static_shape(op)
    out = lo.emit(
        "RESHAPE",
        [lo.get(op.operands[0]), lo.const(np.array(shape, np.int32))],
        [op.results[0].type],
    )
    lo.set(op.results[0], out.results[0])


@lowering("core.MatMul")
def matmul(lo: _Lowering, op: CoreOp) -> None:
    a, b = op.operands
    attrs = op.attribute_values()
    weights = constant_value(b)
    if (
        weights is not None
        and weights.ndim == 2
        and not attrs["transpose_a"]
        and len(_shape(a)) >= 2
    ):
        kernel = weights if attrs["transpose_b"] else weights.T
        out = lo.emit(
            "FULLY_CONNECTED",
            [lo.get(a), lo.const(kernel.astype(np.float32)), lo.none()],
            [op.results[0].type],
            fused_activation_function="NONE",
            keep_num_dims=len(_shape(a)) > 2,
        )
    else:
        out = lo.emit(
            "BATCH_MATMUL",
            [lo.get(a), lo.get(b)],
            [op.results[0].type],
            adj_x=attrs["transpose_a"],
            adj_y=attrs["transpose_b"],
        )
    lo.set(op.results[0], out.results[0])


@lowering("core.Softmax")
def softmax(lo: _Lowering, op: CoreOp) -> None:
    (x,) = op.operands
    rank = len(_shape(x))
    axis = op.attribute_values()["axis"] % rank
    q = [i for i in range(rank) if i != axis] + [axis]  # the softmax axis last
    out_type = lo.frame_type(op.results[0], _inverse(q))
    out = lo.emit("SOFTMAX", [lo.get(x, q)], [out_type], beta=1.0)
    lo.set(op.results[0], out.results[0], _inverse(q))


@lowering("core.Concat")
def concat(lo: _Lowering, op: CoreOp) -> None:
    rank = len(_shape(op.results[0]))
    first = next((lo.perm_of(v) for v in op.operands if lo.perm_of(v) is not None), None)
    p = first or _identity(rank)
    axis = op.attribute_values()["axis"] % rank
    tensors = [lo.get(v, _inverse(p)) for v in op.operands]
    out = lo.emit(
        "CONCATENATION",
        tensors,
        [lo.frame_type(op.results[0], p)],
        axis=p[axis],
        fused_activation_function="NONE",
    )
    lo.set(op.results[0], out.results[0], p)


_REDUCE = {
    "core.ReduceMean": "MEAN",
    "core.ReduceSum": "SUM",
    "core.ReduceMax": "REDUCE_MAX",
    "core.ReduceMin": "REDUCE_MIN",
    "core.ReduceProd": "REDUCE_PROD",
}


@lowering(*_REDUCE)
def reduce(lo: _Lowering, op: CoreOp) -> None:
    x, axes = op.operands
    rank = len(_shape(x))
    keep = op.attribute_values()["keep_dims"]
    p = (lo.perm_of(x) if keep else None) or _identity(rank)
    dims = sorted(p[int(a) % rank] for a in constant_value(axes).reshape(-1))
    out_p = p if keep else _identity(len(_shape(op.results[0])))
    out = lo.emit(
        _REDUCE[op.name],
        [lo.get(x, _inverse(p)), lo.const(np.array(dims, np.int32))],
        [lo.frame_type(op.results[0], out_p)],
        keep_dims=bool(keep),
    )
    lo.set(op.results[0], out.results[0], out_p)


@lowering("core.Gather")
def gather(lo: _Lowering, op: CoreOp) -> None:
    data, indices, axis = op.operands
    rank = len(_shape(data))
    index_array = constant_value(indices)
    index = lo.const(index_array.astype(np.int32)) if index_array is not None else lo.get(indices)
    out = lo.emit(
        "GATHER",
        [lo.get(data), index],
        [op.results[0].type],
        axis=int(constant_value(axis).reshape(-1)[0]) % rank,
        batch_dims=op.attribute_values()["batch_dims"],
    )
    lo.set(op.results[0], out.results[0])


@lowering("core.Convert")
def convert(lo: _Lowering, op: CoreOp) -> None:
    (x,) = op.operands
    p = lo.perm_of(x)
    out = lo.emit("CAST", [lo.state[x][0]], [lo.frame_type(op.results[0], p)])
    lo.set(op.results[0], out.results[0], p)


@lowering("core.Custom")
def custom(lo: _Lowering, op: CoreOp) -> None:
    """core.Custom back to a CUSTOM operator: its op type as the custom code (`<domain>.<op>`
    for a domain other than tflite), its attributes as the options (`raw_options`: bytes)."""
    attrs = op.attributes["attrs"].data if "attrs" in op.attributes else {}
    domain = op.attributes["domain"].data if "domain" in op.attributes else ""
    code = op.attributes["op_type"].data
    code = code if domain == "tflite" else f"{domain}.{code}" if domain else code
    if problem := tflite.custom_code_problem(code):
        raise PassFailure.at(op, f"cannot become a TFLite CUSTOM operator: {problem}")
    attributes: dict[str, Attribute] = {
        "version": IntegerAttr(1, i32),
        "custom_code": StringAttr(code),
        "custom_options": DictionaryAttr({k: v for k, v in attrs.items() if k != "raw_options"}),
    }
    if "raw_options" in attrs:
        attributes["raw_options"] = attrs["raw_options"]
    new = tflite.CustomOp.create(
        operands=[lo.get(v) for v in op.operands],
        result_types=[r.type for r in op.results],
        attributes=attributes,
    )
    new.location = op.location
    Rewriter.insert_op(new, InsertPoint.before(lo.ret))
    for result, value in zip(op.results, new.results, strict=True):
        lo.set(result, value)


def core_ops(module: ModuleOp | Operation) -> list[CoreOp]:
    return [op for op in module.walk() if isinstance(op, CoreOp) and op.name != "core.Constant"]


def unsupported(module: ModuleOp) -> driver.Missing:
    """(core op name, None) -> locations, for every core op without a TFLite lowering."""
    return driver.unsupported(core_ops(module), "core", target="tflite")


def lower_function(function: func.FuncOp) -> None:
    lo = _Lowering(function)
    for arg in lo.block.args:
        if not isinstance(arg.type, TensorType) or any(d < 0 for d in arg.type.get_shape()):
            raise PassFailure(f"input #{arg.index} needs a static tensor type to become TFLite")
        lo.set(arg, arg)
    core_ops = [op for op in lo.block.ops if isinstance(op, CoreOp)]
    for op in core_ops:
        if op.name == "core.Constant":
            continue
        lo.anchor = op
        lookup("core", driver.op_name(op), None, "tflite")(lo, op)
    lo.anchor = None
    results = [lo.get(v) for v in lo.ret.operands]
    for i, value in enumerate(results):
        lo.ret.operands[i] = value
    for op in reversed(core_ops):
        Rewriter.erase_op(op, safe_erase=False)
    function.function_type = func.FunctionType.from_lists(
        [a.type for a in lo.block.args], [v.type for v in results]
    )


@dataclass(frozen=True)
class CoreToTflitePass(ModulePass):
    name = "core-to-tflite"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        driver.check(core_ops(op), "core", target="tflite")
        for function in list(op.walk()):
            if isinstance(function, func.FuncOp) and not function.is_declaration:
                lower_function(function)


__all__ = ["CoreToTflitePass", "unsupported"]

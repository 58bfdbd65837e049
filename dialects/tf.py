"""The `tf` dialect: TensorFlow ops as TensorFlow's own OpDef registry describes them.

The op classes are generated from `tf_opdefs.json`, a snapshot of the OpDef registry written by
`tools/gen_tf_opdefs.py` (TensorFlow itself is never imported here: it takes seconds). One
class per op: `tf.Conv2D` is `Conv2DOp`. Arguments that the OpDef declares as lists
(`number_attr` or `type_list_attr`) are variadic operands/results, the others single ones;
operands and results are ranked or unranked tensors. Every attribute is optional (absent means
TensorFlow's default, see `TFOp.attr_or_default`) and is a builtin attribute:

    TF type     builtin attribute
    int         IntegerAttr i64           float   FloatAttr f32
    bool        BoolAttr (i1)             string  StringAttr (bytes decoded as UTF-8)
    type        the element type (f32, i32, i1, !tf.string, ...)
    shape       ArrayAttr of i64 dims, -1 for an unknown dim; "*" (a StringAttr) for an
                unknown rank
    tensor      DenseIntOrFPElementsAttr (built from bytes)
    func        SymbolRefAttr
    list(X)     ArrayAttr of the above

Functional control flow holds its functions as regions instead of func attributes: `tf.If`
and `tf.StatelessIf` have the regions `then_branch` and `else_branch`, `tf.While` and
`tf.StatelessWhile` have `cond` and `body`, `tf.Case`/`tf.StatelessCase` one region per
branch. Each region has one block whose arguments are the function's inputs and which ends in
`tf.Yield` of the function's outputs. For example:

    %r = "tf.StatelessIf"(%c, %x) ({
    ^bb0(%a: tensor<2xf32>):
      %n = "tf.Neg"(%a) : (tensor<2xf32>) -> tensor<2xf32>
      "tf.Yield"(%n) : (tensor<2xf32>) -> ()
    }, {
    ^bb0(%a: tensor<2xf32>):
      "tf.Yield"(%a) : (tensor<2xf32>) -> ()
    }) : (tensor<i1>, tensor<2xf32>) -> tensor<2xf32>

TF's quantized element types (qint8, quint8, qint16, quint16, qint32) map to their storage
integer types; string, resource and variant tensors are `!tf.string`, `!tf.resource`,
`!tf.variant`.
"""

from __future__ import annotations

import json
import keyword
from pathlib import Path
from typing import Any, ClassVar

from xdsl.dialects.builtin import (
    AnyTensorTypeConstr,
    AnyUnrankedTensorTypeConstr,
    ArrayAttr,
    BFloat16Type,
    ComplexType,
    DenseIntOrFPElementsAttr,
    Float8E4M3FNType,
    Float8E5M2Type,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    Signedness,
    StringAttr,
    SymbolRefAttr,
)
from xdsl.ir import Attribute, Dialect, ParametrizedAttribute, TypeAttribute
from xdsl.irdl import (
    AnyOf,
    AttrSizedOperandSegments,
    AttrSizedResultSegments,
    BaseAttr,
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_attr_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_region_def,
    var_result_def,
)
from xdsl.traits import IsTerminator

OPDEFS_PATH = Path(__file__).with_name("tf_opdefs.json")


@irdl_attr_definition
class StringType(ParametrizedAttribute, TypeAttribute):
    """Element type of TensorFlow string tensors: `tensor<!tf.string>`."""

    name = "tf.string"


@irdl_attr_definition
class ResourceType(ParametrizedAttribute, TypeAttribute):
    """Element type of TensorFlow resource handles (variables): `tensor<!tf.resource>`."""

    name = "tf.resource"


@irdl_attr_definition
class VariantType(ParametrizedAttribute, TypeAttribute):
    """Element type of TensorFlow variant tensors (lists, datasets): `tensor<!tf.variant>`."""

    name = "tf.variant"


def _int(width: int, signed: bool = True) -> IntegerType:
    return IntegerType(width) if signed else IntegerType(width, Signedness.UNSIGNED)


# `DT_*` name (tensorflow/core/framework/types.proto) -> builtin element type.
ELEMENT_TYPES: dict[str, Attribute] = {
    "DT_FLOAT": Float32Type(),
    "DT_DOUBLE": Float64Type(),
    "DT_HALF": Float16Type(),
    "DT_BFLOAT16": BFloat16Type(),
    "DT_FLOAT8_E5M2": Float8E5M2Type(),
    "DT_FLOAT8_E4M3FN": Float8E4M3FNType(),
    "DT_BOOL": IntegerType(1),
    "DT_INT8": _int(8),
    "DT_INT16": _int(16),
    "DT_INT32": _int(32),
    "DT_INT64": _int(64),
    "DT_UINT8": _int(8, False),
    "DT_UINT16": _int(16, False),
    "DT_UINT32": _int(32, False),
    "DT_UINT64": _int(64, False),
    "DT_QINT8": _int(8),
    "DT_QUINT8": _int(8, False),
    "DT_QINT16": _int(16),
    "DT_QUINT16": _int(16, False),
    "DT_QINT32": _int(32),
    "DT_COMPLEX64": ComplexType(Float32Type()),
    "DT_COMPLEX128": ComplexType(Float64Type()),
    "DT_STRING": StringType(),
    "DT_RESOURCE": ResourceType(),
    "DT_VARIANT": VariantType(),
}

# Element types that cannot be compiled: an importer must not let them through.
OPAQUE_TYPES = (StringType, ResourceType, VariantType)

_TENSOR = AnyOf((AnyTensorTypeConstr, AnyUnrankedTensorTypeConstr))
_I64 = IntegerType(64)
_ATTR_CONSTRAINTS: dict[str, Any] = {
    "int": IntegerAttr.constr(_I64),
    "float": BaseAttr(FloatAttr),
    "bool": IntegerAttr.constr(IntegerType(1)),
    "string": BaseAttr(StringAttr),
    "type": BaseAttr(TypeAttribute),
    "shape": AnyOf((BaseAttr(ArrayAttr), BaseAttr(StringAttr))),
    "tensor": BaseAttr(DenseIntOrFPElementsAttr),
    "func": BaseAttr(SymbolRefAttr),
}

# Ops whose func attributes are held as regions (attribute names, in region order).
REGION_ATTRS: dict[str, tuple[str, ...]] = {
    "If": ("then_branch", "else_branch"),
    "StatelessIf": ("then_branch", "else_branch"),
    "While": ("cond", "body"),
    "StatelessWhile": ("cond", "body"),
    "Case": ("branches",),
    "StatelessCase": ("branches",),
}


def shape_attr(dims: list[int] | tuple[int, ...] | None) -> Attribute:
    """The encoding of a TF shape: [d0, d1, ...] with -1 for unknown dims; "*" unknown rank."""
    if dims is None:
        return StringAttr("*")
    return ArrayAttr([IntegerAttr(int(d), _I64) for d in dims])


def _float(value: float | str) -> float:
    return float(value) if isinstance(value, str) else value


def attribute_from_json(tf_type: str, value: Any) -> Attribute:
    """A snapshot default (JSON value) of TF attr type `tf_type` as a builtin attribute."""
    if tf_type.startswith("list("):
        item = tf_type[5:-1]
        return ArrayAttr([attribute_from_json(item, v) for v in value])
    if tf_type == "int":
        return IntegerAttr(int(value), _I64)
    if tf_type == "float":
        return FloatAttr(_float(value), Float32Type())
    if tf_type == "bool":
        return IntegerAttr(int(bool(value)), IntegerType(1))
    if tf_type == "string":
        return StringAttr(value)
    if tf_type == "type":
        return ELEMENT_TYPES[value]
    if tf_type == "shape":
        return shape_attr(value)
    raise ValueError(f"no builtin encoding of a {tf_type} default")


class TFOp(IRDLOperation):
    """Base of the generated tf ops; `OPDEF` is the op's entry in the OpDef snapshot."""

    OPDEF: ClassVar[dict[str, Any]] = {}
    ATTR_TYPES: ClassVar[dict[str, str]] = {}

    def attr_or_default(self, name: str) -> Attribute | None:
        """The attribute `name`, else the OpDef's default for it, else None."""
        if name in self.attributes:
            return self.attributes[name]
        for attr_name, tf_type, default in self.OPDEF.get("attrs", ()):
            if attr_name == name and default is not None:
                try:
                    return attribute_from_json(tf_type, default)
                except (ValueError, KeyError):
                    return None
        return None


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Terminator of the regions of tf control-flow ops: yields the function's outputs.

    "tf.Yield"(%a, %b) : (tensor<2xf32>, tensor<i1>) -> ()
    """

    name = "tf.Yield"
    values = var_operand_def()
    traits = traits_def(IsTerminator())

    def __init__(self, *values):
        super().__init__(operands=[list(values)])


_RESERVED = set(dir(IRDLOperation)) | set(keyword.kwlist) | {"OPDEF", "ATTR_TYPES"}


def _field(name: str, used: set[str]) -> str:
    field = name if name.isidentifier() else "".join(c if c.isalnum() else "_" for c in name)
    while field in _RESERVED or field in used or field.startswith("__"):
        field += "_"
    used.add(field)
    return field


def _example(op_name: str, spec: dict[str, Any], regions: tuple[str, ...]) -> str:
    ins = [arg[0] for arg in spec["inputs"]]
    outs = [arg[0] for arg in spec["outputs"]]
    lhs = f"{', '.join('%' + o for o in outs)} = " if outs else ""
    args = ", ".join("%" + i for i in ins)
    region_text = f" ({', '.join('{...}' for _ in regions)})" if regions else ""
    in_types = ", ".join("tensor<...>" for _ in ins)
    out_types = ", ".join("tensor<...>" for _ in outs)
    if len(outs) != 1:
        out_types = f"({out_types})"
    return f'{lhs}"tf.{op_name}"({args}){region_text} {{...}} : ({in_types}) -> {out_types}'


def _doc(op_name: str, spec: dict[str, Any], regions: tuple[str, ...]) -> str:
    def args(items):
        return ", ".join(a[0] + (f"[{a[2]}]" if a[1] else "") for a in items)

    attrs = []
    for name, tf_type, default in spec["attrs"]:
        text = f"{name}: {tf_type}"
        if default is not None:
            text += f" = {json.dumps(default)}"
        attrs.append(text)
    lines = [
        spec["summary"] or f"TensorFlow op {op_name}.",
        "",
        f"Inputs: {args(spec['inputs']) or '-'}. Outputs: {args(spec['outputs']) or '-'}.",
        f"Attributes: {'; '.join(attrs) or '-'}.",
    ]
    if regions:
        lines.append(f"Regions: {', '.join(regions)} (the func attributes of the same names).")
    lines += ["", "    " + _example(op_name, spec, regions)]
    return "\n".join(lines)


def _make_op(op_name: str, spec: dict[str, Any]) -> type[TFOp]:
    used: set[str] = set()
    fields: dict[str, Any] = {
        "name": f"tf.{op_name}",
        "__doc__": None,
        "__module__": __name__,
        "__qualname__": f"{op_name}Op",
    }
    regions = REGION_ATTRS.get(op_name, ())
    for name in regions:
        if name == "branches":
            fields[_field(name, used)] = var_region_def()
        else:
            fields[_field(name, used)] = region_def()
    options = []
    for args, single, variadic, option in (
        (spec["inputs"], operand_def, var_operand_def, AttrSizedOperandSegments),
        (spec["outputs"], result_def, var_result_def, AttrSizedResultSegments),
    ):
        for arg_name, kind, *_ in args:
            fields[_field(arg_name, used)] = variadic(_TENSOR) if kind else single(_TENSOR)
        if sum(1 for _, kind, *_ in args if kind) > 1:
            options.append(option(as_property=True))
    if options:
        fields["irdl_options"] = tuple(options)
    for attr_name, tf_type, _ in spec["attrs"]:
        constraint = _ATTR_CONSTRAINTS.get(tf_type, BaseAttr(ArrayAttr))
        fields[_field(attr_name, used)] = opt_attr_def(constraint, attr_name=attr_name)
    fields["__doc__"] = _doc(op_name, spec, regions)
    cls = irdl_op_definition(type(f"{op_name}Op", (TFOp,), fields))
    cls.OPDEF = spec
    cls.ATTR_TYPES = {a: t for a, t, _ in spec["attrs"]}
    return cls


def _load() -> tuple[str, list[type[IRDLOperation]]]:
    data = json.loads(OPDEFS_PATH.read_text())
    ops: list[type[IRDLOperation]] = [YieldOp]
    for op_name, spec in data["ops"].items():
        cls = _make_op(op_name, spec)
        globals()[cls.__name__] = cls
        ops.append(cls)
    return data["tensorflow_version"], ops


TENSORFLOW_VERSION, _OPS = _load()
OPS_BY_NAME: dict[str, type[IRDLOperation]] = {op.name: op for op in _OPS}

TF = Dialect("tf", _OPS, [StringType, ResourceType, VariantType])

"""The `onnx` dialect: every default-domain ONNX operator, generated from the `onnx.defs` schemas.

One IRDL op class per op type (`ConvOp`, `onnx.Conv`), created at import time. A textual model
may be at any opset, so each class covers the union of all versions of its op:

- operands and results are *slots*: the newest schema's formal parameters, then the ones that
  only older versions have (BatchNormalization-9's `saved_mean`, Scan-8's `sequence_lens`).
  A slot some version lacks or has optional is optional; a slot some version has variadic is
  variadic. `INPUT_SLOTS[since]` / `OUTPUT_SLOTS[since]` map the positional inputs/outputs of
  one version to slot indices (Resize-10's second input is the `scales` slot, not `roi`).
- attributes are the union of all versions' attributes, all optional, typed as ONNX types them:
  INT -> i64 IntegerAttr, FLOAT -> f32 FloatAttr, STRING -> StringAttr, INTS/FLOATS/STRINGS ->
  ArrayAttr of those, TENSOR/SPARSE_TENSOR -> dense elements, TYPE_PROTO -> a type.
- GRAPH attributes (If's branches, Loop/Scan bodies) are single-block regions whose block
  arguments are the subgraph inputs and which end in `onnx.Yield`.

Ops are written in the generic format; names that clash in Python get a suffix and keep the
ONNX spelling in the IR (Reshape-1's attribute `shape` is the field `shape_attr`). Example:

    %y = "onnx.Conv"(%x, %w) {group = 1 : i64, pads = [1 : i64, 1 : i64, 1 : i64, 1 : i64]}
        : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
"""

from __future__ import annotations

import functools
import keyword
import re
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import onnx
import onnx.defs
from xdsl.dialects.builtin import (
    I64,
    ArrayAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    Float32Type,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
    UnrankedTensorType,
    i32,
)
from xdsl.ir import Attribute, Dialect, Region, SSAValue, TypeAttribute
from xdsl.irdl import (
    AnyOf,
    AttrSizedOperandSegments,
    AttrSizedResultSegments,
    BaseAttr,
    IRDLOperation,
    VerificationContext,
    attr_def,
    irdl_op_definition,
    irdl_to_attr_constraint,
    operand_def,
    opt_attr_def,
    opt_operand_def,
    opt_region_def,
    opt_result_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import IsTerminator
from xdsl.utils.exceptions import VerifyException

from mlconv.dense import to_numpy

_AttrType = onnx.defs.OpSchema.AttrType
_Option = onnx.defs.OpSchema.FormalParameterOption

TENSOR = AnyOf((BaseAttr(TensorType), BaseAttr(UnrankedTensorType)))
"""Every operand and result is a tensor (sequence/optional/map values are not supported)."""

_SCALAR_CONSTRAINTS = {
    _AttrType.INT: irdl_to_attr_constraint(IntegerAttr[I64]),
    _AttrType.FLOAT: irdl_to_attr_constraint(FloatAttr[Float32Type]),
    _AttrType.STRING: BaseAttr(StringAttr),
    _AttrType.INTS: irdl_to_attr_constraint(ArrayAttr[IntegerAttr[I64]]),
    _AttrType.FLOATS: irdl_to_attr_constraint(ArrayAttr[FloatAttr[Float32Type]]),
    _AttrType.STRINGS: irdl_to_attr_constraint(ArrayAttr[StringAttr]),
    _AttrType.TENSOR: BaseAttr(DenseIntOrFPElementsAttr),
    _AttrType.SPARSE_TENSOR: BaseAttr(DenseIntOrFPElementsAttr),  # densified on import
    _AttrType.TYPE_PROTO: BaseAttr(TypeAttribute),
}

# Python names an op class cannot use for a field: keywords and IRDLOperation's own members.
_RESERVED = frozenset(keyword.kwlist) | frozenset(dir(IRDLOperation)) | {"irdl_options"}


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Terminator of a subgraph region (If branch, Loop/Scan body): the subgraph's outputs.

    "onnx.Yield"(%cond, %v) : (tensor<i1>, tensor<2xf32>) -> ()
    """

    name = "onnx.Yield"
    values = var_operand_def(TENSOR)
    traits = traits_def(IsTerminator())


class OnnxOp(IRDLOperation):
    """Base of the generated ONNX op classes: schema data and attribute access."""

    ONNX_OP_TYPE: ClassVar[str] = ""
    SINCE_VERSIONS: ClassVar[tuple[int, ...]] = ()
    INPUTS: ClassVar[tuple[str, ...]] = ()
    """ONNX names of the operand slots, in IR order."""
    OUTPUTS: ClassVar[tuple[str, ...]] = ()
    INPUT_SLOTS: ClassVar[dict[int, tuple[int, ...]]] = {}
    """since-version -> slot index of each positional input of that version (a variadic last
    input's entry takes all remaining inputs)."""
    OUTPUT_SLOTS: ClassVar[dict[int, tuple[int, ...]]] = {}
    INPUT_KINDS: ClassVar[tuple[str, ...]] = ()
    """"single", "optional" or "variadic" for each operand slot."""
    OUTPUT_KINDS: ClassVar[tuple[str, ...]] = ()
    ATTRIBUTE_TYPES: ClassVar[dict[str, tuple[str, ...]]] = {}
    """ONNX attribute name -> its ONNX types across versions ("INT", "TENSOR", "GRAPH", ...)."""
    GRAPH_ATTRIBUTES: ClassVar[tuple[str, ...]] = ()
    """ONNX names of the GRAPH attributes, in region order."""
    ATTRIBUTE_DEFAULTS: ClassVar[dict[str, Any]] = {}
    """Defaults as Python values, from the newest schema defining each attribute."""
    OPERAND_SEGMENTS: ClassVar[bool] = False
    """Whether the op carries `operandSegmentSizes` (more than one optional/variadic slot)."""
    RESULT_SEGMENTS: ClassVar[bool] = False

    @classmethod
    def from_slots(
        cls,
        operands: Sequence[Sequence[SSAValue]],
        result_types: Sequence[Sequence[Attribute]],
        attributes: Mapping[str, Attribute] | None = None,
        regions: Sequence[Region] = (),
    ):
        """An op from per-slot operand lists and result types (empty list: slot absent),
        adding the segment sizes where the op needs them."""
        attrs = dict(attributes or {})
        if cls.OPERAND_SEGMENTS:
            attrs[AttrSizedOperandSegments.attribute_name] = DenseArrayBase.from_list(
                i32, [len(g) for g in operands]
            )
        if cls.RESULT_SEGMENTS:
            attrs[AttrSizedResultSegments.attribute_name] = DenseArrayBase.from_list(
                i32, [len(g) for g in result_types]
            )
        return cls.create(
            operands=[v for g in operands for v in g],
            result_types=[t for g in result_types for t in g],
            attributes=attrs,
            regions=list(regions),
        )

    @classmethod
    def since_version(cls, opset: int) -> int | None:
        """The since-version of this op in a model importing default-domain `opset`."""
        return since_version(cls.ONNX_OP_TYPE, opset)

    def onnx_attr(self, name: str) -> Any:
        """The ONNX attribute `name` as a Python value (int, float, str, list, numpy array),
        else the schema default, else None."""
        attr = self.attributes.get(name)
        if attr is None:
            default = self.ATTRIBUTE_DEFAULTS.get(name)
            return list(default) if isinstance(default, list) else default
        return attribute_value(attr)

    def verify_(self) -> None:
        for region_name, region in zip(self.GRAPH_ATTRIBUTES, self.regions, strict=True):
            block = region.blocks.first
            if block is None or not isinstance(block.last_op, YieldOp):
                raise VerifyException(f"region '{region_name}' must end with onnx.Yield")

    def _verify_attribute_types(self) -> None:
        """Name the attribute and its ONNX type when one has the wrong type (IRDL's own
        message does not say which attribute it is)."""
        definitions = self.get_irdl_definition().attributes
        for name, attr in self.attributes.items():
            definition = definitions.get(name)
            if definition is None or name not in self.ATTRIBUTE_TYPES:
                continue
            try:
                definition.constr.verify(attr, VerificationContext())
            except VerifyException:
                expected = " or ".join(_ATTR_TYPE_TEXT[t] for t in self.ATTRIBUTE_TYPES[name])
                raise VerifyException(
                    f"attribute '{name}' must be {expected}, got {attr}"
                ) from None


def attribute_value(attr: Attribute) -> Any:
    """An attribute as the Python value ONNX would give it."""
    if isinstance(attr, IntegerAttr):
        return attr.value.data
    if isinstance(attr, FloatAttr):
        return attr.value.data
    if isinstance(attr, StringAttr):
        return attr.data
    if isinstance(attr, ArrayAttr):
        return [attribute_value(a) for a in attr.data]
    if isinstance(attr, DenseIntOrFPElementsAttr):
        return to_numpy(attr)
    return attr


def _python_default(proto: onnx.AttributeProto) -> Any:
    """A schema default as a Python value; f32 floats keep their short decimal spelling."""
    t = proto.type
    if t == onnx.AttributeProto.INT:
        return proto.i
    if t == onnx.AttributeProto.FLOAT:
        return float(str(np.float32(proto.f)))
    if t == onnx.AttributeProto.STRING:
        return proto.s.decode()
    if t == onnx.AttributeProto.INTS:
        return list(proto.ints)
    if t == onnx.AttributeProto.FLOATS:
        return [float(str(np.float32(f))) for f in proto.floats]
    if t == onnx.AttributeProto.STRINGS:
        return [s.decode() for s in proto.strings]
    if t == onnx.AttributeProto.TENSOR:
        return onnx.numpy_helper.to_array(proto.t)
    return None


_REGION_ORDER = {"then_branch": -2, "else_branch": -1}

_ATTR_TYPE_TEXT = {
    "INT": "an i64 integer",
    "FLOAT": "an f32 float",
    "STRING": "a string",
    "INTS": "an array of i64 integers",
    "FLOATS": "an array of f32 floats",
    "STRINGS": "an array of strings",
    "TENSOR": "a dense tensor",
    "SPARSE_TENSOR": "a dense tensor",
    "TYPE_PROTO": "a type",
    "GRAPH": "a region",
}

_IDENTIFIER = re.compile(r"\W")


def _field(name: str, taken: set[str], suffix: str) -> str:
    field = _IDENTIFIER.sub("_", name)
    if field[:1].isdigit():
        field = "_" + field
    if field in _RESERVED:
        field += "_"
    while field in taken:
        field += suffix
    taken.add(field)
    return field


class _Slot:
    __slots__ = ("name", "variadic", "optional", "present")

    def __init__(self, name: str):
        self.name = name
        self.variadic = False
        self.optional = False
        self.present = 0  # in how many versions

    @property
    def kind(self) -> str:
        return "variadic" if self.variadic else "optional" if self.optional else "single"


def _merge_params(
    versions: list[tuple[int, list[Any]]],
) -> tuple[list[_Slot], dict[int, tuple[int, ...]]]:
    """Slots covering every version's formal parameters (newest first), and each version's
    positional -> slot mapping. A parameter matches a slot by name, else by position when the
    slot's name is not one of that version's names (a rename), else it opens a new slot."""
    newest = versions[-1][1]
    slots = [_Slot(p.name) for p in newest]
    by_name = {s.name: i for i, s in enumerate(slots)}
    mapping: dict[int, tuple[int, ...]] = {}
    for since, params in reversed(versions):
        names = {p.name for p in params}
        indices: list[int | None] = [by_name.get(p.name) for p in params]
        used = {i for i in indices if i is not None}
        for pos, param in enumerate(params):
            if indices[pos] is not None:
                continue
            if pos < len(slots) and pos not in used and slots[pos].name not in names:
                indices[pos] = pos
            else:
                slots.append(_Slot(param.name))
                by_name[param.name] = indices[pos] = len(slots) - 1
            used.add(indices[pos])
        for pos, param in enumerate(params):
            slot = slots[indices[pos]]
            slot.present += 1
            slot.variadic |= param.option == _Option.Variadic
            slot.optional |= param.option == _Option.Optional
        mapping[since] = tuple(i for i in indices if i is not None)
    for slot in slots:
        slot.optional |= slot.present < len(versions)
    return slots, mapping


_IR_EXAMPLE = """

IR (generic format; {since}):

    {results}"onnx.{op}"({operands}){regions}{attrs} : ({types}) -> {result_types}
"""


def _docstring(op_type: str, doc: str, since: tuple[int, ...], inputs, outputs, attrs) -> str:
    first = doc.strip().split("\n\n")[0].strip() if doc else ""
    first = first or f"ONNX {op_type}."
    results = ", ".join(f"%{n}" for n in outputs)
    attr_text = " {" + ", ".join(f"{a} = ..." for a in attrs[:3]) + "}" if attrs else ""
    return first + _IR_EXAMPLE.format(
        since="since versions " + ", ".join(map(str, since)),
        results=f"{results} = " if results else "",
        op=op_type,
        operands=", ".join(f"%{n}" for n in inputs),
        regions="",
        attrs=attr_text,
        types=", ".join("tensor<...>" for _ in inputs),
        result_types="(" + ", ".join("tensor<...>" for _ in outputs) + ")",
    )


def _make_op(op_type: str, schemas: list[onnx.defs.OpSchema]) -> type[OnnxOp]:
    schemas = sorted(schemas, key=lambda s: s.since_version)
    newest = schemas[-1]
    since = tuple(s.since_version for s in schemas)
    in_slots, in_map = _merge_params([(s.since_version, list(s.inputs)) for s in schemas])
    out_slots, out_map = _merge_params([(s.since_version, list(s.outputs)) for s in schemas])

    attr_types: dict[str, list[Any]] = defaultdict(list)
    defaults: dict[str, Any] = {}
    for schema in reversed(schemas):
        for attr in schema.attributes.values():
            if attr.type not in attr_types[attr.name]:
                attr_types[attr.name].append(attr.type)
            if attr.name not in defaults and attr.default_value.type:
                defaults[attr.name] = _python_default(attr.default_value)

    ns: dict[str, Any] = {"name": f"onnx.{op_type}"}
    taken: set[str] = set()
    options: list[Any] = []
    for slots, single, opt, var, segments in (
        (in_slots, operand_def, opt_operand_def, var_operand_def, AttrSizedOperandSegments),
        (out_slots, result_def, opt_result_def, var_result_def, AttrSizedResultSegments),
    ):
        n_variable = 0
        suffix = "_in" if single is operand_def else "_out"
        for slot in slots:
            field = _field(slot.name, taken, suffix)
            if slot.variadic:
                ns[field] = var(TENSOR)
            elif slot.optional:
                ns[field] = opt(TENSOR)
            else:
                ns[field] = single(TENSOR)
            n_variable += slot.variadic or slot.optional
        if n_variable > 1:
            options.append(segments())
    if options:
        ns["irdl_options"] = tuple(options)

    graph_attrs: list[str] = []
    # schemas list attributes by name: put If's then_branch before its else_branch
    ordered = sorted(attr_types, key=lambda a: _REGION_ORDER.get(a, 0))
    for attr_name in ordered:
        types = attr_types[attr_name]
        if _AttrType.GRAPH in types:
            required = all(
                attr_name in s.attributes and s.attributes[attr_name].required for s in schemas
            )
            field = _field(attr_name, taken, "_region")
            ns[field] = region_def("single_block") if required else opt_region_def("single_block")
            graph_attrs.append(attr_name)
            continue
        constraints = [_SCALAR_CONSTRAINTS[t] for t in types if t in _SCALAR_CONSTRAINTS]
        if not constraints:
            continue
        constraint = constraints[0] if len(constraints) == 1 else AnyOf(tuple(constraints))
        field = _field(attr_name, taken, "_attr")
        ns[field] = opt_attr_def(constraint, attr_name=attr_name)

    inputs = tuple(s.name for s in in_slots)
    outputs = tuple(s.name for s in out_slots)
    plain_attrs = [a for a in attr_types if a not in graph_attrs]
    ns["__doc__"] = _docstring(op_type, newest.doc, since, inputs, outputs, plain_attrs)
    ns["__module__"] = __name__
    ns["__qualname__"] = f"{op_type}Op"
    cls = irdl_op_definition(type(f"{op_type}Op", (OnnxOp,), ns))
    cls.verify_ = _with_attribute_check(cls.verify_)
    cls.ONNX_OP_TYPE = op_type
    cls.SINCE_VERSIONS = since
    cls.INPUTS = inputs
    cls.OUTPUTS = outputs
    cls.INPUT_SLOTS = in_map
    cls.OUTPUT_SLOTS = out_map
    cls.INPUT_KINDS = tuple(s.kind for s in in_slots)
    cls.OUTPUT_KINDS = tuple(s.kind for s in out_slots)
    cls.ATTRIBUTE_TYPES = {a: tuple(t.name for t in ts) for a, ts in attr_types.items()}
    cls.GRAPH_ATTRIBUTES = tuple(graph_attrs)
    cls.ATTRIBUTE_DEFAULTS = defaults
    cls.OPERAND_SEGMENTS = any(isinstance(o, AttrSizedOperandSegments) for o in options)
    cls.RESULT_SEGMENTS = any(isinstance(o, AttrSizedResultSegments) for o in options)
    return cls


def _with_attribute_check(generated: Callable[[OnnxOp], None]) -> Callable[[OnnxOp], None]:
    def verify_(self: OnnxOp) -> None:
        self._verify_attribute_types()
        generated(self)

    return verify_


def _generate() -> dict[str, type[OnnxOp]]:
    by_type: dict[str, list[onnx.defs.OpSchema]] = defaultdict(list)
    for schema in onnx.defs.get_all_schemas_with_history():
        if schema.domain in ("", "ai.onnx"):
            by_type[schema.name].append(schema)
    return {op_type: _make_op(op_type, by_type[op_type]) for op_type in sorted(by_type)}


OPS: dict[str, type[OnnxOp]] = _generate()
"""ONNX op type -> op class."""

globals().update({cls.__name__: cls for cls in OPS.values()})


@functools.cache
def since_version(op_type: str, opset: int) -> int | None:
    """The since-version of default-domain `op_type` in a model importing `opset`, or None
    when the op does not exist at that opset (not yet defined, or removed)."""
    try:
        schema = onnx.defs.get_schema(op_type, opset, "")
    except onnx.defs.SchemaError:
        return None
    return None if schema.deprecated else schema.since_version


def op_class(op_type: str) -> type[OnnxOp] | None:
    """The op class of a default-domain ONNX op type, or None."""
    return OPS.get(op_type)


@irdl_op_definition
class CustomOp(OnnxOp):
    """A node of a domain the dialect has no schema for (a custom domain, ai.onnx.ml, ...),
    imported generically: its domain, op type, the domain's opset version from the model's
    `opset_import`, its attributes, and result types from ONNX shape inference when it knows
    them. `onnx-to-core` keys its lowering as (`<domain>.<op_type>`, version); with
    `allow-custom` one without a lowering becomes `core.Custom`.

        %y = "onnx.Custom"(%x) {domain = "com.example", op_type = "SoftClip", version = 1 : i64,
               attrs = {alpha = 2.000000e+00 : f32}} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    """

    name = "onnx.Custom"
    inputs = var_operand_def(TENSOR)
    outputs = var_result_def(TENSOR)
    domain = attr_def(StringAttr)
    op_type = attr_def(StringAttr)
    version = attr_def(IntegerAttr)
    attrs = attr_def(DictionaryAttr)

    @property
    def key(self) -> str:
        """`<domain>.<op_type>`: the op name lowerings are registered under."""
        return f"{self.domain.data}.{self.op_type.data}"

    # What the onnx-to-core driver keys patterns by, per op rather than per class here.
    ONNX_OP_TYPE = key  # type: ignore[assignment]

    def since_version(self, opset: int) -> int | None:  # type: ignore[override]
        """The version of the op's own domain (the default-domain `opset` does not apply)."""
        return self.version.value.data

    def onnx_attr(self, name: str) -> Any:
        attr = self.attrs.data.get(name)
        return None if attr is None else attribute_value(attr)

    def verify_(self) -> None:
        if not self.op_type.data:
            raise VerifyException("onnx.Custom needs a non-empty op_type")


ONNX = Dialect("onnx", [YieldOp, *OPS.values(), CustomOp], [])

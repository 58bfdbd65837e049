"""Machinery shared by every core op: declarative specs, attribute kinds, and semantics.

A core op is declared once, with its operands, attributes and a `semantics` function written in
jax.numpy/lax over arrays:

    @core_op(operands=("data", "filters"), attributes={"strides": INTS, ...})
    class ConvolutionOp(CoreOp):
        '''2-D convolution (OpenVINO opset1 Convolution). ...'''
        name = "core.Convolution"
        VERSION = 1

        @staticmethod
        def semantics(data, filters, *, strides, ...):
            return lax.conv_general_dilated(...)

`semantics` is the single definition of what the op computes: shape inference evaluates it
abstractly (`jax.eval_shape`), constant folding runs it on numpy arrays, and `core-to-tpu`
traces it to lax primitives. Operands named in `STATIC_OPERANDS` (shapes, axes, pads) must be
constants where the op is evaluated or lowered; `semantics` receives them as numpy arrays.

The code that runs `semantics` (tracing, folding, shape inference, control-flow bodies) is the
package `mlconv.semantics`, which dialects do not import; importing it turns on
`jax_enable_x64` (int64 shapes and indices), importing a dialect does not.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    AnyFloat,
    ArrayAttr,
    BoolAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    UnrankedTensorType,
    f64,
    i1,
    i64,
)
from xdsl.ir import Attribute, SSAValue, TypeAttribute
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_attr_def,
    opt_operand_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from mlconv.dense import numpy_dtype, to_numpy
from mlconv.dialects.segments import grouped

AnyTensor = TensorType | UnrankedTensorType


@dataclass(frozen=True)
class AttrKind:
    """How a Python attribute value is stored in the IR and read back."""

    name: str
    constraint: Any
    encode: Callable[[Any], Attribute]
    decode: Callable[[Attribute], Any]


def _decode_float_array(attr: DenseArrayBase) -> tuple[float, ...]:
    return tuple(float(v) for v in attr.get_values())


INT = AttrKind("int", IntegerAttr, lambda v: IntegerAttr(int(v), i64), lambda a: a.value.data)
FLOAT = AttrKind("float", FloatAttr, lambda v: FloatAttr(float(v), f64), lambda a: a.value.data)
BOOL = AttrKind(
    "bool", IntegerAttr, lambda v: BoolAttr.from_bool(bool(v)), lambda a: bool(a.value.data)
)
STR = AttrKind("str", StringAttr, lambda v: StringAttr(str(v)), lambda a: a.data)
INTS = AttrKind(
    "ints",
    DenseArrayBase,
    lambda v: DenseArrayBase.from_list(i64, [int(x) for x in v]),
    lambda a: tuple(int(x) for x in a.get_values()),
)
FLOATS = AttrKind(
    "floats",
    DenseArrayBase,
    lambda v: DenseArrayBase.from_list(f64, [float(x) for x in v]),
    _decode_float_array,
)
TYPE = AttrKind("type", TypeAttribute, lambda v: v, lambda a: numpy_dtype(a))
STRS = AttrKind(
    "strs",
    ArrayAttr,
    lambda v: ArrayAttr([StringAttr(str(x)) for x in v]),
    lambda a: tuple(x.data for x in a.data),
)
DENSE = AttrKind("dense", DenseIntOrFPElementsAttr, lambda v: v, to_numpy)


class CoreOp(IRDLOperation):
    """Base of all core ops. Subclasses are declared with `core_op`."""

    # Core ops are functions of their operands: cse, dce and canonicalize may act on them.
    traits = traits_def(Pure())

    VERSION: ClassVar[int] = 1
    OPERANDS: ClassVar[tuple[str, ...]] = ()
    RESULTS: ClassVar[tuple[str, ...]] = ("output",)
    ATTRIBUTES: ClassVar[dict[str, AttrKind]] = {}
    DEFAULTS: ClassVar[dict[str, Any]] = {}
    STATIC_OPERANDS: ClassVar[tuple[str, ...]] = ()
    REQUIRED: ClassVar[tuple[str, ...]] = ()

    @staticmethod
    def semantics(*arrays: Any, **attributes: Any) -> Any:
        raise NotImplementedError

    # --- building -----------------------------------------------------------------------------
    @classmethod
    def build_op(
        cls,
        operands: Sequence[SSAValue | Sequence[SSAValue] | None],
        result_types: Sequence[Attribute],
        **attributes: Any,
    ) -> CoreOp:
        """An op from operands in declaration order (a list for variadic ones, None for an
        absent optional one) and Python attribute values (None means absent)."""
        encoded: dict[str, Attribute] = {}
        for key, value in attributes.items():
            if key not in cls.ATTRIBUTES:
                raise KeyError(f"{cls.name} has no attribute '{key}'")
            if value is not None:
                encoded[key] = cls.ATTRIBUTES[key].encode(value)
        operands = [*operands, *[None] * (len(cls.OPERANDS) - len(operands))]
        operand_groups = [
            [] if value is None else list(value) if isinstance(value, list | tuple) else [value]
            for value in operands
        ]
        result_groups: list = list(result_types)
        if cls.RESULTS and cls.RESULTS[0].startswith("*"):  # one variadic group: all results
            result_groups = [result_groups]
        return cls.build(operands=operand_groups, result_types=result_groups, attributes=encoded)

    # --- reading --------------------------------------------------------------------------------
    def attribute_values(self) -> dict[str, Any]:
        """Every declared attribute as a Python value, defaults filled in."""
        values: dict[str, Any] = {}
        for key, kind in self.ATTRIBUTES.items():
            attr = self.attributes.get(key)
            values[key] = kind.decode(attr) if attr is not None else self.DEFAULTS.get(key)
        return values

    def operand_groups(self) -> list[list[SSAValue]]:
        """Operands grouped by declaration (variadic/optional groups may have 0..n values)."""
        return grouped(self, [_field_name(spec) for spec in self.OPERANDS])

    def verify_(self) -> None:
        for key in self.REQUIRED:
            if key not in self.attributes:
                raise VerifyException(f"missing required attribute '{key}'")
        for key, kind in self.ATTRIBUTES.items():
            attr = self.attributes.get(key)
            if attr is not None and kind is INTS and not isinstance(attr.elt_type, IntegerType):
                raise VerifyException(f"attribute '{key}' must be an array of integers")
        self.verify_semantics()

    def verify_semantics(self) -> None:
        """Op-specific checks; override in subclasses."""


def _field_name(spec: str) -> str:
    return spec.lstrip("*?")


def core_op(
    operands: Sequence[str] = (),
    attributes: dict[str, AttrKind | tuple[AttrKind, Any]] | None = None,
    results: Sequence[str] = ("output",),
    static_operands: Sequence[str] = (),
) -> Callable[[type[CoreOp]], type[CoreOp]]:
    """Turn a spec class into an IRDL op. Operand specs: `x` single, `?x` optional, `*xs`
    variadic. An attribute spec is a kind or (kind, default); an attribute without a default
    is required."""
    attributes = attributes or {}

    def wrap(spec: type[CoreOp]) -> type[CoreOp]:
        namespace: dict[str, Any] = {
            key: value
            for key, value in spec.__dict__.items()
            if key not in ("__dict__", "__weakref__")
        }
        multi = sum(1 for o in operands if o[0] in "*?")
        for operand in operands:
            field = _field_name(operand)
            if operand.startswith("*"):
                namespace[field] = var_operand_def(AnyTensor)
            elif operand.startswith("?"):
                namespace[field] = opt_operand_def(AnyTensor)
            else:
                namespace[field] = operand_def(AnyTensor)
        if multi > 1:
            namespace["irdl_options"] = (AttrSizedOperandSegments(as_property=True),)
        for result in results:
            if result.startswith("*"):
                namespace[result[1:]] = var_result_def(AnyTensor)
            else:
                namespace[result] = result_def(AnyTensor)
        kinds: dict[str, AttrKind] = {}
        defaults: dict[str, Any] = {}
        for key, value in attributes.items():
            kind, default = value if isinstance(value, tuple) else (value, None)
            kinds[key] = kind
            if default is not None:
                defaults[key] = default
            field = key if key not in namespace else f"{key}_attr"
            namespace[field] = opt_attr_def(kind.constraint, attr_name=key)
        namespace["OPERANDS"] = tuple(operands)
        namespace["RESULTS"] = tuple(results)
        namespace["ATTRIBUTES"] = kinds
        namespace["DEFAULTS"] = defaults
        namespace["STATIC_OPERANDS"] = tuple(static_operands)
        namespace["REQUIRED"] = tuple(k for k, v in attributes.items() if not isinstance(v, tuple))
        annotations = dict(namespace.get("__annotations__", {}))
        annotations.update({key: "ClassVar" for key in namespace if key.isupper()})
        namespace["__annotations__"] = annotations
        cls = type(spec.__name__, spec.__bases__, namespace)
        cls.__module__ = spec.__module__
        cls.__qualname__ = spec.__qualname__
        return irdl_op_definition(cls)

    return wrap


def constant_value(value: SSAValue) -> np.ndarray | None:
    """The numpy value of an SSA value defined by a core.Constant, else None."""
    owner = value.owner
    if getattr(owner, "name", None) == "core.Constant":
        return to_numpy(owner.value)
    return None


def is_float(element: Attribute) -> bool:
    return isinstance(element, AnyFloat)


__all__ = [
    "BOOL",
    "DENSE",
    "FLOAT",
    "FLOATS",
    "INT",
    "INTS",
    "STR",
    "STRS",
    "TYPE",
    "AttrKind",
    "CoreOp",
    "constant_value",
    "core_op",
    "i1",
]

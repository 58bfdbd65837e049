"""Custom core op: `core.Custom`, an op nobody lowers, carried through with `allow-custom`.

`onnx-to-core`, `tf-to-core` and `tflite-to-core` with `allow-custom=true` turn every op that
has no lowering into a `core.Custom` naming its domain and type, with its attributes and result
types. A plugin may lower it further (a pattern for ("core", "Custom") would see it); otherwise
its semantics is the host implementation registered for (domain, op type) in
`mlconv.custom_ops`, so shape inference, folding, `core-to-tpu` (a `tpu.custom_call`) and the
JAX backend (`jax.pure_callback`) all follow from it like from any other core op.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.dialects.builtin import (
    ArrayAttr,
    BoolAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    f64,
    i64,
)
from xdsl.ir import Attribute
from xdsl.utils.exceptions import VerifyException

from mlconv.dense import numpy_dtype, to_dense_attr, to_numpy
from mlconv.dialects.core_base import STR, AttrKind, CoreOp, core_op


def encode_value(value: Any) -> Attribute:
    """A custom op's attribute value (int, float, str, bool, list of those, numpy array) as an
    attribute; `decode_value` inverts it."""
    if isinstance(value, Attribute):
        return value
    if isinstance(value, bool | np.bool_):
        return BoolAttr.from_bool(bool(value))
    if isinstance(value, int | np.integer):
        return IntegerAttr(int(value), i64)
    if isinstance(value, float | np.floating):
        return FloatAttr(float(value), f64)
    if isinstance(value, str):
        return StringAttr(value)
    if isinstance(value, np.ndarray):
        return to_dense_attr(value)
    if isinstance(value, list | tuple):
        if all(isinstance(v, int | np.integer) and not isinstance(v, bool) for v in value):
            return DenseArrayBase.from_list(i64, [int(v) for v in value])
        if all(isinstance(v, float | int | np.floating | np.integer) for v in value):
            return DenseArrayBase.from_list(f64, [float(v) for v in value])
        return ArrayAttr([encode_value(v) for v in value])
    raise TypeError(f"cannot store custom op attribute {value!r}")


def decode_value(attr: Attribute) -> Any:
    """An attribute as a hashable Python value (tuples for lists, numpy for dense tensors)."""
    if isinstance(attr, IntegerAttr):
        value = attr.value.data
        return bool(value) if attr.type == IntegerType(1) else value
    if isinstance(attr, FloatAttr):
        return attr.value.data
    if isinstance(attr, StringAttr):
        return attr.data
    if isinstance(attr, DenseArrayBase):
        values = attr.get_values()
        return tuple(int(v) if isinstance(attr.elt_type, IntegerType) else float(v) for v in values)
    if isinstance(attr, ArrayAttr):
        return tuple(decode_value(a) for a in attr.data)
    if isinstance(attr, DenseIntOrFPElementsAttr):
        return to_numpy(attr)
    return attr


ATTRS = AttrKind(
    "dict",
    DictionaryAttr,
    lambda v: (
        v
        if isinstance(v, DictionaryAttr)
        else DictionaryAttr({str(k): encode_value(x) for k, x in dict(v).items()})
    ),
    lambda a: tuple(sorted((k, decode_value(v)) for k, v in a.data.items())),
)
"""A dictionary of the source op's attributes; read back as sorted (name, value) pairs."""


@core_op(
    operands=("*inputs",),
    results=("*outputs",),
    attributes={"domain": (STR, ""), "op_type": STR, "attrs": (ATTRS, ())},
)
class CustomOp(CoreOp):
    """An op mlconv does not know, kept with its domain, type and attributes (allow-custom).

    It computes what the host implementation registered for (domain, op_type) in
    `mlconv.custom_ops` computes, unless a plugin lowers it first. Example:

        %y = "core.Custom"(%x) {domain = "com.example", op_type = "SoftClip",
               attrs = {alpha = 2.0 : f64}} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    """

    name = "core.Custom"
    VERSION = 1

    def attribute_values(self) -> dict[str, Any]:
        values = CoreOp.attribute_values(self)
        values["declared"] = tuple(
            (tuple(r.type.get_shape()), numpy_dtype(r.type.get_element_type()))
            if isinstance(r.type, TensorType)
            else ((-1,), None)
            for r in self.results
        )
        return values

    @staticmethod
    def semantics(*inputs, domain="", op_type, attrs=(), declared=()):
        from mlconv.custom_ops import custom_call

        return tuple(custom_call(inputs, domain, op_type, attrs, declared))

    def missing_implementation(self) -> str | None:
        """Why this op cannot run on the host (no implementation registered), or None."""
        from mlconv import custom_ops

        domain = self.attributes["domain"].data if "domain" in self.attributes else ""
        op_type = self.attributes["op_type"].data
        if (domain, op_type) in custom_ops.IMPLEMENTATIONS:
            return None
        return (
            f"custom op {custom_ops.label(domain, op_type)} has no host implementation: register "
            "one with mlconv.custom_ops.register, or lower it in a plugin"
        )

    def verify_semantics(self) -> None:
        if not self.attributes["op_type"].data:
            raise VerifyException("core.Custom needs a non-empty op_type")


OPS: list[type[CoreOp]] = [CustomOp]

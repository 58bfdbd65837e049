"""Custom core op: `core.Custom`, an op nobody lowers, carried through with `allow-custom`.

`onnx-to-core`, `tf-to-core` and `tflite-to-core` with `allow-custom=true` turn every op that
has no lowering into a `core.Custom` naming its domain and type, with its attributes and result
types. Its semantics is the host implementation registered for (domain, op type) in
`mlconv.custom_ops`, so shape inference, folding, `core-to-tpu` (a `tpu.custom_call`), the JAX
backend (`jax.pure_callback`) and the reference interpreter follow from it as from any other
core op; the OpenVINO writer writes it as an extension layer. (A plugin that can lower the op
registers a pattern for the source op's own key instead, and it never becomes core.Custom.)
"""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.dialects.builtin import DictionaryAttr, TensorType
from xdsl.ir import Attribute
from xdsl.utils.exceptions import VerifyException

from mlconv.dense import numpy_dtype
from mlconv.dialects.core_base import STR, AttrKind, CoreOp, core_op


def _encode(values: Any) -> DictionaryAttr:
    if isinstance(values, DictionaryAttr):
        return values
    from mlconv.dialects.tpu import encode_param  # one encoding of Python values as attributes

    return DictionaryAttr(
        {
            str(k): v if isinstance(v, Attribute) else encode_param(v)
            for k, v in dict(values).items()
        }
    )


def _decode(attr: DictionaryAttr) -> tuple[tuple[str, Any], ...]:
    # lazy: loads JAX, which this module does not
    from mlconv.dialects.tpu import decode_param

    def hashable(value: Any) -> Any:
        # A blob (a TFLite custom op's flexbuffer blob: a dense ui8 vector) arrives as bytes:
        # jax primitive parameters must hash, numpy arrays do not.
        if getattr(value, "dtype", None) == np.uint8 and getattr(value, "ndim", None) == 1:
            return value.tobytes()
        return value

    return tuple(sorted((k, hashable(decode_param(v))) for k, v in attr.data.items()))


ATTRS = AttrKind("dict", DictionaryAttr, _encode, _decode)
"""The source op's attributes (any attribute the tpu parameter encoding reads: numbers,
strings, arrays, dense tensors, types); read back as sorted (name, value) pairs, hashable as jax
primitive parameters are (a dense ui8 vector, a blob, as bytes)."""


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
        # lazy: loads JAX, which this module does not
        from mlconv.custom_ops import custom_call

        return tuple(custom_call(inputs, domain, op_type, attrs, declared))

    def missing_implementation(self) -> str | None:
        """Why this op cannot run on the host (no implementation registered), or None."""
        # lazy: loads JAX, which this module does not
        from mlconv import custom_ops

        domain = self.attributes["domain"].data if "domain" in self.attributes else ""
        return custom_ops.missing_implementation(domain, self.attributes["op_type"].data)

    def verify_semantics(self) -> None:
        if not self.attributes["op_type"].data:
            raise VerifyException("core.Custom needs a non-empty op_type")


OPS: list[type[CoreOp]] = [CustomOp]

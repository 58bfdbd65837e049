"""mlconv example plugin: the ONNX custom-domain op `com.mlconv.example.SoftClip`.

    SoftClip(X; alpha=1.0) = alpha * tanh(X / alpha)

a smooth clip of X to (-alpha, alpha). ONNX knows nothing of it: a model using it imports as
the generic `onnx.Custom`, and without this plugin `onnx-to-core` refuses it. The plugin adds,
through the entry point `mlconv.plugins` -> `register`:

- an importer (`import_softclip`): checks `alpha`, fills its default, gives the result the
  input's type (ONNX shape inference cannot: it has no schema for the op);
- a lowering to core ops (`lower_softclip`): Divide, Tanh, Multiply; shape inference, folding,
  core-to-tpu and the JAX backend follow from those ops' semantics, so no JAX rule is needed;
- a host implementation (`softclip_reference`), used when the op is kept as core.Custom
  (`allow-custom`) by a pipeline that does not run onnx-to-core's lowering, and by the tests as
  the numpy reference.
"""

from __future__ import annotations

import numpy as np

DOMAIN = "com.mlconv.example"
OP_TYPE = "SoftClip"
VERSION = 1


def softclip_reference(x: np.ndarray, *, alpha: float = 1.0) -> np.ndarray:
    """What SoftClip computes, in numpy."""
    return (alpha * np.tanh(x / alpha)).astype(x.dtype)


def import_softclip(op):
    """The ONNX node as `onnx.Custom` with `alpha` set and the input's type as its result type."""
    from xdsl.dialects.builtin import DictionaryAttr, FloatAttr, f32

    from mlconv.dialects import onnx as onnx_dialect
    from mlconv.errors import FrontendError

    if len(op.operands) != 1 or len(op.results) != 1:
        raise FrontendError(f"{OP_TYPE} takes one input and gives one output")
    unknown = sorted(set(op.attrs.data) - {"alpha"})
    if unknown:
        raise FrontendError(f"{OP_TYPE} has no attribute '{unknown[0]}'")
    alpha = op.onnx_attr("alpha")
    alpha = 1.0 if alpha is None else alpha
    if not isinstance(alpha, float | int) or alpha <= 0:
        raise FrontendError(f"{OP_TYPE} needs alpha > 0, got {alpha}")
    (x,) = op.operands
    return onnx_dialect.CustomOp.create(
        operands=[x],
        result_types=[x.type],
        attributes={
            "domain": op.domain,
            "op_type": op.op_type,
            "version": op.version,
            "attrs": DictionaryAttr({"alpha": FloatAttr(float(alpha), f32)}),
        },
    )


def lower_softclip(op, b):
    """SoftClip as core ops: Multiply(Tanh(Divide(x, alpha)), alpha)."""
    from mlconv.dialects import core

    (x,) = op.operands
    alpha = b.const(np.asarray(op.onnx_attr("alpha"), dtype=b.dtype(x)))
    scaled = b(core.DivideOp, x, alpha)
    return [b(core.MultiplyOp, b(core.TanhOp, scaled), alpha)]


def register(r) -> None:
    """The entry point: called once per process with an `mlconv.plugins.Registration`."""
    r.onnx_importer(DOMAIN, OP_TYPE, import_softclip)
    r.lowering("onnx", f"{DOMAIN}.{OP_TYPE}", VERSION, lower_softclip)
    r.custom_op(DOMAIN, OP_TYPE, softclip_reference)

"""The `core` dialect: mlconv's framework-neutral opset, following the OpenVINO opset
specifications (names, attributes, numpy broadcasting, NC[D]HW layout, `opsetN` versions).

Ops are grouped by family in `core_*.py`; each family module lists its ops in `OPS`. Every op's
`semantics` (jax.numpy/lax) defines what it computes; see `core_base.py`.
"""

from __future__ import annotations

import importlib

from xdsl.ir import Dialect

from mlconv.dialects.core_base import CoreOp, constant_value

# Op families; a new family module is added here and nowhere else.
FAMILIES = (
    "core_tensor",
    "core_elementwise",
    "core_nn",
    "core_tf",
    "core_control",
    "core_indexing",
    "core_conv",
    "core_pool",
    "core_norm",
    "core_image",
    "core_rnn",
    "core_vision",
    "core_ml",
    "core_signal",
    "core_quant",
    "core_custom",
)

OPS: list[type[CoreOp]] = [
    op for family in FAMILIES for op in importlib.import_module(f"mlconv.dialects.{family}").OPS
]
OPS_BY_NAME: dict[str, type[CoreOp]] = {op.name: op for op in OPS}
globals().update({op.__name__: op for op in OPS})

Core = Dialect("core", OPS, [])

__all__ = ["OPS", "OPS_BY_NAME", "Core", "CoreOp", "constant_value"]

"""tpu-window-strategy: pooling windows as strided slices on the CPU.

Input/output: tpu dialect. Option `device` = cpu | gpu | tpu. XLA:CPU runs `reduce_window_*`
as a generic loop over every window of every output element; the same pooling written as one
strided slice of the padded input per window tap, combined with `max` / `min` / `add`, is one
elementwise loop fusion that XLA vectorizes along the channels. Measured on this machine class
(bench/conv_forms.py --pools, NHWC, ms): 3x3/2 max pool of 111x111x64 1.30 -> 0.18, of 55x55x128
0.34 -> 0.09, 3x3/1 max pool of 28x28x192 0.59 -> 0.21; 2x2/2 average pool sums equal or faster
(0.19 -> 0.19, 0.10 -> 0.08). So on `cpu` each `reduce_window_max`, `reduce_window_min` and
`reduce_window_sum` with at most MAX_TAPS taps and no base dilation becomes

    pad(x, identity) ; slice(x, tap_0, stride) <op> slice(x, tap_1, stride) <op> ...

where the identity is the reduction's (-inf / the integer minimum for max, +inf / the maximum
for min, 0 for sum), as `reduce_window` pads. Window dilation moves each tap's start. On `gpu`
and `tpu` XLA's own window reductions are kept.

Example (2x2/2 max pool, NHWC):

    %y = "tpu.reduce_window_max"(%x) {window_dimensions = array<i64: 1, 2, 2, 1>, ...}
      : (tensor<1x4x4x3xf32>) -> tensor<1x2x2x3xf32>

becomes four `tpu.slice`s of %x with strides [1, 2, 2, 1] joined by three `tpu.max`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from xdsl.dialects.builtin import ModuleOp

from mlconv.dense import numpy_dtype
from mlconv.dialects import tpu
from mlconv.passes.jaxpr_to_tpu import replace_with_jaxpr
from mlconv.passes.tpu_conv_strategy import CpuRewritePass, strided_taps

MAX_TAPS = 64
"""Windows with more taps (a global pool over a large map) stay reduce_window: one slice per
tap would grow the program without making the loop faster."""


def _identity(kind: str, dtype: np.dtype) -> Any:
    if kind == "sum":
        return np.zeros((), dtype)
    if np.issubdtype(dtype, np.floating):
        return np.array(-np.inf if kind == "max" else np.inf, dtype)
    info = np.iinfo(dtype) if np.issubdtype(dtype, np.integer) else None
    if info is None:  # bool
        return np.array(kind != "max", dtype)
    return np.array(info.min if kind == "max" else info.max, dtype)


def window_slices(x: Any, kind: str, params: dict[str, Any]) -> Any:
    """`reduce_window_<kind>(x, **params)` as pad ; strided slices ; elementwise reduction."""

    combine = {"max": lax.max, "min": lax.min, "sum": lax.add}[kind]
    window, strides = params["window_dimensions"], params["window_strides"]
    dilation = params["window_dilation"]
    padding = [tuple(p) for p in params["padding"]]
    if any(p != (0, 0) for p in padding):
        fill = jnp.asarray(_identity(kind, np.dtype(x.dtype)))
        x = lax.pad(x, fill, [(lo, hi, 0) for lo, hi in padding])
    total = None
    for part in strided_taps(x, window, strides, dilation):
        total = part if total is None else combine(total, part)
    return total


def rewritable(op: tpu.PrimitiveOp) -> bool:
    params = op.params()
    taps = int(np.prod(params["window_dimensions"]))
    return 1 < taps <= MAX_TAPS and all(d == 1 for d in params["base_dilation"])


def rewrite(op: tpu.PrimitiveOp, traces: dict) -> None:
    """Replace `op` by its slices, traced once per (kind, parameters, operand type)."""

    # lazy: loads 5 more modules (dialects, semantics)
    from mlconv.semantics.tracing import trace_function

    kind = op.PRIMITIVE.removeprefix("reduce_window_")
    params = op.params()
    x_type = op.operands[0].type
    struct = jax.ShapeDtypeStruct(tuple(x_type.get_shape()), numpy_dtype(x_type.get_element_type()))
    key = (kind, repr(sorted(params.items())), struct.shape, struct.dtype)
    if key not in traces:
        traces[key] = trace_function(lambda x: window_slices(x, kind, params), struct)
    replace_with_jaxpr(op, traces[key], [op.operands[0]])


WINDOW_PRIMITIVES = ("reduce_window_max", "reduce_window_min", "reduce_window_sum")


@dataclass(frozen=True)
class TpuWindowStrategyPass(CpuRewritePass):
    """tpu-window-strategy: on `device` cpu, pooling windows (reduce_window max/min/sum of at
    most MAX_TAPS taps) become strided slices joined elementwise; gpu and tpu keep them."""

    name = "tpu-window-strategy"

    def rewrite(self, op: ModuleOp) -> None:
        classes = tuple(tpu.PRIMITIVE_OPS[name] for name in WINDOW_PRIMITIVES)
        traces: dict = {}
        for window in [o for o in op.walk() if isinstance(o, classes)]:
            if rewritable(window):
                rewrite(window, traces)


__all__ = ["TpuWindowStrategyPass", "window_slices"]

"""tpu-materialize-activations: a clamp at a constant that a library call shares with
elementwise ops is computed once, not again inside each elementwise reader (XLA:CPU).

Input/output: tpu dialect. Option `device` = cpu | gpu | tpu; only cpu rewrites (XLA:GPU and
TPU fuse by cost models of their own). XLA's instruction fusion copies an elementwise op into
every fusion that reads it when the op is "effectively unary", one full-size operand and the
rest scalars or broadcasts, as a ReLU `max(x, 0)` is: the copy reads x where it would have read
max(x, 0), which costs nothing more. A residual network's block output is such a ReLU, read by
the next block's first convolution (a library call, which needs it in memory) and by the next
residual add (a loop fusion). XLA copies the ReLU into that add's fusion; the copy reads the
previous add, which now has only fusible readers and is copied in turn, and so on up the
chain. Light ResNet50's last fusion of each stage recomputes every residual of the stage
(14x14x1024 fusions with up to 14 operands), and each of these fusions is a kernel of its own
for LLVM to compile: 34 distinct loop fusions, 30 after this pass.

This pass writes such a clamp as a select, which computes the same values for every input,
NaN and infinities included:

    max(x, c) -> select(x <= c, c, x)        min(x, c) -> select(x >= c, c, x)

A select reads two full-size values (the comparison and x), so XLA fuses it only where it can
fuse it into every reader, and with a library call among the readers it computes it once. The
rule, for a `max` or `min` of a value and a constant holding one number: its result has a
reader that XLA:CPU cannot fuse into (a dot, a convolution, a window reduction, the region's
result) and one that it can (an elementwise op, a broadcast, a reshape, a reduction). Run
last: the patterns of the other tpu passes read clamps as `max` and `min`.

Example (a residual block's output, read by a 1x1 convolution and by the next residual add):

    %r = "tpu.max"(%s, %zero) : (tensor<1x7x7x64xf32>, tensor<f32>) -> tensor<1x7x7x64xf32>

becomes

    %p = "tpu.le"(%s, %zero) : (tensor<1x7x7x64xf32>, tensor<f32>) -> tensor<1x7x7x64xi1>
    %z = "tpu.broadcast_in_dim"(%zero) {shape = [1, 7, 7, 64], ...} : ... -> tensor<1x7x7x64xf32>
    %r = "tpu.select_n"(%p, %s, %z) : (...) -> tensor<1x7x7x64xf32>
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import numpy as np
from jax import lax
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from mlconv.dense import numpy_dtype
from mlconv.dialects import tpu
from mlconv.passes.jaxpr_to_tpu import replace_with_jaxpr
from mlconv.passes.tpu_conv_strategy import CpuRewritePass
from mlconv.passes.tpu_fold_constants import constant_value, erase_dead
from mlconv.passes.tpu_sink_transposes import ELEMENTWISE, REDUCTIONS

CLAMPS = ("max", "min")

_LAYOUT = """broadcast_in_dim concatenate reshape squeeze expand_dims transpose slice pad rev
    dynamic_slice dynamic_update_slice gather iota""".split()
LOOP_FUSIBLE = ELEMENTWISE | frozenset(_LAYOUT) | frozenset(REDUCTIONS)
"""Primitives XLA:CPU computes in loop fusions, into which it may fuse their operands' ops
(xla/service/cpu/cpu_instruction_fusion.cc, CanBeLoopFused). Everything else (dot_general,
conv_general_dilated, the window reductions, custom calls) is a kernel or library call of its
own that reads its operands from memory."""


def _splat(op: Operation) -> tuple[int, float] | None:
    """(index of the clamped operand, the constant) of a clamp at a one-number constant."""
    if not np.issubdtype(_dtype(op.results[0].type), np.inexact):
        return None
    for index in (0, 1):
        bound = constant_value(op.operands[1 - index])
        if bound is not None and bound.ndim == 0:
            if op.operands[index].type == op.results[0].type:
                return index, bound.item()
    return None


def _dtype(tensor_type: Any) -> np.dtype:
    return numpy_dtype(tensor_type.get_element_type())


def _shared_with_a_library_call(op: Operation) -> bool:
    readers = [use.operation for use in op.results[0].uses]
    fused = [
        isinstance(reader, tpu.PrimitiveOp) and reader.PRIMITIVE in LOOP_FUSIBLE
        for reader in readers
    ]
    return any(fused) and not all(fused)


def _select_form(kind: str, bound: float, x_type: Any, traces: dict) -> Any:
    """The jaxpr of select(x <= c, c, x) (max) or select(x >= c, c, x) (min) at x's type."""

    # lazy: loads 5 more modules (dialects, semantics)
    from mlconv.semantics.tracing import trace_function

    dtype = _dtype(x_type)
    shape = tuple(x_type.get_shape())
    key = (kind, bound, shape, dtype)
    if key not in traces:
        compare = lax.le if kind == "max" else lax.ge

        def fn(x):
            c = lax.full(shape, np.asarray(bound, dtype), dtype)
            return lax.select(compare(x, c), c, x)

        traces[key] = trace_function(fn, jax.ShapeDtypeStruct(shape, dtype))
    return traces[key]


def materialize_activations(module: ModuleOp) -> None:
    traces: dict = {}
    clamps = [
        op for op in module.walk() if isinstance(op, tpu.PrimitiveOp) and op.PRIMITIVE in CLAMPS
    ]
    for op in clamps:
        found = _splat(op)
        if found is None or not _shared_with_a_library_call(op):
            continue
        index, bound = found
        x = op.operands[index]
        traced = _select_form(op.PRIMITIVE, bound, x.type, traces)
        replace_with_jaxpr(op, traced, [x])
    erase_dead(module)


@dataclass(frozen=True)
class TpuMaterializeActivationsPass(CpuRewritePass):
    """tpu-materialize-activations: on `device` cpu, a clamp at a constant (ReLU's max(x, 0))
    read by a library call and by elementwise ops becomes a select, which XLA:CPU computes
    once; gpu and tpu, whose XLA fuses by cost models of its own, keep it."""

    name = "tpu-materialize-activations"

    def rewrite(self, op: ModuleOp) -> None:
        materialize_activations(op)


__all__ = ["LOOP_FUSIBLE", "TpuMaterializeActivationsPass", "materialize_activations"]

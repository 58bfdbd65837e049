"""tpu primitives evaluated in numpy on the host: what a `tpu.region {device = "host"}` runs.

A region placed on the host (tpu-outline-host-tail) is not compiled: its ops run one by one in
numpy, each through the table below. It holds the bit-exact implementations of
`semantics/jaxpr_numpy.py` (data movement, IEEE arithmetic, comparisons, casts) and, beside
them, the reductions and transcendental functions of a classifier's head, which numpy rounds
within an ulp or two of XLA (its sums are pairwise, XLA's tree-shaped; its exp is its own
vectorized one). A function returning None declines that case (an integer division, an empty
reduction); the op is then bound through JAX, which computes it as a compiled region would.

    run_host_op(P["exp"] op, [np.float32 array]) -> [np.exp(array)]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from mlconv.dialects import tpu
from mlconv.semantics.jaxpr_numpy import NUMPY_PRIMITIVES


def _unary(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[..., Any]:
    def apply(x: np.ndarray, **_: Any) -> np.ndarray | None:
        if x.dtype.kind != "f":
            return None
        with np.errstate(all="ignore"):  # overflow to inf, log(0) = -inf: as XLA gives them
            return np.asarray(fn(x)).astype(x.dtype, copy=False)

    return apply


def _reduction(fn: Callable[..., np.ndarray]) -> Callable[..., Any]:
    def apply(x: np.ndarray, *, axes: Sequence[int], **_: Any) -> np.ndarray | None:
        if x.size == 0:
            return None  # numpy's max/min of nothing raises; XLA gives the identity
        with np.errstate(all="ignore"):
            return np.asarray(fn(x, axis=tuple(axes))).astype(x.dtype, copy=False)

    return apply


def _logistic(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def _rsqrt(x: np.ndarray) -> np.ndarray:
    return 1 / np.sqrt(x)


APPROXIMATE_PRIMITIVES: dict[str, Callable[..., Any]] = {
    "exp": _unary(np.exp),
    "log": _unary(np.log),
    "log1p": _unary(np.log1p),
    "expm1": _unary(np.expm1),
    "tanh": _unary(np.tanh),
    "logistic": _unary(_logistic),
    "rsqrt": _unary(_rsqrt),
    "reduce_sum": _reduction(np.sum),
    "reduce_max": _reduction(np.max),
    "reduce_min": _reduction(np.min),
    "reduce_prod": _reduction(np.prod),
}

HOST_PRIMITIVES: dict[str, Callable[..., Any]] = {**NUMPY_PRIMITIVES, **APPROXIMATE_PRIMITIVES}
"""jax primitive name -> its numpy evaluation on the host (None declines a case)."""

HOST_ELEMENT_TYPES = frozenset(
    np.dtype(t) for t in ("float32", "float64", "int32", "int64", "uint8", "bool")
)
"""Element types numpy computes natively (bfloat16 and float16 would round per op)."""


def run_host_op(op: tpu.PrimitiveOp, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The op's results for `inputs`, through numpy where the table has it, else through JAX."""
    fn = HOST_PRIMITIVES.get(op.PRIMITIVE)
    if fn is not None:
        result = fn(*inputs, **op.params())
        if result is not None:
            results = result if isinstance(result, tuple) else (result,)
            return [np.asarray(r) for r in results]
    return [np.asarray(r) for r in op.bind(*inputs)]

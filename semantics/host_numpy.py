"""tpu primitives evaluated in numpy on the host: what a `tpu.region {device = "host"}` runs.

A region placed on the host (tpu-outline-host-tail) is not compiled: its ops run one by one in
numpy, each through the table below. It holds the bit-exact implementations of
`semantics/jaxpr_numpy.py` (data movement, IEEE arithmetic, comparisons, casts) and, beside
them, the reductions and transcendental functions of a classifier's head, which numpy rounds
within an ulp or two of XLA (its sums are pairwise, XLA's tree-shaped; its exp is its own
vectorized one). A function returning None declines that case (an integer division, an empty
reduction); the op is then bound through JAX, which computes it as a compiled region would.

    host_function(P["exp"] op)(np.float32 array) -> [np.exp(array)]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from mlconv.dense import numpy_dtype
from mlconv.dialects import tpu
from mlconv.semantics.jaxpr_numpy import FLOAT_UFUNCS, NUMPY_PRIMITIVES


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


def _transpose(x: np.ndarray, *, permutation: Sequence[int], **_: Any) -> np.ndarray:
    """A C-ordered copy of x transposed. When the new minor axis is short (an image's 3
    channels going last), one strided copy per index of it: numpy's general transposing copy
    of a 1x3x224x224 image takes ~180 us, three channel copies ~45 us."""
    view = np.transpose(x, permutation)
    out = np.empty(view.shape, x.dtype)
    if view.ndim and 1 < view.shape[-1] <= 16 and permutation[-1] != x.ndim - 1:
        for index in range(view.shape[-1]):
            out[..., index] = view[..., index]
    else:
        np.copyto(out, view)
    return out


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

HOST_PRIMITIVES: dict[str, Callable[..., Any]] = {
    **NUMPY_PRIMITIVES,
    "transpose": _transpose,
    **APPROXIMATE_PRIMITIVES,
}
"""jax primitive name -> its numpy evaluation on the host (None declines a case)."""

HOST_ELEMENT_TYPES = frozenset(
    np.dtype(t) for t in ("float32", "float64", "int32", "int64", "uint8", "bool")
)
"""Element types numpy computes natively (bfloat16 and float16 would round per op)."""


_BINARY_UFUNCS = {k: FLOAT_UFUNCS[k] for k in ("add", "sub", "mul", "div", "max", "min")}
_UNARY_UFUNCS = {"neg": FLOAT_UFUNCS["neg"], "sqrt": FLOAT_UFUNCS["sqrt"]} | {
    "exp": np.exp,
    "log": np.log,
    "tanh": np.tanh,
}
_REDUCTION_METHODS = {"reduce_sum": "sum", "reduce_max": "max", "reduce_min": "min"}


def _element_types(op: tpu.PrimitiveOp) -> set[Any]:
    return {v.type.get_element_type() for v in (*op.operands, *op.results)}


def _broadcast_read_by_ufuncs(op: tpu.PrimitiveOp) -> bool:
    """Whether every reader of the broadcast's result is a binary ufunc whose other operand
    has the result's full type: numpy's own broadcasting then gives the same values."""
    result = op.results[0]
    for use in result.uses:
        reader = use.operation
        if not (isinstance(reader, tpu.PrimitiveOp) and reader.PRIMITIVE in _BINARY_UFUNCS):
            return False
        other = reader.operands[1 - use.index] if len(reader.operands) == 2 else result
        if other is result or other.type != result.type:  # mul(b, b) would stay unbroadcast
            return False
    return True


def _quiet(ufunc: np.ufunc) -> Callable[..., list[np.ndarray]]:
    def apply(*arrays: np.ndarray) -> list[np.ndarray]:
        with np.errstate(all="ignore"):  # 0 / 0 is NaN and exp(1000) inf, as XLA gives them
            return [ufunc(*arrays)]

    return apply


def _specialized(op: tpu.PrimitiveOp, params: dict[str, Any]) -> Callable[..., Any] | None:
    """A lean form of the common ops of a classifier's head, whose parameters and types are
    known before any call: a host region runs right after the compiled program, when the
    interpreter's and numpy's own code has left the caches, and each extra Python call costs
    there (light SqueezeNet's softmax tail: 0.44 ms through the general table)."""
    name = op.PRIMITIVE
    kinds = _element_types(op)
    single_float = len(kinds) == 1 and numpy_dtype(next(iter(kinds))).kind == "f"
    if name in _BINARY_UFUNCS and single_float and len(op.operands) == 2:
        return _quiet(_BINARY_UFUNCS[name])
    if name in _UNARY_UFUNCS and single_float:
        return _quiet(_UNARY_UFUNCS[name])
    if name == "reshape" and not params.get("dimensions"):
        sizes = tuple(params["new_sizes"])
        return lambda x: [x.reshape(sizes)]
    if name == "broadcast_in_dim":
        shape, dims = tuple(params["shape"]), tuple(params["broadcast_dimensions"])
        in_shape = tuple(op.operands[0].type.get_shape())
        expanded = tuple(in_shape[dims.index(i)] if i in dims else 1 for i in range(len(shape)))
        if _broadcast_read_by_ufuncs(op):
            return lambda x: [x.reshape(expanded)]
        return lambda x: [np.broadcast_to(x.reshape(expanded), shape)]
    if name in _REDUCTION_METHODS and single_float and math.prod(op.operands[0].type.get_shape()):
        method, axes = _REDUCTION_METHODS[name], tuple(params["axes"])
        return lambda x: [getattr(x, method)(axis=axes)]
    return None


def host_function(op: tpu.PrimitiveOp) -> Callable[..., list[np.ndarray]]:
    """The op as a function of its operand arrays giving its result arrays: through numpy
    where the table has it (parameters decoded once), else, or when numpy declines the case,
    through JAX."""
    fn = HOST_PRIMITIVES.get(op.PRIMITIVE)
    params = op.params()
    if fn is not None and (lean := _specialized(op, params)) is not None:
        return lean

    def through_jax(*inputs: np.ndarray) -> list[np.ndarray]:
        return [np.asarray(r) for r in op.bind(*inputs)]

    if fn is None:
        return through_jax

    def through_numpy(*inputs: np.ndarray) -> list[np.ndarray]:
        result = fn(*inputs, **params)
        if result is None:
            return through_jax(*inputs)
        return [np.asarray(r) for r in (result if isinstance(result, tuple) else (result,))]

    return through_numpy

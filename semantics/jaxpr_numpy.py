"""Evaluate a jaxpr on numpy arrays: how folding and the interpreters run core semantics.

Running semantics eagerly through JAX compiles one XLA executable per primitive and shape
(~6 ms each; most of the time of folding a CNN's weights). Primitives whose numpy result is
bit-identical to XLA's (data movement, exact IEEE arithmetic, comparisons, casts) run in numpy
here; any other primitive is bound through JAX as before, so the semantics stay the single
definition and transcendental functions keep XLA's rounding.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from jax.extend.core import ClosedJaxpr

from mlconv.dialects import tpu


def _broadcast_in_dim(x, *, shape, broadcast_dimensions, **_):
    expanded = np.reshape(
        x,
        [
            x.shape[broadcast_dimensions.index(i)] if i in broadcast_dimensions else 1
            for i in range(len(shape))
        ],
    )
    return np.broadcast_to(expanded, shape)


def _convert(x, *, new_dtype, **_):
    if np.dtype(new_dtype) == np.bool_:
        return x != 0
    if np.issubdtype(x.dtype, np.floating) and np.issubdtype(new_dtype, np.integer):
        return None  # out-of-range float->int casts differ between numpy and XLA
    return x.astype(new_dtype)


def _concatenate(*xs, dimension, **_):
    return np.concatenate(xs, axis=dimension)


def _slice(x, *, start_indices, limit_indices, strides, **_):
    steps = strides or (1,) * x.ndim
    return x[
        tuple(slice(s, e, k) for s, e, k in zip(start_indices, limit_indices, steps, strict=True))
    ]


def _integer_pow(x, *, y):
    return None if y < 0 else np.power(x, y).astype(x.dtype)


def _select_n(which, *cases):
    return (
        np.choose(which.astype(np.int64), cases)
        if len(cases) > 2
        else np.where(which, cases[1], cases[0])
    )


def _div(a, b):
    if np.issubdtype(a.dtype, np.integer):
        return None  # XLA truncates, numpy floors; and division by zero differs
    return np.divide(a, b).astype(a.dtype)


def _same_type(fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapped(*args, **_):
        return np.asarray(fn(*args)).astype(args[0].dtype, copy=False)

    return wrapped


def _top_k(x, *, k, axis=-1, **_):
    """lax.top_k: the k largest along `axis`, ties to the lower index (NaN and -0.0, which
    XLA's total order ranks below 0.0: left to XLA)."""
    if x.dtype.kind == "f" and (np.isnan(x).any() or np.signbit(x[x == 0]).any()):
        return None
    axis = axis % x.ndim
    reversed_order = np.argsort(np.flip(x, axis), axis=axis, kind="stable")
    order = x.shape[axis] - 1 - np.flip(reversed_order, axis)
    order = np.take(order, np.arange(k), axis=axis)
    return np.take_along_axis(x, order, axis=axis), order.astype(np.int32)


def _gather(operand, indices, *, dimension_numbers, slice_sizes, mode, fill_value=None, **_):
    """lax.gather (index vector in the last dim of `indices`), vectorized: every operand dim
    indexed by start + iota of its slice size, then collapsed dims dropped and the offset dims
    moved to their places. Out-of-bounds starts are clamped (CLIP, PROMISE_IN_BOUNDS) or give
    `fill_value` (FILL_OR_DROP)."""
    numbers = dimension_numbers
    mode_name = getattr(mode, "name", str(mode))
    if mode_name not in ("CLIP", "FILL_OR_DROP", "PROMISE_IN_BOUNDS"):
        return None
    batch_shape = indices.shape[:-1]
    nb, rank = len(batch_shape), operand.ndim
    starts = np.zeros((*batch_shape, rank), np.int64)
    for k, dim in enumerate(numbers.start_index_map):
        starts[..., dim] = indices[..., k]
    for dim, batch_dim in zip(
        numbers.operand_batching_dims, numbers.start_indices_batching_dims, strict=True
    ):
        shape = [1] * nb
        shape[batch_dim] = batch_shape[batch_dim]
        starts[..., dim] = np.arange(batch_shape[batch_dim]).reshape(shape)
    upper = np.array(operand.shape, np.int64) - np.array(slice_sizes, np.int64)
    outside = ((starts < 0) | (starts > upper)).any(axis=-1)
    starts = np.clip(starts, 0, upper)
    index = tuple(
        starts[..., dim].reshape((*batch_shape, *[1] * rank))
        + np.arange(slice_sizes[dim]).reshape([1] * (nb + dim) + [-1] + [1] * (rank - dim - 1))
        for dim in range(rank)
    )
    if not rank:
        return None
    gathered = operand[index]
    dropped = (*numbers.collapsed_slice_dims, *numbers.operand_batching_dims)
    gathered = gathered.reshape(
        (*batch_shape, *[n for d, n in enumerate(slice_sizes) if d not in dropped])
    )
    if mode_name == "FILL_OR_DROP" and outside.any():
        if fill_value is None:
            if operand.dtype.kind in "fc":
                fill_value = np.nan
            elif operand.dtype.kind == "b":
                fill_value = True
            else:
                info = np.iinfo(operand.dtype)
                fill_value = info.min if operand.dtype.kind == "i" else info.max
        gathered = gathered.copy()
        gathered[outside] = fill_value
    out_rank = gathered.ndim
    batch_positions = [d for d in range(out_rank) if d not in numbers.offset_dims]
    return np.moveaxis(gathered, range(out_rank), [*batch_positions, *numbers.offset_dims])


FLOAT_UFUNCS: dict[str, np.ufunc] = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "max": np.maximum,
    "min": np.minimum,
    "neg": np.negative,
    "sqrt": np.sqrt,
}
"""Primitives that numpy's ufunc computes exactly as XLA does on float operands of one dtype
(IEEE arithmetic, NaN-propagating max and min)."""

# jax primitive name -> numpy evaluation (returning None defers to JAX for that case).
NUMPY_PRIMITIVES: dict[str, Callable[..., Any]] = {
    "add": _same_type(np.add),
    "sub": _same_type(np.subtract),
    "mul": _same_type(np.multiply),
    "div": _div,
    "neg": _same_type(np.negative),
    "abs": _same_type(np.abs),
    "max": _same_type(np.maximum),
    "min": _same_type(np.minimum),
    "sqrt": _same_type(np.sqrt),
    "floor": _same_type(np.floor),
    "ceil": _same_type(np.ceil),
    "sign": _same_type(np.sign),
    "square": _same_type(np.square),
    "integer_pow": _integer_pow,
    "eq": lambda a, b: np.equal(a, b),
    "ne": lambda a, b: np.not_equal(a, b),
    "lt": lambda a, b: np.less(a, b),
    "le": lambda a, b: np.less_equal(a, b),
    "gt": lambda a, b: np.greater(a, b),
    "ge": lambda a, b: np.greater_equal(a, b),
    "and": _same_type(np.bitwise_and),
    "or": _same_type(np.bitwise_or),
    "not": lambda x: np.logical_not(x) if x.dtype == np.bool_ else np.invert(x),
    "select_n": _select_n,
    "convert_element_type": _convert,
    "broadcast_in_dim": _broadcast_in_dim,
    "reshape": lambda x, *, new_sizes, **_: np.reshape(x, new_sizes),
    "transpose": lambda x, *, permutation: np.transpose(x, permutation),
    "squeeze": lambda x, *, dimensions: np.squeeze(x, axis=tuple(dimensions)),
    "expand_dims": lambda x, *, dimensions: np.expand_dims(x, tuple(dimensions)),
    "concatenate": _concatenate,
    "rev": lambda x, *, dimensions: np.flip(x, axis=tuple(dimensions)),
    "slice": _slice,
    "iota": lambda *, dtype, shape, dimension, **_: np.broadcast_to(
        np.arange(shape[dimension], dtype=dtype).reshape(
            [-1 if i == dimension else 1 for i in range(len(shape))]
        ),
        shape,
    ).copy(),
    "copy": lambda x: x,
    "gather": _gather,
    "top_k": _top_k,
}


def evaluate_jaxpr(closed_jaxpr: Any, args: Sequence[np.ndarray]) -> list[np.ndarray]:
    jaxpr = closed_jaxpr.jaxpr
    env: dict[Any, Any] = {}
    for var, const in zip(jaxpr.constvars, closed_jaxpr.consts, strict=True):
        env[var] = np.asarray(const)
    for var, arg in zip(jaxpr.invars, args, strict=True):
        env[var] = np.asarray(arg)

    def read(atom: Any) -> Any:
        return np.asarray(atom.val, dtype=atom.aval.dtype) if hasattr(atom, "val") else env[atom]

    for eqn in jaxpr.eqns:
        inputs = [read(atom) for atom in eqn.invars]
        outputs = _evaluate_equation(eqn, inputs)
        for var, value in zip(eqn.outvars, outputs, strict=True):
            env[var] = value
    return [read(atom) for atom in jaxpr.outvars]


def _evaluate_equation(eqn: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
    name = eqn.primitive.name
    if name in tpu.IDENTITIES:
        return inputs[: len(eqn.outvars)]
    if name in tpu.INLINED:
        params = eqn.params
        inner = params.get("jaxpr") or params.get("call_jaxpr") or params.get("fun_jaxpr")
        if inner is not None:
            if not hasattr(inner, "consts"):
                inner = ClosedJaxpr(inner, ())
            return evaluate_jaxpr(inner, inputs)
    numpy_fn = NUMPY_PRIMITIVES.get(name)
    if numpy_fn is not None:
        result = numpy_fn(*inputs, **eqn.params)
        if result is not None:
            results = [np.asarray(r) for r in (result if isinstance(result, tuple) else [result])]
            if all(
                r.shape == tuple(v.aval.shape) and r.dtype == np.dtype(v.aval.dtype)
                for r, v in zip(results, eqn.outvars, strict=True)
            ):
                return results
    out = eqn.primitive.bind(*inputs, **eqn.params)
    outs = out if eqn.primitive.multiple_results else [out]
    return [np.asarray(o) for o in outs]

"""A core op's `semantics` bound to its attributes and static operands, traced to a jaxpr and
evaluated on constants. One trace cache serves core-infer-shapes, core-fold-constants,
core-to-tpu and the lowering builder: an op traced to infer its shapes is not traced again to
fold or lower it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

import jax
import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, SSAValue

from mlconv.dense import numpy_dtype
from mlconv.dialects.core_base import CoreOp, constant_value
from mlconv.semantics.binding import StaticOperandMissing, array_key, bound_semantics
from mlconv.semantics.jaxpr_numpy import evaluate_jaxpr


def abstract(tensor: Attribute, probe: int | tuple[int, ...] | None = None) -> jax.ShapeDtypeStruct:
    """A tensor type as a jax.ShapeDtypeStruct, dynamic dims of size `probe` (a tuple: the
    size for each dim position)."""
    shape = tuple(probe_size(probe, i) if d < 0 else d for i, d in enumerate(tensor.get_shape()))
    return jax.ShapeDtypeStruct(shape, numpy_dtype(tensor.get_element_type()))


def probe_size(probe: int | tuple[int, ...] | None, position: int) -> int | None:
    """The stand-in size of a dynamic dim at `position` under `probe`."""
    if isinstance(probe, tuple):
        return probe[position % len(probe)]
    return probe


def trace_bound(
    op: CoreOp, fn: Callable[..., Any], structs: tuple[jax.ShapeDtypeStruct, ...]
) -> Any:
    """The closed jaxpr of `fn` (from `bound_semantics(op, ...)`) at `structs`, cached."""
    return _trace_cached(_Holder(_trace_key(op, fn, structs), fn, _inlinable(op)), structs)


# Families whose semantics loop (lax.scan per time step; bodies) or call the host: traced with
# jit on, since lax.scan and fori_loop unroll in Python with jit disabled.
_NOT_INLINED = ("core_control", "core_rnn", "core_custom")


def _inlinable(op: CoreOp) -> bool:
    """Whether `op`'s semantics can be traced with jit disabled: a built-in family without
    loops, no bodies (plugins' ops are traced as they are)."""
    package, _, family = type(op).__module__.rpartition(".")
    return not op.regions and package == "mlconv.dialects" and family not in _NOT_INLINED


def run_with(op: CoreOp, arrays: Sequence[Any], cached: bool = True) -> list[np.ndarray]:
    """The op's results for the given operand values (in operand order); raises what its
    semantics raise. `cached=False` traces afresh instead of through the trace cache."""
    arrays = [np.asarray(a) for a in arrays]
    values = dict(zip(op.operands, arrays, strict=True))
    names = [spec.lstrip("*?") for spec in op.OPERANDS]
    statics = {
        name: values[group[0]]
        for name, group in zip(names, op.operand_groups(), strict=True)
        if name in op.STATIC_OPERANDS and group
    }
    fn, dynamic = bound_semantics(op, statics)
    dynamic_arrays = [values[v] for v in dynamic]
    structs = tuple(jax.ShapeDtypeStruct(a.shape, a.dtype) for a in dynamic_arrays)
    closed = trace_bound(op, fn, structs) if cached else jax.make_jaxpr(fn)(*structs)
    return evaluate_jaxpr(closed, dynamic_arrays)


def evaluate_with(op: CoreOp, arrays: Sequence[np.ndarray]) -> list[np.ndarray] | None:
    """The op's results for the given operand values (in operand order), or None when its
    semantics refuse them."""
    try:
        return run_with(op, arrays)
    except Exception:
        return None


def evaluate(op: CoreOp) -> list[np.ndarray] | None:
    """The op's results when every operand is a constant, else None: its traced semantics run
    on numpy where that is exact (see jaxpr_numpy), through JAX otherwise."""
    try:
        closed_jaxpr, dynamic = trace(op)
    except StaticOperandMissing:
        return None
    arrays = [constant_value(v) for v in dynamic]
    if any(a is None for a in arrays):
        return None
    return evaluate_jaxpr(closed_jaxpr, arrays)


@lru_cache(maxsize=8192)
def _trace_cached(fn_holder: _Holder, structs: tuple[jax.ShapeDtypeStruct, ...]) -> Any:
    return _make_jaxpr(fn_holder.fn, structs, fn_holder.inline)


def _make_jaxpr(
    fn: Callable[..., Any], structs: tuple[jax.ShapeDtypeStruct, ...], inline: bool = False
) -> Any:
    """`jax.make_jaxpr(fn)(*structs)`, traced directly: make_jaxpr wraps `fn` in a jit whose
    argument handling was half of a trace's cost (~1 ms of ~2 ms per op signature; light
    DenseNet-121 traces ~500). Through `make_jaxpr` where jax's internals differ. `inline`
    traces with jit disabled, so the jnp functions a semantics calls are not traced as nested
    jits once per shape (the emitters inline them anyway; BatchNormInference: 5 of them). Not
    for semantics with loops: lax.scan and fori_loop unroll in Python without jit."""
    try:
        # jax internals: may move between jax versions (falls back to make_jaxpr below)
        from jax._src import api_util, linear_util
        from jax._src import core as jax_core
        from jax._src.interpreters import partial_eval
    except ImportError:
        return jax.make_jaxpr(fn)(*structs)

    def flat(*arrays: Any) -> list[Any]:
        return jax.tree_util.tree_leaves(fn(*arrays))

    try:
        debug = api_util.debug_info("semantics", fn, structs, {})
        avals = [jax_core.ShapedArray(s.shape, s.dtype) for s in structs]
        wrapped = linear_util.wrap_init(flat, debug_info=debug)
        if inline:  # jnp's functions inline: no nested jit traced per shape
            with jax.disable_jit():
                jaxpr, _, consts = partial_eval.trace_to_jaxpr_dynamic(wrapped, avals)
        else:
            jaxpr, _, consts = partial_eval.trace_to_jaxpr_dynamic(wrapped, avals)
    except (AttributeError, TypeError):  # another jax's internal signatures
        return jax.make_jaxpr(fn)(*structs)
    return jax_core.ClosedJaxpr(jaxpr, consts)


def trace_function(fn: Callable[..., Any], *structs: jax.ShapeDtypeStruct) -> Any:
    """`jax.make_jaxpr(fn)(*structs)` traced directly and inline (see `_make_jaxpr`): half the
    cost, for the tpu passes' own forms (convolutions, pooling windows, selects), which have no
    loops."""
    return _make_jaxpr(fn, tuple(structs), inline=True)


class _Holder:
    """Carries the function into the cache without making it part of the key."""

    def __init__(self, key: Any, fn: Callable[..., Any], inline: bool = False):
        self.key, self.fn, self.inline = key, fn, inline

    def __hash__(self) -> int:
        return hash(self.key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Holder) and self.key == other.key


def _trace_key(op: CoreOp, fn: Callable[..., Any], structs: tuple[Any, ...]) -> tuple[Any, ...]:
    """What a trace of `fn` (from `bound_semantics(op, ...)`) at `structs` depends on: the op
    kind, its attributes, its static operands' values and the dynamic operand types. Shape
    inference, folding and core-to-tpu share the traces through this key (an op traced to infer
    its shapes is not traced again to lower it)."""
    # Ops with bodies (core.If/Loop/Scan) compute what their regions say: key on the op's text,
    # and on the values of constant operands, which body ops may read as static operands
    # (LinearAttention's Scan got another case's scale factor before this).
    body: Any = ""
    if op.regions:
        constants = tuple(array_key(a) for a in map(constant_value, op.operands) if a is not None)
        body = (str(op), constants)
    return (op.name, str(op.attributes), fn.static_key, structs, body)  # type: ignore[attr-defined]


def clear_traces() -> None:
    """Forget every cached trace (a custom op's implementation changed, or a benchmark wants a
    cold start)."""
    _trace_cached.cache_clear()


def trace_misses() -> int:
    """How many traces the cache has made (its misses) since it was last cleared."""
    return _trace_cached.cache_info().misses


def trace(op: CoreOp) -> tuple[Any, list[SSAValue]]:
    """The op as a closed jaxpr over its dynamic operands (static shapes required)."""
    fn, dynamic = bound_semantics(op)
    structs = tuple(abstract(v.type) for v in dynamic)
    return trace_bound(op, fn, structs), dynamic


def static_types(values: Sequence[SSAValue]) -> bool:
    return all(
        isinstance(v.type, TensorType) and all(d >= 0 for d in v.type.get_shape()) for v in values
    )

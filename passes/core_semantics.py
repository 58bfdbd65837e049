"""Evaluate a core op's `semantics`: abstractly (shapes), on numpy arrays (folding), or as a
jaxpr (lowering). Shared by core-infer-shapes, core-fold-constants and core-to-tpu.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

import jax
import numpy as np
from xdsl.dialects.builtin import DYNAMIC_INDEX, TensorType
from xdsl.ir import Attribute, SSAValue

from mlconv.dense import element_type, numpy_dtype
from mlconv.dialects.core_base import CoreOp, constant_value

# Two stand-in sizes for dynamic dims: a result dim that differs between the two abstract
# evaluations depends on a dynamic dim and stays dynamic.
_PROBE_SIZES = (23, 29)


class StaticOperandMissing(Exception):
    """A static operand (shape, axes, ...) is not a constant."""

    def __init__(self, operand: str):
        super().__init__(operand)
        self.operand = operand


def bound_semantics(op: CoreOp, statics: dict[int, np.ndarray | None] | None = None) -> tuple[Callable[..., Any], list[SSAValue]]:
    """`semantics` with attributes and static operands bound, and the remaining (dynamic) SSA
    operands in the order the returned function takes them."""
    groups = op.operand_groups()
    names = [spec.lstrip("*?") for spec in op.OPERANDS]
    layout: list[tuple[str, Any]] = []  # ("static", value) | ("dynamic", None) | ("absent", None)
    dynamic: list[SSAValue] = []
    for spec, name, values in zip(op.OPERANDS, names, groups, strict=True):
        if name in op.STATIC_OPERANDS:
            if not values:
                layout.append(("absent", None))
                continue
            value = constant_value(values[0])
            if value is None:
                raise StaticOperandMissing(name)
            layout.append(("static", value))
        elif spec.startswith("*"):
            layout.extend(("dynamic", None) for _ in values)
            dynamic.extend(values)
        elif not values:
            layout.append(("absent", None))
        else:
            layout.append(("dynamic", None))
            dynamic.append(values[0])
    attributes = op.attribute_values()
    semantics = type(op).semantics

    def fn(*arrays: Any) -> Any:
        it = iter(arrays)
        args = [next(it) if kind == "dynamic" else value for kind, value in layout]
        return semantics(*args, **attributes)

    return fn, dynamic


def _as_list(result: Any) -> list[Any]:
    return list(result) if isinstance(result, tuple | list) else [result]


def _struct(tensor: Attribute, probe: int | None = None) -> jax.ShapeDtypeStruct:
    shape = tuple(probe if d < 0 else d for d in tensor.get_shape())
    return jax.ShapeDtypeStruct(shape, numpy_dtype(tensor.get_element_type()))


def infer_result_types(op: CoreOp) -> list[TensorType] | None:
    """Result types from `semantics`, with `?` where a result dim follows a dynamic input dim;
    None when they cannot be derived (unranked input, non-constant static operand)."""
    try:
        fn, dynamic = bound_semantics(op)
    except StaticOperandMissing:
        return None
    types = [v.type for v in dynamic]
    if not all(isinstance(t, TensorType) for t in types):
        return None
    has_dynamic = any(d < 0 for t in types for d in t.get_shape())
    probes = _PROBE_SIZES if has_dynamic else (None,)
    shapes = []
    try:
        for probe in probes:
            out = _as_list(jax.eval_shape(fn, *[_struct(t, probe) for t in types]))
            shapes.append(out)
    except Exception:
        return None
    results = []
    for index, aval in enumerate(shapes[0]):
        dims = [
            d if all(s[index].shape[i] == d for s in shapes) else DYNAMIC_INDEX
            for i, d in enumerate(aval.shape)
        ]
        results.append(TensorType(element_type(np.dtype(aval.dtype)), dims))
    return results


def evaluate(op: CoreOp) -> list[np.ndarray] | None:
    """The op's results when every operand is a constant, else None: its traced semantics run
    on numpy where that is exact (see jaxpr_numpy), through JAX otherwise."""
    from mlconv.passes.jaxpr_numpy import evaluate_jaxpr

    try:
        closed_jaxpr, dynamic = trace(op)
    except StaticOperandMissing:
        return None
    arrays = [constant_value(v) for v in dynamic]
    if any(a is None for a in arrays):
        return None
    return evaluate_jaxpr(closed_jaxpr, arrays)


@lru_cache(maxsize=4096)
def _trace_cached(fn_holder: _Holder, structs: tuple[jax.ShapeDtypeStruct, ...]) -> Any:
    return jax.make_jaxpr(fn_holder.fn)(*structs)


class _Holder:
    """Carries the function into the cache without making it part of the key."""

    def __init__(self, key: Any, fn: Callable[..., Any]):
        self.key, self.fn = key, fn

    def __hash__(self) -> int:
        return hash(self.key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Holder) and self.key == other.key


def trace(op: CoreOp) -> tuple[Any, list[SSAValue]]:
    """The op as a closed jaxpr over its dynamic operands (static shapes required)."""
    fn, dynamic = bound_semantics(op)
    structs = tuple(_struct(v.type) for v in dynamic)
    statics = tuple(
        (array.shape, array.dtype.str, array.tobytes())
        for group, spec in zip(op.operand_groups(), op.OPERANDS, strict=True)
        if spec.lstrip("*?") in op.STATIC_OPERANDS
        for array in map(constant_value, group)
    )
    # Ops with bodies (core.If/Loop/Scan) compute what their regions say: key on the op's text,
    # and on the values of constant operands, which body ops may read as static operands
    # (LinearAttention's Scan got another case's scale factor before this).
    body = ""
    if op.regions:
        constants = tuple(
            (a.shape, a.dtype.str, a.tobytes())
            for a in map(constant_value, op.operands)
            if a is not None
        )
        body = (str(op), constants)
    key = (op.name, str(op.attributes), statics, structs, body)
    return _trace_cached(_Holder(key, fn), structs), dynamic


def static_types(values: Sequence[SSAValue]) -> bool:
    return all(
        isinstance(v.type, TensorType) and all(d >= 0 for d in v.type.get_shape()) for v in values
    )

"""Result types from a core op's traced `semantics`: dynamic dims probed with stand-in sizes,
static operands computed from shape subgraphs evaluated partially, the rank alone where a shape
depends on data; and `meet_types`, the type both a lowering and inference allow.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from xdsl.dialects.builtin import DYNAMIC_INDEX, TensorType, UnrankedTensorType
from xdsl.ir import Attribute, SSAValue

from mlconv.dense import element_type, numpy_dtype, shared_tensor_type
from mlconv.dialects.core_base import CoreOp, constant_value
from mlconv.semantics.tracing import (
    StaticOperandMissing,
    abstract,
    bound_semantics,
    evaluate_with,
    probe_size,
    trace_bound,
)

# Two stand-in sizes for dynamic dims: a result dim that differs between the two abstract
# evaluations depends on a dynamic dim and stays dynamic.
_PROBE_SIZES = (23, 29)


def infer_result_types(op: CoreOp) -> list[TensorType] | None:
    """Result types from `semantics`, with `?` where a result dim follows a dynamic input dim;
    None when they cannot be derived (unranked input, static operand unknown).

    A static operand (shape, pads, axes ...) that is not a constant but is computed from
    ShapeOf, constants and small arithmetic is evaluated with the known dims and, for each
    dynamic dim, two probe sizes: a result dim that moves with the probe stays `?`, the others
    are static. Ops that need a dim divisible by a block size (BatchToSpace, a Reshape that
    splits a dynamic dim) get a second pair of probes divisible by 1..10. When even that fails
    (a shape that depends on data), ops whose result rank does not depend on the operand's
    values still get a ranked result of `?` dims."""
    types = [v.type for v in op.operands]
    names = [spec.lstrip("*?") for spec in op.OPERANDS]
    missing = [
        (name, group[0])
        for name, group in zip(names, op.operand_groups(), strict=True)
        if name in op.STATIC_OPERANDS and group and constant_value(group[0]) is None
    ]
    has_dynamic = any(
        not isinstance(t, TensorType) or any(d < 0 for d in t.get_shape()) for t in types
    )
    if not has_dynamic and not missing:
        return _infer_with(op, (None,), missing)
    for probes in (_PROBE_SIZES, _DIVISIBLE_PROBE_SIZES):
        try:
            results = _infer_with(op, probes, missing)
        except _ProbeFailed:
            continue
        if results is not None and op.name == "core.Reshape":
            results = _unproven_reshape_dims(op, results)
        if results is not None and missing and probes is _PROBE_SIZES:
            results = _staggered(op, missing, results)
        if results is not None and missing and op.name == "core.Slice":
            results = _unclamped_slice_dims(op, results, (*probes, _STAGGERED_PROBE))
        return results
    return _rank_only(op) if missing else None


# Different stand-in sizes per dim position (a batch, a height and a width of their own), far
# from the first probes (a size rounded up to a multiple of 32 is 32 for both 23 and 29).
_STAGGERED_PROBE = (1009, 1013, 1019, 1021, 1031, 1033, 1039, 1049)


def _staggered(
    op: CoreOp, missing: list[tuple[str, SSAValue]], results: list[TensorType]
) -> list[TensorType]:
    """`results` with `?` where a static dim holds only because the probes gave every dynamic
    dim one size: a shape computed from the dims (torchvision's resize to min_size over
    min(H, W)) comes out static for a square probe image. A probe with a size per position
    that the semantics accept must give the same static dims; where it does not apply (dims
    that must agree), the results stand."""
    try:
        staggered = _infer_with(op, (_STAGGERED_PROBE,), missing)
    except _ProbeFailed:
        return results
    if staggered is None or len(staggered) != len(results):
        return results
    fixed = []
    for result, other in zip(results, staggered, strict=True):
        a, b = result.get_shape(), other.get_shape()
        if len(a) != len(b):
            return results
        dims = tuple(d if d < 0 or d == e else DYNAMIC_INDEX for d, e in zip(a, b, strict=True))
        fixed.append(
            result if dims == tuple(a) else shared_tensor_type(result.get_element_type(), dims)
        )
    return fixed


def _unclamped_slice_dims(
    op: CoreOp, results: list[TensorType], probes: Sequence[int | tuple[int, ...]]
) -> list[TensorType]:
    """A Slice's dim made dynamic where its computed bounds fall outside the data's dynamic dim
    under a probe. The probes size the data's dim and the dims the bounds are computed from
    independently: torchvision's per-level slice of the RPN's objectness ([N, sum of A*H*W]
    from start = sum of the earlier levels' A*H*W) starts past the probe size of the
    concatenation, clamps to an empty slice under every probe and came out static 0."""
    data = op.operands[0].type
    if not isinstance(data, TensorType):
        return results
    shape = data.get_shape()
    dims = list(results[0].get_shape())
    operands = dict(zip((n.lstrip("*?") for n in op.OPERANDS), op.operand_groups(), strict=True))
    for probe in probes:
        values = {}
        for name in ("start", "stop", "step", "axes"):
            group = operands.get(name)
            if group:
                values[name] = partial_value(group[0], probe)
                if values[name] is None:
                    return results
        starts = np.asarray(values["start"]).reshape(-1).tolist()
        stops = np.asarray(values["stop"]).reshape(-1).tolist()
        axes = (
            np.asarray(values["axes"]).reshape(-1).tolist()
            if "axes" in values
            else list(range(len(starts)))
        )
        for axis, first, last in zip(axes, starts, stops, strict=False):
            axis %= len(shape)
            if shape[axis] >= 0:
                continue  # clamping to a static dim gives a static size
            size = probe_size(probe, axis)
            bounds = [b + size if b < 0 else b for b in (first, last)]
            if any(b < 0 or b > size for b in bounds):
                dims[axis] = DYNAMIC_INDEX
    if dims == list(results[0].get_shape()):
        return results
    return [shared_tensor_type(results[0].get_element_type(), tuple(dims)), *results[1:]]


def _unproven_reshape_dims(op: CoreOp, results: list[TensorType]) -> list[TensorType]:
    """A Reshape's -1 dim made dynamic where the probes cannot prove it static.

    The probes give every dynamic dim one size. When the shape operand reads dims of values
    other than the data (ShapeOf of the model input B, the data being a (B*4, 64, 64) tensor),
    the -1 then comes out as if those dims were the data's: (B*4, 64, 64) -> (B, 4, 64, -1)
    would give 16 where it is 64. Such a -1 stays `?`."""
    data, shape = op.operands[0], op.operands[1]
    data_type = data.type
    if not isinstance(data_type, TensorType) or all(d >= 0 for d in data_type.get_shape()):
        return results
    sources = _shape_sources(shape)
    if sources is None or sources <= {data}:
        return results
    pattern = partial_value(shape, _PROBE_SIZES[0])
    if pattern is None:
        return results
    dims = list(results[0].get_shape())
    for i, d in enumerate(np.asarray(pattern).reshape(-1).tolist()):
        if d == -1 and i < len(dims):
            dims[i] = DYNAMIC_INDEX
    return [shared_tensor_type(results[0].get_element_type(), tuple(dims)), *results[1:]]


def _shape_sources(value: SSAValue, _depth: int = 0) -> set[SSAValue] | None:
    """The values with dynamic dims whose ShapeOf a shape-like `value` reads (None: too deep)."""
    if constant_value(value) is not None:
        return set()
    owner = value.owner
    if not isinstance(owner, CoreOp) or _depth > _PARTIAL_DEPTH:
        return None
    if owner.name == "core.ShapeOf":
        source = owner.operands[0]
        t = source.type
        return (
            {source}
            if not isinstance(t, TensorType) or min(t.get_shape(), default=0) < 0
            else set()
        )
    found: set[SSAValue] = set()
    for operand in owner.operands:
        inner = _shape_sources(operand, _depth + 1)
        if inner is None:
            return None
        found |= inner
    return found


class _ProbeFailed(Exception):
    """The semantics refused the probe sizes (or a static operand could not be evaluated)."""


# Probes divisible by 1..10, for block and split sizes.
_DIVISIBLE_PROBE_SIZES = (2520, 5040)


def _infer_with(
    op: CoreOp, probes: Sequence[int | None], missing: list[tuple[str, SSAValue]]
) -> list[TensorType] | None:
    shapes = []
    for probe in probes:
        statics = None
        if missing:
            statics = {}
            for name, value in missing:
                array = partial_value(value, probe if probe is not None else _PROBE_SIZES[0])
                if array is None:
                    return _rank_only(op)
                statics[name] = array
        try:
            fn, dynamic = bound_semantics(op, statics)
        except StaticOperandMissing:
            return None
        dynamic_types = [v.type for v in dynamic]
        if not all(isinstance(t, TensorType) for t in dynamic_types):
            return None
        try:
            structs = tuple(abstract(t, probe) for t in dynamic_types)
            out = trace_bound(op, fn, structs).out_avals
        except Exception:
            if probe is None:
                return None
            raise _ProbeFailed from None
        shapes.append(out)
    results = []
    for index, aval in enumerate(shapes[0]):
        if any(len(s[index].shape) != len(aval.shape) for s in shapes):
            return None  # the rank itself follows a dynamic dim
        dims = tuple(
            d if all(s[index].shape[i] == d for s in shapes) else DYNAMIC_INDEX
            for i, d in enumerate(aval.shape)
        )
        results.append(shared_tensor_type(element_type(np.dtype(aval.dtype)), dims))
    return results


# --- partial evaluation of shape subgraphs ------------------------------------------------------

# Values larger than this are data, not shapes: partial evaluation does not compute them.
_PARTIAL_LIMIT = 256
_PARTIAL_DEPTH = 64


def partial_value(value: SSAValue, probe: int, _depth: int = 0) -> np.ndarray | None:
    """The value of a shape-like SSA value (a constant, a ShapeOf, or a small core op of such
    values) when every dynamic dim has size `probe`; None when it depends on data."""
    array = constant_value(value)
    if array is not None:
        return array
    owner = value.owner
    if not isinstance(owner, CoreOp) or owner.regions or _depth > _PARTIAL_DEPTH:
        return None
    if owner.name == "core.ShapeOf":
        source = owner.operands[0].type
        if not isinstance(source, TensorType):
            return None
        dims = [probe_size(probe, i) if d < 0 else d for i, d in enumerate(source.get_shape())]
        return np.asarray(dims, dtype=numpy_dtype(value.type.get_element_type()))
    t = value.type
    if not isinstance(t, TensorType) or any(d < 0 for d in t.get_shape()):
        return None
    if int(np.prod(t.get_shape(), dtype=np.int64)) > _PARTIAL_LIMIT:
        return None
    arrays = []
    for operand in owner.operands:
        operand_value = partial_value(operand, probe, _depth + 1)
        if operand_value is None:
            return None
        arrays.append(operand_value)
    results = evaluate_with(owner, arrays)
    return None if results is None else np.asarray(results[value.index])


def _static_length(value: SSAValue) -> int | None:
    t = value.type
    if isinstance(t, TensorType) and len(t.get_shape()) <= 1:
        shape = t.get_shape()
        return 1 if not shape else (shape[0] if shape[0] >= 0 else None)
    return None


def _rank(value: SSAValue) -> int | None:
    return len(value.type.get_shape()) if isinstance(value.type, TensorType) else None


def _rank_only(op: CoreOp) -> list[TensorType] | None:
    """Ranked results of `?` dims for ops whose result rank follows from the static length of
    a shape-like operand (or the data's rank) whatever its values; None for other ops. These
    ops have one result, of their first operand's element type (Range: its output_type)."""
    rule = _RANK_RULES.get(op.name)
    if rule is None:
        return None
    try:
        ranks = rule(op)
    except Exception:
        return None
    if ranks is None or any(r is None for r in ranks) or len(ranks) != len(op.results):
        return None
    elements = [_result_element(op, i) for i in range(len(op.results))]
    if any(e is None for e in elements):
        return None
    return [TensorType(e, [DYNAMIC_INDEX] * r) for e, r in zip(elements, ranks, strict=True)]


def _result_element(op: CoreOp, index: int) -> Attribute | None:
    if op.name == "core.Range":
        return element_type(np.dtype(op.attribute_values()["output_type"]))
    t = op.results[index].type
    if hasattr(t, "get_element_type"):
        return t.get_element_type()
    return None


def _max_rank(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else max(a, b)


def _broadcast_rank(op: CoreOp) -> list[int | None]:
    data, target = op.operands[0], op.operands[1]
    mode = op.attribute_values().get("mode", "numpy")
    if mode == "explicit":
        return [_static_length(target)]
    return [_max_rank(_rank(data), _static_length(target))]


_RANK_RULES: dict[str, Callable[[CoreOp], list[int | None]]] = {
    "core.Reshape": lambda op: [_static_length(op.operands[1])],
    "core.Broadcast": _broadcast_rank,
    "core.Tile": lambda op: [_max_rank(_rank(op.operands[0]), _static_length(op.operands[1]))],
    "core.Pad": lambda op: [_rank(op.operands[0])],
    "core.Slice": lambda op: [_rank(op.operands[0])],
    "core.Interpolate": lambda op: [_rank(op.operands[0])],
    "core.Range": lambda op: [1],
}


def meet_types(known: Attribute, other: Attribute) -> Attribute:
    """The most precise type both `known` and `other` allow: the ranked one of the two, and
    per dim the static size where either has one. Raises ValueError when two ranks or two
    static dims disagree. The element type is `known`'s (a lowering's own choice)."""
    if not isinstance(other, TensorType):
        return known
    if isinstance(known, UnrankedTensorType):
        return TensorType(known.get_element_type(), other.get_shape())
    if not isinstance(known, TensorType):
        return known
    a, b = known.get_shape(), other.get_shape()
    if len(a) != len(b):
        raise ValueError(f"rank {len(a)} where {other} has rank {len(b)}")
    dims = []
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        if x >= 0 and y >= 0 and x != y:
            raise ValueError(f"dimension {i} is {x} where {other} has {y}")
        dims.append(x if x >= 0 else y if y >= 0 else DYNAMIC_INDEX)
    if list(dims) == list(a):
        return known
    return TensorType(known.get_element_type(), dims)


def more_precise(new: Attribute, old: Attribute) -> bool:
    """Whether `new` knows at least what `old` knows (rank and every static dim)."""
    if not isinstance(old, TensorType):
        return True
    if not isinstance(new, TensorType) or len(new.get_shape()) != len(old.get_shape()):
        return False
    return all(o < 0 or n == o for n, o in zip(new.get_shape(), old.get_shape(), strict=True))

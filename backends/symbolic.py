"""Symbolic dimensions for the artifact: one `jax.export` module serving every size of a
model's dynamic (`None`, `?`) input dimensions.

The tpu dialect and its passes work on static shapes. A model with dynamic input dimensions
is therefore lowered at a few *probe* sizes of them, all the way to the tpu level, and the
programs are compared op by op (`generalize`): they must have the same ops in the same order,
with the same parameters but for integers that follow the dynamic dimensions. Each such
integer is fitted as `c + a1*d1 + a2*d2 + ...` from probes that move one dimension at a time,
and the fit is checked at one more probe where every dimension moves at once (a product of two
dimensions, or a choice a pass made differently at another size, fails there). A constant whose
shape follows them must be a splat (one value broadcast). The result (`Generalized`) gives every
op of the first probe's program its parameters in terms of jax symbolic dimensions, so that
`export_region` exports it shape-polymorphically: one symbol per distinct dynamic dimension
(every input's 0th dimension is the batch `b`; any other is `d<i>`), each `>= 1`.

What cannot be generalized is a one-line error naming the op and why (`SymbolicShapeError`);
static shapes (`--input-shapes`) remain the way out.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import export

from mlconv.backends.export_check import export_function
from mlconv.dense import numpy_dtype, to_numpy
from mlconv.errors import BackendError

BATCH = "b"
"""The symbol of every input's dynamic 0th dimension."""

BASE_PROBE = 5
"""Every dynamic dimension's size in the program the artifact keeps (the report's sizes)."""
MOVED_PROBE = 7
"""A dimension's size in the probe that moves it alone."""
CHECK_PROBES = (11, 13, 17, 19, 23, 29, 31, 37)
"""The dimensions' sizes in the probe that checks the fit (all moved at once, each its own)."""


class SymbolicShapeError(BackendError):
    """The program cannot be exported with symbolic dimensions (give static input shapes)."""


@dataclass(frozen=True)
class Affine:
    """An integer `const + sum(coeff * symbol)` over the symbolic dimensions."""

    const: int
    coeffs: tuple[tuple[str, int], ...]

    def evaluate(self, dims: Mapping[str, Any]) -> Any:
        value: Any = self.const
        for symbol, coeff in self.coeffs:
            value = dims[symbol] * coeff + value
        return value

    def text(self) -> str:
        parts = [f"{c}*{s}" if c != 1 else s for s, c in self.coeffs]
        if self.const or not parts:
            parts.append(str(self.const))
        return " + ".join(parts)


@dataclass
class Symbols:
    """The dynamic dimensions of a program's inputs: `inputs[i][axis]` is a symbol or None."""

    names: list[str]
    inputs: list[list[str | None]]
    input_names: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, shapes: Sequence[Sequence[int] | None], names: Sequence[str]) -> Symbols:
        """One symbol per dynamic dimension; every input's dynamic 0th dimension is `b`."""
        symbols: list[str] = []
        inputs = []
        for shape in shapes:
            row: list[str | None] = []
            for axis, dim in enumerate(shape or ()):
                if dim >= 0:
                    row.append(None)
                    continue
                symbol = BATCH if axis == 0 else f"d{len([s for s in symbols if s != BATCH])}"
                if symbol not in symbols:
                    symbols.append(symbol)
                row.append(symbol)
            inputs.append(row)
        return cls(symbols, inputs, list(names))

    def probes(self) -> list[dict[str, int]]:
        """The probe sizes: the base, one per symbol moving it alone, the check."""
        base = dict.fromkeys(self.names, BASE_PROBE)
        moved = [{**base, s: MOVED_PROBE} for s in self.names]
        if len(self.names) > len(CHECK_PROBES):
            raise SymbolicShapeError(
                f"the model has {len(self.names)} dynamic dimensions; at most "
                f"{len(CHECK_PROBES)} can be symbolic: give static input shapes"
            )
        check = dict(zip(self.names, CHECK_PROBES, strict=False))
        return [base, *moved, check]

    def shapes_at(
        self, probe: Mapping[str, int], shapes: Sequence[Sequence[int]]
    ) -> list[list[int]]:
        return [
            [probe[s] if s is not None else d for s, d in zip(row, shape, strict=True)]
            for row, shape in zip(self.inputs, shapes, strict=True)
        ]

    def manifest(self, report_at: Mapping[str, int] | None = None) -> dict[str, Any]:
        """The manifest's `symbolic_dims`: each symbol with where it occurs, the constraints,
        and the sizes the conversion report was computed at."""
        where: dict[str, list[dict[str, Any]]] = {s: [] for s in self.names}
        for index, row in enumerate(self.inputs):
            for axis, symbol in enumerate(row):
                if symbol is not None:
                    name = self.input_names[index] if index < len(self.input_names) else index
                    where[symbol].append({"input": name, "axis": axis})
        return {
            "symbols": where,
            "constraints": [f"{s} >= 1" for s in self.names],
            "report_at": dict(report_at or dict.fromkeys(self.names, BASE_PROBE)),
        }


def _describe(op: Any) -> str:
    return op.name


class Generalized:
    """The first probe's program with every parameter that follows the dynamic dimensions
    given as a function of them (`params(op, dims)`, `constant(op, dims)`, `shape(...)`)."""

    def __init__(self, symbols: Symbols):
        self.symbols = symbols
        self.params_of: dict[Any, Any] = {}  # op -> template (Affine leaves)
        self.splats: dict[Any, tuple[Any, tuple[Any, ...]]] = {}  # constant op -> (value, shape)
        self.types: dict[Any, tuple[Any, ...]] = {}  # SSA value -> shape template

    def params(self, op: Any, dims: Mapping[str, Any]) -> dict[str, Any]:
        template = self.params_of.get(op)
        if template is None:
            return op.params()
        return _evaluate(template, dims)

    def shape(self, value: Any, dims: Mapping[str, Any]) -> tuple[Any, ...]:
        template = self.types.get(value)
        if template is None:
            return tuple(value.type.get_shape())
        return tuple(_evaluate(template, dims))

    def host_shape(self, value: Any) -> list[int]:
        """A shape the host reshapes to (numpy), -1 for its one symbolic dimension."""
        template = self.types.get(value)
        if template is None:
            return list(value.type.get_shape())
        symbolic = [d for d in template if isinstance(d, Affine)]
        if len(symbolic) > 1:
            raise SymbolicShapeError(
                f"a host-side reshape to {[_text(d) for d in template]} has more than one "
                "symbolic dimension: give static input shapes or disable io_shape_optimization"
            )
        return [-1 if isinstance(d, Affine) else d for d in template]


def _text(value: Any) -> str:
    return value.text() if isinstance(value, Affine) else str(value)


def _evaluate(template: Any, dims: Mapping[str, Any]) -> Any:
    if isinstance(template, Affine):
        return template.evaluate(dims)
    if isinstance(template, dict):
        return {k: _evaluate(v, dims) for k, v in template.items()}
    if isinstance(template, tuple) and hasattr(template, "_fields"):
        return type(template)(*(_evaluate(v, dims) for v in template))
    if isinstance(template, tuple):
        return tuple(_evaluate(v, dims) for v in template)
    if isinstance(template, list):
        return [_evaluate(v, dims) for v in template]
    return template


class _Mismatch(Exception):
    pass


def _fit(values: Sequence[Any], probes: Sequence[Mapping[str, int]], names: Sequence[str]) -> Any:
    """`values` (one per probe, same structure) as a template with Affine leaves where ints
    differ; raises _Mismatch where they cannot be fitted."""
    first = values[0]
    if isinstance(first, bool) or first is None or isinstance(first, str | float | bytes):
        if any(type(v) is not type(first) or v != first for v in values):
            raise _Mismatch(f"{first!r} becomes {values[1:]!r}")
        return first
    if isinstance(first, int | np.integer):
        ints = [int(v) for v in values]
        if len(set(ints)) == 1:
            return ints[0]
        base = ints[0]
        coeffs = []
        for index, symbol in enumerate(names):
            step = probes[1 + index][symbol] - probes[0][symbol]
            delta = ints[1 + index] - base
            if delta % step:
                raise _Mismatch(f"{base} does not follow {symbol}")
            if delta:
                coeffs.append((symbol, delta // step))
        const = base - sum(c * probes[0][s] for s, c in coeffs)
        affine = Affine(const, tuple(coeffs))
        if affine.evaluate(probes[-1]) != ints[-1]:
            raise _Mismatch(
                f"a size {ints} that is not linear in {', '.join(names)} (a product of sizes?)"
            )
        return affine
    if isinstance(first, dict):
        if any(not isinstance(v, dict) or v.keys() != first.keys() for v in values):
            raise _Mismatch("different parameters")
        return {k: _fit([v[k] for v in values], probes, names) for k in first}
    if isinstance(first, tuple | list):
        if any(type(v) is not type(first) or len(v) != len(first) for v in values):
            raise _Mismatch(f"{first!r} becomes {values[1]!r}")
        parts = [_fit([v[i] for v in values], probes, names) for i in range(len(first))]
        if isinstance(first, tuple) and hasattr(first, "_fields"):
            return type(first)(*parts)
        return type(first)(parts)
    if isinstance(first, np.ndarray):
        if any(
            not isinstance(v, np.ndarray) or v.shape != first.shape or not np.array_equal(v, first)
            for v in values
        ):
            raise _Mismatch("an array parameter that changes with the sizes")
        return first
    if any(v != first for v in values):
        raise _Mismatch(f"{first!r} becomes {values[1]!r}")
    return first


def generalize(
    modules: Sequence[Any], symbols: Symbols, probes: Sequence[Mapping[str, int]]
) -> Generalized:
    """Compare the programs `modules` (one per probe of `symbols.probes()`, tpu level) and
    generalize the first one; SymbolicShapeError names the first op that cannot be."""
    # lazy: loads 3 more modules (dialects)
    from mlconv.dialects import tpu

    result = Generalized(symbols)
    walks = [list(m.walk()) for m in modules]
    names = symbols.names
    if len({len(w) for w in walks}) != 1:
        op = _first_difference(walks)
        raise SymbolicShapeError.at(
            op,
            "is lowered differently at different sizes of the dynamic dimensions "
            f"({', '.join(names)}), so it cannot be exported with symbolic shapes; "
            "give static input shapes (--input-shapes)",
        )
    for ops in zip(*walks, strict=True):
        base = ops[0]
        if any(o.name != base.name for o in ops):
            raise SymbolicShapeError.at(
                base,
                f"is lowered to {', '.join(sorted({o.name for o in ops}))} at different sizes "
                f"of the dynamic dimensions ({', '.join(names)}); give static input shapes "
                "(--input-shapes)",
            )
        try:
            for values in zip(*(o.results for o in ops), strict=True):
                _fit_type(result, values, probes, names)
            if ops[0].regions:
                for blocks in zip(*(o.regions for o in ops), strict=True):
                    for args in zip(*(r.block.args for r in blocks), strict=True):
                        _fit_type(result, args, probes, names)
            if isinstance(base, tpu.ConstantOp):
                arrays = [to_numpy(o.value) for o in ops]
                if any(a.shape != arrays[0].shape for a in arrays):
                    flat = [a.reshape(-1) for a in arrays]
                    if any(f.size == 0 or (f != f[0]).any() for f in flat) or any(
                        f[0] != flat[0][0] for f in flat
                    ):
                        raise _Mismatch("a constant whose shape and values follow the sizes")
                    shape = _fit([a.shape for a in arrays], probes, names)
                    result.splats[base] = (flat[0][0], shape)
                elif any(not np.array_equal(a, arrays[0]) for a in arrays):
                    raise _Mismatch("a constant whose values follow the sizes")
            elif isinstance(base, tpu.PrimitiveOp):
                params = [o.params() for o in ops]
                template = _fit(params, probes, names)
                if template != params[0] or _has_affine(template):
                    result.params_of[base] = template
            elif isinstance(base, tpu.ScanOp | tpu.WhileOp | tpu.CondOp):
                attrs = [{k: v for k, v in o.attributes.items()} for o in ops]
                if any(a != attrs[0] for a in attrs):
                    raise _Mismatch("a loop whose attributes follow the sizes")
        except _Mismatch as mismatch:
            raise SymbolicShapeError.at(
                base,
                f"cannot be exported with symbolic dimensions ({', '.join(names)}): "
                f"{mismatch}; give static input shapes (--input-shapes)",
            ) from None
    return result


def _has_affine(template: Any) -> bool:
    if isinstance(template, Affine):
        return True
    if isinstance(template, dict):
        return any(_has_affine(v) for v in template.values())
    if isinstance(template, tuple | list):
        return any(_has_affine(v) for v in template)
    return False


def _fit_type(
    result: Generalized,
    values: Sequence[Any],
    probes: Sequence[Mapping[str, int]],
    names: Sequence[str],
) -> None:
    shapes = []
    for value in values:
        get_shape = getattr(value.type, "get_shape", None)
        if get_shape is None:
            return
        shapes.append(tuple(get_shape()))
    template = _fit(shapes, probes, names)
    if _has_affine(template):
        result.types[values[0]] = template


def _first_difference(walks: Sequence[Sequence[Any]]) -> Any:
    for ops in itertools.zip_longest(*walks):
        present = [o for o in ops if o is not None]
        if len(present) != len(ops) or any(o.name != present[0].name for o in present):
            return present[0]
    return walks[0][-1]


# --------------------------------------------------------------------------- export


def symbolic_scope(symbols: Symbols) -> dict[str, Any]:
    """The symbols as jax symbolic dimensions of one scope, each constrained `>= 1`."""

    dims = export.symbolic_shape(", ".join(symbols.names))
    return dict(zip(symbols.names, dims, strict=True))


def interpret(
    block: Any,
    generalized: Generalized,
    dims: Mapping[str, Any],
    constants: Mapping[Any, Any],
    args: Sequence[Any],
) -> list[Any]:
    """A region body evaluated under tracing with the generalized parameters at `dims` (as
    semantics/tpu_blocks' interpreter); tpu.cond / while / scan become their lax constructs
    with their bodies evaluated the same way, so a loop carrying a `b`-sized value exports
    with the symbol (jax.export traces lax.cond / while_loop shape-polymorphically)."""

    # lazy: loads 4 more modules (dialects, semantics)
    from mlconv.dialects import tpu
    from mlconv.semantics.tpu_blocks import RUNNERS, interpret_block

    env = dict(zip(block.args, args, strict=True))
    for op in block.ops:
        if isinstance(op, tpu.ConstantOp):
            splat = generalized.splats.get(op)
            if splat is None:
                env[op.output] = constants[op]
            else:
                value, shape = splat
                env[op.output] = jnp.full(
                    _evaluate(shape, dims), value, dtype=np.asarray(value).dtype
                )
        elif isinstance(op, tpu.YieldOp):
            return [env[v] for v in op.values]
        elif isinstance(op, tpu.PrimitiveOp):
            inputs = [env[v] for v in op.operands]
            out = tpu.primitive(op.PRIMITIVE).bind(*inputs, **generalized.params(op, dims))
            env.update(zip(op.results, out if op.MULTIPLE_RESULTS else [out], strict=True))
        elif type(op) in RUNNERS:  # bodies with the generalized parameters too

            def body(inner: Any) -> Callable[..., list[Any]]:
                return lambda *values: interpret(inner, generalized, dims, constants, values)

            outputs = RUNNERS[type(op)](op, body, [env[v] for v in op.operands])
            env.update(zip(op.results, outputs, strict=True))
        else:
            return interpret_block(block, constants, args)  # names the op it cannot run
    raise BackendError("tpu.region without tpu.yield")


def region_function(
    region: Any, generalized: Generalized, dims: Mapping[str, Any]
) -> Callable[..., Any]:
    """The region as a function of its inputs, traced with symbolic `dims`."""
    # lazy: loads 3 more modules (dialects)
    from mlconv.dialects import tpu

    block = region.body.block
    constants = {
        op: to_numpy(op.value)
        for op in region.body.walk()
        if isinstance(op, tpu.ConstantOp) and op not in generalized.splats
    }
    return lambda *args: tuple(interpret(block, generalized, dims, constants, args))


def arg_specs(block: Any, generalized: Generalized, dims: Mapping[str, Any]) -> list[Any]:

    return [
        jax.ShapeDtypeStruct(generalized.shape(arg, dims), numpy_dtype(arg.type.get_element_type()))
        for arg in block.args
    ]


def export_region(region: Any, generalized: Generalized, platforms: Sequence[str]) -> Any:
    """The region as a `jax.export.Exported` whose inputs have the symbolic dimensions."""

    dims = symbolic_scope(generalized.symbols)
    body = region_function(region, generalized, dims)
    specs = arg_specs(region.body.block, generalized, dims)
    try:
        return export_function(body, specs, platforms)
    except SymbolicShapeError:
        raise
    except Exception as error:  # noqa: BLE001 - jax's shape-polymorphism refusals
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise SymbolicShapeError.at(
            region,
            f"cannot be exported with symbolic dimensions ({', '.join(generalized.symbols.names)}): "
            f"{first}; give static input shapes (--input-shapes)",
        ) from None


def has_dynamic_inputs(module: Any) -> bool:
    """Whether @main has an input with a dynamic dim (an input whose value decides a shape
    then fails to lower at the probe sizes, in one line)."""
    # lazy: loads 7 more modules (dialects, signature)
    from mlconv.signature.module_io import find_main

    main = find_main(module)
    return any(d < 0 for a in main.body.block.args for d in getattr(a.type, "get_shape", tuple)())


def export_symbolic(
    module: Any, lower: Callable[[Any, str], Any], platforms: Sequence[str] = ("cpu",)
) -> Any:
    """A framework- or core-level module whose inputs have dynamic dims, lowered by
    `lower(copy, input_shapes)` at the probe sizes and exported as one `jax.export.Exported`
    with symbolic dims (its @main must become one tpu.region)."""
    # lazy: loads 16 more modules (dialects, passes, semantics, signature)
    from mlconv.dialects import tpu
    from mlconv.passes.core_to_tpu import input_name
    from mlconv.signature.module_io import find_main

    main = find_main(module)
    args = main.body.block.args
    shapes = [tuple(a.type.get_shape()) for a in args]
    names = [input_name(main, i) for i in range(len(args))]
    symbols = Symbols.of(shapes, names)
    probes = symbols.probes()
    lowered = []
    for probe in probes:
        at = ";".join(
            f"{n}:{','.join(str(d) for d in s)}"
            for n, s in zip(names, symbols.shapes_at(probe, shapes), strict=True)
        )
        lowered.append(lower(module.clone(), at))
    generalized = generalize(lowered, symbols, probes)
    regions = [op for op in find_main(lowered[0]).body.block.ops if isinstance(op, tpu.RegionOp)]
    if len(regions) != 1:
        raise BackendError("StableHLO export needs @main to be exactly one tpu.region")
    return export_region(regions[0], generalized, platforms)


# --------------------------------------------------------------------------- loading

DEFAULT_CACHE_SIZE = 8
"""Compiled shapes a PerShape keeps (least recently used dropped first)."""


class PerShape:
    """A shape-polymorphic `jax.export.Exported` as a callable that compiles each concrete
    input shape once (an LRU of `cache_size` executables); `compilations` counts the XLA
    compilations, `cached` the executables held. Thread-safe."""

    def __init__(self, exported: Any, cache_size: int = DEFAULT_CACHE_SIZE):
        import threading
        from collections import OrderedDict

        self.exported = exported
        self.cache_size = cache_size
        self.compilations = 0
        self._programs: OrderedDict[Any, Any] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def cached(self) -> int:
        return len(self._programs)

    def executable(self, specs: Sequence[Any]) -> Any:
        key = tuple((tuple(s.shape), np.dtype(s.dtype).str) for s in specs)
        with self._lock:
            program = self._programs.get(key)
            if program is not None:
                self._programs.move_to_end(key)
                return program
            program = jax.jit(self.exported.call).lower(*specs).compile()
            self.compilations += 1
            self._programs[key] = program
            while len(self._programs) > self.cache_size:
                self._programs.popitem(last=False)
            return program

    def __call__(self, *args: Any) -> Any:
        specs = [jax.ShapeDtypeStruct(np.shape(a), _dtype(a)) for a in args]
        return self.executable(specs)(*args)


def _dtype(value: Any) -> Any:
    dtype = getattr(value, "dtype", None)
    return dtype if dtype is not None else np.asarray(value).dtype

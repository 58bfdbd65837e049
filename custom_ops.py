"""Custom ops run on the host: Python implementations registered by (domain, op type).

An op nobody lowers becomes `core.Custom` under `allow-custom` (see `dialects/core_custom.py`).
Unless a plugin lowers it, what it computes is a Python function registered here:

    import mlconv.custom_ops as custom_ops

    def softclip(x, *, alpha=1.0):          # numpy arrays in, numpy array(s) out
        return alpha * np.tanh(x / alpha)

    custom_ops.register("com.example", "SoftClip", softclip)

The function receives the op's inputs as numpy arrays and its attributes as keyword arguments,
and returns one array per result. `shapes(*input_structs, **attributes)` may give the result
`jax.ShapeDtypeStruct`s; without it they are the op's declared static result types, else found
by running the function once on zeros of the input shapes.

All of this goes through one jax primitive, `mlconv_custom_call` (`custom_call_p`), whose
parameters are the domain, the op type, the attributes and the result shapes and dtypes:
core.Custom's semantics binds it, so `core-to-tpu` emits it as the `tpu.custom_call` op; eagerly
(the interpreters, constant folding) it calls the function at once, and under `jax.jit` it is a
`jax.pure_callback` on the host.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np
from jax.extend.core import Primitive
from jax.interpreters import mlir

from mlconv.errors import BackendError

CUSTOM_CALL = "mlconv_custom_call"


@dataclass(frozen=True)
class Implementation:
    """A registered host implementation and, optionally, its shape function."""

    function: Callable[..., Any]
    shapes: Callable[..., Any] | None = None
    origin: str = ""


IMPLEMENTATIONS: dict[tuple[str, str], Implementation] = {}
"""(domain, op type) -> how the host computes it."""


def register(
    domain: str,
    op_type: str,
    function: Callable[..., Any],
    shapes: Callable[..., Any] | None = None,
    *,
    origin: str = "",
    replace: bool = False,
) -> None:
    """Register the host implementation of custom op `domain`.`op_type`. Registering a key
    twice is a ValueError unless `replace`."""
    key = (domain, op_type)
    if key in IMPLEMENTATIONS and not replace:
        raise ValueError(f"custom op {label(domain, op_type)} has an implementation already")
    IMPLEMENTATIONS[key] = Implementation(function, shapes, origin)
    _forget_traces()


def unregister(domain: str, op_type: str) -> None:
    if IMPLEMENTATIONS.pop((domain, op_type), None) is not None:
        _forget_traces()


def _forget_traces() -> None:
    """Traces of core.Custom hold the result shapes an implementation gave: drop the cached
    traces of core semantics when the implementations change."""
    tracing = sys.modules.get("mlconv.semantics.tracing")
    if tracing is not None:
        tracing.clear_traces()


def label(domain: str, op_type: str) -> str:
    return f"{domain}.{op_type}" if domain else op_type


def missing_implementation(domain: str, op_type: str) -> str | None:
    """Why (domain, op_type) cannot run on the host (nothing registered), or None."""
    if (domain, op_type) in IMPLEMENTATIONS:
        return None
    return (
        f"custom op {label(domain, op_type)} has no host implementation: register one with "
        "mlconv.custom_ops.register, or lower it in a plugin"
    )


def _implementation(domain: str, op_type: str) -> Implementation:
    problem = missing_implementation(domain, op_type)
    if problem:
        raise BackendError(problem)
    return IMPLEMENTATIONS[(domain, op_type)]


def _call(domain: str, op_type: str, attrs: tuple, arrays: Sequence[Any]) -> list[np.ndarray]:
    function = _implementation(domain, op_type).function
    out = function(*[np.asarray(a) for a in arrays], **dict(attrs))
    return [np.asarray(r) for r in (out if isinstance(out, tuple | list) else [out])]


def _check(outs: list[np.ndarray], shapes: tuple, dtypes: tuple, name: str) -> list[np.ndarray]:
    if len(outs) != len(shapes):
        raise ValueError(f"custom op {name} returned {len(outs)} results, expected {len(shapes)}")
    checked = []
    for index, (out, shape, dtype) in enumerate(zip(outs, shapes, dtypes, strict=True)):
        if tuple(out.shape) != tuple(shape):
            raise ValueError(
                f"custom op {name} result #{index} has shape {tuple(out.shape)}, "
                f"expected {tuple(shape)}"
            )
        checked.append(out.astype(dtype, copy=False))
    return checked


def result_structs(
    domain: str,
    op_type: str,
    attrs: tuple,
    inputs: Sequence[Any],
    declared: Sequence[tuple[tuple[int, ...], Any]],
) -> list[jax.ShapeDtypeStruct]:
    """The result shapes and dtypes of a custom op on `inputs` (arrays or abstract values):
    from its shape function, else its declared types when static, else by running it on zeros."""
    implementation = IMPLEMENTATIONS.get((domain, op_type))
    structs = [jax.ShapeDtypeStruct(tuple(a.shape), np.dtype(a.dtype)) for a in inputs]
    if implementation is not None and implementation.shapes is not None:
        out = implementation.shapes(*structs, **dict(attrs))
        out = out if isinstance(out, tuple | list) else [out]
        return [jax.ShapeDtypeStruct(tuple(s.shape), np.dtype(s.dtype)) for s in out]
    if declared and all(d is not None and all(n >= 0 for n in s) for s, d in declared):
        return [jax.ShapeDtypeStruct(tuple(s), np.dtype(d)) for s, d in declared]
    zeros = [np.zeros(s.shape, s.dtype) for s in structs]
    outs = _call(domain, op_type, attrs, zeros)
    return [jax.ShapeDtypeStruct(o.shape, o.dtype) for o in outs]


# --- the primitive ------------------------------------------------------------------------------

custom_call_p = Primitive(CUSTOM_CALL)
custom_call_p.multiple_results = True


def _impl(*arrays, domain, op_type, attrs, result_shapes, result_dtypes):
    name = label(domain, op_type)
    outs = _check(_call(domain, op_type, attrs, arrays), result_shapes, result_dtypes, name)
    return [jax.numpy.asarray(o) for o in outs]


def _abstract(*avals, domain, op_type, attrs, result_shapes, result_dtypes):
    return [
        jax.core.ShapedArray(tuple(s), np.dtype(d))
        for s, d in zip(result_shapes, result_dtypes, strict=True)
    ]


def _on_host(*arrays, domain, op_type, attrs, result_shapes, result_dtypes):
    name = label(domain, op_type)
    specs = [
        jax.ShapeDtypeStruct(tuple(s), np.dtype(d))
        for s, d in zip(result_shapes, result_dtypes, strict=True)
    ]

    _implementation(domain, op_type)  # when the program is built, not when it runs

    def host(*values):
        outs = _call(domain, op_type, attrs, values)
        return _check(outs, result_shapes, result_dtypes, name)

    return jax.pure_callback(host, specs, *arrays, vmap_method="sequential")


custom_call_p.def_impl(_impl)
custom_call_p.def_abstract_eval(_abstract)
mlir.register_lowering(custom_call_p, mlir.lower_fun(_on_host, multiple_results=True))


def custom_call(
    inputs: Sequence[Any],
    domain: str,
    op_type: str,
    attrs: tuple,
    declared: Sequence[tuple[tuple[int, ...], Any]] = (),
) -> list[Any]:
    """Bind the custom-call primitive: the results of custom op `domain`.`op_type` on `inputs`."""
    structs = result_structs(domain, op_type, attrs, inputs, declared)
    return custom_call_p.bind(
        *inputs,
        domain=domain,
        op_type=op_type,
        attrs=attrs,
        result_shapes=tuple(tuple(int(d) for d in s.shape) for s in structs),
        result_dtypes=tuple(np.dtype(s.dtype) for s in structs),
    )


__all__ = [
    "CUSTOM_CALL",
    "IMPLEMENTATIONS",
    "Implementation",
    "custom_call",
    "custom_call_p",
    "label",
    "register",
    "result_structs",
    "unregister",
]

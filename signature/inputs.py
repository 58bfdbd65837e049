"""Checking a call's inputs against the signature the model declares, as onnxruntime does.

`InputSpec.from_main(main)` reads `@main`'s arguments (name, element type, dims; `?` for a
dynamic dim, no dims at all for an unranked input); `bind_inputs(specs, args, named)` turns a
call's positional or named arguments into numpy arrays in the model's input order, or raises
one `InputError` line naming the input, what the model expects and what it got:

    input 'data_0': expected shape [1, 3, 224, 224], got [1, 3, 10, 10]
    input 'x': expected dtype float32, got float64

A numpy array must have the declared dtype (no silent cast, as onnxruntime); a Python scalar
or list is converted to it. A JAX array is checked the same way and kept as it is, so that an
input already on the accelerator is not copied through the host (`CompiledModule.on_device`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import jax
import numpy as np

from mlconv.errors import InputError, MlconvError

if TYPE_CHECKING:
    from xdsl.dialects import func


@dataclass(frozen=True)
class InputSpec:
    """One model input: its name, dtype (None: any) and dims (None: unranked; -1: dynamic)."""

    name: str
    dtype: np.dtype | None
    dims: tuple[int, ...] | None

    @staticmethod
    def from_main(main: func.FuncOp) -> list[InputSpec]:
        # Here, not at the top: a warm process (backends/program_cache.py) binds inputs
        # without loading xDSL and the dialects.
        from xdsl.dialects.builtin import DictionaryAttr, StringAttr, TensorType

        # lazy: loads xDSL, which this module does not
        from mlconv.dense import numpy_dtype

        specs = []
        attrs = main.arg_attrs
        for index, arg in enumerate(main.body.block.args):
            entry = attrs.data[index] if attrs is not None and index < len(attrs.data) else None
            label = entry.data.get("mlconv.name") if isinstance(entry, DictionaryAttr) else None
            name = label.data if isinstance(label, StringAttr) else f"input{index}"
            dtype = dims = None
            if hasattr(arg.type, "get_element_type"):
                try:
                    dtype = numpy_dtype(arg.type.get_element_type())
                except (MlconvError, KeyError, TypeError, ValueError):
                    dtype = None
            if isinstance(arg.type, TensorType):
                dims = tuple(arg.type.get_shape())
            specs.append(InputSpec(name, dtype, dims))
        return specs

    def describe(self) -> str:
        if self.dims is None:
            return "any shape"
        return "[" + ", ".join("?" if d < 0 else str(d) for d in self.dims) + "]"

    def check(self, value: Any) -> np.ndarray | jax.Array:
        """`value` as an array of this input's dtype (a JAX array stays one, where it is);
        InputError where it contradicts the spec."""
        if value is None:  # np.asarray(None, np.float32) would be NaN
            raise InputError(
                f"input '{self.name}': got None (an empty optional), which is not supported"
            )
        if type(value) is np.ndarray and value.dtype == self.dtype and self.dims is not None:
            # The common case, checked in few steps (a generation loop calls per token).
            shape = value.shape
            if len(shape) == len(self.dims) and all(
                d < 0 or d == g for d, g in zip(self.dims, shape, strict=True)
            ):
                return value
        if isinstance(value, jax.Array | np.ndarray | np.generic) or hasattr(value, "__array__"):
            array = value if isinstance(value, jax.Array) else np.asarray(value)
            if self.dtype is not None and array.dtype != self.dtype:
                raise InputError(
                    f"input '{self.name}': expected dtype {self.dtype.name}, got {array.dtype.name}"
                )
        else:
            try:
                array = np.asarray(value, dtype=self.dtype)
            except (TypeError, ValueError) as error:
                raise InputError(
                    f"input '{self.name}': cannot convert it to an array: {error}"
                ) from None
        if self.dims is None:
            return array
        if array.ndim != len(self.dims) or any(
            d >= 0 and d != g for d, g in zip(self.dims, array.shape, strict=True)
        ):
            given = "[" + ", ".join(str(d) for d in array.shape) + "]"
            raise InputError(f"input '{self.name}': expected shape {self.describe()}, got {given}")
        return array


def bind_inputs(
    specs: Sequence[InputSpec], args: Sequence[Any], named: Mapping[str, Any]
) -> list[np.ndarray | jax.Array]:
    """The call's inputs in the model's order, each checked against its spec."""
    names = [spec.name for spec in specs]
    if named:
        if args:
            raise InputError("pass inputs either positionally or by name, not both")
        if len(named) == len(names) and all(n in named for n in names):
            return [spec.check(named[spec.name]) for spec in specs]
        missing = [n for n in names if n not in named]
        unknown = [n for n in named if n not in names]
        if missing or unknown:
            parts = [f"missing inputs: {', '.join(missing)}"] if missing else []
            parts += [f"unknown inputs: {', '.join(unknown)}"] if unknown else []
            raise InputError("; ".join(parts) + f" (the model's inputs: {', '.join(names)})")
        args = [named[n] for n in names]
    if len(args) != len(specs):
        raise InputError(f"expected {len(specs)} input(s) ({', '.join(names)}), got {len(args)}")
    return [spec.check(value) for spec, value in zip(specs, args, strict=True)]

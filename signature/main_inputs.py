"""A module's `@main` inputs as numpy arrays: their names, shapes and dtypes, seeded random
arrays of them, and arrays given by name put in their order."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from mlconv.dense import numpy_dtype
from mlconv.errors import OptionError
from mlconv.signature.module_io import find_main, value_names


def main_inputs(module) -> list[tuple[str, tuple[int, ...], Any]]:
    """(name, shape with `?` as 1, numpy dtype) of each `@main` argument."""
    main = find_main(module, "compare")
    args = main.body.block.args
    found = []
    for name, arg in zip(value_names(main.arg_attrs, len(args), "arg"), args, strict=True):
        shape = tuple(d if d >= 0 else 1 for d in arg.type.get_shape())
        found.append((name, shape, numpy_dtype(arg.type.get_element_type())))
    return found


def make_inputs(module, inputs: Any, seed: int) -> tuple[list[str], list[np.ndarray]]:
    """The model's input names and arrays: `inputs` (a dict by name, or a list in order), or
    seeded random arrays (standard normal floats, integers in [0, 4)) of the declared shapes."""
    specs = main_inputs(module)
    names = [name for name, _, _ in specs]
    if inputs is None:
        rng = np.random.default_rng(seed)
        arrays = []
        for _, shape, dtype in specs:
            if np.issubdtype(dtype, np.floating):
                arrays.append(rng.standard_normal(shape).astype(dtype))
            elif dtype == np.bool_:
                arrays.append(rng.integers(0, 2, shape).astype(dtype))
            else:
                arrays.append(rng.integers(0, 4, shape).astype(dtype))
        return names, arrays
    if isinstance(inputs, Mapping):
        arrays = order_inputs(dict(inputs), names)
    else:
        arrays = list(inputs)
    if len(arrays) != len(specs):
        raise OptionError(f"the model has {len(specs)} inputs, {len(arrays)} given")
    declared = [tuple(a.type.get_shape()) for a in find_main(module, "compare").body.block.args]
    for name, array, dims in zip(names, arrays, declared, strict=True):
        shape = np.shape(array)
        if len(shape) != len(dims) or any(
            d >= 0 and d != s for d, s in zip(dims, shape, strict=True)
        ):
            wanted = "x".join("?" if d < 0 else str(d) for d in dims)
            raise OptionError(f"input {name} has shape {shape}, the model declares {wanted}")
    return names, [
        np.asarray(a, dtype=dtype) for a, (_, _, dtype) in zip(arrays, specs, strict=True)
    ]


def order_inputs(arrays: dict[str, np.ndarray], names: list[str] | None) -> list[np.ndarray]:
    """The arrays in the model's input order, by name or by position (`arr_0`, `arr_1`, ...)."""
    positional = [f"arr_{i}" for i in range(len(arrays))]
    if sorted(arrays) == sorted(positional) and not (names and set(names) & set(arrays)):
        return [arrays[key] for key in positional]
    if names is None:
        raise OptionError(
            "the model's input names are unknown: store the inputs positionally "
            "(np.savez(f, a, b)) in the order of the model's inputs"
        )
    missing = [n for n in names if n not in arrays]
    if missing:
        raise OptionError(
            f"input(s) {', '.join(missing)} missing from --inputs (it has: "
            f"{', '.join(sorted(arrays)) or 'nothing'})"
        )
    unknown = sorted(set(arrays) - set(names))
    if unknown:
        raise OptionError(
            f"--inputs has array(s) {', '.join(unknown)} that are not model inputs "
            f"(inputs: {', '.join(names)})"
        )
    return [arrays[n] for n in names]

"""Dynamic dims served from a few compiled shapes: pad to a bucket, mask, slice back.

A model with a dynamic dim compiles one program per size it is called at (specialize.py): a
decoder whose KV cache grows by one position per generated token compiles one per token.
`PaddedModule` pads each such dim to the next of a few sizes (`PadTo.buckets`) with zeros,
widens the attention mask by as many zeros (the padded positions masked out), runs the program
of that bucket and slices the outputs back to their true sizes.

    run = mlconv.compile("decoder.onnx", pad_dims={
        "past_sequence_length": PadTo(buckets=(64, 128, 256), mask="attention_mask", side="left")})

A key of `pad_dims` is an ONNX dim name (every input axis of that name is padded) or
`"<input name or glob>:<axis>"` (`"past_key_values.*:2"`). `mask` names an input whose last
axis grows with the padding (filled with zeros there); `side` is where the zeros go.

Padding is exact only if the padded positions reach no output but through the mask, and the
outputs' padded axes can be cut back. Neither is taken on trust: the first call runs its
inputs unpadded through the reference interpreter (interpreters/) and padded through the
compiled program and compares (`RTOL`, `ATOL`); it learns from the two which output axes
grew with the padding (they are sliced on every later call), and every bucket's first call
also runs with the padded positions filled with random values instead of zeros, which must not
change the outputs. The first check's verdict (the output cuts) is kept in the persistent
compilation cache's folder (`record_path`: keyed by the model's bytes, the padding and mlconv's
version), so a later process skips the interpreter and runs the random-fill checks only.
Where padding is not exact, `pad_dims` given explicitly raises
`BackendError` with the one-line reason; the default (`default_pad_dims`: the input names
optimum and transformers' exporters write, `past_key_values.*` and `attention_mask`) falls
back to compiling every shape, with a warning.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mlconv.errors import BackendError, InputError, OptionError
from mlconv.signature.inputs import bind_inputs
from mlconv.version import __version__

DEFAULT_BUCKETS = (64, 128, 256, 512, 1024, 2048, 4096)
"""Sizes a padded dim takes; past the last one, the next power of two."""

PLANS = 4096
"""Input shapes a PaddedModule keeps the padding and slicing of (then it starts afresh)."""

RTOL, ATOL = 1e-4, 1e-5
"""How close padded outputs must be to unpadded ones (the reductions sum in another order)."""


@dataclass(frozen=True)
class PadTo:
    """How a dynamic dim may be padded: to the first of `buckets` at least its size, with
    zeros on `side` ("left" or "right"), the input `mask` (if any) widened along its last axis
    by as many zeros on the same side."""

    buckets: tuple[int, ...] = DEFAULT_BUCKETS
    mask: str | None = None
    side: str = "right"

    def __post_init__(self) -> None:
        if self.side not in ("left", "right"):
            raise OptionError(f"PadTo side must be 'left' or 'right', got {self.side!r}")
        if not self.buckets or any(not isinstance(b, int) or b < 1 for b in self.buckets):
            raise OptionError(f"PadTo buckets must be positive integers, got {self.buckets!r}")
        object.__setattr__(self, "buckets", tuple(sorted(self.buckets)))

    def bucket(self, size: int) -> int:
        """The padded size of a dim of `size`."""
        for bucket in self.buckets:
            if bucket >= size:
                return bucket
        bucket = self.buckets[-1]
        while bucket < size:
            bucket *= 2
        return bucket


@dataclass(frozen=True)
class PaddedDim:
    """A `pad_dims` entry resolved against the model's inputs."""

    name: str
    spec: PadTo
    axes: tuple[tuple[int, int], ...]  # (input index, axis)
    mask: int | None  # input index of the mask (padded along its last axis)


def parse_pad_options(specs: list[str]) -> dict[str, PadTo]:
    """mlconv-run's `--pad` values, `DIM=B1,B2,...[:mask=NAME][:side=left|right]` each
    (DIM an ONNX dim name or `<input glob>:<axis>`), as `pad_dims`."""
    pads: dict[str, PadTo] = {}
    for spec in specs:
        key, sep, rest = spec.partition("=")
        buckets_text, *fields = rest.split(":")
        try:
            buckets = tuple(int(b) for b in buckets_text.split(",") if b.strip())
        except ValueError:
            buckets = ()
        options = dict(field.partition("=")[::2] for field in fields)
        if not sep or not key or not buckets or set(options) - {"mask", "side"}:
            raise OptionError(
                f"bad --pad '{spec}' (expected DIM=B1,B2,...[:mask=NAME][:side=left|right])"
            )
        pads[key] = PadTo(buckets, options.get("mask") or None, options.get("side", "right"))
    return pads


def default_pad_dims(input_names: list[str]) -> dict[str, PadTo]:
    """Padding for the inputs optimum and transformers' ONNX exporters write for a decoder with
    a KV cache: the past length of `past_key_values.*` (axis 2) to `DEFAULT_BUCKETS`, on the
    left, `attention_mask` widened with it. Empty for any other model."""
    if "attention_mask" in input_names and any(
        n.startswith("past_key_values.") for n in input_names
    ):
        return {"past_key_values.*:2": PadTo(mask="attention_mask", side="left")}
    return {}


def resolve(
    pad_dims: Mapping[str, PadTo],
    input_names: list[str],
    shapes: list[tuple[int, ...] | None],
    dim_names: Mapping[str, list[str | None]] | None = None,
) -> list[PaddedDim]:
    """`pad_dims` as (input, axis) lists, given the inputs' declared dims (-1: dynamic);
    OptionError for a key or mask that names nothing, or a static axis."""
    ranks = [len(shape or ()) for shape in shapes]
    resolved = []
    for key, spec in pad_dims.items():
        if not isinstance(spec, PadTo):
            raise OptionError(f"pad_dims['{key}'] must be a PadTo, got {type(spec).__name__}")
        axes: list[tuple[int, int]] = []
        pattern, colon, axis_text = key.rpartition(":")
        if colon and axis_text.lstrip("-").isdigit():
            axis = int(axis_text)
            for index, name in enumerate(input_names):
                if fnmatch.fnmatchcase(name, pattern):
                    if not -ranks[index] <= axis < ranks[index]:
                        raise OptionError(f"pad_dims '{key}': input '{name}' has no axis {axis}")
                    axes.append((index, axis % ranks[index]))
        else:
            for index, name in enumerate(input_names):
                for axis, dim in enumerate((dim_names or {}).get(name, [])):
                    if dim == key:
                        axes.append((index, axis))
        for index, axis in axes:
            if shapes[index] is not None and shapes[index][axis] >= 0:
                raise OptionError(
                    f"pad_dims '{key}': axis {axis} of input '{input_names[index]}' is static "
                    f"({shapes[index][axis]})"
                )
        if not axes:
            raise OptionError(
                f"pad_dims '{key}': no input has a dim of that name (give an ONNX dim name or "
                "'<input>:<axis>')"
            )
        mask = None
        if spec.mask is not None:
            if spec.mask not in input_names:
                raise OptionError(f"pad_dims '{key}': the model has no input '{spec.mask}'")
            mask = input_names.index(spec.mask)
            if any(index == mask for index, _ in axes):
                mask = None  # padded as one of the dim's axes already
        resolved.append(PaddedDim(key, spec, tuple(axes), mask))
    return resolved


def _pad(array: np.ndarray, axis: int, amount: int, side: str, fill: Any = 0) -> np.ndarray:
    if amount == 0:
        return array
    shape = list(array.shape)
    shape[axis] = amount
    padding = np.full(shape, fill, array.dtype) if np.isscalar(fill) else fill(shape, array)
    parts = [padding, array] if side == "left" else [array, padding]
    return np.concatenate(parts, axis=axis)


def _cut(array: np.ndarray, axis: int, amount: int, side: str) -> np.ndarray:
    if amount == 0:
        return array
    index = [slice(None)] * array.ndim
    index[axis] = slice(amount, None) if side == "left" else slice(0, array.shape[axis] - amount)
    return array[tuple(index)]


class PaddedModule:
    """Callable like SpecializingModule (which it wraps): pads `dims` to their buckets, runs,
    slices back. `compilations` and `cached` are the wrapped module's."""

    def __init__(
        self, inner: Any, dims: list[PaddedDim], explicit: bool, record: Path | None = None
    ):
        self.inner, self.dims, self.explicit = inner, dims, explicit
        self.input_names, self.output_names = inner.input_names, inner.output_names
        self.input_specs = inner.input_specs
        self.cuts: list[list[int | None]] | None = None  # per output axis: the dim it grew by
        self.unpadded: str | None = None  # why padding was given up (default pad_dims only)
        self._checked: set[Any] = set()  # padded shapes whose random-fill check passed
        self._plans: dict[tuple, tuple[list, list]] = {}  # input shapes: (pads, cuts)
        self.record = record
        if record is not None:
            self.cuts = _read_record(record, len(self.output_names), len(dims))

    @property
    def compilations(self) -> int:
        return self.inner.compilations

    @property
    def cached(self) -> int:
        return self.inner.cached

    def __call__(self, *args: Any, **named: Any) -> list[np.ndarray]:
        specs = self.input_specs
        if named and not args and len(named) == len(specs) and all(s.name in named for s in specs):
            bound = [spec.check(named[spec.name]) for spec in specs]  # by name, as generation
        else:
            bound = bind_inputs(specs, args, named)
        arrays = [a if type(a) is np.ndarray else np.asarray(a) for a in bound]
        if self.unpadded is not None:
            return self.inner(*arrays)
        plan = self._plans.get(tuple(a.shape for a in arrays))
        if plan is not None:  # a checked bucket, at input shapes seen before: few steps
            pads, cuts, run = plan
            padded = list(arrays)
            for index, shape, where in pads:
                padded[index] = array = np.zeros(shape, arrays[index].dtype)
                array[where] = arrays[index]
            return [
                np.asarray(o) if cut is None else np.asarray(o)[cut]
                for o, cut in zip(run(padded), cuts, strict=True)
            ]
        deltas = self._deltas(arrays)
        padded = self._padded(arrays, deltas)
        if self.cuts is None or self._key(padded) not in self._checked:
            try:
                outputs = self._verify(arrays, deltas, padded)
            except BackendError as error:
                if self.explicit:
                    raise
                warnings.warn(f"mlconv: {error}; compiling every shape instead", stacklevel=2)
                self.unpadded = str(error)
                return self.inner(*arrays)
        else:
            outputs = self._sliced(self.inner.run_bound(padded), deltas)
        if self.cuts is not None and self._key(padded) in self._checked:
            self._remember(arrays, deltas, padded)
        return outputs

    def _remember(self, arrays: list[np.ndarray], deltas: list[int], padded: list[Any]) -> None:
        """Keep how inputs of these shapes are padded and outputs cut (`_plans`), as slices,
        and the bucket's program (`runner`, where the wrapped module has one): the next call
        at these shapes skips `_deltas`, `_padded`, `_sliced` and the program lookup."""
        if len(self._plans) >= PLANS:
            self._plans.clear()
        placed: dict[int, tuple[list[int], list[int]]] = {}  # index: (shape, offsets)
        for dim, delta in zip(self.dims, deltas, strict=True):
            if not delta:
                continue
            axes = list(dim.axes) + (
                [(dim.mask, arrays[dim.mask].ndim - 1)] if dim.mask is not None else []
            )
            for index, axis in axes:
                shape, offsets = placed.setdefault(
                    index, (list(arrays[index].shape), [0] * arrays[index].ndim)
                )
                shape[axis] += delta
                offsets[axis] += delta if dim.spec.side == "left" else 0
        pads = [
            (
                index,
                tuple(shape),
                tuple(slice(o, o + n) for o, n in zip(offsets, arrays[index].shape, strict=True)),
            )
            for index, (shape, offsets) in placed.items()
        ]
        cuts = []
        for row in self.cuts:
            where = [slice(None)] * len(row)
            for axis, which in enumerate(row):
                if which is not None and deltas[which]:
                    amount = deltas[which]
                    left = self.dims[which].spec.side == "left"
                    where[axis] = slice(amount, None) if left else slice(0, -amount)
            cut = tuple(where)
            cuts.append(None if all(w == slice(None) for w in where) else cut)
        runner = getattr(self.inner, "runner", None)
        run = (runner(padded) if runner is not None else None) or self.inner.run_bound
        self._plans[tuple(a.shape for a in arrays)] = (pads, cuts, run)

    def _deltas(self, arrays: list[np.ndarray]) -> list[int]:
        deltas = []
        for dim in self.dims:
            sizes = {arrays[i].shape[axis] for i, axis in dim.axes}
            if len(sizes) != 1:
                names = ", ".join(
                    f"{self.input_names[i]}[{axis}]={arrays[i].shape[axis]}" for i, axis in dim.axes
                )
                raise InputError(f"dim '{dim.name}' differs between inputs: {names}")
            size = sizes.pop()
            deltas.append(dim.spec.bucket(size) - size)
        return deltas

    def _padded(self, arrays: list[np.ndarray], deltas: list[int], fill: Any = 0) -> list[Any]:
        padded = list(arrays)
        for dim, delta in zip(self.dims, deltas, strict=True):
            for index, axis in dim.axes:
                value = 0 if index == dim.mask or self.input_names[index] == dim.spec.mask else fill
                padded[index] = _pad(padded[index], axis, delta, dim.spec.side, value)
            if dim.mask is not None:
                mask = padded[dim.mask]
                padded[dim.mask] = _pad(mask, mask.ndim - 1, delta, dim.spec.side)
        return padded

    @staticmethod
    def _key(arrays: list[np.ndarray]) -> Any:
        return tuple((a.shape, a.dtype.str) for a in arrays)

    def _sliced(self, outputs: list[Any], deltas: list[int]) -> list[np.ndarray]:
        results = []
        for output, cuts in zip(outputs, self.cuts, strict=True):
            array = np.asarray(output)
            for axis, which in enumerate(cuts):
                if which is not None:
                    array = _cut(array, axis, deltas[which], self.dims[which].spec.side)
            results.append(array)
        return results

    def _verify(
        self, arrays: list[np.ndarray], deltas: list[int], padded: list[Any]
    ) -> list[np.ndarray]:
        """The call's outputs, checked: padded against unpadded (the interpreter) on the first
        call that pads every dim; the padded positions filled with random values against zeros
        on each bucket's first call."""
        outputs = [np.asarray(o) for o in self.inner(*padded)]
        if self.cuts is None:
            # lazy: loads onnx, xDSL, which this module does not
            from mlconv.interpreters.run import run_module

            reference = run_module(self.inner.module, arrays)
            if not all(deltas):  # nothing to learn the cuts from: this call needs none
                self._compare(outputs, reference, "unpadded")
                return outputs
            self.cuts = self._learn(outputs, reference, deltas)
            self._compare(self._sliced(outputs, deltas), reference, "unpadded")
            if self.record is not None:
                _write_record(self.record, self.cuts)
        rng = np.random.default_rng(0)

        def noise(shape, array):
            if array.dtype.kind == "f":
                return rng.standard_normal(shape).astype(array.dtype)
            if array.size == 0:
                return np.zeros(shape, array.dtype)
            return rng.choice(array.reshape(-1), size=shape)

        if any(deltas):
            noisy = self._padded(arrays, deltas, noise)
            self._compare(
                self._sliced(self.inner(*noisy), deltas),
                self._sliced(outputs, deltas),
                "zero-padded (the padded positions reach the outputs: a mask the model ignores)",
            )
        self._checked.add(self._key(padded))
        return self._sliced(outputs, deltas)

    def _learn(
        self, outputs: list[np.ndarray], reference: list[np.ndarray], deltas: list[int]
    ) -> list[list[int | None]]:
        """Per output axis, which padded dim it grew by (None: it did not grow)."""
        cuts = []
        for name, got, want in zip(self.output_names, outputs, reference, strict=True):
            row: list[int | None] = []
            for axis, (a, b) in enumerate(zip(got.shape, want.shape, strict=True)):
                if a == b:
                    row.append(None)
                    continue
                which = [k for k, d in enumerate(deltas) if d == a - b]
                if len(which) != 1:
                    raise BackendError(
                        f"padding is not exact: output '{name}' axis {axis} is {a} padded and "
                        f"{b} unpadded, not by the padding of one dim"
                    )
                row.append(which[0])
            cuts.append(row)
        return cuts

    def _compare(self, got: list[np.ndarray], want: list[np.ndarray], against: str) -> None:
        names = ", ".join(d.name for d in self.dims)
        for name, a, b in zip(self.output_names, got, want, strict=True):
            if a.shape != b.shape:
                raise BackendError(
                    f"padding {names} is not exact: output '{name}' has shape {a.shape}, "
                    f"{b.shape} {against.split(' ')[0]}"
                )
            if a.dtype.kind == "f":
                ok = np.allclose(a, b, rtol=RTOL, atol=ATOL, equal_nan=True)
                error = float(np.max(np.abs(a.astype(np.float64) - b))) if a.size else 0.0
            else:
                ok, error = bool(np.array_equal(a, b)), float("nan")
            if not ok:
                raise BackendError(
                    f"padding {names} is not exact for this model: output '{name}' differs "
                    f"from the {against} run by {error:.3g}"
                )


def record_path(directory: Path, source: Any, dims: list[PaddedDim]) -> Path | None:
    """Where the verdict on padding `dims` of the model `source` (an ONNX file or ModelProto)
    is kept in the compilation cache `directory`: keyed by the model's bytes, the padding and
    mlconv's version. None for another source."""
    digest = hashlib.sha256()
    if isinstance(source, str | os.PathLike) and Path(source).is_file():
        with open(source, "rb") as stream:
            for block in iter(lambda: stream.read(1 << 20), b""):
                digest.update(block)
    elif hasattr(source, "SerializeToString"):
        digest.update(source.SerializeToString())
    else:
        return None

    digest.update(repr((__version__, dims)).encode())
    return directory / "padding" / f"{digest.hexdigest()}.json"


def _read_record(path: Path, outputs: int, dims: int) -> list[list[int | None]] | None:
    """The output cuts a previous process verified, or None (none, or not of this shape)."""
    try:
        cuts = json.loads(path.read_text())["cuts"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    valid = (
        isinstance(cuts, list)
        and len(cuts) == outputs
        and all(
            isinstance(row, list)
            and all(c is None or (isinstance(c, int) and 0 <= c < dims) for c in row)
            for row in cuts
        )
    )
    return cuts if valid else None


def _write_record(path: Path, cuts: list[list[int | None]]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps({"cuts": cuts}))
        os.replace(temporary, path)
    except OSError:
        pass  # an unwritable cache: verify again next time

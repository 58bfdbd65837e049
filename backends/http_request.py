"""An HTTP request's body read as data: bounded, parsed and checked against the model's inputs
before anything is allocated for it (converter/serving.py; issue 32's Open Inference Protocol
endpoints are meant to parse through here too).

    limits = RequestLimits.for_model(manifest)          # or RequestLimits(max_body_bytes=...)
    length = content_length(headers, limits)            # RequestError(400 / 413)
    arrays = parse_body(body, content_type, specs, limits)   # RequestError(400 / 413 / 422)

Every failure is a `RequestError` with its HTTP status and one line:
- 400: not a request at all (Content-Length missing or not a number, chunked body, body not
  JSON / not an .npz, not `{"inputs": {...}}`, JSON nested deeper than `max_json_depth`);
- 413: more bytes than `max_body_bytes`, or an .npz whose members' recorded sizes (checked
  in the zip directory and in each .npy header, before reading) exceed `max_array_bytes`;
- 422: a well-formed request the model cannot take: unknown or missing inputs, wrong shape,
  a value the input's dtype cannot hold exactly (1.7 or `true` for an integer input, 10**30
  for int64, a string for a float): nothing is truncated, wrapped or cast silently.
"""

from __future__ import annotations

import io
import json
import math
import re
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mlconv.errors import InputError

NPZ = "application/x-npz"

DEFAULT_MAX_JSON_DEPTH = 34
"""numpy's 32 dimensions (64 in numpy 2, more than any model input has) plus the two levels
of `{"inputs": {NAME: ...}}`."""
MIN_BODY_BYTES = 1 << 20
JSON_BYTES_PER_VALUE = 32
"""What one number may take in JSON: `-1.2345678901234567e-300, ` is 26 characters."""


class RequestError(InputError):
    """A request refused with `status` (400, 413 or 422) and a one-line message."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class RequestLimits:
    """How much a request may hold. `max_body_bytes` bounds the bytes read from the socket,
    `max_array_bytes` the decompressed bytes of an .npz's arrays, `max_json_depth` nesting."""

    max_body_bytes: int = 64 << 20
    max_array_bytes: int = 256 << 20
    max_json_depth: int = DEFAULT_MAX_JSON_DEPTH

    @classmethod
    def for_model(
        cls, manifest: Mapping[str, Any], max_body_bytes: int | None = None
    ) -> RequestLimits:
        """Limits a few times the largest valid request: the inputs at their declared shapes,
        a batched input's dimension 0 at 4x the largest `max_batch_size` (a request may be
        split across batches), every number as JSON text; at least 1 MiB."""
        rows = max((b["options"]["max_batch_size"] for b in manifest.get("batches", [])), default=1)
        values = 0
        for entry in manifest["inputs"]:
            shape = entry.get("shape")
            if shape is None:
                return cls(
                    max_body_bytes=max_body_bytes or cls.max_body_bytes,
                    max_array_bytes=max(cls.max_array_bytes, max_body_bytes or 0),
                )
            dims = [d if d is not None and d >= 0 else 4 * rows for d in shape]
            if manifest.get("batches") and dims:
                dims[0] = max(dims[0], 4 * rows)
            values += math.prod(dims)
        body = max(MIN_BODY_BYTES, 4 * values * JSON_BYTES_PER_VALUE)
        if max_body_bytes is not None:
            body = max_body_bytes
        return cls(max_body_bytes=body, max_array_bytes=max(body, 4 * values * 8))


def content_length(headers: Any, limits: RequestLimits) -> int:
    """The request's Content-Length: a decimal number of bytes within the limit."""
    if (headers.get("Transfer-Encoding") or "").strip():
        raise RequestError(400, "Transfer-Encoding is not accepted: send a Content-Length")
    values = headers.get_all("Content-Length") or []
    if not values:
        raise RequestError(400, "the request has no Content-Length")
    if len(set(values)) != 1 or not re.fullmatch(r"[0-9]{1,20}", values[0].strip()):
        shown = ", ".join(v[:40] for v in values)
        raise RequestError(400, f"Content-Length must be one number of bytes, got {shown!r}")
    length = int(values[0])
    if length > limits.max_body_bytes:
        raise RequestError(
            413, f"the body of {length} bytes is larger than the limit of {limits.max_body_bytes}"
        )
    return length


def parse_body(
    body: bytes, content_type: str, specs: Sequence[Any], limits: RequestLimits
) -> dict[str, np.ndarray]:
    """The inputs a body holds, by name, each an array of its input's dtype."""
    if content_type.split(";")[0].strip().lower() == NPZ:
        return parse_npz(body, specs, limits)
    return parse_json(body, specs, limits)


# --------------------------------------------------------------------------- JSON

_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def json_depth(body: bytes) -> int:
    """The deepest nesting of arrays and objects in JSON text (strings skipped), without
    parsing it: a 100 000-deep body is refused before the parser recurses into it."""
    brackets = _STRING.sub(b"", body).translate(None, _NOT_BRACKETS)
    depth = deepest = 0
    for byte in brackets:
        depth += 1 if byte in b"[{" else -1
        deepest = max(deepest, depth)
    return deepest


def parse_json(body: bytes, specs: Sequence[Any], limits: RequestLimits) -> dict[str, np.ndarray]:
    if json_depth(body) > limits.max_json_depth:
        raise RequestError(400, f"the JSON is nested deeper than {limits.max_json_depth} levels")
    try:
        request = json.loads(body.decode("utf-8") if body else "{}")
    except UnicodeDecodeError as error:
        raise RequestError(400, f"the body is not UTF-8 ({error.reason})") from None
    except (json.JSONDecodeError, RecursionError) as error:
        raise RequestError(400, f"the body is not JSON: {_shown(str(error)[:200])}") from None
    if not isinstance(request, dict) or not isinstance(request.get("inputs"), dict):
        raise RequestError(400, 'the body must be {"inputs": {NAME: values}}')
    by_name = {spec.name: spec for spec in specs}
    _check_names(request["inputs"], by_name)
    return {name: json_array(value, by_name[name]) for name, value in request["inputs"].items()}


def _check_names(given: Mapping[str, Any], by_name: Mapping[str, Any]) -> None:
    unknown = [n for n in given if n not in by_name]
    missing = [n for n in by_name if n not in given]
    if unknown or missing:
        parts = [f"unknown inputs: {', '.join(_shown(n) for n in unknown[:10])}"] if unknown else []
        parts += [f"missing inputs: {', '.join(missing)}"] if missing else []
        raise RequestError(422, "; ".join(parts) + f" (the model's inputs: {', '.join(by_name)})")


def _shown(name: str) -> str:
    """A name from the request as it may appear in a one-line message (escaped, cut)."""
    return ascii(name[:80])[1:-1]


def json_array(value: Any, spec: Any) -> np.ndarray:
    """Nested JSON lists as an array of `spec.dtype`, exactly: no float->int truncation, no
    integer overflow, no bool/number/string mix-ups (each a 422)."""
    name = spec.name
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError):
        raise RequestError(422, f"input '{name}': not a rectangular array of numbers") from None
    if raw.dtype == object:  # ragged, mixed, or an integer beyond int64
        if _has_big_int(value):
            raise RequestError(422, f"input '{name}': an integer is out of range of its dtype")
        raise RequestError(422, f"input '{name}': not a rectangular array of numbers")
    if raw.dtype.kind not in "biuf":
        raise RequestError(422, f"input '{name}': holds {raw.dtype.kind!r} values, not numbers")
    dtype = spec.dtype
    if dtype is None:
        return raw
    return exact_cast(raw, np.dtype(dtype), name)


def exact_cast(raw: np.ndarray, dtype: np.dtype, name: str) -> np.ndarray:
    """`raw` as `dtype` where every value is represented exactly (floats: within range)."""
    kind = dtype.kind
    if kind == "b":
        if raw.dtype.kind != "b":
            raise RequestError(422, f"input '{name}': expected true/false values (bool)")
        return raw.astype(dtype)
    if raw.dtype.kind == "b":
        raise RequestError(422, f"input '{name}': true/false given for a {dtype.name} input")
    if kind in "iu":
        if raw.dtype.kind == "f":
            raise RequestError(
                422, f"input '{name}': a non-integer value for a {dtype.name} input (no truncation)"
            )
        info = np.iinfo(dtype)
        if raw.size and (raw.min() < info.min or raw.max() > info.max):
            raise RequestError(422, f"input '{name}': an integer is out of range of {dtype.name}")
        return raw.astype(dtype)
    if kind in "fV" or dtype.name.startswith(("bfloat", "float")):
        with np.errstate(over="ignore", invalid="ignore"):
            cast = raw.astype(dtype)
        if raw.size and not np.isfinite(cast.astype(np.float64)).all():
            if np.isfinite(raw.astype(np.float64)).all():
                raise RequestError(422, f"input '{name}': a value is out of range of {dtype.name}")
        return cast
    raise RequestError(422, f"input '{name}': {dtype.name} inputs are not taken over HTTP")


def _has_big_int(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, int) and not isinstance(item, bool) and abs(item) >= 1 << 63:
            return True
    return False


# --------------------------------------------------------------------------- npz


def parse_npz(body: bytes, specs: Sequence[Any], limits: RequestLimits) -> dict[str, np.ndarray]:
    """An .npz (np.savez, stored or deflated) of the inputs by name. The zip directory's sizes
    and each .npy header's shape are checked against `max_array_bytes` before anything is
    decompressed or allocated; reading stops at the recorded size; no pickles."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(body))
        members = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError, OSError) as error:
        raise RequestError(400, f"the body is not an .npz archive: {_shown(str(error))}") from None
    if len(members) > 4 * len(specs) + 16:
        raise RequestError(400, f"the .npz holds {len(members)} members")
    total = sum(member.file_size for member in members)
    if total > limits.max_array_bytes:
        raise RequestError(
            413,
            f"the .npz unpacks to {total} bytes, more than the limit of {limits.max_array_bytes}",
        )
    by_name = {spec.name: spec for spec in specs}
    arrays: dict[str, np.ndarray] = {}
    for member in members:
        if not member.filename.endswith(".npy"):
            raise RequestError(400, f"the .npz member '{_shown(member.filename)}' is not an .npy")
        name = member.filename[:-4]
        try:
            with archive.open(member) as f:
                data = f.read(member.file_size + 1)
        except (zipfile.BadZipFile, ValueError, EOFError, OSError, RuntimeError) as error:
            raise RequestError(
                400, f"the .npz member '{_shown(name)}' cannot be read: {_shown(str(error))}"
            ) from None
        if len(data) != member.file_size:
            raise RequestError(400, f"the .npz member '{_shown(name)}' is not as long as recorded")
        arrays[name] = _npy(data, name)
    _check_names(arrays, by_name)
    result = {}
    for name, array in arrays.items():
        dtype = by_name[name].dtype
        if dtype is not None and array.dtype != np.dtype(dtype):
            raise RequestError(
                422,
                f"input '{name}': expected dtype {np.dtype(dtype).name}, got {array.dtype.name}",
            )
        result[name] = array
    return result


def _npy(data: bytes, name: str) -> np.ndarray:
    """One .npy from its bytes: the header's shape and dtype must account for exactly the
    bytes that follow (no allocation from a header that lies)."""
    from numpy.lib import format as npy

    stream = io.BytesIO(data)
    try:
        version = npy.read_magic(stream)
        if version == (1, 0):
            shape, fortran, dtype = npy.read_array_header_1_0(stream)
        elif version in ((2, 0), (3, 0)):
            shape, fortran, dtype = npy.read_array_header_2_0(stream)
        else:
            raise ValueError(f"version {version}")
    except (ValueError, SyntaxError, TypeError) as error:
        raise RequestError(
            400, f"input '{_shown(name)}': not an .npy array: {_shown(str(error))}"
        ) from None
    if dtype.hasobject or dtype.kind not in "biuf" and dtype.name not in ("bfloat16",):
        raise RequestError(422, f"input '{_shown(name)}': dtype {dtype} is not taken")
    count = math.prod(shape)
    offset = stream.tell()
    if count * dtype.itemsize != len(data) - offset:
        raise RequestError(
            400, f"input '{_shown(name)}': the .npy header's shape does not match its data"
        )
    array = np.frombuffer(data, dtype, count, offset)
    return array.reshape(shape, order="F" if fortran else "C")

"""The Open Inference Protocol (KServe v2, as Triton, KServe, MLServer and OpenVINO Model Server
speak it) on `mlconv-run OUTDIR --serve`, beside the server's own `/v1` JSON/npz API
(converter/serving.py routes `/v2/...` here).

    GET  /v2/health/live, /v2/health/ready          200 (empty body) once the artifact is loaded
    GET  /v2                                        server metadata (name, version, extensions)
    GET  /v2/models/NAME[/versions/1]               model metadata: inputs/outputs with
                                                    datatype (FP32, INT64, ...) and shape
                                                    (-1 for a symbolic or batched dimension)
    GET  /v2/models/NAME[/versions/1]/ready         200
    POST /v2/models/NAME[/versions/1]/infer         an inference request, JSON tensors or the
                                                    binary tensor extension

NAME is `mlconv-run --model-name` (default: the artifact folder's name); the one version is
"1". A request body is JSON (`{"inputs": [{"name", "shape", "datatype", "data"}], "outputs":
[...], "parameters": {...}}`), or with the header `Inference-Header-Content-Length: N` a JSON
header of N bytes followed by the raw little-endian bytes of each input whose `parameters`
give `binary_data_size`, in the order listed. Outputs come back as JSON `data` (flat, row-major)
or, where the request asks (`binary_data: true` for an output, or `binary_data_output: true`
for all, tritonclient's default), as raw bytes after the JSON header, again with
`Inference-Header-Content-Length`.

The body is read and bounded exactly as the `/v1` API's (Content-Length, `max_body_bytes`,
read and request timeouts, JSON depth: backends/http_request.py); every value goes through
the same exact conversion (`exact_cast`); a shape's element count must equal its data's
before anything is reshaped. Errors are the protocol's `{"error": "one line"}`: 400 for a
request the model cannot take (the /v1 API's 422 cases, as Triton answers them), 404 for an
unknown model or endpoint, 413 for a body too large, 503 when the batch queue is full.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mlconv.backends.http_request import (
    RequestError,
    RequestLimits,
    exact_cast,
    json_array,
    json_depth,
)

HEADER_LENGTH = "Inference-Header-Content-Length"

_DATATYPES = {
    "bool": "BOOL",
    "uint8": "UINT8",
    "uint16": "UINT16",
    "uint32": "UINT32",
    "uint64": "UINT64",
    "int8": "INT8",
    "int16": "INT16",
    "int32": "INT32",
    "int64": "INT64",
    "float16": "FP16",
    "float32": "FP32",
    "float64": "FP64",
    "bfloat16": "BF16",
}
_NUMPY = {v: k for k, v in _DATATYPES.items()}

_MODEL_PATH = re.compile(r"^/v2/models/([^/]+)(?:/versions/([^/]+))?(/ready|/infer)?/?$")


def datatype(dtype: Any) -> str:
    """The protocol's name of a numpy dtype (FP32, INT64, ...)."""
    return _DATATYPES[np.dtype(dtype).name]


def _numpy_dtype(name: str) -> np.dtype:
    if name == "BF16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(_NUMPY[name])


def metadata(model: Any, name: str, outputs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """`GET /v2/models/NAME`: inputs from the manifest (None or -1 dims as -1; a batched input's
    dimension 0 takes any number of rows, so -1 too), outputs as the artifact computes them
    (`outputs`: name, dtype, shape, measured once at start, dims that follow a -1 input as -1)."""
    batched = bool(model.manifest.get("batches"))
    inputs = []
    for entry in model.manifest["inputs"]:
        shape = [-1 if d is None or d < 0 else int(d) for d in entry.get("shape") or []]
        if batched and shape:
            shape[0] = -1
        inputs.append({"name": entry["name"], "datatype": datatype(entry["dtype"]), "shape": shape})
    return {
        "name": name,
        "versions": ["1"],
        "platform": "mlconv",
        "inputs": inputs,
        "outputs": [dict(o) for o in outputs],
    }


def probe_outputs(model: Any) -> list[dict[str, Any]]:
    """Each output's datatype and shape: the model run on zeros at its inputs' shapes with every
    -1 dimension at 1 and then at 2; a dimension that changes between the two is -1."""
    names = model.output_names
    runs = []
    for size in (1, 2):
        arrays = {}
        for entry in model.manifest["inputs"]:
            shape = [size if d is None or d < 0 else d for d in entry.get("shape") or []]
            if model.manifest.get("batches") and shape:
                shape[0] = size
            arrays[entry["name"]] = np.zeros(shape, entry["dtype"])
        runs.append(model(**arrays))
    described = []
    for name, one, two in zip(names, *runs, strict=True):
        shape = [a if a == b else -1 for a, b in zip(one.shape, two.shape, strict=False)]
        described.append({"name": name, "datatype": datatype(one.dtype), "shape": shape})
    return described


def route(path: str, name: str) -> tuple[str, bool]:
    """(`what`, known): `what` is 'live', 'ready', 'server', 'model', 'model_ready' or 'infer';
    `known` is False for a model name or version this server does not hold (404)."""
    path = path.split("?", 1)[0]
    if path.rstrip("/") == "/v2":
        return "server", True
    if path.rstrip("/") in ("/v2/health/live", "/v2/health/ready"):
        return path.rstrip("/").rsplit("/", 1)[-1], True
    match = _MODEL_PATH.match(path)
    if match is None:
        return "", False
    what = {None: "model", "/ready": "model_ready", "/infer": "infer"}[match.group(3)]
    return what, match.group(1) == name and match.group(2) in (None, "1")


def parse_infer(
    body: bytes, header_length: str | None, specs: Sequence[Any], limits: RequestLimits
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The inputs of an inference request by name, and its JSON header (for `id`, `outputs`,
    `parameters`). Every failure is a RequestError (400, or 413 for too many bytes)."""
    if header_length is not None:
        if not re.fullmatch(r"[0-9]{1,20}", header_length.strip()):
            raise RequestError(400, f"{HEADER_LENGTH} must be a number of bytes")
        size = int(header_length)
        if size > len(body):
            raise RequestError(
                400, f"{HEADER_LENGTH} {size} is longer than the body of {len(body)} bytes"
            )
        head, rest = body[:size], body[size:]
    else:
        head, rest = body, b""
    if json_depth(head) > limits.max_json_depth:
        raise RequestError(400, f"the JSON is nested deeper than {limits.max_json_depth} levels")
    try:
        request = json.loads(head.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise RequestError(400, f"the request is not UTF-8 ({error.reason})") from None
    except (json.JSONDecodeError, RecursionError) as error:
        raise RequestError(400, f"the request is not JSON: {ascii(str(error)[:200])}") from None
    if not isinstance(request, dict) or not isinstance(request.get("inputs"), list):
        raise RequestError(400, 'an inference request must be {"inputs": [{"name", ...}]}')
    by_name = {spec.name: spec for spec in specs}
    arrays: dict[str, np.ndarray] = {}
    offset = 0
    for tensor in request["inputs"]:
        if not isinstance(tensor, dict) or not isinstance(tensor.get("name"), str):
            raise RequestError(400, "each input must be an object with a 'name'")
        name = tensor["name"]
        shown = ascii(name[:80])[1:-1]
        if name not in by_name:
            raise RequestError(
                400, f"unknown input '{shown}' (the model's inputs: {', '.join(by_name)})"
            )
        if name in arrays:
            raise RequestError(400, f"input '{shown}' is given twice")
        spec = by_name[name]
        shape = tensor.get("shape")
        if not isinstance(shape, list) or not all(
            isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 1 << 40 for d in shape
        ):
            raise RequestError(400, f"input '{name}': 'shape' must be a list of sizes")
        count = math.prod(shape)
        given = tensor.get("datatype")
        expected = datatype(spec.dtype) if spec.dtype is not None else given
        if given != expected:
            raise RequestError(
                400, f"input '{name}': datatype {ascii(str(given)[:20])}, expected {expected}"
            )
        dtype = _numpy_dtype(expected)
        if count * dtype.itemsize > limits.max_array_bytes:
            raise RequestError(413, f"input '{name}': shape {shape} is larger than the limit")
        parameters = tensor.get("parameters") or {}
        binary = parameters.get("binary_data_size") if isinstance(parameters, dict) else None
        if binary is not None:
            if not isinstance(binary, int) or isinstance(binary, bool) or binary < 0:
                raise RequestError(400, f"input '{name}': binary_data_size must be a byte count")
            if binary != count * dtype.itemsize:
                raise RequestError(
                    400,
                    f"input '{name}': binary_data_size {binary} is not shape {shape} x "
                    f"{dtype.itemsize} bytes",
                )
            if offset + binary > len(rest):
                raise RequestError(400, f"input '{name}': the binary data ends early")
            array = np.frombuffer(rest, dtype.newbyteorder("<"), count, offset).astype(dtype)
            offset += binary
        else:
            if "data" not in tensor:
                raise RequestError(400, f"input '{name}': no 'data' and no binary_data_size")
            flat = json_array(_flatten(tensor["data"], name), _Flat(name, None))
            if flat.size != count:
                raise RequestError(
                    400, f"input '{name}': {flat.size} values for shape {shape} ({count})"
                )
            array = exact_cast(flat, dtype, name) if flat.size else np.zeros(0, dtype)
        arrays[name] = array.reshape(shape)
    if offset != len(rest):
        raise RequestError(400, f"{len(rest) - offset} bytes after the inputs' binary data")
    missing = [n for n in by_name if n not in arrays]
    if missing:
        raise RequestError(400, f"missing inputs: {', '.join(missing)}")
    return arrays, request


class _Flat:
    def __init__(self, name: str, dtype: Any):
        self.name, self.dtype = name, dtype


def _flatten(data: Any, name: str) -> list[Any]:
    """The protocol's `data`: flat row-major, or nested lists (flattened, ragged refused)."""
    if not isinstance(data, list):
        raise RequestError(400, f"input '{name}': 'data' must be a list")
    try:
        return np.asarray(data).reshape(-1).tolist() if data and isinstance(data[0], list) else data
    except (TypeError, ValueError):
        raise RequestError(400, f"input '{name}': 'data' is not a rectangular array") from None


def infer_response(
    request: Mapping[str, Any], name: str, names: Sequence[str], outputs: Sequence[np.ndarray]
) -> tuple[bytes, int | None]:
    """The response body and, where any output is binary, its JSON header's length."""
    parameters = request.get("parameters") if isinstance(request.get("parameters"), dict) else {}
    binary_all = bool(parameters.get("binary_data_output", False))
    wanted: dict[str, bool] = {}
    requested = request.get("outputs")
    if isinstance(requested, list) and requested:
        for entry in requested:
            if not isinstance(entry, dict) or entry.get("name") not in names:
                shown = ascii(str(entry.get("name") if isinstance(entry, dict) else entry)[:80])
                raise RequestError(
                    400, f"unknown output {shown} (the model's outputs: {', '.join(names)})"
                )
            own = entry.get("parameters") if isinstance(entry.get("parameters"), dict) else {}
            wanted[entry["name"]] = bool(own.get("binary_data", binary_all))
    else:
        wanted = {n: binary_all for n in names}
    tensors, blobs = [], []
    for output_name, value in zip(names, outputs, strict=True):
        if output_name not in wanted:
            continue
        value = np.asarray(value)
        tensor: dict[str, Any] = {
            "name": output_name,
            "datatype": datatype(value.dtype),
            "shape": list(value.shape),
        }
        if wanted[output_name]:
            blob = np.ascontiguousarray(value, value.dtype.newbyteorder("<")).tobytes()
            tensor["parameters"] = {"binary_data_size": len(blob)}
            blobs.append(blob)
        else:
            tensor["data"] = value.reshape(-1).tolist()
        tensors.append(tensor)
    response: dict[str, Any] = {"model_name": name, "model_version": "1", "outputs": tensors}
    if isinstance(request.get("id"), str):
        response["id"] = request["id"]
    head = json.dumps(response).encode()
    if not blobs:
        return head, None
    return head + b"".join(blobs), len(head)

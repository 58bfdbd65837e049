"""`mlconv-run OUTDIR --serve`: an artifact behind a local HTTP endpoint, its batcher shared by
every connection (converter/batcher.py forms the batches).

    mlconv-run converted/ --serve --port 8500          # 127.0.0.1 unless --host
    curl -s localhost:8500/v1/model
    curl -s -d '{"inputs": {"x": [[0.1, 0.2, ...]]}}' localhost:8500/v1/predict

- `GET /v1/model`: JSON `{"inputs": [{"name", "dtype", "shape"}], "outputs": [names],
  "batches": [{"name", "component", "options"}], "limits": {...}}` (the manifest's; the 0th
  dimension of a batched input takes any number of rows).
- `POST /v1/predict`: a JSON body `{"inputs": {NAME: nested lists}}` answers
  `{"outputs": {NAME: nested lists}}`; a body of `Content-Type: application/x-npz` (an .npz of
  the inputs by name, `np.savez`) answers an .npz of the outputs by name.
- Errors answer `{"error": "one line"}`: 400 for a malformed request, 413 for one too large,
  422 for one the model cannot take (wrong names, shapes, or values its dtypes cannot hold
  exactly: backends/http_request.py), 503 only when the batch queue or the connection pool is
  full (retry later), 500 otherwise. Nothing is printed on stderr for a bad request.
  SIGINT/SIGTERM stop the server after the requests in flight.

The server is bounded (`ServerLimits`, `mlconv-run --serve --max-body-bytes ...`):
- a request body is at most `max_body_bytes` (default a few times the largest valid request,
  at least 1 MiB: `RequestLimits.for_model`), checked from Content-Length before reading;
- each socket read waits at most `read_timeout` seconds (10), and a whole request (headers
  and body) must arrive within `request_timeout` seconds (30), so slow or short bodies close;
- at most `max_connections` connections (64) are served at once, each by a thread of a
  fixed pool; one more is answered 503 at once and closed.
It is the standard library's `http.server` (`ThreadingHTTPServer`'s request handling) with a
bounded thread pool in place of its thread per connection: the work per request is the
batcher's, which already runs on its own threads, so an ASGI server's event loop would add a
dependency without serving more requests; what was missing were the bounds, added here.

The Open Inference Protocol (KServe v2: `/v2/health/ready`, `/v2/models/NAME`,
`/v2/models/NAME/infer` with JSON or binary tensors, as `tritonclient[http]` speaks it) is
served beside this API on the same port, through the same body bounds, parser checks and
batcher: backends/open_inference.py. The `/v1` JSON/npz API stays (existing callers; npz).

The line `mlconv-run: serving OUTDIR at http://HOST:PORT` on stderr says it is ready (with
`--port 0`, the port the system chose).
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import signal
import socket
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import numpy as np

from mlconv.backends import open_inference as oip
from mlconv.backends.http_request import (
    NPZ,
    RequestError,
    RequestLimits,
    content_length,
    parse_body,
)
from mlconv.converter.batcher import QueueFullError, RequestTooLargeError
from mlconv.errors import InputError, MlconvError
from mlconv.signature.inputs import InputSpec


@dataclass(frozen=True)
class ServerLimits:
    """The server's bounds (see the module's docstring)."""

    read_timeout: float = 10.0
    request_timeout: float = 30.0
    max_connections: int = 64


def error_answer(error: Exception) -> tuple[int, dict[str, str]]:
    """The HTTP status and one-line JSON body for a request that failed with `error`: the
    request's own status (400/413/422), 503 for a full queue, 413 for a request no queue can
    hold, 422 for inputs the model refuses, 500 (one line, no traceback) for anything else."""
    if isinstance(error, RequestError):
        return error.status, {"error": error.message}
    if isinstance(error, QueueFullError):
        return 503, {"error": error.message}
    if isinstance(error, RequestTooLargeError):
        return 413, {"error": error.message}
    if isinstance(error, InputError):
        return 422, {"error": error.message.splitlines()[0]}
    if isinstance(error, MlconvError):
        return 500, {"error": error.message.splitlines()[0]}
    return 500, {"error": f"{type(error).__name__}: {str(error)[:200]}"}


def describe(model: Any, limits: RequestLimits | None = None) -> dict[str, Any]:
    manifest = model.manifest
    described = {
        "inputs": manifest["inputs"],
        "outputs": [entry["name"] for entry in manifest["outputs"]],
        "batches": [
            {"name": b["name"], "component": b["component"], "options": b["options"]}
            for b in manifest.get("batches", [])
        ],
    }
    if limits is not None:
        described["limits"] = asdict(limits)
    return described


def _specs(model: Any) -> list[InputSpec]:
    return [
        InputSpec(e["name"], None if e["dtype"] is None else np.dtype(e["dtype"]), None)
        for e in model.manifest["inputs"]
    ]


@dataclass(frozen=True)
class Answer:
    """An HTTP answer apart from its transport: status, body, Content-Type and, for a binary
    Open Inference Protocol response, its Inference-Header-Content-Length."""

    status: int
    body: bytes
    content_type: str = "application/json"
    header_length: int | None = None


class V2Endpoint:
    """The Open Inference Protocol (backends/open_inference.py) for one model, apart from the
    transport that carries it: this server's handler and the Ray Serve replicas
    (converter/ray_serve.py) give it a path and a body already read within their bounds and
    send back its `Answer`. Errors are `error_answer`'s, 422 answered 400 (the protocol has
    no 422, as Triton answers them)."""

    def __init__(self, model: Any, name: str, limits: RequestLimits):
        self.model, self.name, self.limits = model, name, limits
        self.specs = _specs(model)
        try:  # the metadata names each output's datatype and shape
            outputs = oip.probe_outputs(model)
        except Exception:  # noqa: BLE001 - a model zeros cannot run: outputs by name alone
            outputs = [{"name": n} for n in model.output_names]
        self.metadata = json.dumps(oip.metadata(model, name, outputs)).encode()
        self.server = json.dumps(
            {
                "name": "mlconv",
                "version": __import__("mlconv").__version__,
                "extensions": ["binary_tensor_data"],
            }
        ).encode()

    def not_found(self, path: str) -> Answer:
        return Answer(404, _one_line({"error": f"no such model or endpoint {path[:200]!a}"}))

    def is_infer(self, path: str) -> bool:
        what, known = oip.route(path, self.name)
        return known and what == "infer"

    def get(self, path: str) -> Answer:
        """GET /v2/...: health, server and model metadata."""
        what, known = oip.route(path, self.name)
        if not known or what == "infer":
            return self.not_found(path)
        if what in ("live", "ready", "model_ready"):
            return Answer(200, b"")
        return Answer(200, self.metadata if what == "model" else self.server)

    @staticmethod
    def failed(error: Exception) -> Answer:
        status, answer = error_answer(error)
        return Answer(400 if status == 422 else status, _one_line(answer))

    def infer(self, body: bytes, header_length: str | None) -> Answer:
        """POST /v2/models/NAME/infer (the path checked with `is_infer`) of a body read whole:
        parsed, run through the model (its batcher), answered; every failure one JSON line."""
        try:
            arrays, request = oip.parse_infer(body, header_length, self.specs, self.limits)
            outputs = self.model(**arrays)
            answer, header = oip.infer_response(
                request, self.name, self.model.output_names, outputs
            )
        except Exception as error:  # noqa: BLE001 - every failure is one JSON line, no traceback
            return self.failed(error)
        if header is None:
            return Answer(200, answer)
        return Answer(200, answer, "application/octet-stream", header)


def _one_line(value: Any) -> bytes:
    return json.dumps(value).encode()


def make_handler(
    model: Any,
    limits: RequestLimits | None = None,
    server_limits: ServerLimits | None = None,
    name: str = "model",
) -> type[BaseHTTPRequestHandler]:
    limits = limits or RequestLimits.for_model(model.manifest)
    server_limits = server_limits or ServerLimits()
    specs = _specs(model)  # shapes are checked by the model's own call (InputError: 422)
    described = json.dumps(describe(model, limits)).encode()
    v2 = V2Endpoint(model, name, limits)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = server_limits.read_timeout  # each socket read (StreamRequestHandler.setup)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
            pass  # one line per request would drown the ready line; errors answer the caller

        def send_error(self, code: int, message: str | None = None, explain: Any = None) -> None:
            # http.server's own refusals (bad request line, headers too long): JSON, one line
            self.close_connection = True
            with contextlib.suppress(OSError):
                self._json(code, {"error": message or self.responses.get(code, ("",))[0]})

        def handle_one_request(self) -> None:
            # the whole request (request line, headers, body) within request_timeout: the
            # server's watchdog shuts the socket down if it has not arrived by then
            self.server.watch(self.connection, server_limits.request_timeout)
            try:
                super().handle_one_request()
            except OSError:  # the client went away or the watchdog closed the socket
                self.close_connection = True
            finally:
                self.server.unwatch(self.connection)

        def _send(self, status: int, body: bytes, kind: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            if self.close_connection:
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)

        def _json(self, status: int, value: Any) -> None:
            self._send(status, json.dumps(value).encode(), "application/json")

        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            if self.path.startswith("/v2"):
                self._answer(v2.get(self.path))
            elif self.path.rstrip("/") == "/v1/model":
                self._send(200, described, "application/json")
            else:
                self._json(404, {"error": f"no such endpoint {self.path[:200]} (GET /v1/model)"})

        def do_POST(self) -> None:  # noqa: N802
            if self.path.startswith("/v2"):
                self._infer_v2()
                return
            if self.path.rstrip("/") != "/v1/predict":
                self.close_connection = True  # its body is not read
                self._json(404, {"error": f"no such endpoint {self.path[:200]} (POST /v1/predict)"})
                return
            try:
                body = self._body()
                self.server.unwatch(self.connection)  # arrived; the model's time is its own
                kind = self.headers.get("Content-Type") or ""
                outputs = model(**parse_body(body, kind, specs, limits))
            except Exception as error:  # noqa: BLE001 - every failure is one JSON line, no traceback
                self._json(*error_answer(error))
                return
            names = model.output_names
            if kind.split(";")[0].strip().lower() == NPZ:
                buffer = io.BytesIO()
                np.savez(buffer, **dict(zip(names, outputs, strict=True)))
                self._send(200, buffer.getvalue(), NPZ)
            else:
                self._json(
                    200, {"outputs": {n: o.tolist() for n, o in zip(names, outputs, strict=True)}}
                )

        def _infer_v2(self) -> None:
            """POST /v2/models/NAME/infer: the same body bounds as /v1/predict, then the
            transport-free part (V2Endpoint.infer: parsing, the batcher, errors)."""
            if not v2.is_infer(self.path):
                self.close_connection = True  # its body is not read
                self._answer(v2.not_found(self.path))
                return
            try:
                if (self.headers.get("Content-Encoding") or "identity").strip() != "identity":
                    self.close_connection = True
                    raise RequestError(400, "compressed requests are not accepted")
                body = self._body()
                self.server.unwatch(self.connection)
            except Exception as error:  # noqa: BLE001 - every failure is one JSON line, no traceback
                self._answer(V2Endpoint.failed(error))
                return
            self._answer(v2.infer(body, self.headers.get(oip.HEADER_LENGTH)))

        def _answer(self, answer: Answer) -> None:
            self.send_response(answer.status)
            self.send_header("Content-Type", answer.content_type)
            if answer.header_length is not None:
                self.send_header(oip.HEADER_LENGTH, str(answer.header_length))
            self.send_header("Content-Length", str(len(answer.body)))
            if self.close_connection:
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(answer.body)

        def _body(self) -> bytes:
            """The body, Content-Length bytes of it, read within the timeouts."""
            try:
                length = content_length(self.headers, limits)
            except RequestError:
                self.close_connection = True  # the body (if any) is not read
                raise
            chunks, left = [], length
            deadline = time.monotonic() + server_limits.request_timeout
            while left > 0:
                try:
                    chunk = self.rfile.read1(min(left, 1 << 20))
                except (TimeoutError, OSError):
                    chunk = b""
                if not chunk or time.monotonic() > deadline:
                    self.close_connection = True
                    raise RequestError(
                        400,
                        f"the body ended after {length - left} of its {length} bytes "
                        "(Content-Length) or arrived too slowly",
                    )
                chunks.append(chunk)
                left -= len(chunk)
            return b"".join(chunks)

    return Handler


class ServingHTTPServer(HTTPServer):
    """http.server's HTTPServer with a bounded pool: `max_connections` threads serve the
    connections; one more is answered 503 and closed at once (never a thread of its own).
    The listen backlog is as deep as the system allows: socketserver's default of 5 made the
    kernel reset connections when 16 clients posted at once (test_batching's burst)."""

    request_queue_size = socket.SOMAXCONN
    daemon_threads = True

    def __init__(self, address: Any, handler: Any, limits: ServerLimits | None = None):
        self.limits = limits or ServerLimits()
        self._pool = ThreadPoolExecutor(self.limits.max_connections, "mlconv-serve")
        self._slots = threading.BoundedSemaphore(self.limits.max_connections)
        self._deadlines: dict[Any, float] = {}
        self._lock = threading.Lock()
        super().__init__(address, handler)
        threading.Thread(target=self._watchdog, name="mlconv-serve-watchdog", daemon=True).start()

    def watch(self, connection: Any, seconds: float) -> None:
        with self._lock:
            self._deadlines[connection] = time.monotonic() + seconds

    def unwatch(self, connection: Any) -> None:
        with self._lock:
            self._deadlines.pop(connection, None)

    def _watchdog(self) -> None:
        """One thread for every connection: a request still arriving past its deadline has
        its socket shut down (its handler's read then ends, and it closes)."""
        while True:
            time.sleep(0.2)
            now = time.monotonic()
            with self._lock:
                late = [c for c, deadline in self._deadlines.items() if deadline < now]
                for connection in late:
                    del self._deadlines[connection]
            for connection in late:
                with contextlib.suppress(OSError):
                    connection.shutdown(socket.SHUT_RDWR)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self._refuse(request)
            return
        self._pool.submit(self._serve, request, client_address)

    def _serve(self, request: Any, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:  # noqa: BLE001 - handle_error below: never a traceback on stderr
            pass
        finally:
            self.shutdown_request(request)
            self._slots.release()

    def _refuse(self, request: Any) -> None:
        body = json.dumps(
            {"error": f"all {self.limits.max_connections} connections are busy; retry later"}
        ).encode()
        head = (
            "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        ).encode()
        with contextlib.suppress(OSError):
            request.settimeout(1.0)
            request.sendall(head + body)
        self.shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # socketserver would print a traceback on stderr

    def server_close(self) -> None:
        super().server_close()
        self._pool.shutdown(wait=False, cancel_futures=True)


def model_name(outdir: str) -> str:
    """The Open Inference Protocol's model name: the artifact folder's own name, or "model"."""
    import os

    base = os.path.basename(os.path.normpath(outdir))
    return (
        base if re.fullmatch(r"[A-Za-z0-9._-]{1,64}", base) and base not in (".", "..") else "model"
    )


def serve(
    model: Any,
    outdir: str,
    host: str = "127.0.0.1",
    port: int = 8500,
    *,
    max_body_bytes: int | None = None,
    server_limits: ServerLimits | None = None,
    name: str | None = None,
) -> int:
    """Serve until SIGINT/SIGTERM; returns the exit status."""
    limits = RequestLimits.for_model(model.manifest, max_body_bytes)
    server_limits = server_limits or ServerLimits()
    server = ServingHTTPServer(
        (host, port),
        make_handler(model, limits, server_limits, name or model_name(outdir)),
        server_limits,
    )
    stop = threading.Event()

    def shutdown(*_: Any) -> None:
        if not stop.is_set():
            stop.set()
            threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGINT, shutdown)
    signal.signal(signal.SIGTERM, shutdown)
    bound_host, bound_port = server.server_address[:2]
    print(
        f"mlconv-run: limits: body {limits.max_body_bytes} bytes, "
        f"{server_limits.max_connections} connections, read timeout "
        f"{server_limits.read_timeout:g} s, request timeout {server_limits.request_timeout:g} s",
        file=sys.stderr,
    )
    print(
        f"mlconv-run: serving {outdir} at http://{bound_host}:{bound_port}",
        file=sys.stderr,
        flush=True,
    )
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()
        close = getattr(model, "close", None)
        if close is not None:
            close()
    return 0

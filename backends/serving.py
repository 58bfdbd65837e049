"""`mlconv-run OUTDIR --serve`: an artifact behind a local HTTP endpoint, its batcher shared by
every connection (one thread per connection; backends/batcher.py forms the batches).

    mlconv-run converted/ --serve --port 8500          # 127.0.0.1 unless --host
    curl -s localhost:8500/v1/model
    curl -s -d '{"inputs": {"x": [[0.1, 0.2, ...]]}}' localhost:8500/v1/predict

- `GET /v1/model`: JSON `{"inputs": [{"name", "dtype", "shape"}], "outputs": [names],
  "batches": [{"name", "component", "options"}]}` (the manifest's; the 0th dimension of a
  batched input takes any number of rows).
- `POST /v1/predict`: a JSON body `{"inputs": {NAME: nested lists}}` answers
  `{"outputs": {NAME: nested lists}}`; a body of `Content-Type: application/x-npz` (an .npz of
  the inputs by name, `np.savez`) answers an .npz of the outputs by name.
- Errors answer `{"error": "one line"}`: 400 for a bad request (the seed's shape messages
  among them), 503 when the batch queue is full (`max_enqueued_batches`; retry later), 500
  otherwise. SIGINT/SIGTERM stop the server after the requests in flight.

The line `mlconv-run: serving OUTDIR at http://HOST:PORT` on stderr says it is ready (with
`--port 0`, the port the system chose).
"""

from __future__ import annotations

import io
import json
import signal
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

from mlconv.backends.batcher import QueueFullError
from mlconv.errors import InputError, MlconvError

NPZ = "application/x-npz"


def describe(model: Any) -> dict[str, Any]:
    manifest = model.manifest
    return {
        "inputs": manifest["inputs"],
        "outputs": [entry["name"] for entry in manifest["outputs"]],
        "batches": [
            {"name": b["name"], "component": b["component"], "options": b["options"]}
            for b in manifest.get("batches", [])
        ],
    }


def make_handler(model: Any) -> type[BaseHTTPRequestHandler]:
    specs = {entry["name"]: entry for entry in model.manifest["inputs"]}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
            pass  # one line per request would drown the ready line; errors answer the caller

        def _send(self, status: int, body: bytes, kind: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _json(self, status: int, value: Any) -> None:
            self._send(status, json.dumps(value).encode(), "application/json")

        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            if self.path.rstrip("/") == "/v1/model":
                self._json(200, describe(model))
            else:
                self._json(404, {"error": f"no such endpoint {self.path} (GET /v1/model)"})

        def do_POST(self) -> None:  # noqa: N802
            if self.path.rstrip("/") != "/v1/predict":
                self._json(404, {"error": f"no such endpoint {self.path} (POST /v1/predict)"})
                return
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            as_npz = (self.headers.get("Content-Type") or "").startswith(NPZ)
            try:
                inputs = self._parse(body, as_npz)
                outputs = model(**inputs)
            except QueueFullError as error:
                self._json(503, {"error": str(error)})
                return
            except (InputError, ValueError, KeyError, TypeError) as error:
                self._json(
                    400, {"error": str(error).splitlines()[0] if str(error) else repr(error)}
                )
                return
            except MlconvError as error:
                self._json(500, {"error": str(error)})
                return
            names = model.output_names
            if as_npz:
                buffer = io.BytesIO()
                np.savez(buffer, **dict(zip(names, outputs, strict=True)))
                self._send(200, buffer.getvalue(), NPZ)
            else:
                self._json(
                    200, {"outputs": {n: o.tolist() for n, o in zip(names, outputs, strict=True)}}
                )

        def _parse(self, body: bytes, as_npz: bool) -> dict[str, np.ndarray]:
            if as_npz:
                with np.load(io.BytesIO(body)) as data:
                    return {name: data[name] for name in data.files}
            try:
                request = json.loads(body or b"{}")
            except json.JSONDecodeError as error:
                raise InputError(f"the body is not JSON: {error}") from None
            if not isinstance(request, dict) or not isinstance(request.get("inputs"), dict):
                raise InputError('the body must be {"inputs": {NAME: values}}')
            arrays = {}
            for name, value in request["inputs"].items():
                dtype = specs.get(name, {}).get("dtype")
                arrays[name] = np.asarray(value, dtype=dtype)
            return arrays

    return Handler


class ServingHTTPServer(ThreadingHTTPServer):
    """A thread per request, and a listen backlog as deep as the system allows: socketserver's
    default of 5 made the kernel reset connections beyond it when 16 clients posted at once
    (test_batching's burst, seen failing on a slow CI machine), which is what batching
    serves."""

    request_queue_size = socket.SOMAXCONN
    daemon_threads = True


def serve(model: Any, outdir: str, host: str = "127.0.0.1", port: int = 8500) -> int:
    """Serve until SIGINT/SIGTERM; returns the exit status."""
    server = ServingHTTPServer((host, port), make_handler(model))
    stop = threading.Event()

    def shutdown(*_: Any) -> None:
        if not stop.is_set():
            stop.set()
            threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGINT, shutdown)
    signal.signal(signal.SIGTERM, shutdown)
    bound_host, bound_port = server.server_address[:2]
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

"""Ray Serve replicas of an artifact (issue 32's `mlconv.serving.ray`; extra `ray`:
`pip install 'mlconv[ray]'`). Each replica loads the artifact once and answers the Open
Inference Protocol (KServe v2) exactly as `mlconv-run OUTDIR --serve` does: the same parser,
bounds, batcher and one-line errors (converter/serving.py's `V2Endpoint`).

    import ray
    from ray import serve
    from mlconv.converter.ray_serve import deployment

    ray.init()                                          # or an existing cluster
    serve.start(http_options={"host": "0.0.0.0", "port": 8000})
    serve.run(deployment("/models/converted", num_replicas=2))
    # POST http://HOST:8000/v2/models/converted/infer (tritonclient, curl, any v2 client)

or from Ray's own command line, as an application builder:

    serve run mlconv.converter.ray_serve:app outdir=/models/converted num_replicas=2

`num_replicas`, `autoscaling_config`, `ray_actor_options`, `max_ongoing_requests` and any
other `serve.deployment` option are passed through to Ray unchanged. OUTDIR must be the same
path on every node that runs a replica (a shared file system or the same image); each replica
checks the artifact's SHA-256s as `mlconv.load` does.

Batching is the artifact's own batcher (converter/batcher.py), not Ray Serve's
`@serve.batch`: the artifact is compiled for its `allowed_batch_sizes` only (one executable per
size, compiled at load), and its batcher pads every batch up to the next of them, splits
requests larger than `max_batch_size` across batches and refuses what the seed's shape rules
refuse. `@serve.batch` knows none of that: it would hand the model lists of any length up to
its own `max_batch_size`, which the batcher would then split and pad again. So each replica
runs requests on a thread pool as large as `max_ongoing_requests` (default 64), and concurrent
requests within a replica are merged by the batcher; Ray Serve's router spreads requests over
replicas.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from mlconv.backends import open_inference as oip
from mlconv.backends.http_request import RequestError, RequestLimits, content_length
from mlconv.converter.artifact import load_artifact
from mlconv.converter.serving import Answer, V2Endpoint, model_name
from mlconv.errors import OptionError

DEFAULT_MAX_ONGOING_REQUESTS = 64


class _Headers:
    """Starlette's headers with the `get_all` that `content_length` reads."""

    def __init__(self, headers: Any):
        self._headers = headers

    def get(self, key: str, default: Any = None) -> Any:
        return self._headers.get(key, default)

    def get_all(self, key: str) -> list[str]:
        return self._headers.getlist(key)


class ArtifactReplica:
    """One Ray Serve replica: the artifact loaded once (its batch sizes compiled), the Open
    Inference Protocol's answers from `V2Endpoint`, the model run on a thread pool so the
    batcher merges concurrent requests."""

    def __init__(
        self,
        outdir: str,
        name: str,
        device: str | None = None,
        max_body_bytes: int | None = None,
        threads: int = DEFAULT_MAX_ONGOING_REQUESTS,
    ):
        self.model = load_artifact(outdir, device)
        self.limits = RequestLimits.for_model(self.model.manifest, max_body_bytes)
        self.endpoint = V2Endpoint(self.model, name, self.limits)
        self.pool = ThreadPoolExecutor(max(1, threads), "mlconv-ray")
        from ray import serve

        # which replica answered (the `mlconv-replica` header): for logs and load balancing checks
        self.replica = serve.get_replica_context().replica_id.unique_id

    async def __call__(self, request: Any) -> Any:
        from starlette.responses import Response

        answer = await self.answer(request)
        headers = {"mlconv-replica": self.replica}
        if answer.header_length is not None:
            headers[oip.HEADER_LENGTH] = str(answer.header_length)
        return Response(answer.body, answer.status, headers=headers, media_type=answer.content_type)

    async def answer(self, request: Any) -> Answer:
        path = request.url.path
        root = (request.scope.get("root_path") or "").rstrip("/")
        if root and path.startswith(root + "/"):
            path = path[len(root) :]
        if request.method == "GET":
            return self.endpoint.get(path)
        if request.method != "POST":
            return Answer(405, b'{"error": "only GET and POST"}')
        if not self.endpoint.is_infer(path):
            return self.endpoint.not_found(path)
        try:
            body = await self._body(request)
        except Exception as error:  # noqa: BLE001 - every failure is one JSON line
            return V2Endpoint.failed(error)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self.pool, self.endpoint.infer, body, request.headers.get(oip.HEADER_LENGTH)
        )

    async def _body(self, request: Any) -> bytes:
        """The body, Content-Length bytes of it, refused past `max_body_bytes` before reading."""
        headers = _Headers(request.headers)
        if (headers.get("Content-Encoding") or "identity").strip() != "identity":
            raise RequestError(400, "compressed requests are not accepted")
        length = content_length(headers, self.limits)
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > length:
                raise RequestError(400, f"the body is longer than its Content-Length {length}")
            chunks.append(chunk)
        if size != length:
            raise RequestError(400, f"the body ended after {size} of its {length} bytes")
        return b"".join(chunks)

    def __del__(self) -> None:
        model = getattr(self, "model", None)
        if model is not None and hasattr(model, "close"):
            model.close()
        pool = getattr(self, "pool", None)
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)


def deployment(
    outdir: str | os.PathLike,
    *,
    name: str | None = None,
    device: str | None = None,
    max_body_bytes: int | None = None,
    num_replicas: int | str | None = None,
    autoscaling_config: Mapping[str, Any] | None = None,
    ray_actor_options: Mapping[str, Any] | None = None,
    max_ongoing_requests: int = DEFAULT_MAX_ONGOING_REQUESTS,
    **options: Any,
) -> Any:
    """A Ray Serve application of the artifact at `outdir` (for `serve.run`): `num_replicas`
    replicas (1 unless `autoscaling_config` is given), each `ArtifactReplica`. NAME is the
    Open Inference Protocol's model name (default: the folder's name, as `mlconv-run --serve`)
    and the deployment's. Every Ray option is passed through to `serve.deployment`."""
    try:
        from ray import serve
    except ImportError:
        raise OptionError("Ray Serve is not installed: pip install 'mlconv[ray]'") from None
    outdir = os.path.abspath(os.fspath(outdir))  # a replica's working directory is Ray's
    name = name or model_name(outdir)
    settings: dict[str, Any] = dict(options, max_ongoing_requests=max_ongoing_requests)
    if autoscaling_config is not None:
        settings["autoscaling_config"] = dict(autoscaling_config)
    if num_replicas is not None or autoscaling_config is None:
        settings["num_replicas"] = 1 if num_replicas is None else num_replicas
    if ray_actor_options is not None:
        settings["ray_actor_options"] = dict(ray_actor_options)
    replica = serve.deployment(ArtifactReplica, name=name, **settings)
    return replica.bind(outdir, name, device, max_body_bytes, max_ongoing_requests)


def app(args: Mapping[str, str]) -> Any:
    """Ray's application builder for `serve run mlconv.converter.ray_serve:app outdir=DIR
    [name=NAME] [device=cpu] [num_replicas=N] [max_ongoing_requests=M]`."""
    known = {"outdir", "name", "device", "num_replicas", "max_ongoing_requests"}
    unknown = sorted(set(args) - known)
    if unknown or "outdir" not in args:
        raise OptionError(
            f"serve run mlconv.converter.ray_serve:app takes outdir=DIR and optionally "
            f"{', '.join(sorted(known - {'outdir'}))}=...; got {', '.join(sorted(args))}",
        )
    counts = {}
    for key in ("num_replicas", "max_ongoing_requests"):
        if key in args:
            if not str(args[key]).isdigit():
                raise OptionError(f"{key}={args[key]!r} is not a number")
            counts[key] = int(args[key])
    return deployment(args["outdir"], name=args.get("name"), device=args.get("device"), **counts)


def serve_replicas(
    outdir: str,
    replicas: int,
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    name: str | None = None,
    device: str | None = None,
    max_body_bytes: int | None = None,
) -> int:
    """`mlconv-run OUTDIR --serve --replicas N`: a local Ray (or the cluster RAY_ADDRESS names),
    Serve's proxy on HOST:PORT, `deployment(OUTDIR, num_replicas=N)` at "/", until
    SIGINT/SIGTERM; returns the exit status."""
    try:
        import ray
        from ray import serve
    except ImportError:
        raise OptionError("Ray Serve is not installed: pip install 'mlconv[ray]'") from None
    application = deployment(
        outdir, name=name, device=device, max_body_bytes=max_body_bytes, num_replicas=replicas
    )
    name = name or model_name(os.path.abspath(outdir))
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    ray.init(include_dashboard=False, log_to_driver=False)
    try:
        serve.start(http_options={"host": host, "port": port})
        serve.run(application, name=name, route_prefix="/")
        print(
            f"mlconv-run: serving {outdir} at http://{host}:{port} ({replicas} Ray Serve "
            f"replicas, /v2/models/{name})",
            file=sys.stderr,
            flush=True,
        )
        stop.wait()
    finally:
        serve.shutdown()
        ray.shutdown()
    return 0

"""Ray Serve replicas of an artifact (converter/ray_serve.py) on a local Ray instance, talked to
over HTTP in the Open Inference Protocol by 64 concurrent aiohttp callers.

The artifact: an ONNX MLP (x[N,16] -> y[N,8], random weights) converted with batch options, so
every request goes through each replica's batcher. Reference: onnxruntime on all rows at once
(each request's slice), and the artifact's own unbatched function row by row for a sample.
"""

from __future__ import annotations

import asyncio
import collections
import json
import os
import socket
import time

import numpy as np
import onnx
import pytest
from numerics import onnxruntime_outputs  # a module beside this one (conftest.py)
from onnx import helper, numpy_helper
from onnx_graphs import float_model
from seed_models import serving_options

import mlconv
from mlconv.errors import OptionError
from mlconv.tools.mlconv_convert import convert

ray = pytest.importorskip("ray")
serve = pytest.importorskip("ray.serve")
aiohttp = pytest.importorskip("aiohttp")
from mlconv.converter.ray_serve import deployment  # noqa: E402

FEATURES, HIDDEN, CLASSES = 16, 32, 8
OPTIONS = serving_options()
NAME = "mlp"
TIMEOUT = 60  # seconds for any one request: a lost or hung request fails the test, never hangs it


def mlp() -> onnx.ModelProto:
    rng = np.random.default_rng(32)
    weights = [
        numpy_helper.from_array(rng.standard_normal((FEATURES, HIDDEN)).astype(np.float32), "w1"),
        numpy_helper.from_array(rng.standard_normal((HIDDEN, CLASSES)).astype(np.float32), "w2"),
    ]
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
        helper.make_node("Tanh", ["h"], ["t"], name="tanh"),
        helper.make_node("MatMul", ["t", "w2"], ["y"], name="fc2"),
    ]
    return float_model(nodes, {"x": ["N", FEATURES]}, {"y": ["N", CLASSES]}, weights, name="mlp")


@pytest.fixture(scope="module")
def artifact(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ray")
    model = mlp()
    onnx.save(model, str(folder / "mlp.onnx"))
    out = folder / NAME
    assert convert(str(folder / "mlp.onnx"), str(out), OPTIONS, quiet=True)["batches"]
    return model, out


@pytest.fixture(scope="module")
def cluster(artifact):
    """A local Ray (2 CPUs, no dashboard) with Serve's proxy on a free port, and two
    applications of the artifact: /one with 1 replica, /two with 2."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    os.environ.setdefault("JAX_PLATFORMS", "cpu")  # the replicas inherit the environment
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        object_store_memory=100 << 20,
        log_to_driver=False,
        configure_logging=False,
    )
    try:
        serve.start(http_options={"host": "127.0.0.1", "port": port})
        small = {"num_cpus": 0.25}  # three replicas on 2 CPUs shared with the test
        one = deployment(artifact[1], num_replicas=1, ray_actor_options=small)
        two = deployment(artifact[1], num_replicas=2, ray_actor_options=small)
        serve.run(one, name="one", route_prefix="/one")
        serve.run(two, name="two", route_prefix="/two")
        yield f"http://127.0.0.1:{port}"
    finally:
        serve.shutdown()
        ray.shutdown()


def request_body(index: int, x: np.ndarray) -> bytes:
    return json.dumps(
        {
            "id": str(index),
            "inputs": [
                {
                    "name": "x",
                    "shape": list(x.shape),
                    "datatype": "FP32",
                    "data": x.ravel().tolist(),
                }
            ],
        }
    ).encode()


async def post_all(url: str, bodies: list[bytes], callers: int = 64) -> list[tuple[int, bytes]]:
    """Every body POSTed by `callers` concurrent callers: (status, body) in order, or
    (-1, reason) for a request that failed in transport or took longer than TIMEOUT. The
    `mlconv-replica` header of each answer is added to `post_all.replicas`."""
    answers: list[tuple[int, bytes] | None] = [None] * len(bodies)
    post_all.replicas = collections.Counter()
    queue: asyncio.Queue[int] = asyncio.Queue()
    for index in range(len(bodies)):
        queue.put_nowait(index)
    timeout = aiohttp.ClientTimeout(total=TIMEOUT)
    connector = aiohttp.TCPConnector(limit=callers)
    async with aiohttp.ClientSession(timeout=timeout, connector=connector) as session:

        async def caller() -> None:
            while not queue.empty():
                index = queue.get_nowait()
                try:
                    async with session.post(
                        url, data=bodies[index], headers={"Content-Type": "application/json"}
                    ) as response:
                        answers[index] = (response.status, await response.read())
                        post_all.replicas[response.headers.get("mlconv-replica")] += 1
                except (TimeoutError, aiohttp.ClientError) as error:
                    answers[index] = (-1, f"{type(error).__name__}: {error}".encode())

        await asyncio.gather(*(caller() for _ in range(callers)))
    return answers  # type: ignore[return-value]


def requests(count: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [
        rng.standard_normal((int(k), FEATURES)).astype(np.float32)
        for k in rng.integers(1, 9, size=count)
    ]


def check_answers(model, xs, answers) -> None:
    """Each answer is its own request's rows: id echoed, shape, values equal to onnxruntime on
    those rows (mixed-up rows differ by O(1): the inputs are distinct random rows)."""
    reference = onnxruntime_outputs(model, [np.concatenate(xs)])[0]
    scale = np.abs(reference).max()
    offset = 0
    for index, (x, (status, body)) in enumerate(zip(xs, answers, strict=True)):
        assert status == 200, (index, status, body[:300])
        answer = json.loads(body)
        assert answer["id"] == str(index) and answer["model_name"] == NAME
        (output,) = answer["outputs"]
        assert output["shape"] == [len(x), CLASSES], index
        y = np.asarray(output["data"], np.float32).reshape(len(x), CLASSES)
        expected = reference[offset : offset + len(x)]
        offset += len(x)
        np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-5 * scale, err_msg=str(index))


def test_metadata_and_errors_are_the_protocols(cluster):
    async def go():
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=TIMEOUT)) as s:
            async with s.get(f"{cluster}/two/v2/health/ready") as r:
                assert r.status == 200
            async with s.get(f"{cluster}/two/v2/models/{NAME}") as r:
                meta = await r.json(content_type=None)
            async with s.post(f"{cluster}/two/v2/models/{NAME}/infer", data=b"{") as r:
                bad = (r.status, await r.json(content_type=None))
            wrong = request_body(0, np.zeros((2, FEATURES + 1), np.float32))
            async with s.post(f"{cluster}/two/v2/models/{NAME}/infer", data=wrong) as r:
                shape = (r.status, await r.json(content_type=None))
            async with s.post(f"{cluster}/two/v2/models/other/infer", data=b"{}") as r:
                unknown = r.status
        return meta, bad, shape, unknown

    meta, bad, shape, unknown = asyncio.run(go())
    assert meta["inputs"] == [{"name": "x", "datatype": "FP32", "shape": [-1, FEATURES]}]
    assert meta["outputs"] == [{"name": "y", "datatype": "FP32", "shape": [-1, CLASSES]}]
    assert bad[0] == 400 and bad[1]["error"].startswith("the request is not JSON")
    assert shape[0] == 400 and "\n" not in shape[1]["error"], shape
    assert unknown == 404


def test_2000_requests_from_64_callers_over_2_replicas(artifact, cluster):
    """2,000 requests of 1..8 rows, distinct random values, 64 concurrent callers: none lost,
    duplicated or mixed. Throughput of 2 replicas vs 1 (the same callers) is printed, never
    asserted (2 shared cores)."""
    model, out = artifact
    xs = requests(2000, seed=1)
    bodies = [request_body(i, x) for i, x in enumerate(xs)]
    rates = {}
    for app, count in (("one", 500), ("two", 2000)):
        start = time.perf_counter()
        answers = asyncio.run(post_all(f"{cluster}/{app}/v2/models/{NAME}/infer", bodies[:count]))
        rates[app] = count / (time.perf_counter() - start)
        check_answers(model, xs[:count], answers)
        served = post_all.replicas
        assert len(served) == (1 if app == "one" else 2) and None not in served, served
    print(
        f"\nray serve, 64 callers, 1..8 rows: 1 replica {rates['one']:.0f} req/s (500 requests), "
        f"2 replicas {rates['two']:.0f} req/s (2,000 requests), "
        f"ratio {rates['two'] / rates['one']:.2f} (load average {os.getloadavg()[0]:.1f}); "
        f"requests per replica {sorted(served.values())}"
    )
    local = mlconv.load(out)  # and a sample against the artifact's own function, row by row
    try:
        for index in range(0, 2000, 250):
            single = np.concatenate([local.loaded(row[None])[0] for row in xs[index]])
            (output,) = json.loads(answers[index][1])["outputs"]
            y = np.asarray(output["data"], np.float32).reshape(single.shape)
            np.testing.assert_allclose(y, single, rtol=1e-5, atol=1e-5)
    finally:
        local.close()


def test_a_killed_replica_gives_errors_or_answers_never_a_hang(artifact, cluster):
    """One of /two's replica actors killed while 400 requests are in flight: every request
    ends within TIMEOUT with its own correct answer or a clear error status; afterwards the
    application answers again (Serve replaces the replica)."""
    model, _ = artifact
    actors = [
        a
        for a in ray.util.list_named_actors(all_namespaces=True)
        if a["name"].startswith("SERVE_REPLICA::two#")
    ]
    assert len(actors) == 2, actors
    victim = ray.get_actor(actors[0]["name"], namespace=actors[0]["namespace"])
    xs = requests(400, seed=2)
    bodies = [request_body(i, x) for i, x in enumerate(xs)]
    url = f"{cluster}/two/v2/models/{NAME}/infer"

    async def go():
        load = asyncio.ensure_future(post_all(url, bodies))
        await asyncio.sleep(0.3)
        ray.kill(victim, no_restart=True)
        return await load

    start = time.perf_counter()
    answers = asyncio.run(go())
    took = time.perf_counter() - start
    failed = [(i, s, b[:200]) for i, (s, b) in enumerate(answers) if s != 200]
    print(
        f"\nkilled replica: {len(failed)} of 400 requests failed, {took:.1f} s; first {failed[:2]}"
    )
    assert all(status >= 500 and body for _, status, body in failed), failed[:5]
    good = [i for i, (s, _) in enumerate(answers) if s == 200]
    reference = onnxruntime_outputs(model, [np.concatenate(xs)])[0]
    offsets = np.cumsum([0] + [len(x) for x in xs])
    for i in good:
        answer = json.loads(answers[i][1])
        assert answer["id"] == str(i)
        y = np.asarray(answer["outputs"][0]["data"], np.float32).reshape(len(xs[i]), CLASSES)
        np.testing.assert_allclose(y, reference[offsets[i] : offsets[i + 1]], rtol=1e-5, atol=1e-4)
    again = asyncio.run(post_all(url, bodies[:20], callers=4))
    assert [s for s, _ in again] == [200] * 20, again[:2]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--replicas", "0"], "--replicas must be positive"),
        (["--replicas", "2", "--port", "0"], "--replicas needs a --port"),
    ],
)
def test_mlconv_run_replicas_refuses_bad_flags_in_one_line(artifact, capsys, flags, message):
    from mlconv.tools.mlconv_run import main

    assert main([str(artifact[1]), "--serve", *flags]) == 1
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert message in line


def test_ray_options_are_passed_through(artifact, monkeypatch):
    """num_replicas / autoscaling_config / ray_actor_options / any serve.deployment option
    reach Ray unchanged, from the Python call and from `serve run ...:app k=v`."""
    from mlconv.converter import ray_serve

    seen = []

    class Recorder:
        def __init__(self, target, **options):
            seen.append(options)

        def bind(self, *args):
            return args

    monkeypatch.setattr(serve, "deployment", Recorder)
    autoscaling = {"min_replicas": 1, "max_replicas": 4, "target_ongoing_requests": 8}
    bound = ray_serve.deployment(
        artifact[1],
        autoscaling_config=autoscaling,
        ray_actor_options={"num_gpus": 1},
        health_check_period_s=5,
    )
    assert seen[-1] == {
        "name": NAME,
        "autoscaling_config": autoscaling,
        "ray_actor_options": {"num_gpus": 1},
        "health_check_period_s": 5,
        "max_ongoing_requests": 64,
    }
    assert bound[:2] == (os.path.abspath(artifact[1]), NAME)
    ray_serve.app({"outdir": str(artifact[1]), "num_replicas": "3", "name": "m"})
    assert seen[-1] == {"name": "m", "num_replicas": 3, "max_ongoing_requests": 64}
    with pytest.raises(OptionError, match="takes outdir=DIR"):
        ray_serve.app({"outdir": str(artifact[1]), "replicas": "3"})

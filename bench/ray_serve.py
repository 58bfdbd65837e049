"""Throughput of Ray Serve replicas of an artifact (converter/ray_serve.py) against one
`mlconv-run OUTDIR --serve` process, the fastest peer, in the same run.

    python bench/ray_serve.py [--requests 1000] [--callers 64] [--rounds 3] [--cpus 2]

The artifact is test_ray_serve.py's (an ONNX MLP 16 -> 32 -> 8 with batch options: max 8 rows,
allowed 2/4/8). Three peers serve the same Open Inference Protocol JSON requests (1..8 random
rows each, fixed seed) from `--callers` concurrent aiohttp callers:

- stdlib: `mlconv-run OUTDIR --serve` (one process, converter/serving.py);
- ray x1, ray x2: Ray Serve applications of 1 and 2 replicas on `ray.init(num_cpus=--cpus)`,
  behind Ray's HTTP proxy.

Rounds rotate the order of the peers so load on the machine hits each alike; every answer is
checked (status 200, its own id and rows, equal to onnxruntime on those rows) before its time
counts. The medians (requests per second) and the ratios to stdlib are printed with the load
average: on a shared machine they say little about a machine with a core per replica.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "test" / "pytest"))
from test_ray_serve import (  # noqa: E402 - the test's artifact, client and checks
    NAME,
    OPTIONS,
    check_answers,
    mlp,
    post_all,
    request_body,
    requests,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--callers", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cpus", type=int, default=2)
    args = parser.parse_args()

    import onnx
    import ray
    from ray import serve

    from mlconv.converter.ray_serve import deployment
    from mlconv.tools.mlconv_convert import convert

    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    folder = Path(tempfile.mkdtemp(prefix="mlconv-ray-bench-"))
    model = mlp()
    onnx.save(model, str(folder / "mlp.onnx"))
    out = folder / NAME
    convert(str(folder / "mlp.onnx"), str(out), OPTIONS, quiet=True)

    log = open(folder / "stderr.txt", "w+")  # noqa: SIM115 - read while the server runs
    server = subprocess.Popen(
        [sys.executable, "-m", "mlconv.tools.mlconv_run", str(out), "--serve", "--port", "0"],
        stderr=log,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    stdlib = None
    while stdlib is None:
        assert server.poll() is None, (folder / "stderr.txt").read_text()
        for line in (folder / "stderr.txt").read_text().splitlines():
            if " serving " in line:
                stdlib = "http://" + line.rsplit("//", 1)[-1]
        time.sleep(0.1)

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False)
    try:
        serve.start(http_options={"host": "127.0.0.1", "port": port})
        share = {"num_cpus": args.cpus / 4}
        for app, replicas in (("one", 1), ("two", 2)):
            serve.run(
                deployment(out, num_replicas=replicas, ray_actor_options=share),
                name=app,
                route_prefix=f"/{app}",
            )
        peers = {
            "stdlib": f"{stdlib}/v2/models/{NAME}/infer",
            "ray x1": f"http://127.0.0.1:{port}/one/v2/models/{NAME}/infer",
            "ray x2": f"http://127.0.0.1:{port}/two/v2/models/{NAME}/infer",
        }
        xs = requests(args.requests, seed=7)
        bodies = [request_body(i, x) for i, x in enumerate(xs)]
        asyncio.run(post_all(peers["ray x2"], bodies[:100], args.callers))  # warm every peer
        rates: dict[str, list[float]] = {name: [] for name in peers}
        names = list(peers)
        for round_ in range(args.rounds):
            for name in names[round_ % 3 :] + names[: round_ % 3]:
                start = time.perf_counter()
                answers = asyncio.run(post_all(peers[name], bodies, args.callers))
                rates[name].append(len(bodies) / (time.perf_counter() - start))
                check_answers(model, xs, answers)
        base = statistics.median(rates["stdlib"])
        print(
            f"{args.requests} requests of 1..8 rows, {args.callers} callers, {args.rounds} "
            f"rounds, ray.init(num_cpus={args.cpus}), {os.cpu_count()} cores, load average "
            f"{os.getloadavg()[0]:.1f}"
        )
        for name, values in rates.items():
            median = statistics.median(values)
            print(
                f"  {name:7s} {median:7.0f} req/s (median; rounds "
                f"{', '.join(f'{v:.0f}' for v in values)}), {median / base:.2f}x stdlib"
            )
    finally:
        serve.shutdown()
        ray.shutdown()
        server.terminate()
        server.wait(30)
        log.close()


if __name__ == "__main__":
    main()

"""One sharded artifact over two JAX processes (issue 32): `mlconv.load(OUTDIR)` under
`jax.distributed`, 2 processes x 4 forced CPU devices with gloo collectives, against the same
artifact in one process with 8 devices; the same by `mlconv-run --coordinator --num-processes
--process-id`; a transformer block whose output XLA leaves sharded; and a peer that exits
makes the other's next call fail at once, not hang (~35 s wall for the file at load ~1-2)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import numpy as np
import pytest
from onnx_graphs import Weights, float_model

pytest.importorskip("tensorflow")  # the topology is a TensorFlow TopologyProto

CONVERT = """
import numpy as np, onnx, mlconv
from test_sharding import cnn_model, X_SHAPE, DF_2X2
from test_mlconv_convert import sharding_options
from mlconv.tools.mlconv_convert import convert
onnx.save(cnn_model(), "m.onnx")
convert("m.onnx", "sharded", sharding_options(8, [2, 2, 1, 2], DF_2X2), quiet=True)
x = np.random.default_rng(22).standard_normal(X_SHAPE).astype(np.float32)
np.save("x.npy", x)
np.savez("x.npz", x)
np.save("y1.npy", mlconv.load("sharded")(x)[0])
from test_multihost import transformer_block
onnx.save(transformer_block(), "t.onnx")
convert("t.onnx", "block", sharding_options(8, [2, 2, 1, 2], DF_2X2), quiet=True)
t = np.random.default_rng(23).standard_normal((2, 8, 32)).astype(np.float32)
np.save("t.npy", t)
np.save("t1.npy", mlconv.load("block")(t)[0])
"""

PROCESS = """
import json, os, sys, time, numpy as np, jax
jax.config.update("jax_cpu_collectives_implementation", "gloo")
pid, port, kill = int(sys.argv[1]), sys.argv[2], sys.argv[3] == "1"
folder, inputs = sys.argv[4:6]
jax.distributed.initialize(f"127.0.0.1:{port}", num_processes=2, process_id=pid,
                           initialization_timeout=120, heartbeat_timeout_seconds=10)
import mlconv
x = np.load(inputs)
model = mlconv.load(folder)
(y,) = model(x)
(call,) = model._calls.values()
per_device = {}
for w in call.weights:
    for s in w.addressable_shards:
        per_device[s.device.id] = per_device.get(s.device.id, 0) + s.data.nbytes
print(json.dumps({"devices": len(jax.devices()), "local": len(jax.local_devices()),
                  "y": np.asarray(y).tolist(), "per_device": per_device}), flush=True)
if kill and pid == 1:
    os._exit(0)
if kill:
    start = time.monotonic()
    try:
        model(x)
        print(json.dumps({"second": "returned"}), flush=True)
    except Exception as error:
        print(json.dumps({"second": type(error).__name__ + ": " + str(error)[:300],
                          "after_s": time.monotonic() - start}), flush=True)
"""


def transformer_block(seed: int = 24):  # -> onnx.ModelProto
    """One-head self-attention (q, k, v, o: 32x32) + LayerNorm + ReLU MLP (32x64, 64x32) +
    LayerNorm over x: (2, 8, 32): every weight's output features divide by 8 devices."""
    from onnx import helper, numpy_helper

    weight = Weights(np.random.default_rng(seed), 0.2)
    scale = numpy_helper.from_array(np.array(32**-0.5, np.float32), "scale")
    node = helper.make_node
    nodes = [
        node("MatMul", ["x", weight(32, 32)], ["q"]),
        node("MatMul", ["x", weight(32, 32)], ["k"]),
        node("MatMul", ["x", weight(32, 32)], ["v"]),
        node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
        node("MatMul", ["q", "kt"], ["s0"]),
        node("Mul", ["s0", "scale"], ["s"]),
        node("Softmax", ["s"], ["p"], axis=-1),
        node("MatMul", ["p", "v"], ["a"]),
        node("MatMul", ["a", weight(32, 32)], ["o"]),
        node("Add", ["x", "o"], ["r1"]),
        node("LayerNormalization", ["r1", weight(32), weight(32)], ["h"], axis=-1),
        node("MatMul", ["h", weight(32, 64)], ["f0"]),
        node("Add", ["f0", weight(64)], ["f1"]),
        node("Relu", ["f1"], ["f2"]),
        node("MatMul", ["f2", weight(64, 32)], ["f3"]),
        node("Add", ["f3", weight(32)], ["f4"]),
        node("Add", ["h", "f4"], ["r2"]),
        node("LayerNormalization", ["r2", weight(32), weight(32)], ["y"], axis=-1),
    ]
    return float_model(
        nodes, {"x": [2, 8, 32]}, {"y": [2, 8, 32]}, [*weight.initializers, scale], name="block"
    )


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(devices: int) -> dict[str, str]:
    """A subprocess's environment: the CPU with `devices` forced devices, this sys.path."""
    return {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": os.pathsep.join(sys.path),
            "XLA_FLAGS": f"--xla_force_host_platform_device_count={devices}"}  # fmt: skip


def _run_pair(folder, command) -> list[tuple[int, str, str]]:
    """Processes 0 and 1 of `command(process_id, port)` run together in `folder` (4 devices
    each, one free coordinator port): (returncode, stdout, stderr) of each. A hang fails at the
    240 s timeout; a process left running is killed."""
    port = _port()
    processes = [
        subprocess.Popen(
            command(i, port),
            cwd=folder,
            env=_env(4),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for i in range(2)
    ]
    results = []
    try:
        for process in processes:
            out, err = process.communicate(timeout=240)  # a hang fails here
            results.append((process.returncode, out, err))
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
    return results


def _pair(folder, kill: bool, artifact="sharded", inputs="x.npy") -> list[list[dict]]:
    results = _run_pair(
        folder,
        lambda i, port: [
            sys.executable, "-c", PROCESS, str(i), str(port), str(int(kill)), artifact, inputs,
        ],
    )  # fmt: skip
    lines = []
    for _, out, err in results:
        lines.append([json.loads(line) for line in out.splitlines() if line.startswith("{")])
        assert lines[-1], err[-2000:]
    return lines


@pytest.fixture(scope="module")
def sharded(tmp_path_factory):
    """A folder with the 8-device artifact `sharded`, x.npy/x.npz and its 1-process y1.npy."""
    folder = tmp_path_factory.mktemp("multihost")
    done = subprocess.run(
        [sys.executable, "-c", CONVERT], cwd=folder, env=_env(8), capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return folder


def test_two_processes_of_four_devices_equal_one_process_and_a_dead_peer_fails_fast(sharded):
    tmp_path = sharded
    single = np.load(tmp_path / "y1.npy")
    for (line,) in _pair(tmp_path, kill=False):
        assert (line["devices"], line["local"]) == (8, 4)
        np.testing.assert_allclose(np.array(line["y"], np.float32), single, atol=1e-5)
        # each device: 1/8 of both conv kernels (16x3x3x3, 24x16x3x3) + the replicated 24x10
        assert set(line["per_device"].values()) == {(16 * 27 + 24 * 144) // 8 * 4 + 240 * 4}
    first, second = _pair(tmp_path, kill=True)
    assert len(second) == 1  # process 1 answered once and exited
    assert first[1]["second"] != "returned" and first[1]["after_s"] < 30, first[1]


def test_mlconv_run_in_two_processes_equals_one_process(sharded):
    """`mlconv-run OUTDIR --coordinator --num-processes --process-id`: both read the same
    x.npz, process 0 alone writes; its output equals the 1-process run."""
    results = _run_pair(
        sharded,
        lambda i, port: [
            sys.executable, "-m", "mlconv.tools.mlconv_run", "sharded",
            "--inputs", "x.npz", "--outputs", f"cli{i}.npz",
            "--coordinator", f"127.0.0.1:{port}", "--num-processes", "2", "--process-id", str(i),
        ],
    )  # fmt: skip
    for returncode, _, err in results:
        assert returncode == 0, err[-2000:]
    assert not (sharded / "cli1.npz").exists()  # process 1 writes nothing
    with np.load(sharded / "cli0.npz") as npz:
        (y,) = [npz[k] for k in npz.files]
    np.testing.assert_allclose(y, np.load(sharded / "y1.npy"), atol=1e-5)


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--coordinator", "h:1"], "--coordinator needs --num-processes and --process-id"),
        (["--coordinator", "h", "--num-processes", "2", "--process-id", "0"], "HOST:PORT"),
        (["--coordinator", "h:1", "--num-processes", "2", "--process-id", "2"], "0..1"),
        (["--distributed", "--process-id", "0"], "drop --process-id"),
        (["--distributed", "--serve"], "--serve does not run under jax.distributed"),
    ],
)
def test_mlconv_run_refuses_bad_distributed_flags_in_one_line(flags, message, capsys):
    from mlconv.tools.mlconv_run import main

    assert main(["sharded", "--inputs", "x.npz", "--outputs", "y.npz", *flags]) == 1
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err


def test_transformer_block_over_two_processes_equals_one_process(sharded):
    """Weights sharded along their output features: each device holds whole / 8 (the six
    matrices; biases and LayerNorm parameters are constants of the program, not weights). The
    output XLA leaves sharded is gathered whole on both processes."""
    single = np.load(sharded / "t1.npy")
    whole = 4 * (4 * 32 * 32 + 2 * 32 * 64)
    for (line,) in _pair(sharded, kill=False, artifact="block", inputs="t.npy"):
        assert (line["devices"], line["local"]) == (8, 4)
        np.testing.assert_allclose(np.array(line["y"], np.float32), single, atol=1e-5)
        assert set(line["per_device"].values()) == {whole // 8}, (line["per_device"], whole)

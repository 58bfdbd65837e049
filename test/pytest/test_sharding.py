"""Weight sharding of the TPU functions (`xla_sharding_options`, converter/sharding.py): the
constant kernels of convolutions and dot_generals are split over the device mesh along their
output-feature dimension (replicated where the mesh size does not divide it) and passed as
sharded arguments; outputs equal the single-device run.

Several devices on a CPU host need XLA_FLAGS before jax starts, so the sharded runs are one
subprocess (as test_mlconv_convert's sharding test).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess

import numpy as np
import onnx
import pytest
import sensitivity  # noqa: E402 - a module beside this one (conftest.py)
from onnx import helper
from onnx_graphs import Weights, float_model
from test_mlconv_convert import DF_2X2, sharding_options

import mlconv  # noqa: F401 - the package under test (imports before TensorFlow)

X_SHAPE = (2, 3, 16, 16)


def cnn_model(seed: int = 21) -> onnx.ModelProto:
    """Conv(16) -> Relu -> Conv(24, stride 2) -> Relu -> GlobalAveragePool -> MatMul(10):
    16 and 24 output channels divide by 8 devices (split), 10 classes do not (replicated)."""
    weight = Weights(np.random.default_rng(seed), 0.3)
    nodes = [
        helper.make_node(
            "Conv", ["x", weight(16, 3, 3, 3), weight(16)], ["c1"], pads=[1] * 4, name="conv1"
        ),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node(
            "Conv",
            ["r1", weight(24, 16, 3, 3), weight(24)],
            ["c2"],
            pads=[1] * 4,
            strides=[2, 2],
            name="conv2",
        ),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
        helper.make_node("MatMul", ["f", weight(24, 10)], ["y"], name="fc"),
    ]
    return float_model(nodes, {"x": X_SHAPE}, {"y": [2, 10]}, weight.initializers, name="cnn")


def test_weight_dims_split_output_features_where_they_divide():
    """Per op: a conv kernel on its out_feature dimension (0 in OIHW), a dot operand on its
    last free dimension; None (replicated) where the device count does not divide it."""
    from mlconv.converter.sharding import weight_dims
    from mlconv.dialects import tpu
    from mlconv.frontends.load import load_model
    from mlconv.passes.pipelines import lower_to_tpu

    module = lower_to_tpu(load_model(cnn_model()), "x:2,3,16,16")
    (region,) = [op for op in module.walk() if isinstance(op, tpu.RegionOp)]

    def shapes(size: int) -> dict[tuple[int, ...], int | None]:
        return {
            tuple(op.output.type.get_shape()): dim for op, dim in weight_dims(region, size).items()
        }

    assert shapes(8) == {(16, 3, 3, 3): 0, (24, 16, 3, 3): 0, (24, 10): None}
    assert shapes(2) == {(16, 3, 3, 3): 0, (24, 16, 3, 3): 0, (24, 10): 1}
    assert shapes(3) == {(16, 3, 3, 3): None, (24, 16, 3, 3): 0, (24, 10): None}


def test_weight_dims_of_a_dot_with_two_free_dims_take_the_last():
    """An Einsum weight [K, H, D] (contracted on K; heads and head size free): split over 8
    devices on D = 16, the last free dimension (H = 3 would leave it replicated on each)."""
    from mlconv.converter.sharding import weight_dims
    from mlconv.dialects import tpu
    from mlconv.frontends.load import load_model
    from mlconv.passes.pipelines import lower_to_tpu

    w = np.random.default_rng(5).standard_normal((8, 3, 16)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Einsum", ["x", "w"], ["y"], equation="nk,khd->nhd")],
        "einsum",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 3, 16])],
        [onnx.numpy_helper.from_array(w, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    module = lower_to_tpu(load_model(model), "x:2,8")
    (region,) = [op for op in module.walk() if isinstance(op, tpu.RegionOp)]
    ((op, dim),) = weight_dims(region, 8).items()
    assert (tuple(op.output.type.get_shape()), dim) == ((8, 3, 16), 2)


SHARDED_RUN = """
import json, sys
import numpy as np
import jax
import mlconv
from mlconv.tools.mlconv_convert import convert

model, out, shape, options = sys.argv[1:5]
spec = lambda sharding: [list(p) if isinstance(p, tuple) else p for p in sharding.spec]
assert len(jax.devices()) == 8, jax.devices()
x = np.random.default_rng(22).standard_normal(json.loads(shape)).astype(np.float32)
convert(model, out + "/one", "disable_default_optimizations: true", quiet=True)
(single,) = mlconv.load(out + "/one")(x)
results = {"single": single.tolist(), "runs": []}
for index, text in enumerate(json.loads(options)):
    convert(model, out + f"/sharded{index}", text, quiet=True)
    loaded = mlconv.load(out + f"/sharded{index}")
    (got,) = loaded(x)
    (call,) = loaded._calls.values()
    compiled = call.call.lower(x, *call.weights).compile()
    results["runs"].append({
        "output": got.tolist(),
        "weights": [
            {
                "shape": list(w.shape),
                "spec": spec(w.sharding),
                "devices": sorted(d.id for d in w.sharding.device_set),
                "shards": sorted({tuple(s.data.shape) for s in w.addressable_shards}),
                "device_bytes": max(s.data.nbytes for s in w.addressable_shards),
                "placement": {
                    str(s.device.id): s.index[0].start or 0 for s in w.addressable_shards
                },
            }
            for w in call.weights
        ],
        "compiled": [spec(s) for s in compiled.input_shardings[0][1:]],
        "manifest": [
            {k: e[k] for k in ("shape", "dim")}
            for e in loaded.manifest["functions"][0]["weights"]
        ],
    })
print(json.dumps(results))
"""


def run_sharded(tmp_path, model: onnx.ModelProto, shape, options: list[str]) -> dict:
    path = tmp_path / "model.onnx"
    onnx.save(model, str(path))
    env = {
        **os.environ,
        "XLA_FLAGS": "--xla_force_host_platform_device_count=8",
        "JAX_PLATFORMS": "cpu",
    }
    result = subprocess.run(
        [
            "python",
            "-c",
            SHARDED_RUN,
            str(path),
            str(tmp_path),
            json.dumps(shape),
            json.dumps(options),
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


SPLIT = [["x", "y", "z", "core"], None, None, None]


def test_cnn_weights_split_over_8_and_4_devices_equal_the_single_device_run(tmp_path):
    pytest.importorskip("tensorflow")  # the topology is a TensorFlow TopologyProto
    import onnxruntime as ort

    model = cnn_model()
    options = [
        sharding_options(8, [2, 2, 1, 2], DF_2X2),
        sharding_options(
            4, [2, 2, 1, 2], DF_2X2, [(0, 0, 0, 0), (0, 0, 0, 1), (1, 0, 0, 0), (1, 0, 0, 1)]
        ),
    ]
    got = run_sharded(tmp_path, model, X_SHAPE, options)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(22)
    x, other = (rng.standard_normal(X_SHAPE).astype(np.float32) for _ in range(2))
    expected = session.run(None, {"x": x})[0]
    sensitivity.assert_input_sensitive(expected, session.run(None, {"x": other})[0], rtol=1e-5)
    single = np.array(got["single"], np.float32)
    np.testing.assert_allclose(single, expected, rtol=1e-5, atol=1e-5)
    eight, four = got["runs"]
    for run in (eight, four):
        np.testing.assert_allclose(np.array(run["output"], np.float32), single, atol=1e-5)
    # 8 devices: each holds 1/8 of both kernels; the 24x10 dot weight (10 % 8) is replicated.
    assert [(w["shape"], w["spec"], w["shards"]) for w in eight["weights"]] == [
        ([16, 3, 3, 3], SPLIT, [[2, 3, 3, 3]]),
        ([24, 16, 3, 3], SPLIT, [[3, 16, 3, 3]]),
        ([24, 10], [], [[24, 10]]),
    ]
    assert all(w["devices"] == list(range(8)) for w in eight["weights"])
    assert eight["manifest"] == [
        {"shape": [16, 3, 3, 3], "dim": 0},
        {"shape": [24, 16, 3, 3], "dim": 0},
        {"shape": [24, 10], "dim": None},
    ]
    # The compiled executable takes the weights as split arguments (not constants).
    assert eight["compiled"][:2] == [SPLIT, SPLIT]
    # 4 assigned devices (0, 1, 4, 5 of the topology): 16 / 4, 24 / 4, and 10 is split neither.
    assert [w["shards"] for w in four["weights"]] == [[[4, 3, 3, 3]], [[6, 16, 3, 3]], [[24, 10]]]
    assert all(w["devices"] == [0, 1, 4, 5] for w in four["weights"])
    # Device by device (issue 31: a mesh mapped to the devices in reverse kept the set of shard
    # shapes): mesh position k, row-major over the box the topology's coordinates span, is
    # topology device k of the replica and holds the k-th block of rows.
    assert [w["placement"] for w in eight["weights"][:2]] == [
        {str(d): 2 * d for d in range(8)},
        {str(d): 3 * d for d in range(8)},
    ]
    assert [w["placement"] for w in four["weights"][:2]] == [
        {"0": 0, "1": 4, "4": 8, "5": 12},
        {"0": 0, "1": 6, "4": 12, "5": 18},
    ]
    assert eight["weights"][2]["placement"] == {str(d): 0 for d in range(8)}  # replicated
    whole = sum(np.prod(w["shape"]) * 4 for w in eight["weights"])
    assert sum(w["device_bytes"] for w in eight["weights"]) == (16 * 27 + 24 * 144) // 8 * 4 + 960
    assert whole == (16 * 27 + 24 * 144 + 240) * 4


def one_device_artifact(tmp_path):
    """The CNN saved for a one-device mesh (weights as arguments, in this process's jax)."""
    from mlconv.converter.artifact import save_artifact
    from mlconv.converter.sharding import AXES, MeshSpec
    from mlconv.frontends.load import load_model
    from mlconv.passes.pipelines import lower_to_tpu

    module = lower_to_tpu(load_model(cnn_model()), "x:2,3,16,16")
    out = tmp_path / "artifact"
    save_artifact(module, out, saved_model=False, sharding=MeshSpec(AXES, (1, 1, 1, 1), (0,)))
    return module, out


def test_weights_as_arguments_round_trip_and_a_short_weights_file_is_one_line(tmp_path):
    from mlconv.backends.jax_backend import compile_module
    from mlconv.converter.artifact import load_artifact
    from mlconv.errors import BackendError

    module, out = one_device_artifact(tmp_path)
    x = np.random.default_rng(23).standard_normal(X_SHAPE).astype(np.float32)
    loaded = load_artifact(out)
    (call,) = loaded._calls.values()
    assert [w.shape for w in call.weights] == [(16, 3, 3, 3), (24, 16, 3, 3), (24, 10)]
    np.testing.assert_allclose(
        loaded(x)[0], np.asarray(compile_module(module, "cpu")(x)[0]), rtol=1e-6, atol=1e-6
    )
    weights = out / "tpu" / "tpu_function_0.weights"
    assert weights.stat().st_size == (16 * 27 + 24 * 144 + 240) * 4
    weights.write_bytes(weights.read_bytes()[:-4])
    with pytest.raises(BackendError, match="tpu_function_0.weights: SHA-256 differs"):
        load_artifact(out)
    # the manifest's hash rewritten to match: the weights' own byte count still refuses it
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["files"]["tpu/tpu_function_0.weights"] = hashlib.sha256(
        weights.read_bytes()
    ).hexdigest()
    (out / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(
        BackendError,
        match=r"tpu_function_0.weights: holds \d+ bytes; the manifest's weights need \d+",
    ) as error:
        load_artifact(out)
    assert "\n" not in str(error.value)
    weights.unlink()
    with pytest.raises(BackendError, match="tpu_function_0.weights: cannot read: No such file"):
        load_artifact(out)

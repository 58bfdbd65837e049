"""The host part in the mlconv artifact (issue 9): a SavedModel's signatures run whole by
`mlconv.load(OUTDIR).signatures[name]` and `mlconv-run OUTDIR`, without the source model.

The model is the seed's pattern: a Keras model under the function alias `tpu_func`, called by
signatures that do host work around it. `serving_default` normalizes its input with a stored
mean before the TPU call, applies a softmax after it, and returns a host-only reduction too:
its host part converts to JAX and runs without TensorFlow. `strings` parses its input with
`tf.strings.to_number`, an op only TensorFlow runs: that signature stays TensorFlow. With
`bfloat16_optimization_options { scope: ALL }` the host stages compute in bfloat16 as well.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import sensitivity  # noqa: E402 - a module beside this one (conftest.py)

import mlconv
from mlconv.tools.mlconv_convert import convert

TPU_FUNC = 'tpu_functions { function_alias: "tpu_func" }\n'
FLOAT32 = TPU_FUNC + "disable_default_optimizations: true\n"
SHAPE = (2, 10, 10, 3)


@pytest.fixture(scope="module")
def saved_model(tmp_path_factory):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    tf = pytest.importorskip("tensorflow")
    keras = pytest.importorskip("keras")
    keras.utils.set_random_seed(11)
    inputs = keras.Input(SHAPE[1:], batch_size=SHAPE[0])
    x = keras.layers.Conv2D(8, 3, padding="same", activation="relu")(inputs)
    x = keras.layers.GlobalAveragePooling2D()(x)
    outputs = keras.layers.Dense(5)(x)
    model = keras.Model(inputs, outputs)
    rng = np.random.default_rng(12)

    class Module(tf.Module):
        def __init__(self):
            super().__init__()
            self.model = model
            self.mean = tf.Variable(rng.standard_normal(3).astype(np.float32), trainable=False)

        @tf.function(input_signature=[tf.TensorSpec(SHAPE, tf.float32)])
        def tpu_func(self, x):
            return self.model(x)

        @tf.function(input_signature=[tf.TensorSpec(SHAPE, tf.float32)])
        def serve(self, x):
            normalized = (x - self.mean) * 0.5
            logits = self.tpu_func(normalized)
            return {
                "probabilities": tf.nn.softmax(logits * 3.0),
                "energy": tf.reduce_sum(normalized * normalized, axis=[1, 2]),
            }

        @tf.function(input_signature=[tf.TensorSpec(SHAPE, tf.string)])
        def parse(self, text):
            return {"logits": self.tpu_func(tf.strings.to_number(text)) + 1.0}

    module = Module()
    folder = tmp_path_factory.mktemp("host_part") / "saved"
    tf.saved_model.save(
        module,
        str(folder),
        signatures={"serving_default": module.serve, "strings": module.parse},
        options=tf.saved_model.SaveOptions(function_aliases={"tpu_func": module.tpu_func}),
    )
    return tf, module, folder


def inputs(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(SHAPE).astype(np.float32)


def reference(tf, folder: Path, signature: str, **arrays) -> dict[str, np.ndarray]:
    """TensorFlow on the source SavedModel."""
    loaded = tf.saved_model.load(str(folder))
    results = loaded.signatures[signature](**{k: tf.constant(v) for k, v in arrays.items()})
    return {name: value.numpy() for name, value in results.items()}


@pytest.fixture(scope="module")
def float32_artifact(saved_model, tmp_path_factory):
    _, _, folder = saved_model
    out = tmp_path_factory.mktemp("host_part_out") / "converted"
    return out, convert(str(folder), str(out), FLOAT32)


def test_host_part_is_converted_and_runs_whole(saved_model, float32_artifact):
    tf, module, folder = saved_model
    out, manifest = float32_artifact
    entry = manifest["signatures"]["serving_default"]
    assert entry["runtime"] == "jax" and entry["bfloat16"] is False
    # normalization before the TPU call, softmax after it: host, TPU, host
    assert [next(iter(step)) for step in entry["steps"]] == ["host", "call", "host"]
    assert entry["steps"][1]["call"] == "tpu_func"
    assert (out / "host" / "serving_default.host_0.jaxexport").is_file()
    x, other = inputs(1), inputs(2)
    expected = reference(tf, folder, "serving_default", x=x)
    moved = reference(tf, folder, "serving_default", x=other)
    for name in expected:
        sensitivity.assert_input_sensitive(expected[name], moved[name], rtol=1e-5, what=name)
    got = mlconv.load(out).signatures["serving_default"](x=x)
    assert sorted(got) == sorted(expected)
    for name, value in expected.items():
        np.testing.assert_allclose(got[name], value, rtol=1e-5, atol=1e-6, err_msg=name)
    # the artifact's own call still runs the TPU function alone
    (logits,) = mlconv.load(out)(x)
    assert logits.shape == (SHAPE[0], 5)
    np.testing.assert_allclose(logits, module.tpu_func(x).numpy(), rtol=1e-5, atol=1e-6)


def test_host_part_runs_without_tensorflow(saved_model, float32_artifact, tmp_path):
    """mlconv.load and mlconv-run in a fresh process: the whole signature, TensorFlow never
    imported."""
    tf, _, folder = saved_model
    out, _ = float32_artifact
    x = inputs(3)
    np.savez(tmp_path / "in.npz", x=x)
    script = f"""
import sys
import numpy as np
import mlconv
from mlconv.tools import mlconv_run
x = np.load({str(tmp_path / "in.npz")!r})["x"]
got = mlconv.load({str(out)!r}).signatures["serving_default"](x=x)
np.savez({str(tmp_path / "load.npz")!r}, **got)
status = mlconv_run.main([{str(out)!r}, "--inputs", {str(tmp_path / "in.npz")!r},
                          "--outputs", {str(tmp_path / "run.npz")!r}])
assert status == 0, status
assert "tensorflow" not in sys.modules, "tensorflow was imported"
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    expected = reference(tf, folder, "serving_default", x=x)
    for result in ("load.npz", "run.npz"):
        got = np.load(tmp_path / result)
        assert sorted(got.files) == sorted(expected)
        for name, value in expected.items():
            np.testing.assert_allclose(got[name], value, rtol=1e-5, atol=1e-6, err_msg=name)


def test_host_only_op_keeps_the_signature_in_tensorflow(saved_model, float32_artifact):
    tf, _, folder = saved_model
    out, manifest = float32_artifact
    entry = manifest["signatures"]["strings"]
    assert entry["runtime"] == "tensorflow"
    assert entry["reason"].startswith("host-only ops tf.StringToNumber: ")
    recorded = json.loads((out / "manifest.json").read_text())["signatures"]["strings"]
    assert recorded["saved_model"] == "saved_model"
    # its host part is a frozen GraphDef without the TPU function's body: the loader runs
    # StringToNumber in TensorFlow, then tpu_func as mlconv's StableHLO, then the `+ 1`
    assert [call["call"] for call in entry["calls"]] == ["tpu_func"]
    graph = tf.compat.v1.GraphDef()
    graph.ParseFromString((out / "host" / entry["graph"]).read_bytes())
    kinds = {node.op for node in graph.node}
    assert "StringToNumber" in kinds and "AddV2" in kinds
    assert not kinds & {"Conv2D", "MatMul", "XlaCallModule"}, kinds
    x, other = inputs(4), inputs(5)
    text = np.char.mod("%.6f", x).astype(bytes)
    expected = reference(tf, folder, "strings", text=text)["logits"]
    moved = reference(tf, folder, "strings", text=np.char.mod("%.6f", other).astype(bytes))
    sensitivity.assert_input_sensitive(expected, moved["logits"], rtol=1e-5)
    got = mlconv.load(out, allow_tensorflow=True).signatures["strings"](text=text)["logits"]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_mlconv_run_names_an_unknown_signature(saved_model, float32_artifact, tmp_path):
    from mlconv.tools import mlconv_run

    _, module, _ = saved_model
    out, manifest = float32_artifact
    np.savez(tmp_path / "in.npz", x=inputs(6))
    argv = [str(out), "--inputs", str(tmp_path / "in.npz"), "--outputs", str(tmp_path / "o.npz")]
    assert mlconv_run.main([*argv, "--signature", "nope"]) == 1
    # '-': the TPU functions alone, as before the host part
    assert mlconv_run.main([*argv, "--signature", "-"]) == 0
    (name,) = [o["name"] for o in manifest["outputs"]]
    got = np.load(tmp_path / "o.npz")[name]
    assert got.shape == (SHAPE[0], 5)
    np.testing.assert_allclose(got, module.tpu_func(inputs(6)).numpy(), rtol=1e-5, atol=1e-6)


def relative(got: np.ndarray, expected: np.ndarray) -> float:
    return float(np.abs(got - expected).max() / np.abs(expected).max())


def test_bfloat16_scope_all_converts_the_host_part(saved_model, tmp_path):
    """Scope TPU leaves the host stages float32 (the host-only `energy` output exact); scope
    ALL computes them in bfloat16 too, float32 kept at their boundaries."""
    tf, _, folder = saved_model
    x = inputs(7)
    expected = reference(tf, folder, "serving_default", x=x)
    errors = {}
    for scope in ("TPU", "ALL"):
        out = tmp_path / scope
        options = TPU_FUNC + f"bfloat16_optimization_options {{ scope: {scope} }}\n"
        manifest = convert(str(folder), str(out), options)
        assert manifest["signatures"]["serving_default"]["bfloat16"] is (scope == "ALL")
        stage = (out / "host" / "serving_default.host_0.mlir").read_text()
        assert ("bf16" in stage) is (scope == "ALL"), scope
        got = mlconv.load(out).signatures["serving_default"](x=x)
        assert all(value.dtype == np.float32 for value in got.values())
        errors[scope] = {name: relative(got[name], value) for name, value in expected.items()}
    assert errors["TPU"]["energy"] < 1e-6
    assert 1e-5 < errors["ALL"]["energy"] < 2e-2, errors
    for scope in errors:
        assert 1e-6 < errors[scope]["probabilities"] < 2e-2, errors


def test_host_stages_between_two_tpu_functions(tmp_path):
    """Host work before, between and after two TPU functions; the last stage reads values of
    the first stage and of both calls."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    tf = pytest.importorskip("tensorflow")
    keras = pytest.importorskip("keras")
    keras.utils.set_random_seed(21)
    first = keras.Sequential([keras.layers.Dense(8, activation="tanh")])
    second = keras.Sequential([keras.layers.Dense(8)])
    spec = [tf.TensorSpec((3, 8), tf.float32)]

    class Module(tf.Module):
        def __init__(self):
            super().__init__()
            self.first, self.second = first, second

        @tf.function(input_signature=spec)
        def tpu_func_1(self, x):
            return self.first(x)

        @tf.function(input_signature=spec)
        def tpu_func_2(self, x):
            return self.second(x)

        @tf.function(input_signature=spec)
        def serve(self, x):
            h = tf.exp(x * 0.5)
            a = self.tpu_func_1(h)
            b = self.tpu_func_2(a * tf.reduce_sum(h, axis=1, keepdims=True))
            return {"out": b - a + h}

    module = Module()
    first.build((None, 8))
    second.build((None, 8))
    folder = tmp_path / "saved"
    tf.saved_model.save(
        module,
        str(folder),
        signatures={"serving_default": module.serve},
        options=tf.saved_model.SaveOptions(
            function_aliases={"tpu_func_1": module.tpu_func_1, "tpu_func_2": module.tpu_func_2}
        ),
    )
    options = (
        'tpu_functions { function_alias: "tpu_func_1" }\n'
        'tpu_functions { function_alias: "tpu_func_2" }\n'
        "disable_default_optimizations: true\n"
    )
    manifest = convert(str(folder), str(tmp_path / "out"), options)
    entry = manifest["signatures"]["serving_default"]
    assert entry["runtime"] == "jax", entry.get("reason")
    assert [s.get("call", "host") for s in entry["steps"]] == [
        "host", "tpu_func_1", "host", "tpu_func_2", "host",
    ]  # fmt: skip
    rng = np.random.default_rng(22)
    x, other = (rng.standard_normal((3, 8)).astype(np.float32) for _ in range(2))
    expected = reference(tf, folder, "serving_default", x=x)["out"]
    moved = reference(tf, folder, "serving_default", x=other)["out"]
    sensitivity.assert_input_sensitive(expected, moved, rtol=1e-5)
    got = mlconv.load(tmp_path / "out").signatures["serving_default"](x=x)["out"]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)

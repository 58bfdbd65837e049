"""mlconv.compile's CPU back end choice (backends/backend_choice.py): "auto" measures XLA and
OpenVINO when compiling and runs the faster, caches the choice, falls back to XLA where OpenVINO
is absent, cannot express the model or disagrees; a back end the user names is the one that runs;
the callable, the progress line and `mlconv-run --json` say which ran. No timing is asserted:
which back end wins depends on the machine."""

from __future__ import annotations

import importlib
import json
import sys

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper
from onnx_graphs import float_model

import mlconv
from mlconv.backends import backend_choice
from mlconv.backends.jax_backend import CompiledModule
from mlconv.backends.openvino_backend import OpenVinoModule
from mlconv.errors import BackendError

pytest.importorskip("openvino")
onnxruntime = pytest.importorskip("onnxruntime")


@pytest.fixture(autouse=True)
def auto_backend(monkeypatch, tmp_path):
    """The default back end (the suite's conftest names xla) and a cache of this test's own."""
    monkeypatch.delenv("MLCONV_BACKEND", raising=False)
    monkeypatch.setenv("MLCONV_CACHE_DIR", str(tmp_path / "cache"))


def small_model(path, seed: int = 0) -> np.ndarray:
    """Conv 3->8 (3x3) + Relu + global average pool + Gemm 8->5, seeded weights, written to
    `path`; returns an input."""
    rng = np.random.default_rng(seed)
    weights = [
        numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "w"),
        numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "b"),
        numpy_helper.from_array(rng.standard_normal((8, 5)).astype(np.float32), "m"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("GlobalAveragePool", ["r"], ["p"]),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("MatMul", ["f", "m"], ["y"]),
    ]
    model = float_model(nodes, {"x": [1, 3, 16, 16]}, {"y": [1, 5]}, weights, name="small")
    onnx.save(model, path)
    return rng.standard_normal((1, 3, 16, 16)).astype(np.float32)


def onnxruntime_outputs(path, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, inputs)


def assert_ran(run, backend: str) -> None:
    """`run` reports `backend` and is that back end's callable."""
    assert run.backend == backend == run.backend_choice.backend
    assert isinstance(run, OpenVinoModule if backend == "openvino" else CompiledModule)


@pytest.fixture(scope="module")
def light_models(tmp_path_factory):
    """Two light ONNX models of the onnx wheel with seeded random weights, and an input each."""
    from sensitivity import randomize_onnx_weights

    folder = tmp_path_factory.mktemp("light")
    models = {}
    for name in ("squeezenet", "inception_v1"):
        source = onnx.load(f"{onnx.__path__[0]}/backend/test/data/light/light_{name}.onnx")
        initializers = {t.name for t in source.graph.initializer}
        graph_input = next(i for i in source.graph.input if i.name not in initializers)
        dims = [d.dim_value for d in graph_input.type.tensor_type.shape.dim]
        x = np.random.default_rng(1).standard_normal(dims).astype(np.float32)
        model = randomize_onnx_weights(
            source, 0, [np.random.default_rng(2).standard_normal(dims).astype(np.float32)]
        )
        path = folder / f"{name}.onnx"
        onnx.save(model, path)
        models[name] = (path, {graph_input.name: x})
    return models


@pytest.mark.parametrize("name", ["squeezenet", "inception_v1"])
def test_auto_picks_a_backend_that_matches_onnxruntime(light_models, name):
    path, inputs = light_models[name]
    run = mlconv.compile(path, device="cpu", quiet=True)
    choice = run.backend_choice
    assert choice.reason == "measured", choice
    assert choice.xla_ms > 0 and choice.openvino_ms > 0 and choice.measure_s > 0
    assert choice.max_rel <= backend_choice.RTOL
    assert_ran(run, choice.backend)
    (got,) = run(**inputs)
    (want,) = onnxruntime_outputs(path, inputs)
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3 * np.abs(want).max())
    # The choice is cached: compiled again, the same back end runs without measuring.
    again = mlconv.compile(path, device="cpu", quiet=True)
    assert again.backend_choice.reason == "cached"
    assert again.backend_choice.measure_s is None
    assert_ran(again, choice.backend)
    np.testing.assert_allclose(again(**inputs)[0], got, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    ("named", "backend"), [("xla", "xla"), ("jax", "xla"), ("openvino", "openvino")]
)
def test_a_named_backend_runs(tmp_path, named, backend):
    x = small_model(tmp_path / "small.onnx")
    # Auto's cached choice (whichever it is) does not override the user's.
    assert (
        mlconv.compile(tmp_path / "small.onnx", device="cpu", quiet=True).backend_choice.reason
        == "measured"
    )
    run = mlconv.compile(tmp_path / "small.onnx", device="cpu", backend=named, quiet=True)
    assert_ran(run, backend)
    assert run.backend_choice.reason == "named"
    (want,) = onnxruntime_outputs(tmp_path / "small.onnx", {"x": x})
    np.testing.assert_allclose(run(x)[0], want, rtol=1e-4, atol=1e-4)


def test_environment_names_the_default(tmp_path, monkeypatch):
    x = small_model(tmp_path / "small.onnx")
    monkeypatch.setenv("MLCONV_BACKEND", "openvino")
    run = mlconv.compile(tmp_path / "small.onnx", device="cpu", quiet=True)
    assert_ran(run, "openvino")
    assert run(x)[0].shape == (1, 5)


def test_without_openvino_auto_runs_xla(tmp_path, monkeypatch):
    x = small_model(tmp_path / "small.onnx")
    monkeypatch.setitem(sys.modules, "openvino", None)  # `import openvino` raises ImportError
    run = mlconv.compile(tmp_path / "small.onnx", device="cpu", quiet=True)
    assert_ran(run, "xla")
    assert run.backend_choice.reason == "fallback"
    assert "not installed" in run.backend_choice.note
    (want,) = onnxruntime_outputs(tmp_path / "small.onnx", {"x": x})
    np.testing.assert_allclose(run(x)[0], want, rtol=1e-4, atol=1e-4)


def test_outputs_that_differ_fall_back_to_xla(tmp_path, monkeypatch):
    small_model(tmp_path / "small.onnx")
    monkeypatch.setattr(backend_choice, "RTOL", -1.0)  # any difference, even none, is too large
    run = mlconv.compile(tmp_path / "small.onnx", device="cpu", quiet=True)
    assert_ran(run, "xla")
    assert "differ" in run.backend_choice.note


@pytest.mark.parametrize(
    "module, function, error, note",
    [
        (
            "openvino_ir",
            "to_openvino_ir",
            BackendError("'core.Foo' op cannot be written as OpenVINO IR"),
            "OpenVINO IR cannot express the model",
        ),
        (
            "openvino_backend",
            "compile_ir",
            RuntimeError("Exception from src/core: unsupported layer"),
            "OpenVINO cannot compile the model",
        ),
    ],
    ids=["ir-writer-refuses", "openvino-refuses-to-compile"],
)
def test_a_refused_openvino_step_falls_back_to_xla(
    tmp_path, monkeypatch, module, function, error, note
):
    """The IR writer refusing the model, or OpenVINO refusing to compile the IR: XLA runs it,
    and the choice's note says why."""

    def refuse(*args, **options):
        raise error

    small_model(tmp_path / "small.onnx")
    monkeypatch.setattr(importlib.import_module(f"mlconv.backends.{module}"), function, refuse)
    run = mlconv.compile(tmp_path / "small.onnx", device="cpu", quiet=True)
    assert_ran(run, "xla")
    assert run.backend_choice.note.startswith(note)


def test_the_report_says_which_ran(tmp_path, monkeypatch, capsys):
    from mlconv.tools import mlconv_run

    x = small_model(tmp_path / "small.onnx")
    np.savez(tmp_path / "in.npz", x=x)
    monkeypatch.setenv("MLCONV_PROGRESS", "1")  # the progress line, as on a terminal
    argv = [str(tmp_path / "small.onnx"), "--inputs", str(tmp_path / "in.npz")]
    assert mlconv_run.main([*argv, "--outputs", str(tmp_path / "out.npz"), "--json"]) == 0
    out, err = capsys.readouterr()
    report = json.loads(out.strip().splitlines()[-1])
    assert report["backend"] in ("xla", "openvino")
    assert report["choice"]["reason"] == "measured"
    assert f"mlconv.compile: backend {report['backend']} (measured" in err
    assert (
        mlconv_run.main([*argv, "--outputs", str(tmp_path / "o.npz"), "--json", "--backend", "xla"])
        == 0
    )
    assert (
        json.loads(capsys.readouterr()[0].strip().splitlines()[-1])["choice"]["reason"] == "named"
    )


def test_a_choice_measured_under_load_is_measured_again_when_quiet(tmp_path, monkeypatch):
    small_model(tmp_path / "small.onnx")
    monkeypatch.setattr(backend_choice, "load_per_core", lambda: 3.0)  # busy
    first = mlconv.compile(tmp_path / "small.onnx", device="cpu", quiet=True)
    assert first.backend_choice.load == 3.0
    assert (
        mlconv.compile(tmp_path / "small.onnx", device="cpu", quiet=True).backend_choice.reason
        == "cached"
    )
    monkeypatch.setattr(backend_choice, "load_per_core", lambda: 0.1)  # quiet now
    again = mlconv.compile(tmp_path / "small.onnx", device="cpu", quiet=True)
    assert again.backend_choice.reason == "measured"
    assert again.backend_choice.load == 0.1


def test_a_changed_model_is_measured_again(tmp_path):
    path = tmp_path / "small.onnx"
    small_model(path)
    assert mlconv.compile(path, device="cpu", quiet=True).backend_choice.reason == "measured"
    assert mlconv.compile(path, device="cpu", quiet=True).backend_choice.reason == "cached"
    small_model(path, seed=1)  # other weights, same file name
    assert mlconv.compile(path, device="cpu", quiet=True).backend_choice.reason == "measured"

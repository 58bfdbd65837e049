"""Lowered programs kept across processes (backends/program_cache.py): a second process
compiling the same ONNX file runs the programs the first one stored without importing the
model or running a pass (mlconv's passes are never even imported); a corrupt entry is ignored
with a warning and compiled again; a model whose external weights changed is not served from
the entries of the old weights. Outputs are numpy's, computed from the weights in the file."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

CHILD = textwrap.dedent(
    """
    import json, sys, warnings
    import numpy as np
    import mlconv

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = mlconv.compile(sys.argv[1], device="cpu", quiet=True)
        ys = [run(np.full((n, 64), 0.5, np.float32) * np.arange(64, dtype=np.float32))[0]
              for n in map(int, sys.argv[2].split(","))]
    print(json.dumps({
        "kind": type(run).__name__,
        "lowered": getattr(run, "lowered", True),
        "stored": getattr(run, "stored", 0),
        "compilations": run.compilations,
        "passes_imported": "mlconv.passes.pipelines" in sys.modules,
        "frontends_imported": "mlconv.frontends.load" in sys.modules,
        "warnings": [str(w.message) for w in caught],
        "y": [y.tolist() for y in ys],
    }))
    """
)


def _write_model(path, weights: np.ndarray) -> None:
    """x [N, 64] @ w [64, 128] -> Relu, N dynamic; w in an external data file beside it."""
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Relu", ["h"], ["y"])],
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 128])],
        [numpy_helper.from_array(weights, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save_model(
        model, str(path), save_as_external_data=True, location="weights.bin", size_threshold=0
    )


def _expected(weights: np.ndarray, sizes: tuple[int, ...]) -> list[np.ndarray]:
    x = np.full((1, 64), 0.5, np.float32) * np.arange(64, dtype=np.float32)
    return [np.maximum(np.repeat(x, n, axis=0) @ weights, 0) for n in sizes]


def _child(model, cache, sizes: tuple[int, ...] = (2, 3)) -> dict:
    env = {**os.environ, "MLCONV_COMPILATION_CACHE": "1", "MLCONV_COMPILATION_CACHE_DIR": cache}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(model), ",".join(map(str, sizes))],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["sizes"] = sizes
    return result


def _close(result: dict, weights: np.ndarray) -> bool:
    return all(
        np.allclose(np.array(got, np.float32), want, rtol=1e-5, atol=1e-4)
        for got, want in zip(result["y"], _expected(weights, result["sizes"]), strict=True)
    )


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """A model, and a cache folder a first (cold) process filled."""
    folder = tmp_path_factory.mktemp("program-cache")
    weights = np.random.default_rng(0).standard_normal((64, 128)).astype(np.float32)
    _write_model(folder / "model.onnx", weights)
    cache = str(folder / "cache")
    cold = _child(folder / "model.onnx", cache)
    assert cold["kind"] == "SpecializingModule" and cold["lowered"] and cold["passes_imported"]
    assert _close(cold, weights)
    return folder, cache, weights


def test_second_process_runs_the_stored_programs(stored):
    folder, cache, weights = stored
    warm = _child(folder / "model.onnx", cache)
    assert warm["kind"] == "StoredModule"
    assert not warm["lowered"] and warm["stored"] == 2 and warm["compilations"] == 2
    assert not warm["passes_imported"] and not warm["frontends_imported"]
    assert not warm["warnings"]
    assert _close(warm, weights)


def test_corrupt_entry_is_ignored(stored, tmp_path):
    folder, cache, weights = stored
    copy = tmp_path / "cache"
    subprocess.run(["cp", "-r", cache, str(copy)], check=True)
    exports = sorted(copy.rglob("*.jaxexport"))
    assert len(exports) == 2
    data = bytearray(exports[0].read_bytes())
    data[len(data) // 2] ^= 0xFF
    exports[0].write_bytes(bytes(data))
    result = _child(folder / "model.onnx", str(copy))
    assert any(
        "ignoring the program cache entry" in w and "SHA-256" in w for w in result["warnings"]
    )
    assert result["lowered"] and result["stored"] == 1  # the other shape still from the store
    assert _close(result, weights)


def test_changed_external_weights_are_not_served_stale(stored, tmp_path):
    folder, cache, _ = stored
    other = np.random.default_rng(1).standard_normal((64, 128)).astype(np.float32)
    _write_model(tmp_path / "model.onnx", other)  # same graph bytes, other weights.bin
    assert (tmp_path / "model.onnx").read_bytes() == (folder / "model.onnx").read_bytes()
    copy = tmp_path / "cache"
    subprocess.run(["cp", "-r", cache, str(copy)], check=True)
    # module.json as a process with the new weights writes it (before it stores its shapes):
    # the shapes' entries still hold the old weights and must not be served
    (signature,) = copy.rglob("module.json")
    data = json.loads(signature.read_text())
    digest = hashlib.sha256((tmp_path / "weights.bin").read_bytes()).hexdigest()
    data["external"] = [["weights.bin", digest]]
    signature.write_text(json.dumps(data))
    result = _child(tmp_path / "model.onnx", str(copy))
    assert result["kind"] == "StoredModule" and result["lowered"] and result["stored"] == 0
    assert _close(result, other)


def test_prune_removes_the_least_recently_used_models(tmp_path):
    from mlconv.backends.program_cache import prune

    for age, name in enumerate(["a" * 40, "b" * 40, "c" * 40]):
        folder = tmp_path / name
        (folder / "weights").mkdir(parents=True)
        (folder / "weights" / "w.npy").write_bytes(b"x" * 1000)
        (folder / "module.json").write_text("{}")
        os.utime(folder / "module.json", (1000 - age * 100, 1000 - age * 100))  # c oldest
    (tmp_path / "not-ours").mkdir()
    assert prune(tmp_path, 2100) == [tmp_path / ("c" * 40)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a" * 40, "b" * 40, "not-ours"]
    assert prune(tmp_path, 10**9) == []

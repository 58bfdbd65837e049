"""The persistent compilation cache (backends/compile_cache.py): a second process finds the
first one's XLA executables on disk, in a folder keyed by jaxlib, platform and CPU; the switch
turns it off. Timings are bench/compile_cache.py's business: here only hits and entries."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from mlconv.backends import compile_cache

CHILD = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    from jax._src import monitoring
    import mlconv
    from mlconv.backends import compile_cache

    hits = []
    monitoring.register_event_listener(
        lambda event, **kw: hits.append(event) if event.endswith("/cache_hits") else None
    )
    run = mlconv.compile(sys.argv[1], device="cpu", quiet=True)
    (y,) = run(np.arange(8, dtype=np.float32).reshape(1, 8))
    import jax
    directory = jax.config.jax_compilation_cache_dir
    print(json.dumps({"hits": len(hits), "dir": directory, "y": y.tolist(),
                      "entries": compile_cache.entries(directory) if directory else 0}))
    """
)


@pytest.fixture(scope="module")
def mlp(tmp_path_factory):
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((8, 16)).astype(np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Relu", ["h"], ["y"])],
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16])],
        [w],
    )
    path = tmp_path_factory.mktemp("cache") / "mlp.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def _child(model, env) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(model)],
        env={**os.environ, **env}, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_second_process_hits_the_cache(mlp, tmp_path):
    env = {"MLCONV_COMPILATION_CACHE": "1", "MLCONV_COMPILATION_CACHE_DIR": str(tmp_path)}
    first = _child(mlp, env)
    assert first["dir"].startswith(str(tmp_path))
    assert os.path.basename(first["dir"]) == compile_cache.host_key("cpu")
    assert first["entries"] >= 1 and first["hits"] == 0
    second = _child(mlp, env)
    assert second["hits"] >= 1
    assert second["entries"] == first["entries"]  # nothing compiled anew
    assert second["y"] == first["y"]


def test_switch_turns_it_off(mlp, tmp_path):
    env = {"MLCONV_COMPILATION_CACHE": "0", "MLCONV_COMPILATION_CACHE_DIR": str(tmp_path)}
    result = _child(mlp, env)
    assert result["dir"] is None and result["hits"] == 0
    assert not any(tmp_path.iterdir())


def test_key_follows_the_cpu(monkeypatch):
    import jaxlib

    key = compile_cache.host_key("cpu")
    assert key.startswith(f"jaxlib-{jaxlib.__version__}-cpu-")
    monkeypatch.setattr(compile_cache, "cpu_description", lambda: "another cpu|avx2|x86_64")
    assert compile_cache.host_key("cpu") != key


def test_default_directory_is_the_users_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert compile_cache.default_directory() == tmp_path / "mlconv" / "xla"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert str(compile_cache.default_directory()).endswith(os.path.join(".cache", "mlconv", "xla"))

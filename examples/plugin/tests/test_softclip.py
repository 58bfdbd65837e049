"""The example plugin end to end: an ONNX file using com.mlconv.example.SoftClip converts and runs
through mlconv with no change to mlconv, and matches numpy."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import onnx
import pytest
from mlconv_example_plugin import DOMAIN, OP_TYPE, softclip_reference
from onnx import TensorProto, helper, numpy_helper

import mlconv
from mlconv import plugins
from mlconv.frontends.onnx_importer import import_onnx


def softclip_model(alpha: float | None, seed: int = 0) -> onnx.ModelProto:
    """y = SoftClip(x @ W + B; alpha), seeded random weights, so y depends on x and the op."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((8, 6)).astype(np.float32)
    bias = rng.standard_normal(6).astype(np.float32)
    attrs = {} if alpha is None else {"alpha": alpha}
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["h"], name="matmul"),
        helper.make_node("Add", ["h", "B"], ["hb"], name="bias"),
        helper.make_node(OP_TYPE, ["hb"], ["y"], domain=DOMAIN, name="softclip", **attrs),
    ]
    graph = helper.make_graph(
        nodes,
        "softclip",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 6])],
        [numpy_helper.from_array(w, "W"), numpy_helper.from_array(bias, "B")],
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid(DOMAIN, 1)]
    return helper.make_model(graph, opset_imports=opsets)


def reference(model: onnx.ModelProto, x: np.ndarray, alpha: float) -> np.ndarray:
    w, bias = (numpy_helper.to_array(t) for t in model.graph.initializer)
    return softclip_reference(x @ w + bias, alpha=alpha)


def test_plugin_is_loaded():
    names = [p.name for p in plugins.load()]
    assert "example" in names
    added = next(p for p in plugins.PLUGINS if p.name == "example").added
    assert f"lowering to core: onnx.{DOMAIN}.{OP_TYPE}-1" in added


@pytest.mark.parametrize("alpha", [0.5, 3.0, None])
def test_converts_and_runs(tmp_path, alpha):
    model = softclip_model(alpha)
    path = tmp_path / "softclip.onnx"
    onnx.save(model, path)
    run = mlconv.compile(str(path), device="cpu", quiet=True)
    rng = np.random.default_rng(1)
    for scale in (0.1, 4.0):  # inside and far outside (-alpha, alpha)
        x = (scale * rng.standard_normal((3, 8))).astype(np.float32)
        expected = reference(model, x, 1.0 if alpha is None else alpha)
        (got,) = run(x)
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_check_numerics_runs_the_plugin_op(tmp_path):
    """check_numerics interprets the IR before onnx-to-core too: the onnx.Custom node runs by the
    plugin's host implementation, and every pass after it keeps the numbers."""
    path = tmp_path / "softclip.onnx"
    model = softclip_model(2.0)
    onnx.save(model, path)
    run = mlconv.compile(path, device="cpu", check_numerics=True, quiet=True)
    x = np.random.default_rng(2).standard_normal((3, 8)).astype(np.float32)
    np.testing.assert_allclose(run(x)[0], reference(model, x, 2.0), rtol=1e-5, atol=1e-5)


def test_lowered_to_core_ops(tmp_path):
    """The plugin's lowering, not a host callback: the core IR has no core.Custom."""
    from mlconv.passes.pipelines import lower_to_core

    module = lower_to_core(import_onnx(softclip_model(2.0)))
    names = [op.name for op in module.walk()]
    assert "core.Tanh" in names and "core.Custom" not in names and "onnx.Custom" not in names


def test_importer_rejects_bad_alpha(tmp_path):
    path = tmp_path / "bad.onnx"
    onnx.save(softclip_model(-1.0), path)
    result = subprocess.run(
        [sys.executable, "-m", "mlconv.tools.mlconv_translate", "--import-onnx", str(path)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and 'loc("softclip")' in lines[0] and "alpha > 0, got -1.0" in lines[0]


def test_list_plugins():
    result = subprocess.run(
        [sys.executable, "-m", "mlconv.tools.mlconv_opt", "--list-plugins"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.splitlines()[:4] == [
        "example (mlconv_example_plugin:register)",
        f"  onnx importer: {DOMAIN}.{OP_TYPE}",
        f"  lowering to core: onnx.{DOMAIN}.{OP_TYPE}-1",
        f"  custom op: {DOMAIN}.{OP_TYPE}",
    ]

"""Numerics after every pass (`mlconv-opt --check-numerics`, `mlconv.compile(check_numerics=True)`):
a lowering broken on purpose (ONNX Max lowered to core.Minimum) is caught, and the report names
the pass and the op; an unbroken pipeline passes."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import mlconv
from mlconv.dialects import core_elementwise as ew
from mlconv.interpreters.check_numerics import NumericsDivergence, parse_tolerances
from mlconv.tools import mlconv_opt, mlconv_translate

PIPELINE = "onnx-normalize,onnx-decompose,onnx-to-core,core-to-tpu-pipeline{device=cpu}"


def max_model(path) -> str:
    """y = tanh(max(x @ w, x)) with seeded random weights: Max decides every output."""
    w = np.random.default_rng(1).standard_normal((4, 4)).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["a"], name="mm"),
        helper.make_node("Max", ["a", "x"], ["b"], name="max"),
        helper.make_node("Tanh", ["b"], ["y"], name="tanh"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
        [numpy_helper.from_array(w, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return str(path)


def _minimum(op, b):
    x, y = op.operands
    return [b(ew.MinimumOp, x, y)]


@pytest.fixture
def broken_max(monkeypatch):
    """The ONNX Max-13 lowering replaced by one that emits core.Minimum."""
    try:
        from mlconv.passes.lowering import registry
    except ImportError:  # the table before the shared lowering registry
        from mlconv.passes.onnx_patterns import load_patterns

        monkeypatch.setitem(load_patterns(), ("Max", 13), _minimum)
        return
    registry.load("onnx")
    monkeypatch.setitem(registry.TABLES["core"], ("onnx", "Max", 13), _minimum)


@pytest.fixture
def max_mlir(tmp_path):
    onnx_path = max_model(tmp_path / "max.onnx")
    mlir = tmp_path / "max.mlir"
    assert mlconv_translate.main(["--import-onnx", onnx_path, "-o", str(mlir)]) == 0
    return str(mlir)


def test_check_numerics_names_the_broken_pass_and_op(broken_max, max_mlir, capsys):
    status = mlconv_opt.main([max_mlir, "-p", PIPELINE, "--check-numerics", "-q"])
    err = capsys.readouterr().err
    assert status == 1, err
    error = [line for line in err.splitlines() if ": error: " in line]
    assert len(error) == 1, err
    assert "numerics diverge after pass 'onnx-to-core'" in error[0]
    assert 'first differing op: loc("max") (onnx.Max -> core.Minimum, 2x4)' in error[0]
    # the passes before it were checked and kept the numbers
    assert "onnx-decompose" in err and "DIVERGED" in err


def test_check_numerics_passes_a_correct_pipeline(max_mlir, tmp_path, capsys):
    inputs = tmp_path / "in.npz"
    np.savez(inputs, x=np.random.default_rng(3).standard_normal((2, 4)).astype(np.float32))
    status = mlconv_opt.main(
        [max_mlir, "-p", PIPELINE, "--check-numerics=1e-4,1e-6", "--inputs", str(inputs)]
    )
    captured = capsys.readouterr()
    assert status == 0, captured.err
    assert "numerics preserved by every pass" in captured.err
    # the input row: the imported IR was interpreted (a surviving mutant of issue 31 marked it
    # "not interpretable" exactly when it was)
    assert "(input)" in captured.err and "not interpretable" not in captured.err
    for name in ("onnx-to-core", "core-fuse", "core-to-tpu", "tpu-conv-strategy"):
        assert f"  {name} " in captured.err
    assert "tpu.tanh" in captured.out  # the IR is still printed


def test_check_numerics_bad_tolerances(max_mlir, capsys):
    assert mlconv_opt.main([max_mlir, "-p", PIPELINE, "--check-numerics=1e-3"]) == 1
    err = capsys.readouterr().err.strip()
    assert err == "mlconv-opt: error: bad --check-numerics tolerances '1e-3' (expected RTOL,ATOL)"
    assert parse_tolerances("1e-3,0") == (1e-3, 0.0)


def test_compile_check_numerics(broken_max, tmp_path):
    path = max_model(tmp_path / "max.onnx")
    with pytest.raises(NumericsDivergence) as caught:
        mlconv.compile(path, device="cpu", check_numerics=True)
    assert caught.value.location == "max"
    assert "after pass 'onnx-to-core'" in caught.value.message


def test_compile_check_numerics_correct(tmp_path):
    path = max_model(tmp_path / "max.onnx")
    run = mlconv.compile(path, device="cpu", check_numerics=(1e-4, 1e-6))
    x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    w = np.random.default_rng(1).standard_normal((4, 4)).astype(np.float32)
    np.testing.assert_allclose(run(x)[0], np.tanh(np.maximum(x @ w, x)), rtol=1e-5, atol=1e-6)


def test_check_numerics_honours_the_callers_tolerances(broken_max, max_mlir, tmp_path, capsys):
    """Issue 31: `--check-numerics` ignoring the user's RTOL,ATOL passed this file. The broken
    Max moves the output by d = max|tanh(max(xw, x)) - tanh(min(xw, x))| (computed here in
    numpy): an atol just above d (rtol 0) accepts it, just below refuses it, and likewise an
    rtol of just above / below d / max|before|."""
    x = np.random.default_rng(3).standard_normal((2, 4)).astype(np.float32)
    inputs = tmp_path / "in.npz"
    np.savez(inputs, x=x)
    w = np.random.default_rng(1).standard_normal((4, 4)).astype(np.float32)
    before = np.tanh(np.maximum(x @ w, x)).astype(np.float64)
    d = float(np.abs(before - np.tanh(np.minimum(x @ w, x))).max())
    scale = float(np.abs(before).max())
    assert d > 0.1  # the bug moves the output
    for tolerance, status in [
        (f"0,{d * 1.02!r}", 0),
        (f"0,{d * 0.98!r}", 1),
        (f"{d / scale * 1.02!r},0", 0),
        (f"{d / scale * 0.98!r},0", 1),
    ]:
        args = [max_mlir, "-p", PIPELINE, f"--check-numerics={tolerance}", "--inputs", str(inputs)]
        assert mlconv_opt.main([*args, "-q"] if status else args) == status, tolerance
        err = capsys.readouterr().err
        assert ("numerics diverge after pass 'onnx-to-core'" in err) == bool(status), err

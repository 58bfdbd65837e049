"""Numerics after every pass (`mlconv-opt --check-numerics`, `mlconv.compile(check_numerics=True)`):
a lowering broken on purpose (ONNX Max lowered to core.Minimum) is caught, and the report names
the pass and the op; an unbroken pipeline passes."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from numerics import replace_lowering  # a module beside this one (conftest.py)
from onnx import TensorProto, helper, numpy_helper
from onnx_graphs import float_model

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
    model = float_model(
        nodes, {"x": [2, 4]}, {"y": [2, 4]}, [numpy_helper.from_array(w, "w")], opset=13
    )
    model.ir_version = 8
    onnx.save(model, str(path))
    return str(path)


def _minimum(op, b):
    x, y = op.operands
    return [b(ew.MinimumOp, x, y)]


@pytest.fixture
def broken_max(monkeypatch):
    """The ONNX Max-13 lowering replaced by one that emits core.Minimum."""
    replace_lowering(monkeypatch, ("onnx", "Max", 13), _minimum)


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
    # every pass was compared, the first one too (with the imported IR's run)
    passes = [line for line in captured.err.splitlines() if line.startswith("  ")][1:]
    assert passes and passes[0].split()[0] == "onnx-normalize", captured.err
    assert all(line.endswith("  ok") for line in passes), captured.err
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


# Issue 31 (mutation score): the report's helpers, each pinned to values worked out by hand.


def test_parse_tolerances_defaults_and_refusals():
    from mlconv.interpreters.check_numerics import DEFAULT_ATOL, DEFAULT_RTOL

    assert (DEFAULT_RTOL, DEFAULT_ATOL) == (1e-4, 1e-5)
    assert parse_tolerances(None) == parse_tolerances("") == (1e-4, 1e-5)
    assert parse_tolerances("2e-3,5e-7") == (2e-3, 5e-7)
    assert parse_tolerances("0,0") == (0.0, 0.0)
    for bad in ("1e-3", "1,2,3", "a,b", "-1e-3,0", "0,-1"):
        with pytest.raises(mlconv.errors.OptionError) as caught:
            parse_tolerances(bad)
        assert (
            caught.value.message == f"bad --check-numerics tolerances '{bad}' (expected RTOL,ATOL)"
        )


def test_errors_absolute_relative_and_non_finite_values():
    from mlconv.interpreters.check_numerics import errors

    inf, nan = np.inf, np.nan
    assert errors(np.array([1.0, -3.0]), np.array([1.5, -4.0])) == (1.0, 0.25)  # 1 / max|ref| 4
    assert errors(np.zeros(0), np.zeros(0)) == (0.0, 0.0)
    # the same non-finite value on both sides counts as equal; anything else is infinitely off
    assert errors(np.array([inf, -inf, nan, 2.0]), np.array([inf, -inf, nan, 2.0])) == (0.0, 0.0)
    assert errors(np.array([inf, 1.0]), np.array([-inf, 2.0])) == (inf, inf)
    assert errors(np.array([nan, 1.0]), np.array([1.0, 1.0])) == (inf, inf)
    assert errors(np.array([1.0, 2.0]), np.array([inf, 2.0])) == (inf, inf)
    # the relative error's scale: the reference's largest finite magnitude
    assert errors(np.array([inf, 3.0]), np.array([inf, -2.0])) == (5.0, 2.5)
    # an all-zero reference: 0 when equal, inf when not
    assert errors(np.zeros(3), np.zeros(3)) == (0.0, 0.0)
    assert errors(np.array([0.0, 1e-9]), np.zeros(2)) == (1e-9, inf)


def test_aligned_layouts():
    from mlconv.interpreters.check_numerics import aligned

    nchw = np.arange(24.0).reshape(1, 2, 3, 4)
    nhwc = np.moveaxis(nchw, 1, -1)
    assert aligned(nchw, nchw) is nchw
    np.testing.assert_array_equal(aligned(nchw, nhwc), nhwc)
    ncw = np.arange(6.0).reshape(1, 2, 3)
    np.testing.assert_array_equal(aligned(ncw, np.zeros((1, 3, 2))), np.moveaxis(ncw, 1, -1))
    assert aligned(np.zeros((2, 3)), np.zeros((3, 2))) is None  # rank 2: no layout move
    assert aligned(np.zeros((1, 2, 3, 4)), np.zeros((1, 2, 4, 3))) is None
    assert aligned(np.zeros((1, 2, 3)), np.zeros((1, 2, 3, 1))) is None
    np.testing.assert_array_equal(aligned(np.array([[7.0]]), np.zeros(())), np.array(7.0))
    assert aligned(np.zeros(2), np.zeros((1, 1))) is None


def test_report_text_one_line_per_pass_then_the_verdict():
    from mlconv.interpreters.check_numerics import NumericsReport, OpDivergence, Step

    steps = [
        Step("(input)", "onnx", 0.0),
        Step("onnx-to-core", "core", 0.0125, max_abs=0.5, diverged=True),
        Step("core-fuse", None, 0.002, note="not checked"),
    ]
    report = NumericsReport(steps=steps, rtol=1e-3, atol=2e-6)
    assert report.ok and report.message() == ""
    report.first_pass, report.output_index = "onnx-to-core", 1
    assert not report.ok
    assert report.message() == (
        "numerics diverge after pass 'onnx-to-core': output 1 differs by 0.5 (rtol 0.001, atol 2e-06)"
    )
    report.first_op = OpDivergence("max", "onnx.Max", "core.Minimum", 0.25, (2, 4))
    assert report.message().endswith(
        '; first differing op: loc("max") (onnx.Max -> core.Minimum, 2x4) by 0.25'
    )
    report.first_op = OpDivergence("t", "core.Tanh", "core.Tanh", 1.5, ())
    assert report.message().endswith('; first differing op: loc("t") (core.Tanh, scalar) by 1.5')
    assert report.format() == (
        "  (input)       onnx        0.0 ms  max |change|         -  \n"
        "  onnx-to-core  core       12.5 ms  max |change|       0.5  DIVERGED\n"
        "  core-fuse     ?           2.0 ms  max |change|         -    (not checked)\n"
        + report.message()
        + "\n"
    )
    short = NumericsReport(steps=[Step("a", "core", 0.0, max_abs=0.0)])
    assert short.format() == (
        "  a     core        0.0 ms  max |change|         0  ok\nnumerics preserved by every pass\n"
    )


def test_expand_flattens_nested_pipelines():
    from mlconv.interpreters.check_numerics import expand

    class Leaf:
        pass

    class Stages:
        def __init__(self, *stages):
            self.stages = stages

        def passes(self):
            return list(self.stages)

    a, b, c = Leaf(), Leaf(), Leaf()
    empty = Stages()
    assert expand([a, Stages(b, Stages(c)), empty]) == [a, b, c, empty]


def test_compile_check_numerics_of_a_dynamic_batch_model(tmp_path):
    """No input shapes given: the checked pipeline takes the model's own (dynamic) ones, as
    the compile itself does; a call with 3 rows runs (a surviving mutant of issue 31 passed
    empty shapes, and the check refused the dynamic dimension)."""
    w = np.random.default_rng(1).standard_normal((4, 4)).astype(np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w"], ["a"], name="mm"),
            helper.make_node("Tanh", ["a"], ["y"], name="tanh"),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])],
        [numpy_helper.from_array(w, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path = tmp_path / "dynamic.onnx"
    onnx.save(model, str(path))
    run = mlconv.compile(str(path), device="cpu", check_numerics=True)
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    np.testing.assert_allclose(run(x)[0], np.tanh(x @ w), rtol=1e-5, atol=1e-6)

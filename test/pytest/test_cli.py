"""The command-line tools on bad input: one stderr line naming the problem, exit status 1, no
Python traceback, no output file. Run through the installed console scripts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

BIN = Path(sys.executable).parent
LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
MODEL = LIGHT / "light_squeezenet.onnx"

GOOD_MLIR = """\
func.func @f(%a: i32) -> i32 {
  %0 = arith.addi %a, %a : i32
  %1 = arith.addi %a, %a : i32
  %2 = arith.muli %0, %1 : i32
  func.return %2 : i32
}
"""


def tool(name: str, *args: str | os.PathLike, stdin: str | None = None):
    executable = BIN / name
    if not executable.exists():
        pytest.fail(f"{executable} is missing: run `pip install -e . --no-deps`")
    env = {k: v for k, v in os.environ.items() if k != "MLCONV_DEBUG"}
    return subprocess.run(
        [str(executable), *map(str, args)],
        capture_output=True,
        text=True,
        input=stdin,
        env=env,
        timeout=600,
    )


def assert_one_line_error(result, *mentions: str) -> str:
    assert result.returncode == 1, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "error:" in lines[0], lines[0]
    for mention in mentions:
        assert mention in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def not_onnx(tmp_path: Path) -> Path:
    path = tmp_path / "not_a_model.onnx"
    path.write_text("this is a text file, not an ONNX protobuf\n")
    return path


@pytest.fixture
def truncated_onnx(tmp_path: Path) -> Path:
    data = MODEL.read_bytes()
    path = tmp_path / "truncated.onnx"
    path.write_bytes(data[: len(data) // 3])
    return path


@pytest.fixture
def good_mlir(tmp_path: Path) -> Path:
    path = tmp_path / "good.mlir"
    path.write_text(GOOD_MLIR)
    return path


@pytest.fixture
def inputs_npz(tmp_path: Path) -> Path:
    path = tmp_path / "in.npz"
    np.savez(path, np.zeros((1, 3, 224, 224), np.float32))
    return path


# --------------------------------------------------------------------------- mlconv-translate


@pytest.mark.parametrize("bad", ["not_onnx", "truncated_onnx"])
def test_translate_bad_model(bad: str, request, tmp_path: Path) -> None:
    model = request.getfixturevalue(bad)
    out = tmp_path / "out.mlir"
    line = assert_one_line_error(tool("mlconv-translate", "--import-onnx", model, "-o", out))
    assert line.startswith(f"{model}: error:"), line
    assert not out.exists()
    assert not list(tmp_path.glob(".out.mlir*")), "temporary file left behind"


def test_translate_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "missing.onnx"
    assert_one_line_error(tool("mlconv-translate", "--import-onnx", missing), str(missing))


def test_translate_needs_a_translation(good_mlir: Path) -> None:
    assert_one_line_error(tool("mlconv-translate", good_mlir), "--import-onnx")


def test_translate_writes_on_success(tmp_path: Path) -> None:
    out = tmp_path / "model.mlir"
    result = tool("mlconv-translate", "--import-onnx", MODEL, "-o", out)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    text = out.read_text()
    assert "func.func @main" in text and '"onnx.Conv"' in text


# --------------------------------------------------------------------------- mlconv-opt


@pytest.mark.parametrize("bad", ["not_onnx", "truncated_onnx"])
def test_opt_model_file_is_not_ir(bad: str, request, tmp_path: Path) -> None:
    model = request.getfixturevalue(bad)
    out = tmp_path / "out.mlir"
    result = tool("mlconv-opt", model, "-o", out)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert result.stderr.startswith(f"{model}:"), result.stderr
    assert not out.exists()


@pytest.mark.parametrize(
    ("option", "mention"),
    [
        (["-p", "no-such-pass"], "unknown pass 'no-such-pass'"),
        (["--pass-pipeline=builtin.module(no-such-pass)"], "unknown pass 'no-such-pass'"),
        (["--pass-pipeline=builtin.module(cse"], "pass pipeline"),
        (["--pass-pipeline=builtin.module(func.func(cse))"], "nested pass managers"),
        (["-p", "cse{no-such-option=1}"], "bad options for pass 'cse'"),
        (["-p", "cse", "--pass-pipeline=cse"], "not both"),
        (["--no-such-flag"], "--no-such-flag"),
    ],
)
def test_opt_bad_pipeline(option: list[str], mention: str, good_mlir: Path, tmp_path) -> None:
    out = tmp_path / "out.mlir"
    line = assert_one_line_error(tool("mlconv-opt", good_mlir, *option, "-o", out), mention)
    assert line.startswith("mlconv-opt: error:"), line
    assert not out.exists()


def test_opt_parse_error_is_located(tmp_path: Path) -> None:
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @f(%a: i32) -> i32 {\n  %0 = arith.no_such_op %a : i32\n}\n")
    out = tmp_path / "out.mlir"
    result = tool("mlconv-opt", bad, "-o", out)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert result.stderr.startswith(f"{bad}:2:"), result.stderr
    assert len(result.stderr.splitlines()) <= 3  # the message, the line, the caret
    assert not out.exists()


def test_opt_verifier_error_is_located(tmp_path: Path) -> None:
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @f(%a: i32) -> i64 {\n  func.return %a : i32\n}\n")
    line = assert_one_line_error(tool("mlconv-opt", bad))
    assert line.startswith(f"{bad}:2:3: error: 'func.return' op"), line


def test_opt_output_written_only_on_success(good_mlir: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.mlir"
    result = tool("mlconv-opt", good_mlir, "-p", "cse", "-o", out)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert "arith.muli %0, %0" in out.read_text()
    # A failing run leaves the previous output alone and adds no file.
    before = sorted(tmp_path.iterdir())
    result = tool("mlconv-opt", good_mlir, "-p", "no-such-pass", "-o", out)
    assert result.returncode == 1
    assert sorted(tmp_path.iterdir()) == before
    assert "arith.muli %0, %0" in out.read_text()


def test_opt_reads_stdin(good_mlir: Path) -> None:
    result = tool("mlconv-opt", "-p", "cse", stdin=GOOD_MLIR)
    assert result.returncode == 0, result.stderr
    assert "arith.muli %0, %0" in result.stdout


def test_opt_list_passes() -> None:
    result = tool("mlconv-opt", "--list-passes")
    assert result.returncode == 0
    assert "cse" in result.stdout and "onnx-to-core" in result.stdout


# --------------------------------------------------------------------------- mlconv-run


@pytest.mark.parametrize("bad", ["not_onnx", "truncated_onnx"])
def test_run_bad_model(bad: str, request, inputs_npz: Path, tmp_path: Path) -> None:
    model = request.getfixturevalue(bad)
    out = tmp_path / "out.npz"
    assert_one_line_error(
        tool("mlconv-run", model, "--inputs", inputs_npz, "--outputs", out, "--device", "cpu")
    )
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_run_bad_inputs(good_mlir: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.npz"
    result = tool("mlconv-run", MODEL, "--inputs", good_mlir, "--outputs", out)
    assert_one_line_error(result, "not an .npz")
    assert not out.exists()


def test_run_bad_input_shapes(inputs_npz: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.npz"
    result = tool(
        "mlconv-run", MODEL, "--inputs", inputs_npz, "--outputs", out, "--input-shapes", "x:a,b"
    )
    assert_one_line_error(result, "--input-shapes")
    assert not out.exists()


class _FakeCompiled:
    """Stands in for mlconv.compile's callable: out = x + y, named like a model's outputs."""

    input_names = ["x", "y"]
    output_names = ["sum"]

    def __call__(self, x, y):
        return [x + y]


def test_run_feeds_by_name_and_position(monkeypatch, tmp_path: Path) -> None:
    import mlconv
    from mlconv.tools import mlconv_run

    seen = {}

    def fake_compile(model, device=None, **options):
        seen.update(model=model, device=device, **options)
        return _FakeCompiled()

    monkeypatch.setattr(mlconv, "compile", fake_compile)
    model = tmp_path / "m.mlir"
    model.write_text(GOOD_MLIR)
    x, y = np.arange(3, dtype=np.float32), np.ones(3, np.float32)
    by_name, by_position, out = tmp_path / "a.npz", tmp_path / "b.npz", tmp_path / "out.npz"
    np.savez(by_name, y=y, x=x)
    np.savez(by_position, x, y)
    for inputs in (by_name, by_position):
        argv = [str(model), "--inputs", str(inputs), "--outputs", str(out), "--device", "cpu"]
        assert mlconv_run.main([*argv, "--input-shapes", "x:3;y:3"]) == 0
        with np.load(out) as result:
            assert result.files == ["sum"]
            np.testing.assert_array_equal(result["sum"], x + y)
    assert seen["device"] == "cpu" and seen["input_shapes"] == {"x": (3,), "y": (3,)}

    np.savez(by_name, x=x)  # y missing
    out.unlink()
    assert mlconv_run.main([str(model), "--inputs", str(by_name), "--outputs", str(out)]) == 1
    assert not out.exists()


def test_opt_pass_failure_is_located(monkeypatch, capsys, tmp_path: Path) -> None:
    """A PassFailure raised at an op is reported at the line the op was parsed from."""
    from dataclasses import dataclass

    from xdsl.dialects import arith
    from xdsl.passes import ModulePass

    from mlconv import passes
    from mlconv.errors import PassFailure
    from mlconv.tools import mlconv_opt

    @dataclass(frozen=True)
    class FailingPass(ModulePass):
        name = "test-fail-on-muli"

        def apply(self, ctx, op) -> None:
            for inner in op.walk():
                if isinstance(inner, arith.MuliOp):
                    raise PassFailure.at(inner, "cannot lower this")

    monkeypatch.setitem(passes.PASSES, "test-fail-on-muli", lambda: FailingPass)
    source = tmp_path / "in.mlir"
    source.write_text(GOOD_MLIR)
    out = tmp_path / "out.mlir"
    assert mlconv_opt.main([str(source), "-p", "test-fail-on-muli", "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert err == f"{source}:4:3: error: 'arith.muli' op cannot lower this\n"
    assert not out.exists()

    annotated = tmp_path / "annotated.mlir"
    lines = GOOD_MLIR.splitlines()
    lines.insert(3, "  // expected-error @below {{'arith.muli' op cannot lower this}}")
    annotated.write_text("\n".join(lines) + "\n")
    argv = [str(annotated), "-p", "test-fail-on-muli", "--verify-diagnostics"]
    assert mlconv_opt.main(argv) == 0, capsys.readouterr().err


@pytest.mark.parametrize(
    ("array", "mention"),
    [
        (
            np.zeros((1, 3, 10, 10), np.float32),
            "expected shape [1, 3, 224, 224], got [1, 3, 10, 10]",
        ),
        (np.zeros((1, 3, 224, 224), np.float64), "expected dtype float32, got float64"),
    ],
)
def test_run_input_contradicting_the_model(array, mention: str, tmp_path: Path) -> None:
    """light_squeezenet declares data_0 as 1x3x224x224 (onnxruntime refuses anything else)."""
    inputs, out = tmp_path / "in.npz", tmp_path / "out.npz"
    np.savez(inputs, data_0=array)
    result = tool("mlconv-run", MODEL, "--inputs", inputs, "--outputs", out, "--device", "cpu")
    line = assert_one_line_error(result, "input 'data_0'", mention)
    assert line.startswith(f"{MODEL}: error:"), line
    assert not out.exists()


# --------------------------------------------------------------------------- --check (dry run)


def _check_model(path: Path, broken: bool) -> Path:
    """x[N,4,2,2] -> Relu (lowers); when `broken`, also a Reshape to a shape input of unknown
    length feeding GlobalAveragePool and GlobalMaxPool (their patterns need a rank) and a
    Multinomial (no pattern)."""
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Relu", ["x"], ["q"], name="relu")]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4, 2, 2])]
    outputs = ["q"]
    if broken:
        nodes += [
            helper.make_node("Reshape", ["x", "s"], ["r"], name="reshape"),
            helper.make_node("GlobalAveragePool", ["r"], ["p"], name="gap"),
            helper.make_node("Multinomial", ["prob"], ["t"], name="draw"),
            helper.make_node("GlobalMaxPool", ["r"], ["p2"], name="gmp"),
        ]
        inputs += [
            helper.make_tensor_value_info("s", TensorProto.INT64, None),
            helper.make_tensor_value_info("prob", TensorProto.FLOAT, [2, 8]),
        ]
        outputs += ["p", "t", "p2"]
    graph = helper.make_graph(
        nodes,
        "check",
        inputs,
        [
            helper.make_tensor_value_info(
                n, TensorProto.INT32 if n == "t" else TensorProto.FLOAT, None
            )
            for n in outputs
        ],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)]), path)
    return path


def test_check_reports_every_op_that_would_fail(tmp_path: Path) -> None:
    model = _check_model(tmp_path / "broken.onnx", broken=True)
    result = tool("mlconv-translate", "--import-onnx", model, "--check")
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        f"{model}: loc(\"gap\"): error: 'onnx.GlobalAveragePool' op needs the rank of its input",
        f"{model}: loc(\"draw\"): error: 'onnx.Multinomial' op has no lowering to core "
        "(onnx.Multinomial-7 at opset 20)",
        f"{model}: loc(\"gmp\"): error: 'onnx.GlobalMaxPool' op needs the rank of its input",
        f"{model}: error: 3 op(s) would fail to lower",
    ]


def test_check_passes_a_model_that_lowers(tmp_path: Path) -> None:
    model = _check_model(tmp_path / "fine.onnx", broken=False)
    result = tool("mlconv-translate", "--import-onnx", model, "--check")
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_check_goes_with_imports_only(good_mlir: Path, tmp_path: Path) -> None:
    result = tool("mlconv-translate", "--export-tflite", good_mlir, "-o", tmp_path / "x", "--check")
    assert_one_line_error(result, "--check goes with --import-onnx")

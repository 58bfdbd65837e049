"""Progress per pass (`mlconv.passes.progress`): shown on a terminal (forced here with
MLCONV_PROGRESS=1), silent when stderr is not a terminal and with --quiet."""

from __future__ import annotations

import pytest

from mlconv.passes.progress import progress_enabled
from mlconv.tools import mlconv_opt, mlconv_translate

IR = """func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %s = "core.Sigmoid"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %y = "core.Multiply"(%x, %s) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
"""


@pytest.fixture
def ir(tmp_path):
    path = tmp_path / "swish.mlir"
    path.write_text(IR)
    return str(path)


def test_progress_enabled(monkeypatch):
    monkeypatch.delenv("MLCONV_PROGRESS", raising=False)

    class Terminal:
        def isatty(self):
            return True

    assert progress_enabled(stream=Terminal())
    assert not progress_enabled(quiet=True, stream=Terminal())
    assert not progress_enabled()  # pytest's captured stderr is no terminal
    monkeypatch.setenv("MLCONV_PROGRESS", "0")
    assert not progress_enabled(stream=Terminal())


def test_mlconv_opt_progress(ir, monkeypatch, capsys):
    monkeypatch.setenv("MLCONV_PROGRESS", "1")
    assert mlconv_opt.main([ir, "-p", "core-fuse,core-to-tpu"]) == 0
    captured = capsys.readouterr()
    assert "2/2" in captured.err and "core-to-tpu" in captured.err
    assert "tpu." in captured.out and "\x1b" not in captured.out
    assert mlconv_opt.main([ir, "-p", "core-fuse,core-to-tpu", "--quiet"]) == 0
    assert capsys.readouterr().err == ""


def test_silent_without_a_terminal(ir, tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("MLCONV_PROGRESS", raising=False)
    assert mlconv_opt.main([ir, "-p", "core-fuse,core-to-tpu"]) == 0
    assert capsys.readouterr().err == ""
    from test_check_numerics import max_model

    model = max_model(tmp_path / "max.onnx")
    output = str(tmp_path / "max.mlir")
    assert mlconv_translate.main(["--import-onnx", model, "-o", output]) == 0
    assert capsys.readouterr().err == ""
    monkeypatch.setenv("MLCONV_PROGRESS", "1")
    assert mlconv_translate.main(["--import-onnx", model, "-o", output]) == 0
    assert "import max.onnx" in capsys.readouterr().err
    assert mlconv_translate.main(["--import-onnx", model, "-o", output, "--quiet"]) == 0
    assert capsys.readouterr().err == ""

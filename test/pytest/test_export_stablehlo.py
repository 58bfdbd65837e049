"""mlconv-translate --export-stablehlo: a model's @main as StableHLO text, weights included."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import onnx

LIGHT = Path(os.path.dirname(onnx.__file__)) / "backend" / "test" / "data" / "light"
BIN = Path(sys.executable).parent


def translate(*args: str) -> subprocess.CompletedProcess:
    tool = shutil.which("mlconv-translate", path=str(BIN)) or "mlconv-translate"
    return subprocess.run([tool, *args], capture_output=True, text=True, check=False)


def test_squeezenet_exports_every_convolution(tmp_path: Path) -> None:
    ir = tmp_path / "squeezenet.mlir"
    imported = translate("--import-onnx", str(LIGHT / "light_squeezenet.onnx"), "-o", str(ir))
    assert imported.returncode == 0, imported.stderr
    out = tmp_path / "squeezenet.stablehlo"
    exported = translate("--export-stablehlo", str(ir), "-o", str(out))
    assert exported.returncode == 0, exported.stderr
    text = out.read_text()
    assert "func.func public @main(%arg0: tensor<1x3x224x224xf32>)" in text
    model = onnx.load(str(LIGHT / "light_squeezenet.onnx"))
    convolutions = sum(node.op_type == "Conv" for node in model.graph.node)
    assert text.count("stablehlo.convolution") == convolutions
    assert "tensor<1x1000x1x1xf32>" in text


def test_dynamic_input_is_one_error_line(tmp_path: Path) -> None:
    ir = tmp_path / "dynamic.mlir"
    ir.write_text(
        'func.func @main(%x: tensor<?x3xf32> {mlconv.name = "x"}) -> tensor<?x3xf32> {\n'
        '  %y = "core.Relu"(%x) : (tensor<?x3xf32>) -> tensor<?x3xf32>\n'
        "  func.return %y : tensor<?x3xf32>\n"
        "}\n"
    )
    out = tmp_path / "dynamic.stablehlo"
    result = translate("--export-stablehlo", str(ir), "-o", str(out))
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "input-shapes=x:1,3" in lines[0], result.stderr
    assert "Traceback" not in result.stderr
    assert not out.exists()

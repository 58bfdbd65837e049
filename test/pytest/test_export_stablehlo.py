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


def test_dynamic_input_exports_symbolic_dims(tmp_path: Path) -> None:
    """A dynamic dim is exported as a symbolic one (backends/symbolic.py, mlconv-convert's
    path): one StableHLO module for every batch size."""
    ir = tmp_path / "dynamic.mlir"
    ir.write_text(
        'func.func @main(%x: tensor<?x3xf32> {mlconv.name = "x"}) -> tensor<?x3xf32> {\n'
        '  %y = "core.Relu"(%x) : (tensor<?x3xf32>) -> tensor<?x3xf32>\n'
        "  func.return %y : tensor<?x3xf32>\n"
        "}\n"
    )
    out = tmp_path / "dynamic.stablehlo"
    result = translate("--export-stablehlo", str(ir), "-o", str(out))
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    assert "jax.uses_shape_polymorphism = true" in text
    assert "@main(%arg0: tensor<?x3xf32>" in text


def test_dynamic_dims_that_cannot_be_symbolic_are_one_error_line(tmp_path: Path) -> None:
    """A size that is the square of the dynamic dim is not linear in it: one line naming the
    op, pointing at static shapes."""
    ir = tmp_path / "square.mlir"
    ir.write_text(
        'func.func @main(%x: tensor<?xf32> {mlconv.name = "x"}) -> tensor<?xf32> {\n'
        '  %a = "core.Constant"() {value = dense<[-1, 1]> : tensor<2xi64>} : () -> tensor<2xi64>\n'
        '  %b = "core.Constant"() {value = dense<[1, -1]> : tensor<2xi64>} : () -> tensor<2xi64>\n'
        '  %c = "core.Reshape"(%x, %a) {special_zero = false} : (tensor<?xf32>, tensor<2xi64>) -> tensor<?x1xf32>\n'
        '  %d = "core.Reshape"(%x, %b) {special_zero = false} : (tensor<?xf32>, tensor<2xi64>) -> tensor<1x?xf32>\n'
        '  %y = "core.Multiply"(%c, %d) {auto_broadcast = "numpy"} : (tensor<?x1xf32>, tensor<1x?xf32>) -> tensor<?x?xf32>\n'
        '  %f = "core.Constant"() {value = dense<[-1]> : tensor<1xi64>} : () -> tensor<1xi64>\n'
        '  %z = "core.Reshape"(%y, %f) {special_zero = false} : (tensor<?x?xf32>, tensor<1xi64>) -> tensor<?xf32>\n'
        "  func.return %z : tensor<?xf32>\n"
        "}\n"
    )
    out = tmp_path / "square.stablehlo"
    result = translate("--export-stablehlo", str(ir), "-o", str(out))
    assert result.returncode == 1, result.stderr
    lines = [line for line in result.stderr.strip().splitlines() if "error" in line]
    assert len(lines) == 1 and "input-shapes" in lines[0], result.stderr
    assert "Traceback" not in result.stderr
    assert not out.exists()

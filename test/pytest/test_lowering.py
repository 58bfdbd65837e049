"""The one lowering framework (mlconv.passes.lowering): registry, driver, report format."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.parser import Parser

from mlconv.dialects import core, make_context
from mlconv.errors import PassFailure
from mlconv.passes import lowering
from mlconv.passes.lowering import driver
from mlconv.passes.lowering.builder import Builder
from mlconv.passes.lowering.driver import HINT

INPUTS = Path(__file__).parents[1] / "filecheck" / "passes" / "Inputs"

CORE_UNSUPPORTED = """
func.func @main(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
  %a = "core.Erf"(%x) : (tensor<1x4xf32>) -> tensor<1x4xf32> loc("erf")
  %b = "core.Relu"(%a) : (tensor<1x4xf32>) -> tensor<1x4xf32> loc("relu")
  func.return %b : tensor<1x4xf32>
}
"""

# dialect.Op[-version] (k node(s): names), one entry per missing op type, "; " between them.
ENTRY = r"(onnx|tf|tflite|core)\.\w+(-\d+)? \(\d+ nodes?: [\w, .]+\)"
REPORT = re.compile(
    rf"no lowering to (core|tflite) for (\d+) (onnx|tf|tflite|core) op type\(s\)"
    rf"( at opset \d+)?: {ENTRY}(; {ENTRY})*({re.escape(HINT)})?"
)


def _parse(text: str):
    return Parser(make_context(), text).parse_module()


def _refusal(pass_name: str, text: str) -> str:
    from mlconv.passes import get_pass

    module = _parse(text)
    before = str(module)
    with pytest.raises(PassFailure) as error:
        get_pass(pass_name)().apply(make_context(), module)
    assert str(module) == before, "the module was rewritten before the refusal"
    return error.value.message


def test_every_framework_reports_unsupported_ops_in_one_format():
    reports = {
        "onnx": _refusal("onnx-to-core", (INPUTS / "onnx-unsupported.mlir").read_text()),
        "tf": _refusal("tf-to-core", (INPUTS / "tf-unsupported.mlir").read_text()),
        "tflite": _refusal("tflite-to-core", (INPUTS / "tflite-unsupported.mlir").read_text()),
        "core": _refusal("core-to-tflite", CORE_UNSUPPORTED),
    }
    for dialect, message in reports.items():
        match = REPORT.fullmatch(message)
        assert match, f"{dialect}: {message}"
        assert match.group(3) == dialect
    assert reports["onnx"] == (
        "no lowering to core for 2 onnx op type(s) at opset 20: "
        "onnx.Bernoulli-15 (2 nodes: coin_a, coin_b); onnx.RandomUniformLike-1 (1 node: noise)"
        + HINT
    )
    assert reports["tf"] == (
        "no lowering to core for 2 tf op type(s): "
        "tf.BesselI0e (1 node: bessel); tf.Cumsum (2 nodes: cumsum_a, cumsum_b)" + HINT
    )
    assert reports["tflite"] == (
        "no lowering to core for 2 tflite op type(s): "
        "tflite.CUMSUM (1 node: first); tflite.ELU (2 nodes: second, third)" + HINT
    )
    assert reports["core"] == "no lowering to tflite for 1 core op type(s): core.Erf (1 node: erf)"


def test_registering_a_key_twice_is_an_error():
    def first(op, b):
        return []

    def second(op, b):
        return []

    try:
        lowering.register("test", "Twice", 3, first)
        with pytest.raises(ValueError, match="two lowerings to core for test.Twice-3"):
            lowering.register("test", "Twice", 3, second)
        with pytest.raises(ValueError, match="two lowerings to core for test.Twice-3"):
            lowering.lowering("test", "Twice", 1, 3)(second)
        assert lowering.lookup("test", "Twice", 3) is first
        # Another target is another table; a version-less entry serves every version.
        lowering.register("test", "Twice", 3, second, target="tflite")
        assert lowering.lookup("test", "Twice", 3, target="tflite") is second
        lowering.register("test", "Any", None, second)
        assert lowering.lookup("test", "Any", 11) is second
        assert lowering.lookup("test", "Missing", 3) is None
    finally:
        for key in (("Twice", 1), ("Twice", 3), ("Any", None)):
            lowering.unregister("test", *key)
        lowering.unregister("test", "Twice", 3, target="tflite")
    # The built-in tables were loaded through the same registry, without a duplicate.
    assert ("Relu", 14) in lowering.patterns("onnx")
    assert ("Conv2D", None) in lowering.patterns("tf")
    assert ("CONV_2D", None) in lowering.patterns("tflite")
    assert ("Convolution", None) in lowering.patterns("core", target="tflite")
    # An op name with its dialect prefix names the same entry.
    assert lowering.lookup("core", "core.Convolution", None, target="tflite") is (
        lowering.lookup("core", "Convolution", None, target="tflite")
    )
    with pytest.raises(ValueError, match="two lowerings to core for onnx.Relu-14"):
        lowering.lowering("onnx", "Relu", 14)(first)


def test_fallback_lowers_ops_without_a_pattern():
    """The driver's fallback (what allow-custom plugs into) takes the ops nobody lowers, at
    their location; without it and with allow-partial they stay."""
    from mlconv.interpreters import run_module
    from mlconv.passes.tf_patterns.builder import tf_builder
    from mlconv.passes.tf_to_core import lower, tf_ops

    text = (INPUTS / "tf-unsupported.mlir").read_text()
    module = _parse(text)
    lower(module, allow_partial=True)
    assert [op.name for op in tf_ops(module)] == ["tf.Cumsum", "tf.Cumsum", "tf.BesselI0e"]

    module = _parse(text)
    seen = []

    def fallback(op, b):
        seen.append(op.name)
        return [b(core.TanhOp, op.operands[0])]

    driver.lower_ops(tf_ops(module), "tf", tf_builder, fallback=fallback)
    assert seen == ["tf.Cumsum", "tf.Cumsum", "tf.BesselI0e"]
    assert not tf_ops(module)
    names = {op.name: str(op.location) for op in module.walk() if op.name.startswith("core.")}
    assert names == {"core.Tanh": 'loc("bessel")', "core.Relu": 'loc("relu")'}
    x = np.random.default_rng(0).standard_normal(4).astype(np.float32)
    (y,) = run_module(module, [x])
    np.testing.assert_allclose(np.asarray(y), np.maximum(np.tanh(np.tanh(np.tanh(x))), 0), 1e-6)


def test_a_used_result_without_a_value_is_an_error_at_the_op():
    module = _parse((INPUTS / "tf-unsupported.mlir").read_text())
    from mlconv.passes.tf_patterns.builder import tf_builder
    from mlconv.passes.tf_to_core import tf_ops

    main = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    with pytest.raises(PassFailure, match="output #0 is used but the lowering does not produce"):
        driver.lower_ops(list(main.body.block.ops)[:1], "tf", tf_builder, fallback=lambda o, b: [])
    assert len(tf_ops(module)) == 4


def test_builder_composes_a_reader_and_folds_on_request():
    module = _parse(CORE_UNSUPPORTED)
    anchor = next(op for op in module.walk() if op.name == "core.Erf")

    class Reader:
        def __init__(self, b):
            self.b = b

        def twice(self, value):
            return self.b(core.AddOp, value, value)

    folding = Builder(anchor, Reader, fold=True)
    doubled = folding.twice(folding.const(np.float32([1.5, -2.0])))
    assert doubled.owner.name == "core.Constant"
    np.testing.assert_array_equal(folding.constant(doubled), np.float32([3.0, -4.0]))
    plain = Builder(anchor, Reader)
    kept = plain.twice(plain.const(np.float32([1.5])))
    assert kept.owner.name == "core.Add" and str(kept.owner.location) == 'loc("erf")'
    with pytest.raises(AttributeError):
        _ = Builder(anchor).twice

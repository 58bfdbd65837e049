"""The reference interpreters (`mlconv.interpreters`) themselves: control flow at the core and
tpu levels against the compiled program, dynamic dims, the record of every op's results by
location (what `--check-numerics` reads to name the first op that differs), one-line errors."""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import pytest
from xdsl.parser import Parser

from mlconv.backends.jax_backend import compile_module
from mlconv.dialects import make_context
from mlconv.errors import BackendError
from mlconv.frontends.onnx_importer import import_onnx
from mlconv.interpreters import Recorder, level_of, run_module

HERE = Path(__file__).parent
CONTROL_FLOW = HERE.parent / "filecheck" / "passes" / "core-to-tpu" / "control-flow.mlir"


import numerics  # noqa: E402 - a module beside this one (conftest.py)


def parse(text: str):
    module = Parser(make_context(), text).parse_module()
    module.verify()
    return module


def _cases() -> list[str]:
    return [c for c in CONTROL_FLOW.read_text().split("// -----") if "builtin.module" in c]


def _inputs(module, seed: int, flag: bool | None = None) -> list[np.ndarray]:
    inputs = numerics.random_inputs(module, seed)
    return [np.asarray(flag) if flag is not None and x.dtype == bool else x for x in inputs]


@pytest.mark.parametrize("index", range(len(_cases())))
def test_control_flow_matches_the_compiled_program(index: int) -> None:
    """core.If/Loop/Scan run op by op (core level), their tpu.cond/while/scan run op by op
    (tpu level) and the jitted program agree, for both values of a condition."""
    core = parse(_cases()[index])
    tpu = numerics.apply_passes(core, "core-to-tpu")
    assert level_of(core) == "core" and level_of(tpu) == "tpu"
    compiled = compile_module(tpu, "cpu")
    for flag in (True, False):
        inputs = _inputs(core, seed=index, flag=flag)
        expected = compiled(*inputs)
        numerics.assert_outputs_close(run_module(core, inputs), expected, 1e-6, 1e-6, "core")
        numerics.assert_outputs_close(run_module(tpu, inputs), expected, 1e-6, 1e-6, "tpu")


def _convnet_levels():
    pass_numerics = importlib.import_module("test_pass_numerics")
    proto = pass_numerics.convnet()
    onnx_module = import_onnx(proto)
    core = numerics.apply_passes(onnx_module, "onnx-normalize,onnx-decompose,onnx-to-core")
    return pass_numerics, onnx_module, core


def test_every_result_is_kept_by_location() -> None:
    """The onnx-level and core-level runs of one model hold each node's result under the
    node's name; they agree node by node, and a broken op is the first that differs."""
    _, onnx_module, core = _convnet_levels()
    x = numerics.random_inputs(onnx_module, seed=3)
    onnx_record, core_record = Recorder(), Recorder()
    run_module(onnx_module, x, onnx_record)
    run_module(core, x, core_record)
    onnx_values, core_values = onnx_record.by_location(), core_record.by_location()
    nodes = ["conv1", "bn1", "swish1", "pool1", "conv2", "bn2", "relu2", "gap", "fc", "softmax"]
    for node in nodes:
        (expected,), (actual,) = onnx_values[node][:1], core_values[node][:1]
        np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-5, err_msg=node)
    # Break one op of the core IR: the first location whose result differs is that op's.
    broken = core.clone()
    relu = next(op for op in broken.walk() if op.name == "core.Relu")
    relu.results[0].replace_all_uses_with(relu.operands[0])
    broken_record = Recorder()
    run_module(broken, x, broken_record)
    broken_values = broken_record.by_location()
    differs = [
        node
        for node in nodes
        if not np.allclose(broken_values[node][0], onnx_values[node][0], rtol=1e-4, atol=1e-5)
    ]
    assert differs[0] == "gap", differs


def test_dynamic_dims_take_the_input_shape() -> None:
    """A core module with a dynamic batch runs at the batch of its input: each sample as if
    alone."""
    pass_numerics = importlib.import_module("test_pass_numerics")
    module = import_onnx(pass_numerics.convnet_any_batch())
    core = numerics.apply_passes(module, "onnx-normalize,onnx-decompose,onnx-to-core")
    batch = np.random.default_rng(4).standard_normal((3, 3, 16, 16)).astype(np.float32)
    together = run_module(core, [batch])
    for i in range(3):
        alone = run_module(core, [batch[i : i + 1]])
        for a, t in zip(alone, together, strict=True):
            np.testing.assert_allclose(a[0], t[i], rtol=1e-5, atol=1e-6)


def test_a_result_contradicting_its_type_is_one_line_at_the_op() -> None:
    module = parse(
        """builtin.module {
  func.func @main(%x: tensor<2xf32>) -> tensor<3xf32> {
    %y = "core.Relu"(%x) : (tensor<2xf32>) -> tensor<3xf32> loc("bad_relu")
    func.return %y : tensor<3xf32>
  }
}"""
    )
    with pytest.raises(BackendError) as caught:
        run_module(module, [np.ones(2, np.float32)])
    text = caught.value.render("m.mlir")
    assert "\n" not in text
    assert 'loc("bad_relu")' in text and "result 0 has shape (2,)" in text


def test_mixed_or_framework_levels_are_refused() -> None:
    module = parse(
        """builtin.module {
  func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    func.return %x : tensor<2xf32>
  }
}"""
    )
    with pytest.raises(BackendError, match="expected one of onnx, core, tpu"):
        run_module(module, [np.ones(2, np.float32)])
    with pytest.raises(BackendError, match="expected 2 inputs, got 3"):
        run_module(parse(_cases()[0]).clone(), [np.ones(2, np.float32)] * 3)

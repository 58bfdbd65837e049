"""`mlconv.compile`: issue 2's acceptance test (all nine light models of the onnx wheel compile
on the CPU and match onnxruntime on random inputs), ModelProto and .mlir inputs, inputs by
name, `input_shapes` for a dynamic batch, and one-line errors for a missing lowering.

The light models' weights are constant fills: every output is 1000 copies of one number, and a
dropped input, transpose or channel permutation changes nothing measurable. The acceptance test
runs them with seeded random weights instead (`sensitivity.randomize_onnx_weights`: He-normal
filters, batch-norm statistics of the activations each layer sees), checks that a second input
moves onnxruntime's output by 100x the tolerance, and compares with onnxruntime. The shipped
files stay import tests (test_onnx_frontend.py, test_round_trip.py)."""

from __future__ import annotations

import time
from pathlib import Path

import numerics  # noqa: E402 - a module beside this one (conftest.py)
import numpy as np
import onnx
import pytest
import sensitivity  # noqa: E402 - a module beside this one (conftest.py)
from onnx import TensorProto, helper

import mlconv
from mlconv.errors import MlconvError

# Light models: max |diff| within RTOL of each output's largest |value|.
RTOL = 1e-4
LIGHT = sorted(p.stem for p in numerics.LIGHT_MODELS.glob("light_*.onnx"))


def _random_inputs(model: onnx.ModelProto, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    initializers = {i.name for i in model.graph.initializer}
    inputs = []
    for value in model.graph.input:
        if value.name in initializers:
            continue
        shape = [d.dim_value for d in value.type.tensor_type.shape.dim]
        inputs.append(rng.standard_normal(shape).astype(np.float32))
    return inputs


def test_all_nine_light_models_are_present() -> None:
    assert len(LIGHT) == 9, LIGHT


@pytest.mark.parametrize("name", LIGHT)
def test_light_model_matches_onnxruntime(name: str) -> None:
    """Issue 2's acceptance test on seeded random weights; prints compile and run times
    (pytest -s)."""
    path = numerics.LIGHT_MODELS / f"{name}.onnx"
    shipped = onnx.load(str(path))
    calibration = _random_inputs(shipped, seed=100)
    proto = sensitivity.randomize_onnx_weights(shipped, seed=0, calibration=calibration)
    # Compare the logits as well as the softmax outputs.
    proto = numerics.expose_logits(proto)
    inputs = _random_inputs(proto)
    expected = numerics.onnxruntime_outputs(proto, inputs)
    moved = numerics.onnxruntime_outputs(proto, _random_inputs(proto, seed=1))
    sensitivity.assert_input_sensitive(expected, moved, rtol=RTOL, what=name)
    start = time.perf_counter()
    run = mlconv.compile(proto, device="cpu")
    compiled = time.perf_counter()
    outputs = run(*inputs)
    ran = time.perf_counter()
    print(f"{name}: compile {compiled - start:.1f} s, first run {ran - compiled:.1f} s")
    numerics.assert_scaled_close(outputs, expected, rtol=RTOL, what=name)


# --------------------------------------------------------------------------- small models


def _mlp(batch: int | str = 2, opset: int = 13) -> onnx.ModelProto:
    """x[batch, 4] -> Gemm(4 -> 3) -> Relu -> y; batch may be a symbolic dim."""
    rng = np.random.default_rng(1)
    w = onnx.numpy_helper.from_array(rng.standard_normal((3, 4)).astype(np.float32), "w")
    b = onnx.numpy_helper.from_array(rng.standard_normal(3).astype(np.float32), "b")
    graph = helper.make_graph(
        [
            helper.make_node("Gemm", ["x", "w", "b"], ["g"], transB=1, name="gemm"),
            helper.make_node("Relu", ["g"], ["y"], name="relu"),
        ],
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 3])],
        [w, b],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _reference(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    return numerics.onnxruntime_outputs(model, [x])[0]


def test_compile_model_proto() -> None:
    model = _mlp()
    x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    (y,) = mlconv.compile(model, device="cpu")(x)
    np.testing.assert_allclose(y, _reference(model, x), rtol=1e-5, atol=1e-6)


def test_inputs_by_name() -> None:
    model = _mlp()
    run = mlconv.compile(model, device="cpu")
    x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    np.testing.assert_array_equal(run(x=x)[0], run(x)[0])
    with pytest.raises(MlconvError, match="missing inputs: x"):
        run(z=x)


def test_mlir_file_at_core_level(tmp_path: Path) -> None:
    text = """
func.func @main(%x: tensor<2x3xf32> {mlconv.name = "x"}) -> (tensor<2x3xf32> {mlconv.name = "y"}) {
  %c = core.Constant {value = dense<[1.0, -2.0, 3.0]> : tensor<3xf32>} : tensor<3xf32>
  %s = "core.Add"(%x, %c) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %y = "core.Relu"(%s) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
"""
    path = tmp_path / "model.mlir"
    path.write_text(text)
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 3
    (y,) = mlconv.compile(str(path), device="cpu")(x)
    np.testing.assert_array_equal(y, np.maximum(x + np.array([1, -2, 3], np.float32), 0))


def test_input_shapes_fix_a_dynamic_batch() -> None:
    model = _mlp(batch="N")
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "N"
    for batch in (1, 5):
        x = np.random.default_rng(batch).standard_normal((batch, 4)).astype(np.float32)
        run = mlconv.compile(model, device="cpu", input_shapes={"x": [batch, 4]})
        (y,) = run(x)
        assert y.shape == (batch, 3)
        np.testing.assert_allclose(y, _reference(model, x), rtol=1e-5, atol=1e-6)


def test_dynamic_batch_without_input_shapes_specializes_per_call() -> None:
    model = _mlp(batch="N")
    run = mlconv.compile(model, device="cpu")
    for batch in (1, 3):
        x = np.random.default_rng(batch).standard_normal((batch, 4)).astype(np.float32)
        np.testing.assert_allclose(run(x)[0], _reference(model, x), rtol=1e-5, atol=1e-6)


def test_lowering_a_dynamic_batch_is_one_line() -> None:
    """Lowering (not compiling) a dynamic model: the error names the input and the fix."""
    from mlconv.frontends.load import load_model
    from mlconv.passes.pipelines import lower_to_tpu

    with pytest.raises(MlconvError) as error:
        lower_to_tpu(load_model(_mlp(batch="N")))
    message = str(error.value)
    assert "\n" not in message
    assert "input 'x' has dynamic dimension 0" in message
    assert "input-shapes=x:1,4" in message


def _unsupported_model() -> onnx.ModelProto:
    """Relu (lowered) besides two Multinomial nodes and a RandomUniformLike (no lowering)."""
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("Multinomial", ["p"], ["a"], name="draw_a"),
        helper.make_node("Multinomial", ["p"], ["b"], name="draw_b"),
        helper.make_node("RandomUniformLike", ["x"], ["m"], name="noise"),
    ]
    graph = helper.make_graph(
        nodes,
        "unsupported",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64, 1]),
            helper.make_tensor_value_info("p", TensorProto.FLOAT, [2, 8]),
        ],
        [
            helper.make_tensor_value_info("a", TensorProto.INT32, None),
            helper.make_tensor_value_info("b", TensorProto.INT32, None),
            helper.make_tensor_value_info("m", TensorProto.FLOAT, None),
        ],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])


def test_missing_lowerings_are_one_line_listing_every_op_version(tmp_path: Path) -> None:
    path = tmp_path / "unsupported.onnx"
    onnx.save(_unsupported_model(), str(path))
    for model in (_unsupported_model(), str(path)):
        with pytest.raises(MlconvError) as error:
            mlconv.compile(model, device="cpu")
        message = str(error.value)
        assert "\n" not in message
        assert "no lowering to core for 2 onnx op type(s) at opset 20" in message
        assert "RandomUniformLike-1 (1 node: noise)" in message
        assert "Multinomial-7 (2 nodes: draw_a, draw_b)" in message
        assert "Relu" not in message


def test_unknown_model_type_is_one_line() -> None:
    with pytest.raises(MlconvError, match="cannot compile a dict"):
        mlconv.compile({}, device="cpu")

"""How the JAX backend hands a tpu.region to XLA: weights as jit arguments, small constants as
literals, and XLA:CPU's library fusions (backends/jax_backend.py). Outputs are checked against
onnxruntime, and with the library fusions against the same program compiled without them."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
import sensitivity
from numerics import LIGHT_MODELS, onnxruntime_outputs
from onnx import TensorProto, helper, numpy_helper

import mlconv
from mlconv.backends import jax_backend


def _cnn() -> tuple[object, np.ndarray]:
    rng = np.random.default_rng(7)

    def weight(name, shape):
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        array = rng.standard_normal(shape) / np.sqrt(fan_in)
        return numpy_helper.from_array(array.astype(np.float32), name)

    inits = [
        weight("w1", (96, 16, 3, 3)),
        weight("b1", (96,)),
        weight("w2", (96, 96, 1, 1)),
        weight("b2", (96,)),
        weight("fc", (10, 96)),
        weight("fcb", (10,)),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], name="conv2"),
        helper.make_node("Add", ["c2", "r1"], ["s"], name="residual"),
        helper.make_node("Relu", ["s"], ["r2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["p"], name="pool"),
        helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "fc", "fcb"], ["y"], transB=1, name="fc"),
    ]
    graph = helper.make_graph(
        nodes,
        "cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 56, 56])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return model, np.random.default_rng(3).standard_normal((1, 16, 56, 56)).astype(np.float32)


def test_weights_are_arguments_small_constants_literals() -> None:
    model, x = _cnn()
    compiled = mlconv.compile(model, device="cpu")
    (region,) = compiled.regions
    # w1 (55 KiB) and w2 (36 KiB) are arguments; the biases and fc (3.8 KiB) are literals.
    assert sorted(c.shape for c in region.constants) == [
        (3, 3, 16, 96),
        (96, 96),
    ]  # HWIO, 1x1 as dot
    hlo = region._jitted.lower(region.constants, x).as_text()
    (signature,) = [line for line in hlo.splitlines() if "func.func public @main(" in line]
    assert signature.count("%arg") == len(region.constants) + 1  # the weights and x only
    np.testing.assert_allclose(
        compiled(x)[0], onnxruntime_outputs(model, [x])[0], rtol=1e-4, atol=1e-5
    )


def _compiled_hlo(compiled: mlconv.backends.jax_backend.CompiledModule, x: np.ndarray) -> str:
    (region,) = compiled.regions
    return region._jitted.lower(region.constants, x).compile().as_text()


def test_xla_cpu_options_dots_as_library_calls_same_outputs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """squeezenet (light, seeded random weights as test_api's: the shipped ConstantOfShape
    fills drive activations towards overflow, where two programs may round inf differently):
    with XLA_CPU_OPTIONS each dot (the 1x1 convolutions) is a YNNPACK call of its own, no
    convolution or elementwise op is in a library fusion, and the outputs do not move."""
    if jax_backend.compiler_options("cpu") is None:
        pytest.skip("this jaxlib has no XLA:CPU library fusion options")
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 3, 224, 224)).astype(np.float32)
    calibration = [rng.standard_normal((1, 3, 224, 224)).astype(np.float32)]
    shipped = onnx.load(str(LIGHT_MODELS / "light_squeezenet.onnx"))
    model = sensitivity.randomize_onnx_weights(shipped, seed=0, calibration=calibration)
    optioned = mlconv.compile(model, device="cpu")
    hlo = _compiled_hlo(optioned, x)
    library = hlo.count('"kind":"__ynn_fusion"')
    dots = len(
        [op for op in optioned.regions[0].region.body.walk() if op.name == "tpu.dot_general"]
    )
    assert library == dots > 10
    monkeypatch.setattr(jax_backend, "compiler_options", lambda platform: None)
    plain = mlconv.compile(model, device="cpu")
    np.testing.assert_allclose(optioned(x)[0], plain(x)[0], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(
        optioned(x)[0], onnxruntime_outputs(model, [x])[0], rtol=1e-4, atol=1e-6
    )

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
from onnx_graphs import float_model

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
    model = float_model(nodes, {"x": [1, 16, 56, 56]}, {"y": [1, 10]}, inits, name="cnn")
    return model, np.random.default_rng(3).standard_normal((1, 16, 56, 56)).astype(np.float32)


def test_weights_are_arguments_small_constants_literals() -> None:
    model, x = _cnn()
    compiled = mlconv.compile(model, device="cpu")
    (region,) = compiled.regions
    # w1 (55 KiB) and w2 (36 KiB) are arguments; the biases and fc (3.8 KiB) are literals.
    assert sorted(c.shape for c in region.constants) == [
        (1, 1, 96, 96),
        (3, 3, 16, 96),
    ]  # HWIO filters, the 1x1 one included (a convolution: see tpu_conv_strategy.choose)
    hlo = region._jitted.lower(region.constants, x).as_text()
    (signature,) = [line for line in hlo.splitlines() if "func.func public @main(" in line]
    assert signature.count("%arg") == len(region.constants) + 1  # the weights and x only
    np.testing.assert_allclose(
        compiled(x)[0], onnxruntime_outputs(model, [x])[0], rtol=1e-4, atol=1e-5
    )


def _compiled_hlo(compiled: mlconv.backends.jax_backend.CompiledModule, x: np.ndarray) -> str:
    (region,) = compiled.regions
    return region._jitted.lower(region.constants, x).compile().as_text()


def _mlp(widths: list[int]) -> tuple[object, np.ndarray]:
    """MatMul + Add + Relu layers of the given widths, seeded He-normal weights."""
    rng = np.random.default_rng(11)
    nodes, inits, previous = [], [], "x"
    for i, (fan_in, fan_out) in enumerate(zip(widths, widths[1:], strict=False)):
        w = rng.standard_normal((fan_in, fan_out)) * np.sqrt(2 / fan_in)
        inits += [
            numpy_helper.from_array(w.astype(np.float32), f"w{i}"),
            numpy_helper.from_array(rng.standard_normal(fan_out).astype(np.float32), f"b{i}"),
        ]
        nodes += [
            helper.make_node("MatMul", [previous, f"w{i}"], [f"m{i}"], name=f"matmul{i}"),
            helper.make_node("Add", [f"m{i}", f"b{i}"], [f"a{i}"], name=f"bias{i}"),
            helper.make_node("Relu", [f"a{i}"], [f"r{i}"], name=f"relu{i}"),
        ]
        previous = f"r{i}"
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, widths[0]])],
        [helper.make_tensor_value_info(previous, TensorProto.FLOAT, [8, widths[-1]])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    x = np.random.default_rng(3).standard_normal((8, widths[0])).astype(np.float32)
    return model, x


def _without_options(monkeypatch: pytest.MonkeyPatch, model: object) -> object:
    with monkeypatch.context() as patch:
        patch.setattr(jax_backend, "compiler_options", lambda platform: None)
        return mlconv.compile(model, device="cpu")


def test_xla_cpu_options_dots_as_library_calls_same_outputs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With XLA_CPU_OPTIONS each dot (an MLP's MatMuls) is a YNNPACK call of its own, and
    squeezenet (light, seeded random weights as test_api's: the shipped ConstantOfShape fills
    drive activations towards overflow, where two programs may round inf differently), all
    convolutions, has no library fusion at all (XLA's default hands convolutions to YNNPACK
    too). Outputs do not move against the same programs compiled without the options, nor
    against onnxruntime."""
    if jax_backend.compiler_options("cpu") is None:
        pytest.skip("this jaxlib has no XLA:CPU library fusion options")
    mlp, features = _mlp([64, 96, 128, 80, 112, 72, 104, 88, 120, 64, 100, 76, 92])
    optioned = mlconv.compile(mlp, device="cpu")
    hlo = _compiled_hlo(optioned, features)
    dots = [op for op in optioned.regions[0].region.body.walk() if op.name == "tpu.dot_general"]
    assert hlo.count('"kind":"__ynn_fusion"') == len(dots) == 12
    expected = onnxruntime_outputs(mlp, [features])[0]
    np.testing.assert_allclose(
        optioned(features)[0], _without_options(monkeypatch, mlp)(features)[0], rtol=1e-5
    )
    np.testing.assert_allclose(optioned(features)[0], expected, rtol=1e-4, atol=1e-5)

    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 3, 224, 224)).astype(np.float32)
    calibration = [rng.standard_normal((1, 3, 224, 224)).astype(np.float32)]
    shipped = onnx.load(str(LIGHT_MODELS / "light_squeezenet.onnx"))
    model = sensitivity.randomize_onnx_weights(shipped, seed=0, calibration=calibration)
    optioned = mlconv.compile(model, device="cpu")
    assert '"kind":"__ynn_fusion"' not in _compiled_hlo(optioned, x)
    plain = _without_options(monkeypatch, model)
    np.testing.assert_allclose(optioned(x)[0], plain(x)[0], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(
        optioned(x)[0], onnxruntime_outputs(model, [x])[0], rtol=1e-4, atol=1e-6
    )


def _reduction_model(op_type: str, shape: list[int], **attributes: object) -> object:
    """One reduction (or Softmax) of a float input of `shape`; ReduceSum's axes as an input."""
    inputs, inits = ["x"], []
    axes = attributes.pop("axes", None)
    if axes is not None:
        inits = [numpy_helper.from_array(np.asarray(axes, np.int64), "axes")]
        inputs.append("axes")
    node = helper.make_node(op_type, inputs, ["y"], **attributes)
    graph = helper.make_graph(
        [node],
        "reduction",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


@pytest.mark.parametrize(
    ("op_type", "shape", "attributes", "tree"),
    [
        ("Softmax", [1, 1000], {"axis": -1}, False),  # a classifier's rows
        ("ReduceMax", [4, 16, 768], {"axes": [-1], "keepdims": 0}, False),
        ("ReduceSum", [512, 48], {"axes": [0], "keepdims": 0}, True),  # a column sum
        ("ReduceSum", [2, 70000], {"axes": [1], "keepdims": 0}, True),  # a very long row
        ("ReduceSum", [1, 13, 13, 64], {"axes": [1, 2], "keepdims": 0}, False),  # dims <= 32
    ],
)
def test_tree_reductions_only_where_needed(op_type, shape, attributes, tree) -> None:
    """XLA:CPU's tree reduction rewriter runs only on programs with a column reduction over a
    dim longer than 32 or a row of more than 65536 elements: a softmax's rows compile without
    its reduce-windows (one kernel per reduction, not two), a column sum keeps them; the
    numbers are onnxruntime's either way."""
    if jax_backend.compiler_options("cpu") is None:
        pytest.skip("this jaxlib has no XLA:CPU options")
    model = _reduction_model(op_type, shape, **dict(attributes))
    x = np.random.default_rng(5).standard_normal(shape).astype(np.float32)
    compiled = mlconv.compile(model, device="cpu")
    (region,) = compiled.regions
    assert jax_backend.needs_tree_reductions(region.region) is tree
    hlo = _compiled_hlo(compiled, x)
    assert ("reduce-window" in hlo) is tree, hlo
    np.testing.assert_allclose(
        compiled(x)[0], onnxruntime_outputs(model, [x])[0], rtol=1e-5, atol=1e-5
    )


def test_small_programs_compile_with_legacy_emitters() -> None:
    """A region of at most LEGACY_EMITTER_LIBRARY_CALLS convolutions and dots compiles with
    XLA:CPU's legacy loop emitters (one LLVM module, a part per core), a larger one and one
    with float8 values with the fusion emitters; each gives onnxruntime's numbers."""
    if jax_backend.compiler_options("cpu") is None:
        pytest.skip("this jaxlib has no XLA:CPU options")
    legacy = jax_backend.small_program_options()
    limit = jax_backend.LEGACY_EMITTER_LIBRARY_CALLS

    def options(compiled) -> dict:
        (region,) = compiled.regions
        return jax_backend.region_compiler_options(region.region, "cpu")

    cnn, image = _cnn()
    small = mlconv.compile(cnn, device="cpu")
    assert legacy.items() <= options(small).items()
    assert legacy["xla_cpu_parallel_codegen_split_count"] >= 2
    np.testing.assert_allclose(
        small(image)[0], onnxruntime_outputs(cnn, [image])[0], rtol=1e-4, atol=1e-5
    )

    widths = [16 + (7 * i) % 24 for i in range(limit + 2)]  # limit + 1 MatMuls
    mlp, features = _mlp(widths)
    large = mlconv.compile(mlp, device="cpu")
    dots = [op for op in large.regions[0].region.body.walk() if op.name == "tpu.dot_general"]
    assert len(dots) == limit + 1
    assert "xla_cpu_use_fusion_emitters" not in options(large)
    np.testing.assert_allclose(
        large(features)[0], onnxruntime_outputs(mlp, [features])[0], rtol=1e-4, atol=1e-5
    )

    node = helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT8E4M3FNUZ)
    graph = helper.make_graph(
        [node],
        "float8",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT8E4M3FNUZ, [4])],
    )
    narrow = mlconv.compile(helper.make_model(graph), device="cpu")
    assert "xla_cpu_use_fusion_emitters" not in options(narrow)
    (cast,) = narrow(np.array([np.nan, 1.0, -3.5, 300.0], np.float32))
    assert np.isnan(cast.astype(np.float32)[0])


def test_on_device_takes_and_returns_device_arrays() -> None:
    """`on_device` gives the call's outputs as JAX arrays and takes JAX array inputs without a
    host copy; the numbers are the numpy call's, a contradicting shape is still an InputError,
    and a model with a dynamic batch (compiled per shape) does the same."""
    import jax

    from mlconv.errors import InputError

    model, x = _cnn()
    compiled = mlconv.compile(model, device="cpu")
    placed = jax.device_put(x, jax.devices("cpu")[0])
    (out,) = compiled.on_device(placed)
    assert isinstance(out, jax.Array)
    np.testing.assert_array_equal(np.asarray(out), compiled(x)[0])
    np.testing.assert_allclose(
        np.asarray(out), onnxruntime_outputs(model, [x])[0], rtol=1e-4, atol=1e-5
    )
    with pytest.raises(InputError, match=r"expected shape \[1, 16, 56, 56\], got \[1, 16, 8, 8\]"):
        compiled.on_device(placed[:, :, :8, :8])

    dynamic = onnx.ModelProto()
    dynamic.CopyFrom(model)
    for value in (*dynamic.graph.input, *dynamic.graph.output):
        value.type.tensor_type.shape.dim[0].dim_param = "batch"
    batch = np.random.default_rng(4).standard_normal((3, 16, 56, 56)).astype(np.float32)
    specializing = mlconv.compile(dynamic, device="cpu")
    (out,) = specializing.on_device(jax.device_put(batch, jax.devices("cpu")[0]))
    assert isinstance(out, jax.Array) and out.shape == (3, 10)
    np.testing.assert_allclose(
        np.asarray(out), onnxruntime_outputs(dynamic, [batch])[0], rtol=1e-4, atol=1e-5
    )

"""Custom ops pass through (allow-custom): an ONNX op of an unknown domain imports as
onnx.Custom, becomes core.Custom, and runs through the Python implementation registered for its
(domain, op type) in mlconv.custom_ops (jax.pure_callback on the host); without the option the
model fails listing the op."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import mlconv
from mlconv import custom_ops
from mlconv.errors import MlconvError, PassFailure
from mlconv.frontends.onnx_importer import import_onnx
from mlconv.passes.lowering.driver import HINT

DOMAIN = "com.acme"


def sort_rows(x: np.ndarray, *, descending: int = 0, keep: int) -> tuple[np.ndarray, np.ndarray]:
    """The host implementation: the `keep` first values of each row, sorted, and their indices."""
    order = np.argsort(-x if descending else x, axis=-1, kind="stable")[..., :keep]
    return np.take_along_axis(x, order, axis=-1), order.astype(np.int64)


@pytest.fixture
def registered():
    custom_ops.register(DOMAIN, "SortRows", sort_rows)
    yield
    custom_ops.unregister(DOMAIN, "SortRows")


def model(descending: int, seed: int = 0) -> onnx.ModelProto:
    """h = x @ W; (values, indices) = acme.SortRows(h); y = values + B. Seeded random weights;
    ONNX shape inference knows nothing of SortRows' outputs."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((6, 10)).astype(np.float32)
    bias = rng.standard_normal(4).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["h"], name="matmul"),
        helper.make_node(
            "SortRows", ["h"], ["values", "indices"], domain=DOMAIN, name="sort",
            descending=descending, keep=4,
        ),
        helper.make_node("Add", ["values", "B"], ["y"], name="bias"),
    ]  # fmt: skip
    graph = helper.make_graph(
        nodes,
        "sorted",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 6])],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("indices", TensorProto.INT64, None),
        ],
        [numpy_helper.from_array(w, "W"), numpy_helper.from_array(bias, "B")],
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid(DOMAIN, 1)]
    return helper.make_model(graph, opset_imports=opsets)


def reference(proto: onnx.ModelProto, x: np.ndarray, descending: int):
    w, bias = (numpy_helper.to_array(t) for t in proto.graph.initializer)
    values, indices = sort_rows(x @ w, descending=descending, keep=4)
    return values + bias, indices


@pytest.mark.parametrize("descending", [0, 1])
def test_allow_custom_runs_the_host_implementation(registered, descending):
    proto = model(descending)
    run = mlconv.compile(proto, device="cpu", allow_custom=True, quiet=True)
    rng = np.random.default_rng(7)
    for _ in range(2):
        x = rng.standard_normal((3, 6)).astype(np.float32)
        y, indices = run(x)
        expected_y, expected_indices = reference(proto, x, descending)
        assert indices.dtype == np.int64 and indices.shape == (3, 4)
        np.testing.assert_array_equal(indices, expected_indices)
        np.testing.assert_allclose(y, expected_y, rtol=1e-5, atol=1e-5)


def test_without_allow_custom_the_op_is_listed(registered):
    with pytest.raises(PassFailure) as caught:
        mlconv.compile(model(0), device="cpu", quiet=True)
    assert str(caught.value) == (
        "error: no lowering to core for 1 onnx op type(s) at opset 17: "
        "onnx.com.acme.SortRows-1 (1 node: sort)" + HINT
    )


def test_no_implementation_is_one_error_at_the_op():
    with pytest.raises(MlconvError) as caught:
        mlconv.compile(model(0), device="cpu", allow_custom=True, quiet=True)
    assert "\n" not in str(caught.value)
    assert caught.value.location == "sort"
    assert "com.acme.SortRows has no host implementation" in str(caught.value)


def _round_trip(module) -> str:
    from xdsl.parser import Parser

    from mlconv.dialects import make_context

    text = str(module)
    again = str(Parser(make_context(), text).parse_module())
    assert again == text
    return text


def test_ir_of_every_level_round_trips(registered):
    from mlconv.passes.pipelines import lower_to_core, lower_to_tpu

    module = import_onnx(model(1))
    text = _round_trip(module)
    assert (
        '"onnx.Custom"(%h) {domain = "com.acme", op_type = "SortRows", version = 1 : i64, ' in text
    )
    assert "attrs = {descending = 1 : i64, keep = 4 : i64}" in text
    lower_to_core(module, allow_custom=True)
    assert '"core.Custom"(%h) {domain = "com.acme", op_type = "SortRows"' in _round_trip(module)
    lower_to_tpu(module)
    text = _round_trip(module)
    assert '"tpu.custom_call"' in text
    assert (
        "result_shapes = [array<i64: 3, 4>, array<i64: 3, 4>], result_dtypes = [f32, i64]" in text
    )


def test_interpreters_call_the_host(registered):
    """Eagerly (the core and tpu reference interpreters) the primitive calls the implementation
    at once."""
    from mlconv.interpreters import run_module
    from mlconv.passes.pipelines import lower_to_core

    proto = model(0)
    module = lower_to_core(import_onnx(proto), allow_custom=True)
    x = np.random.default_rng(3).standard_normal((3, 6)).astype(np.float32)
    expected_y, expected_indices = reference(proto, x, 0)
    for level in ("core", "tpu"):
        if level == "tpu":
            from mlconv.passes.pipelines import lower_to_tpu

            lower_to_tpu(module)
        y, indices = run_module(module, [x])
        np.testing.assert_array_equal(indices, expected_indices)
        np.testing.assert_allclose(y, expected_y, rtol=1e-5, atol=1e-5)


def test_no_implementation_when_the_program_is_built():
    """Static result types lower without an implementation; building the program names it."""
    from xdsl.parser import Parser

    from mlconv.backends.jax_backend import compile_module
    from mlconv.dialects import make_context
    from mlconv.errors import BackendError

    text = """
    func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
      %y = "core.Custom"(%x) {domain = "com.acme", op_type = "Nowhere"} : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("nowhere")
      func.return %y : tensor<2x3xf32>
    }
    """
    from mlconv.passes.pipelines import lower_to_tpu

    module = lower_to_tpu(Parser(make_context(), text).parse_module())
    with pytest.raises(BackendError, match="com.acme.Nowhere has no host implementation") as caught:
        compile_module(module, "cpu")
    assert caught.value.location == "nowhere"
    assert "\n" not in str(caught.value)


def test_openvino_writer_writes_an_extension_layer(registered):
    """core.Custom in OpenVINO IR: type = op type, version = domain, attributes in <data>."""
    import xml.etree.ElementTree as ET

    from mlconv.backends.openvino_ir import to_openvino_ir
    from mlconv.passes.core_infer_shapes import CoreInferShapesPass
    from mlconv.passes.pipelines import lower_to_core

    module = lower_to_core(import_onnx(model(1)), allow_custom=True)
    CoreInferShapesPass().apply(None, module)  # the host implementation gives the shapes
    xml, _ = to_openvino_ir(module)
    (layer,) = [e for e in ET.fromstring(xml).iter("layer") if e.get("type") == "SortRows"]
    assert layer.get("version") == DOMAIN
    assert layer.find("data").attrib == {"descending": "1", "keep": "4"}
    ports = layer.find("output").findall("port")
    assert [p.get("precision") for p in ports] == ["FP32", "I64"]
    assert [[d.text for d in p.findall("dim")] for p in ports] == [["3", "4"], ["3", "4"]]


def test_mlconv_run_allow_custom(tmp_path):
    """mlconv-run lists the op without --allow-custom; with it (and no implementation in this
    process) it names the missing implementation; one line each, exit 1."""
    import subprocess
    import sys
    from pathlib import Path

    path = tmp_path / "m.onnx"
    onnx.save(model(0), path)
    np.savez(tmp_path / "in.npz", x=np.zeros((3, 6), np.float32))
    tool = Path(sys.executable).parent / "mlconv-run"
    for flags, mention in (
        ([], "onnx.com.acme.SortRows-1 (1 node: sort)"),
        (["--allow-custom"], "custom op com.acme.SortRows has no host implementation"),
    ):
        result = subprocess.run(
            [tool, path, "--inputs", tmp_path / "in.npz", "--outputs", tmp_path / "o.npz", *flags],
            capture_output=True,
            text=True,
        )
        assert result.returncode == 1
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and mention in lines[0], result.stderr


def test_a_plugin_pattern_lowers_core_custom():
    """A pattern registered for ("custom", "<domain>.<op_type>") replaces core.Custom by core
    ops (whatever framework the op came from): no host callback is left."""
    from xdsl.dialects.builtin import i64

    from mlconv.dialects import core
    from mlconv.passes.lowering import register, unregister
    from mlconv.passes.pipelines import lower_to_core

    def lower(op, b):
        (x,) = op.operands
        keep = dict(op.attribute_values()["attrs"])["keep"]
        k = b.const(np.asarray(keep, np.int64))
        values, indices = b(
            core.TopKOp, x, k, axis=-1, mode="min", sort="value", index_element_type=i64
        )
        return [values, indices]

    register("custom", f"{DOMAIN}.SortRows", None, lower)
    try:
        proto = model(0)
        module = lower_to_core(import_onnx(proto), allow_custom=True)
        names = {op.name for op in module.walk()}
        assert "core.Custom" not in names and "core.TopK" in names
        run = mlconv.compile(proto, device="cpu", allow_custom=True, quiet=True)
    finally:
        unregister("custom", f"{DOMAIN}.SortRows", None)
    x = np.random.default_rng(5).standard_normal((3, 6)).astype(np.float32)
    y, indices = run(x)
    expected_y, expected_indices = reference(proto, x, 0)
    np.testing.assert_array_equal(indices, expected_indices)
    np.testing.assert_allclose(y, expected_y, rtol=1e-5, atol=1e-5)

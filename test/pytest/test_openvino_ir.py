"""OpenVINO IR writer and reader (issue 10 items 1-3): layout, constants stored once,
compress-to-fp16, the round trip through the reader, errors, and the OpenVINO backend."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx_graphs import float_model
from xdsl.dialects import func

import mlconv
from mlconv.backends.openvino_backend import compile_module
from mlconv.backends.openvino_ir import import_openvino, to_openvino_ir, write_openvino
from mlconv.dense import to_numpy
from mlconv.dialects import make_context
from mlconv.dialects.core_base import CoreOp
from mlconv.errors import BackendError
from mlconv.frontends.load import load_model
from mlconv.passes.core_infer_shapes import CoreInferShapesPass
from mlconv.passes.pipelines import lower_to_core

RNG = np.random.default_rng(0)


def _repeated_weights_model() -> onnx.ModelProto:
    """x -> Conv(w1) -> Relu -> Conv(w2 = same bytes as w1) -> Add(b) -> Mul(b) (b repeated too)."""
    w = RNG.standard_normal((4, 4, 3, 3)).astype(np.float32)
    b = RNG.standard_normal((1, 4, 1, 1)).astype(np.float32)
    inits = [
        numpy_helper.from_array(w, "w1"),
        numpy_helper.from_array(w.copy(), "w2"),
        numpy_helper.from_array(b, "b1"),
        numpy_helper.from_array(b.copy(), "b2"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
        helper.make_node("Relu", ["c1"], ["r"], name="relu"),
        helper.make_node("Conv", ["r", "w2"], ["c2"], pads=[1, 1, 1, 1], name="conv2"),
        helper.make_node("Add", ["c2", "b1"], ["a"], name="add"),
        helper.make_node("Mul", ["a", "b2"], ["y"], name="mul"),
    ]
    return float_model(nodes, {"x": ["N", 4, 8, 8]}, {"y": ["N", 4, 8, 8]}, inits, name="repeated")


def _core(model) -> object:
    module = load_model(model)
    return lower_to_core(module)


def _const_sizes(xml: bytes) -> list[int]:
    root = ET.fromstring(xml)
    return [
        int(layer.find("data").get("size"))
        for layer in root.iter("layer")
        if layer.get("type") == "Const"
    ]


def test_layout_ids_ports_and_versions():
    xml, _ = to_openvino_ir(_core(_repeated_weights_model()))
    root = ET.fromstring(xml)
    assert root.get("version") == "11"
    layers = list(root.iter("layer"))
    assert [int(layer.get("id")) for layer in layers] == list(range(len(layers)))
    assert layers[0].get("type") == "Parameter" and layers[-1].get("type") == "Result"
    assert layers[0].find("output/port/dim").text == "-1"  # dynamic batch
    position = {layer.get("id"): i for i, layer in enumerate(layers)}
    for edge in root.iter("edge"):  # topological: every edge goes forward
        assert position[edge.get("from-layer")] < position[edge.get("to-layer")]
    for layer in layers:
        ports = [int(p.get("id")) for p in layer.findall("input/port")]
        ports += [int(p.get("id")) for p in layer.findall("output/port")]
        assert ports == list(range(len(ports))), layer.get("name")
        for port in layer.iter("port"):
            assert port.get("precision") == "FP32"
    conv = next(layer for layer in layers if layer.get("type") == "Convolution")
    assert conv.get("version") == "opset1"
    assert conv.find("data").attrib["pads_begin"] == "1, 1"


def test_repeated_constants_are_stored_once_and_run():
    model = _repeated_weights_model()
    xml, weights = to_openvino_ir(_core(model))
    sizes = _const_sizes(xml)
    assert len(weights) < sum(sizes)
    assert len(weights) == 4 * (4 * 4 * 3 * 3 + 4)
    x = RNG.standard_normal((2, 4, 8, 8)).astype(np.float32)
    (expected,) = mlconv.compile(model, device="cpu")(x)
    (got,) = mlconv.compile(model, device="cpu", backend="openvino")(x)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_compress_to_fp16():
    source = _repeated_weights_model()
    module = _core(source)
    xml, weights = to_openvino_ir(module, compress_to_fp16=True)
    assert len(weights) == 2 * (4 * 4 * 3 * 3 + 4)
    root = ET.fromstring(xml)
    converts = [layer for layer in root.iter("layer") if layer.get("type") == "Convert"]
    assert converts and all(
        c.find("rt_info/attribute").get("name") == "decompression" for c in converts
    )
    import openvino as ov

    model = ov.Core().read_model(
        model=xml.decode(), weights=ov.Tensor(np.frombuffer(weights, np.uint8).copy())
    )
    x = RNG.standard_normal((1, 4, 8, 8)).astype(np.float32)
    got = ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})([x])[0]
    (expected,) = mlconv.compile(source, device="cpu")(x)
    np.testing.assert_allclose(got, expected, rtol=2e-2, atol=2e-2 * np.abs(expected).max())


def _structure(module) -> list:
    """Ops in order with types, attribute values and constant bytes (no names)."""
    function = next(op for op in module.ops if isinstance(op, func.FuncOp))
    rows = [("args", tuple(str(a.type) for a in function.body.block.args))]
    index = {}
    for i, arg in enumerate(function.body.block.args):
        index[arg] = f"arg{i}"
    for op in function.body.block.ops:
        operands = tuple(index[v] for v in op.operands)
        if op.name == "core.Constant":
            detail = to_numpy(op.value).tobytes()
        elif isinstance(op, CoreOp):
            detail = op.attribute_values()
            if op.name == "core.MaxPool" and set(detail["dilations"] or ()) <= {1}:
                detail["dilations"] = ()  # MaxPool-1 has none: unit dilations come back absent
        else:
            detail = None
        rows.append((op.name, operands, tuple(str(r.type) for r in op.results), repr(detail)))
        for j, result in enumerate(op.results):
            index[result] = f"{len(rows)}.{j}"
    return rows


def _light(name: str) -> Path:
    return Path(onnx.__file__).parent / "backend/test/data/light" / f"light_{name}.onnx"


def _asymmetric_model() -> onnx.ModelProto:
    """Attributes whose order matters: a 3x1 kernel, strides (2, 1), pads (1, 0, 0, 2), a
    transpose, an asymmetric pool and a Gelu with tanh."""
    w = RNG.standard_normal((4, 3, 3, 1)).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], strides=[2, 1], pads=[1, 0, 0, 2], name="c"),
        helper.make_node("MaxPool", ["c"], ["p"], kernel_shape=[2, 1], strides=[1, 2], name="p"),
        helper.make_node("Transpose", ["p"], ["t"], perm=[0, 2, 3, 1], name="t"),
        helper.make_node("Gelu", ["t"], ["y"], approximate="tanh", name="g"),
    ]
    graph = helper.make_graph(
        nodes,
        "asymmetric",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w, "w")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])


@pytest.mark.parametrize("name", ["squeezenet", "asymmetric"])
def test_round_trip_through_the_reader(tmp_path, name):
    import numerics

    if name == "asymmetric":
        model = _asymmetric_model()
    else:
        model = numerics.randomize_weights(onnx.load(_light(name)), 0, image_size=64)
    module = _core(model)
    CoreInferShapesPass().apply(make_context(), module)
    xml_path, bin_path = write_openvino(module, tmp_path / "m.xml")
    back = import_openvino(xml_path)
    assert _structure(back) == _structure(module)
    inputs = numerics.random_inputs(module, seed=1)
    (a,) = mlconv.compile(module.clone(), device="cpu")(*inputs)
    (b,) = mlconv.compile(back, device="cpu")(*inputs)
    np.testing.assert_array_equal(a, b)


def test_unsupported_op_and_wrong_type_are_one_line_errors(tmp_path):
    from mlconv.frontends.load import parse_mlir_file

    source = tmp_path / "bad.mlir"
    source.write_text(
        "func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {\n"
        "  %k = core.Constant {value = dense<1> : tensor<i64>} : tensor<i64>\n"
        '  %a = "core.CumProd"(%x, %k) : (tensor<2x3xf32>, tensor<i64>) -> tensor<2x3xf32>'
        ' loc("cp")\n  func.return %a : tensor<2x3xf32>\n}\n'
    )
    with pytest.raises(BackendError, match="core.CumProd.*mlconv-only op"):
        to_openvino_ir(parse_mlir_file(source))
    wrong = tmp_path / "wrong.mlir"
    wrong.write_text(
        "func.func @main(%x: tensor<2x3xf32>) -> tensor<2x4xf32> {\n"
        '  %a = "core.Relu"(%x) : (tensor<2x3xf32>) -> tensor<2x4xf32> loc("r")\n'
        "  func.return %a : tensor<2x4xf32>\n}\n"
    )
    out = tmp_path / "out.xml"
    result = subprocess.run(
        [sys.executable, "-m", "mlconv.tools.mlconv_translate", "--export-openvino",
         str(wrong), "-o", str(out)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and 'loc("r")' in lines[0] and "semantics give" in lines[0], lines
    assert not out.exists() and not out.with_suffix(".bin").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_backend_by_name_and_mlconv_run(tmp_path):
    model = _repeated_weights_model()
    onnx.save(model, tmp_path / "m.onnx")
    x = RNG.standard_normal((3, 4, 8, 8)).astype(np.float32)
    np.savez(tmp_path / "in.npz", x=x)
    result = subprocess.run(
        [sys.executable, "-m", "mlconv.tools.mlconv_run", str(tmp_path / "m.onnx"),
         "--inputs", str(tmp_path / "in.npz"), "--outputs", str(tmp_path / "out.npz"),
         "--backend", "openvino"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    got = np.load(tmp_path / "out.npz")
    (expected,) = mlconv.compile(model, device="cpu")(x)
    np.testing.assert_allclose(got[got.files[0]], expected, rtol=1e-4, atol=1e-5)
    run = compile_module(_core(model))
    (by_name,) = run(x=x)
    np.testing.assert_allclose(by_name, expected, rtol=1e-4, atol=1e-5)
    with pytest.raises(mlconv.errors.OptionError, match="unknown backend"):
        mlconv.compile(model, backend="tensorrt")


def test_lowest_opset_versions_run_in_openvino():
    """After core-op-versions, Gelu-2 (no approximation_mode), Softmax-1 and ShapeOf-1 (no
    output_type) are written without the attributes those versions lack, and OpenVINO runs them."""
    from mlconv.dialects import make_context
    from mlconv.passes.core_op_versions import CoreOpVersionsPass

    nodes = [
        helper.make_node("Gelu", ["x"], ["g"], name="gelu"),
        helper.make_node("Softmax", ["g"], ["s"], axis=1, name="softmax"),
        helper.make_node("TopK", ["s", "k"], ["v", "i"], name="topk"),
        helper.make_node("Gather", ["v", "idx"], ["y"], axis=1, name="gather"),
        helper.make_node("Shape", ["x"], ["shape"], name="shape"),
    ]
    graph = helper.make_graph(
        nodes,
        "versions",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2]),
            helper.make_tensor_value_info("shape", TensorProto.INT64, [2]),
        ],
        [
            numpy_helper.from_array(np.array([3], np.int64), "k"),
            numpy_helper.from_array(np.array([0, 2], np.int64), "idx"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    module = _core(model)
    CoreOpVersionsPass().apply(make_context(), module)
    xml, _ = to_openvino_ir(module)
    versions = {
        layer.get("type"): (layer.get("version"), layer.find("data"))
        for layer in ET.fromstring(xml).iter("layer")
    }
    assert versions["Gelu"][0] == "opset2" and versions["Gelu"][1] is None
    assert versions["SoftMax"][0] == "opset1"  # opset1 spells it SoftMax
    assert versions["ShapeOf"][0] == "opset1" and versions["ShapeOf"][1] is None
    x = RNG.standard_normal((2, 8)).astype(np.float32)
    got = compile_module(module.clone())(x)
    expected = mlconv.compile(model, device="cpu")(x)
    np.testing.assert_allclose(got[0], expected[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got[1], expected[1])


def _asymmetric_windows_model() -> onnx.ModelProto:
    """Conv, depthwise Conv, MaxPool and AveragePool with pads that differ at begin and end and
    per axis, unequal strides and dilations; seeded random weights."""
    rng = np.random.default_rng(31)
    inits = [
        numpy_helper.from_array(rng.standard_normal((6, 3, 3, 2)).astype(np.float32), "w"),
        numpy_helper.from_array(rng.standard_normal((6, 1, 2, 3)).astype(np.float32), "wd"),
    ]
    nodes = [
        helper.make_node(
            "Conv", ["x", "w"], ["c"], name="conv",
            pads=[0, 1, 2, 0], strides=[2, 1], dilations=[1, 2],
        ),
        helper.make_node(
            "Conv", ["c", "wd"], ["d"], name="depthwise",
            group=6, pads=[1, 0, 0, 2], strides=[1, 2], dilations=[2, 1],
        ),
        helper.make_node(
            "MaxPool", ["d"], ["m"], name="maxpool",
            kernel_shape=[2, 3], pads=[0, 1, 1, 2], strides=[1, 2],
        ),
        helper.make_node(
            "AveragePool", ["m"], ["y"], name="avgpool",
            kernel_shape=[3, 2], pads=[2, 0, 0, 1], strides=[2, 1], count_include_pad=0,
        ),
    ]  # fmt: skip
    graph = helper.make_graph(
        nodes,
        "asymmetric",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 11, 10])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_openvino_runs_asymmetric_pads_strides_and_dilations_as_onnxruntime():
    """Issue 31: pads_begin / pads_end swapped in the layer table passed every OpenVINO test
    (writer and reader agree; no model with asymmetric windows ran). The IR mlconv writes runs
    in OpenVINO's runtime (the oracle, not mlconv's reader) against onnxruntime on the source."""
    import onnxruntime as ort

    model = _asymmetric_windows_model()
    x, other = (RNG.standard_normal((2, 3, 11, 10)).astype(np.float32) for _ in range(2))
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (expected,) = session.run(None, {"x": x})
    assert np.abs(expected - session.run(None, {"x": other})[0]).max() > 1e-2
    run = compile_module(_core(model))
    (got,) = run(x=x)
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def test_sequence_without_lengths_needs_a_static_batch(tmp_path):
    """OpenVINO's RNNSequence-5 needs sequence_lengths; written as a constant [batch] of the
    sequence length, which a dynamic batch cannot give: one line naming why (not numpy's
    "negative dimensions" from np.full((-1,), ...))."""
    from mlconv.frontends.load import parse_mlir_file

    source = tmp_path / "rnn.mlir"
    source.write_text(
        "func.func @main(%x: tensor<?x2x5xf32>, %h0: tensor<?x1x4xf32>, %w: tensor<1x4x5xf32>,"
        " %r: tensor<1x4x4xf32>, %b: tensor<1x4xf32>) -> tensor<?x1x2x4xf32> {\n"
        '  %y, %h = "core.RNNSequence"(%x, %h0, %w, %r, %b) {hidden_size = 4 : i64}'
        " : (tensor<?x2x5xf32>, tensor<?x1x4xf32>, tensor<1x4x5xf32>, tensor<1x4x4xf32>,"
        ' tensor<1x4xf32>) -> (tensor<?x1x2x4xf32>, tensor<?x1x4xf32>) loc("rnn")\n'
        "  func.return %y : tensor<?x1x2x4xf32>\n}\n"
    )
    with pytest.raises(BackendError, match="batch and sequence sizes must be static"):
        to_openvino_ir(parse_mlir_file(source))


def test_openvino_runs_scatter_elements_with_add_reduction_as_onnxruntime():
    """ScatterElementsUpdate gained `reduction` at opset 12: written at 12 with it (dropped,
    OpenVINO would overwrite repeated indices instead of adding them). OpenVINO runs the IR
    against onnxruntime on the ONNX source; index 0 is hit twice in the first row."""
    import onnxruntime as ort

    rng = np.random.default_rng(31)
    indices = np.array([[0, 2, 0], [1, 0, 2]], np.int64)
    inits = [
        numpy_helper.from_array(indices, "i"),
        numpy_helper.from_array(rng.standard_normal((2, 3)).astype(np.float32), "u"),
    ]
    node = helper.make_node(
        "ScatterElements", ["x", "i", "u"], ["y"], axis=1, reduction="add", name="scatter"
    )
    graph = helper.make_graph(
        [node],
        "scatter",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    x = rng.standard_normal((2, 4)).astype(np.float32)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (expected,) = session.run(None, {"x": x})
    (got,) = compile_module(_core(model))(x=x)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)


def test_custom_op_is_an_extension_layer_with_its_attributes(tmp_path):
    """core.Custom (allow-custom) becomes a layer of its op type in its domain's opset, each
    attribute in <data> as OpenVINO's extensions read them: lists comma-separated, numbers and
    strings as written."""
    from mlconv.frontends.load import parse_mlir_file

    source = tmp_path / "custom.mlir"
    source.write_text(
        "func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {\n"
        '  %y = "core.Custom"(%x) {domain = "com.acme", op_type = "SoftClip", attrs = {alpha ='
        ' 2.5 : f64, axes = array<i64: 0, 1>, keep = 4 : i64, mode = "fast"}}'
        ' : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("clip")\n'
        "  func.return %y : tensor<2x3xf32>\n}\n"
    )
    xml, _ = to_openvino_ir(parse_mlir_file(source))
    (layer,) = [e for e in ET.fromstring(xml).iter("layer") if e.get("name") == "clip"]
    assert (layer.get("type"), layer.get("version")) == ("SoftClip", "com.acme")
    assert layer.find("data").attrib == {"alpha": "2.5", "axes": "0,1", "keep": "4", "mode": "fast"}

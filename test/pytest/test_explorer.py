"""The Model Explorer adapter (mlconv.explorer) and mlconv-view.

Unit tests read the adapter's graph JSON (node count, namespaces, attributes, edges) and the
overlay built from `compare_with_source`; `test_page_renders_in_chromium` starts the server
(`mlconv-view --no-browser`) and loads the page in headless Chromium through Playwright,
checking the node count the page shows and the overlay it lists. About 10 s without the
browser test, 25 s with it.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest
from numerics import replace_lowering  # a module beside this one (conftest.py)
from onnx_graphs import float_model

pytest.importorskip("model_explorer")

from model_explorer.utils import convert_adapter_response  # noqa: E402

from mlconv.explorer import load_at_level, model_graphs  # noqa: E402
from mlconv.explorer.main import (  # noqa: E402
    ConversionFailed,
    MlconvCoreAdapter,
    MlconvFrameworkAdapter,
    MlconvTpuAdapter,
)
from mlconv.explorer.overlay import (  # noqa: E402
    DIVERGED_COLOUR,
    ERROR_COLOURS,
    error_node_data,
    matched_nodes,
)

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
NODES = ["block1/conv", "block1/relu", "block2/conv", "block2/add", "block2/relu", "head/pool",
         "head/flatten", "head/fc"]  # fmt: skip


def scoped_model(path: Path) -> Path:
    """A small residual CNN whose node names are scopes (`block1/conv`), random weights."""
    import onnx
    from onnx import helper, numpy_helper

    rng = np.random.default_rng(0)

    def weight(name, shape):
        return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)

    node = helper.make_node
    nodes = [
        node("Conv", ["x", "w1", "b1"], ["c1"], name=NODES[0], pads=[1, 1, 1, 1]),
        node("Relu", ["c1"], ["r1"], name=NODES[1]),
        node("Conv", ["r1", "w2", "b2"], ["c2"], name=NODES[2], pads=[1, 1, 1, 1]),
        node("Add", ["c2", "r1"], ["a2"], name=NODES[3]),
        node("Relu", ["a2"], ["r2"], name=NODES[4]),
        node("GlobalAveragePool", ["r2"], ["p"], name=NODES[5]),
        node("Flatten", ["p"], ["f"], name=NODES[6]),
        node("Gemm", ["f", "wf", "bf"], ["y"], name=NODES[7], transB=1),
    ]
    weights = [weight("w1", (4, 3, 3, 3)), weight("b1", (4,)), weight("w2", (4, 4, 3, 3)),
               weight("b2", (4,)), weight("wf", (5, 4)), weight("bf", (5,))]  # fmt: skip
    model = float_model(nodes, {"x": [1, 3, 8, 8]}, {"y": [1, 5]}, weights, name="scoped")
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    return scoped_model(tmp_path_factory.mktemp("explorer") / "scoped.onnx")


def _main(module):
    return next(op for op in module.ops if op.name == "func.func")


def _by_id(graph) -> dict:
    return {node.id: node for node in graph.nodes}


def _attrs(node) -> dict[str, str]:
    return {kv.key: kv.value for kv in node.attrs}


def test_core_graph_nodes_namespaces_attributes(model: Path) -> None:
    graphs = model_graphs(model, "core")
    assert [g.id for g in graphs] == ["main"]
    graph = graphs[0]
    main = _main(load_at_level(model, "core"))
    ops = list(main.body.block.ops)
    # one node per op (func.return is the Output node) and one Input node per argument
    assert len(graph.nodes) == len(ops) + len(main.body.block.args) == 25
    namespaces = {node.namespace for node in graph.nodes}
    assert set(NODES) <= namespaces
    conv = [n for n in graph.nodes if n.label == "Convolution"]
    assert [n.namespace for n in conv] == ["block1/conv", "block2/conv"]
    attrs = _attrs(conv[0])
    assert attrs["op"] == "core.Convolution"
    assert attrs["location"] == "block1/conv"
    assert attrs["strides"] == "[1, 1]" and attrs["pads_begin"] == "[1, 1]"
    shapes = {kv.key: kv.value for kv in conv[0].outputsMetadata[0].attrs}
    assert shapes["tensor_shape"] == "float32[1,4,8,8]"
    # the ops block1/conv lowered to share its layer: Convolution, bias Unsqueeze, Add
    block1_conv = [n.label for n in graph.nodes if n.namespace == "block1/conv"]
    assert {"Convolution", "Unsqueeze", "Add"} <= set(block1_conv)
    # weights are summarized (shape, dtype, first values), never the whole buffer
    weight = next(n for n in graph.nodes if n.namespace == "w2")
    assert re.fullmatch(r"float32\[4,4,3,3\] \[[^]]*, \.\.\.\]", _attrs(weight)["value"])
    inputs = [n for n in graph.nodes if n.label == "Input"]
    assert [_attrs(n)["name"] for n in inputs] == ["x"]


def test_edges_follow_ssa_uses(model: Path) -> None:
    graph = model_graphs(model, "core")[0]
    main = _main(load_at_level(model, "core"))
    nodes = _by_id(graph)
    uses = sum(len(op.operands) for op in main.body.block.ops)
    edges = [(n, e) for n in graph.nodes for e in n.incomingEdges]
    assert len(edges) == uses
    assert all(e.sourceNodeId in nodes for _, e in edges)
    relu = next(n for n in graph.nodes if n.namespace == "block1/relu")
    (edge,) = relu.incomingEdges
    source = nodes[edge.sourceNodeId]
    assert (source.label, source.namespace) == ("Add", "block1/conv")
    # the residual Add reads block1's Relu and block2's bias Add
    add = next(n for n in graph.nodes if n.namespace == "block2/add")
    assert {nodes[e.sourceNodeId].namespace for e in add.incomingEdges} == {
        "block1/relu",
        "block2/conv",
    }
    output = next(n for n in graph.nodes if n.label == "Output")
    assert nodes[output.incomingEdges[0].sourceNodeId].namespace == "head/fc"


def test_levels(model: Path) -> None:
    framework = convert_adapter_response(MlconvFrameworkAdapter().convert(str(model), {}))
    nodes = framework["graphs"][0]["nodes"]
    labels = [n["label"] for n in nodes if n["namespace"] in NODES]
    assert labels == ["Conv", "Relu", "Conv", "Add", "Relu", "GlobalAveragePool", "Flatten",
                      "Gemm"]  # fmt: skip
    assert len(nodes) == 8 + 6 + 2  # ops, weights, Input and Output
    tpu = MlconvTpuAdapter().convert(str(model), {})["graphs"][0]
    ops = {_attrs(n)["op"] for n in tpu.nodes if n.label not in ("Input", "Output")}
    assert "tpu.conv_general_dilated" in ops and "tpu.region" not in ops
    assert all(_attrs(n)["placement"] == "tpu" for n in tpu.nodes if n.label != "Input"
               and n.label != "Output")  # fmt: skip
    ids = _by_id(tpu)
    assert all(e.sourceNodeId in ids for n in tpu.nodes for e in n.incomingEdges)
    output = next(n for n in tpu.nodes if n.label == "Output")
    assert ids[output.incomingEdges[0].sourceNodeId].namespace == "head/fc"
    core = MlconvCoreAdapter().convert(str(model), {})["graphs"][0]
    assert len(core.nodes) == 25 != len(tpu.nodes)


def test_mlir_file_shows_as_written(model: Path, tmp_path: Path) -> None:
    from xdsl.printer import Printer

    module = load_at_level(model, "core")
    path = tmp_path / "scoped.mlir"
    with open(path, "w") as f:
        Printer(stream=f, print_debuginfo=True).print_op(module)
    graph = model_graphs(path, "framework")[0]
    assert len(graph.nodes) == 25
    assert set(NODES) <= {n.namespace for n in graph.nodes}


def test_regions_are_subgraphs(tmp_path: Path) -> None:
    """An If's branches are subgraphs of its node; what a branch reads from outside is a
    Captured node feeding it."""
    import onnx
    from onnx import TensorProto, helper

    def branch(name, op):
        node = helper.make_node(op, ["x"], [f"{name}_y"], name=f"{name}/{op.lower()}")
        output = helper.make_tensor_value_info(f"{name}_y", TensorProto.FLOAT, [2])
        return helper.make_graph([node], name, [], [output])

    gate = helper.make_node("If", ["c"], ["y"], name="gate/if", then_branch=branch("then", "Relu"),
                            else_branch=branch("else", "Neg"))  # fmt: skip
    inputs = [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
              helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])]  # fmt: skip
    output = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    model = helper.make_model(helper.make_graph([gate], "g", inputs, [output]),
                              opset_imports=[helper.make_opsetid("", 17)])  # fmt: skip
    path = tmp_path / "if.onnx"
    onnx.save(model, path)
    graphs = {g.id: g for g in model_graphs(path, "framework")}
    (node,) = [n for n in graphs["main"].nodes if n.label == "If"]
    assert node.namespace == "gate/if" and len(node.subgraphIds) == 2
    for sub_id, label in zip(node.subgraphIds, ["Relu", "Neg"], strict=True):
        nodes = _by_id(graphs[sub_id])
        (op,) = [n for n in nodes.values() if n.label == label]
        assert [nodes[e.sourceNodeId].label for e in op.incomingEdges] == ["Captured"]
        assert _attrs(nodes[op.incomingEdges[0].sourceNodeId])["name"] == "x"


def test_model_explorer_loads_the_extension(model: Path) -> None:
    """What `model-explorer MODEL --extensions=mlconv.explorer` runs: the extension manager
    imports mlconv.explorer.main, lists the adapters and answers the page's convert command."""
    from model_explorer.extension_manager import ExtensionManager

    manager = ExtensionManager(["mlconv.explorer"])
    manager.load_extensions()
    ids = {ext["id"] for ext in manager.get_extensions_metadata()}
    assert {"mlconv_core", "mlconv_framework", "mlconv_tpu"} <= ids
    command = {"extensionId": "mlconv_framework", "cmdId": "convert", "modelPath": str(model),
               "settings": {}, "deleteAfterConversion": False}  # fmt: skip
    answer = json.loads(json.dumps(manager.run_cmd(command)))
    assert len(answer["graphs"][0]["nodes"]) == 16


@pytest.fixture(scope="module")
def keras_models(tmp_path_factory) -> tuple[Path, Path]:
    """A small Keras CNN (named layers, seeded weights) as a SavedModel folder and a .tflite."""
    keras = pytest.importorskip("keras")
    tf = pytest.importorskip("tensorflow")
    keras.utils.set_random_seed(3)
    x = keras.Input((8, 8, 3), name="x", batch_size=1)
    h = keras.layers.Conv2D(4, 3, padding="same", name="block1_conv")(x)
    h = keras.layers.ReLU(name="block1_relu")(h)
    h = keras.layers.GlobalAveragePooling2D(name="head_pool")(h)
    model = keras.Model(x, keras.layers.Dense(5, name="head_fc")(h))
    folder = tmp_path_factory.mktemp("keras")
    model.export(str(folder / "saved"), verbose=False)
    tflite = folder / "model.tflite"
    tflite.write_bytes(tf.lite.TFLiteConverter.from_keras_model(model).convert())
    return folder / "saved", tflite


def test_savedmodel_and_tflite(keras_models) -> None:
    from mlconv.verify.compare_source import compare_with_source

    saved, tflite = keras_models
    for path in (saved, saved / "saved_model.pb", tflite):
        graph = model_graphs(path, "core")[0]
        ids = _by_id(graph)
        assert all(e.sourceNodeId in ids for n in graph.nodes for e in n.incomingEdges)
        (conv,) = [n for n in graph.nodes if n.label == "Convolution"]
        assert "block1_" in conv.namespace and ";" not in conv.namespace
        output = next(n for n in graph.nodes if n.label == "Output")
        last = ids[output.incomingEdges[0].sourceNodeId]
        # TFLite names an op by its output tensor: the model's last op by the output's name
        assert "head_fc" in last.namespace or path == tflite
    report = compare_with_source(tflite, per_layer=True)
    graphs = model_graphs(tflite, "core")
    data = error_node_data(graphs, report.rows, against=report.runtime)
    coloured = {graphs[0].nodes[int(i)].namespace for i in data.graphsData["main"].results}
    assert len(report.layers) >= 2 and len(coloured) >= len(report.layers)
    assert any("block1_" in c for c in coloured)


def test_unreadable_model_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    with pytest.raises(ConversionFailed) as failure:
        MlconvCoreAdapter().convert(str(bad), {})
    message = str(failure.value)
    assert "\n" not in message and message.startswith(f"{bad}: ") and "error:" in message


def test_overlay_from_source_comparison(model: Path) -> None:
    from mlconv.verify.compare_source import compare_with_source

    graphs = model_graphs(model, "core")
    report = compare_with_source(model, per_layer=True)
    assert {row.location for row in report.layers} == set(NODES)
    data = error_node_data(graphs, report.rows, against=report.runtime)
    results = data.graphsData["main"].results
    nodes = _by_id(graphs[0])
    coloured = {nodes[i].namespace for i in results}
    assert set(NODES) <= coloured
    assert all(nodes[i].label != "Constant" for i in results)
    # every op block1/conv lowered to carries block1/conv's error
    conv_ops = [n.id for n in graphs[0].nodes if n.namespace == "block1/conv"
                and n.label != "Constant"]  # fmt: skip
    assert len(conv_ops) == 3 and all(i in results for i in conv_ops)
    assert all(r.bgColor == ERROR_COLOURS[0][1] for r in results.values())  # float rounding
    text = json.loads(data.to_json_string())
    assert text["main"]["name"] == "max rel error vs onnxruntime"
    assert len(text["main"]["thresholds"]) == len(ERROR_COLOURS)


def _abs(op, b):
    from mlconv.dialects import core_elementwise as ew

    (x,) = op.operands
    return [b(ew.AbsOp, x)]


@pytest.fixture
def broken_relu(monkeypatch):
    """The ONNX Relu-14 lowering replaced by one that emits core.Abs."""
    replace_lowering(monkeypatch, ("onnx", "Relu", 14), _abs)


def test_overlay_marks_a_broken_lowering(model: Path, broken_relu) -> None:
    """A Relu lowered wrongly: block1/relu's node turns red, the layer before stays green."""
    from mlconv.verify.compare_source import compare_with_source

    report = compare_with_source(model, per_layer=True)
    assert report.first_divergence.location == "block1/relu"
    graphs = model_graphs(model, "core")
    assert "Abs" in {n.label for n in graphs[0].nodes}
    results = error_node_data(graphs, report.rows).graphsData["main"].results
    by_namespace = {graphs[0].nodes[int(i)].namespace: r for i, r in results.items()}
    assert by_namespace["block1/relu"].bgColor == DIVERGED_COLOUR
    assert by_namespace["block1/relu"].value > 1e-2
    assert by_namespace["block1/conv"].bgColor == ERROR_COLOURS[0][1]


def test_overlay_matches_rows_by_location_and_output_name(model: Path) -> None:
    graphs = model_graphs(model, "core")
    rows = [
        {"name": "y", "location": "y", "kind": "output", "max_abs": 0.5, "max_rel": float("nan"),
         "diverged": False},
        {"name": "r2", "location": "block2/relu", "kind": "layer", "max_abs": 2e-3,
         "max_rel": 5e-3, "diverged": False},
        {"name": "zz", "location": "nowhere", "kind": "layer", "max_abs": 1.0, "max_rel": 1.0,
         "diverged": True},
    ]  # fmt: skip
    data = error_node_data(graphs, rows, metric="max_abs")
    assert matched_nodes(data) == 2
    results = data.graphsData["main"].results
    nodes = _by_id(graphs[0])
    by_namespace = {nodes[i].namespace: r for i, r in results.items()}
    assert by_namespace["head/fc"].value == 0.5
    assert by_namespace["head/fc"].bgColor == ERROR_COLOURS[-1][1]  # NaN counts as largest
    assert by_namespace["block2/relu"].bgColor == ERROR_COLOURS[3][1]
    json.loads(data.to_json_string())  # NaN never reaches the JSON


def test_view_writes_json_files(model: Path, tmp_path: Path, capsys) -> None:
    from mlconv.tools import mlconv_view

    graphs, node_data = tmp_path / "g.json", tmp_path / "nd.json"
    argv = [str(model), "--level", "framework", "--overlay-errors", "--graph-json", str(graphs),
            "--node-data-json", str(node_data)]  # fmt: skip
    assert mlconv_view.main(argv) == 0
    assert "8 layers compared with onnxruntime; first divergence: none" in capsys.readouterr().err
    nodes = json.loads(graphs.read_text())["graphs"][0]["nodes"]
    assert len(nodes) == 16
    results = json.loads(node_data.read_text())["main"]["results"]
    assert {nodes[int(i)]["namespace"] for i in results} == set(NODES)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["missing.onnx"], "'missing.onnx': no such file or directory"),
        (["{model}", "--level", "llvm"], "invalid choice: 'llvm'"),
        (["{model}", "--node-data-json", "nd.json"], "--node-data-json needs --overlay-errors"),
        (["x.mlir", "--overlay-errors"], "--overlay-errors compares with the source framework"),
    ],
)
def test_view_errors_are_one_line(model, tmp_path, capsys, monkeypatch, argv, message) -> None:
    from mlconv.tools import mlconv_view

    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.mlir").write_text("func.func @main() {\n  func.return\n}\n")
    assert mlconv_view.main([a.format(model=model) for a in argv]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and err.startswith("mlconv-view: ")
    assert not (tmp_path / "nd.json").exists()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"no Chromium at {CHROMIUM}")
def test_page_renders_in_chromium(model: Path) -> None:
    """The served page, in a real headless browser, renders the core graph and its overlay."""
    sync_playwright = pytest.importorskip("playwright.sync_api").sync_playwright
    port = _free_port()
    expected = len(model_graphs(model, "core")[0].nodes)  # 25
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mlconv.tools.mlconv_view",
            str(model),
            "--overlay-errors",
            "--no-browser",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],  # fmt: skip
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    shots = Path(tempfile.mkdtemp(prefix="mlconv-explorer-"))
    try:
        url, seen = None, []
        deadline = time.monotonic() + 60
        while url is None and time.monotonic() < deadline and server.poll() is None:
            line = server.stdout.readline()
            seen.append(line)
            if line.startswith(f"http://127.0.0.1:{port}/"):
                url = line.strip()
        assert url, "the server did not start:\n" + "".join(seen)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            responses = []
            page.on("response", lambda response: responses.append(response))
            with page.expect_response(lambda r: "send_command" in r.url, timeout=30000) as sent:
                page.goto(url)
            graphs = sent.value.json()
            assert "error" not in graphs, graphs
            assert len(graphs["graphs"][0]["nodes"]) == expected
            # the graph selector shows the rendered graph's node count
            label = page.locator(".node-count-label").first
            label.wait_for(timeout=30000)
            assert label.inner_text().strip() == f"{expected} nodes"
            page.get_by_text("max rel error vs onnxruntime").first.wait_for(timeout=30000)
            page.get_by_text("op node count").first.wait_for(timeout=10000)
            # the overlay the page loaded colours exactly the ops of the compared layers
            (loaded,) = [r for r in responses if "load_node_data" in r.url]
            results = json.loads(loaded.json()["content"])["main"]["results"]
            layer_ops = {n["id"] for n in graphs["graphs"][0]["nodes"]
                         if n["namespace"] in NODES and n["label"] != "Constant"}  # fmt: skip
            assert set(results) == layer_ops and len(layer_ops) >= len(NODES)
            shot = shots / "explorer.png"
            page.screenshot(path=str(shot))
            assert shot.stat().st_size > 10000
            browser.close()
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        print(f"screenshot: {shots / 'explorer.png'}")

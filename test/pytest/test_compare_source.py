"""`mlconv-run MODEL --compare-with-source [--per-layer] [--json]`: onnxruntime, TensorFlow and
LiteRT beside mlconv, per output and per intermediate tensor, on a Keras model (SavedModel and
.tflite) and ONNX models built here with seeded random weights; a lowering broken on purpose is
found at its layer."""

from __future__ import annotations

import json
import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx_graphs import float_model
from test_check_numerics import broken_max, max_model  # noqa: F401 - fixture and model

from mlconv.tools import mlconv_run
from mlconv.verify.compare_source import compare_with_source


def cnn_onnx(path) -> str:
    """conv -> relu -> global pool -> flatten -> matmul -> softmax, seeded random weights."""
    rng = np.random.default_rng(0)
    weights = {
        "w1": (0.3 * rng.standard_normal((8, 3, 3, 3))).astype(np.float32),
        "b1": rng.standard_normal(8).astype(np.float32),
        "w2": (0.3 * rng.standard_normal((8, 10))).astype(np.float32),
    }
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("GlobalAveragePool", ["r1"], ["p"], name="pool"),
        helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
        helper.make_node("MatMul", ["f", "w2"], ["logits"], name="fc"),
        helper.make_node("Softmax", ["logits"], ["y"], name="softmax"),
    ]
    model = float_model(
        nodes,
        {"x": [1, 3, 8, 8]},
        {"y": [1, 10]},
        [numpy_helper.from_array(v, k) for k, v in weights.items()],
        name="cnn",
    )
    model.ir_version = 8
    onnx.save(model, str(path))
    return str(path)


def run_json(capsys, *argv: str) -> tuple[int, dict]:
    status = mlconv_run.main([*argv, "--compare-with-source", "--json"])
    captured = capsys.readouterr()
    return status, json.loads(captured.out)


def test_onnx_per_layer_json(tmp_path, capsys):
    path = cnn_onnx(tmp_path / "cnn.onnx")
    status, report = run_json(capsys, path, "--per-layer")
    assert status == 0
    assert (
        report["runtime"] == "onnxruntime" and report["ok"] and report["first_divergence"] is None
    )
    assert [(o["name"], o["location"], o["shape"]) for o in report["outputs"]] == [
        ("y", "softmax", [1, 10])
    ]
    layers = {row["location"]: row for row in report["layers"]}
    assert list(layers) == ["conv1", "relu1", "pool", "flatten", "fc", "softmax"]
    assert layers["conv1"]["shape"] == [1, 8, 8, 8] and layers["conv1"]["op_type"] == "Conv"
    assert all(0 <= row["max_abs"] < 1e-5 and not row["diverged"] for row in layers.values())


def test_onnx_inputs_decide_the_output(tmp_path):
    """The model's output depends on its input (a comparison that can fail)."""
    path = cnn_onnx(tmp_path / "cnn.onnx")
    first = compare_with_source(path, seed=0)
    x = np.random.default_rng(5).standard_normal((1, 3, 8, 8)).astype(np.float32)
    second = compare_with_source(path, {"x": x})
    assert first.ok and second.ok
    import onnxruntime

    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    (y,) = session.run(None, {"x": x})
    (y0,) = session.run(None, {"x": np.zeros_like(x)})
    assert np.abs(y - y0).max() > 1e-3


def test_broken_lowering_is_found_at_its_layer(broken_max, tmp_path, capsys):  # noqa: F811
    path = max_model(tmp_path / "max.onnx")
    status, report = run_json(capsys, path, "--per-layer")
    assert status == 1
    assert not report["ok"]
    assert report["first_divergence"]["location"] == "max"
    rows = {row["location"]: row for row in report["layers"]}
    assert not rows["mm"]["diverged"] and rows["max"]["diverged"] and rows["tanh"]["diverged"]
    # the table marks it too, and the error line names it
    assert mlconv_run.main([path, "--compare-with-source", "--per-layer"]) == 1
    captured = capsys.readouterr()
    marked = [line for line in captured.out.splitlines() if "<< first divergence" in line]
    assert len(marked) == 1 and marked[0].startswith("  max ")
    assert captured.err.strip() == (
        f"{path}: error: mlconv diverges from onnxruntime at layer 'max' "
        f"(max abs {report['first_divergence']['max_abs']:.3g})"
    )


def test_compare_needs_a_source_model(tmp_path, capsys):
    mlir = tmp_path / "m.mlir"
    mlir.write_text("builtin.module {}\n")
    assert mlconv_run.main([str(mlir), "--compare-with-source"]) == 1
    assert "--compare-with-source needs an .onnx file" in capsys.readouterr().err


@pytest.fixture(scope="module")
def keras_model(tmp_path_factory):
    """A Keras CNN with seeded random weights and BatchNorm statistics, as a SavedModel
    (`model.export`) and a .tflite (`from_keras_model`)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(7)
    x = keras.Input((12, 12, 3), name="x")
    h = keras.layers.Conv2D(8, 3, padding="same", name="conv")(x)
    h = keras.layers.BatchNormalization(name="bn")(h)
    h = keras.layers.ReLU(name="relu")(h)
    h = keras.layers.MaxPooling2D(2, name="pool")(h)
    h = keras.layers.GlobalAveragePooling2D(name="gap")(h)
    model = keras.Model(x, keras.layers.Dense(5, name="dense")(h))
    rng = np.random.default_rng(7)
    model.get_layer("bn").set_weights(
        [
            rng.uniform(0.5, 1.5, 8).astype(np.float32),
            rng.standard_normal(8).astype(np.float32),
            (0.1 * rng.standard_normal(8)).astype(np.float32),
            rng.uniform(0.5, 2.0, 8).astype(np.float32),
        ]
    )
    folder = tmp_path_factory.mktemp("keras")
    model.export(str(folder / "saved"), verbose=False)
    (folder / "m.tflite").write_bytes(tf.lite.TFLiteConverter.from_keras_model(model).convert())
    return folder


def test_keras_saved_model_per_layer(keras_model, capsys):
    status, report = run_json(capsys, str(keras_model / "saved"), "--per-layer")
    assert status == 0 and report["runtime"] == "TensorFlow" and report["ok"]
    assert report["outputs"][0]["shape"] == [1, 5]
    by_type = {row["op_type"]: row for row in report["layers"]}
    assert {"Conv2D", "Relu", "MaxPool", "Mean", "MatMul"} <= set(by_type)
    # NHWC on TensorFlow's side, compared with mlconv's NCHW value moved back
    assert by_type["Conv2D"]["shape"] == [1, 12, 12, 8]
    assert by_type["Relu"]["location"].endswith("relu_1/Relu")
    assert all(row["max_abs"] < 1e-5 for row in report["layers"])


def test_keras_tflite_per_layer(keras_model, capsys):
    status, report = run_json(capsys, str(keras_model / "m.tflite"), "--per-layer")
    assert status == 0 and report["runtime"] == "LiteRT" and report["ok"]
    kinds = [row["op_type"] for row in report["layers"]]
    assert kinds == ["CONV_2D", "MAX_POOL_2D", "MEAN", "FULLY_CONNECTED"]
    assert report["layers"][1]["shape"] == [1, 6, 6, 8]
    assert report["layers"][-1]["location"] == report["outputs"][0]["name"]


def test_demo_shows_passes_layers_and_graph(tmp_path, capsys):
    """`bash tools/demo.sh`'s default run: each pass with its time, three images whose top-1
    differ, every layer within tolerance of onnxruntime, and the graph page's command."""
    from mlconv.tools import demo

    assert demo.main(["--device", "cpu", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for name in ("onnx-to-core", "core-fuse", "core-to-tpu", "tpu-conv-strategy"):
        assert any(line.strip().startswith(name) and " ms " in line for line in out.splitlines())
    assert "numerics preserved by every pass" in out
    tops = [
        line.split("top-5 class ")[1].split(":")[0] for line in out.splitlines() if "top-5" in line
    ]
    assert len(tops) == 3 and len(set(tops)) > 1, out
    assert "15 layers matched" in out and "first divergence: none" in out
    assert f"mlconv-view {tmp_path / 'demo_cnn.onnx'} --overlay-errors" in out


def split_onnx(path) -> str:
    """x @ w split into two halves that go separate ways: y = tanh(a) * sigmoid(b)."""
    w = np.random.default_rng(2).standard_normal((4, 6)).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
        helper.make_node("Split", ["h"], ["a", "b"], name="split", axis=1, num_outputs=2),
        helper.make_node("Tanh", ["a"], ["ta"], name="tanh"),
        helper.make_node("Sigmoid", ["b"], ["sb"], name="sigmoid"),
        helper.make_node("Mul", ["ta", "sb"], ["y"], name="mul"),
    ]
    model = float_model(
        nodes,
        {"x": [2, 4]},
        {"y": [2, 3]},
        [numpy_helper.from_array(w, "w")],
        opset=18,
        name="split",
    )
    model.ir_version = 8
    onnx.save(model, str(path))
    return str(path)


def test_per_layer_compares_each_output_of_a_multi_output_node(tmp_path):
    """Issue 31: per-layer comparison taking every node's output 0 passed this file. A Split's
    two halves are both rows, each compared with its own result (the halves differ)."""
    path = split_onnx(tmp_path / "split.onnx")
    report = compare_with_source(path, per_layer=True, seed=1)
    assert report.ok, report.format_table()
    halves = [row for row in report.layers if row.location == "split"]
    assert [row.name for row in halves] == ["a", "b"], report.format_table()
    assert all(row.max_abs < 1e-5 for row in halves)


def test_compare_with_source_runs_the_callers_inputs(broken_max, tmp_path):  # noqa: F811
    """Issue 31: compare_with_source ignoring the caller's inputs passed this file. With Max
    lowered to Minimum, x = 0 (x @ w = x) cannot tell them apart while random inputs can: so
    the verdict shows which inputs ran."""
    path = max_model(tmp_path / "max.onnx")
    seeded = compare_with_source(path, seed=0)
    assert not seeded.ok
    # no inputs, no seed: the same seeded inputs (seed 0), the same verdict and errors
    default = compare_with_source(path)
    assert [r.max_abs for r in default.outputs] == [r.max_abs for r in seeded.outputs]
    zeros = np.zeros((2, 4), np.float32)
    assert compare_with_source(path, {"x": zeros}).ok
    assert compare_with_source(path, [zeros]).ok


# Issue 31 (mutation score): the report itself, from rows built here with known values.


def _report():
    from mlconv.verify.compare_source import Row, SourceComparison

    report = SourceComparison("m.onnx", "onnx", "onnxruntime", 1e-3, 1e-5)
    report.outputs = [Row("y", "softmax", (1, 10), 2e-6, 4e-6, False, "output", "output")]
    report.layers = [
        Row("a", "conv1", (1, 8, 8, 8), 1e-7, 2e-7, False, "layer", "Conv"),
        Row("b", "relu1", (), 0.5, 0.25, True, "layer", "Relu"),
        Row(
            "c",
            "block/" + "x" * 60 + "/pool",
            (2, 3),
            0.75,
            0.5,
            True,
            "layer",
            "MaxPoolWithIndices",
        ),
    ]
    report.unmatched = 2
    return report


def test_source_comparison_table_and_json():
    report = _report()
    first = report.layers[1]
    assert report.first_divergence is first and not report.ok
    long = report.layers[2].location
    where = "..." + long[len(long) - 45 :]
    assert len(where) == 48
    assert report.format_table().splitlines() == [
        "m.onnx: mlconv vs onnxruntime (rtol 0.001, atol 1e-05)",
        "outputs:",
        "  location  output           shape                 max abs    max rel  status",
        "  softmax   y                1x10                    2e-06      4e-06  ok",
        "layers:",
        f"  {'location':<48}  op               shape                 max abs    max rel  status",
        f"  {'conv1':<48}  Conv             1x8x8x8                 1e-07      2e-07  ok",
        f"  {'relu1':<48}  Relu             scalar                    0.5       0.25  DIVERGED"
        "  << first divergence",
        f"  {where}  MaxPoolWithIndic 2x3                      0.75        0.5  DIVERGED",
        "3 layers matched, 2 source tensors without an mlconv value of their shape",
        "first divergence: relu1 (Relu) max abs 0.5",
    ]
    colored = report.format_table(color=True).splitlines()
    assert colored[7] == "\x1b[1;31m" + report.format_table().splitlines()[7] + "\x1b[0m"
    assert colored[6] == report.format_table().splitlines()[6]  # rows that kept the numbers
    data = json.loads(report.to_json())
    assert data["ok"] is False and data["unmatched"] == 2
    assert data["first_divergence"] == {
        "name": "b", "location": "relu1", "shape": [], "max_abs": 0.5, "max_rel": 0.25,
        "diverged": True, "kind": "layer", "op_type": "Relu",
    }  # fmt: skip
    assert [row["shape"] for row in data["layers"]] == [[1, 8, 8, 8], [], [2, 3]]
    assert (data["model"], data["framework"], data["runtime"], data["rtol"], data["atol"]) == (
        "m.onnx", "onnx", "onnxruntime", 1e-3, 1e-5
    )  # fmt: skip


def test_source_comparison_outputs_only_and_output_divergence():
    report = _report()
    report.layers, report.unmatched = [], 0
    assert report.ok and report.first_divergence is None
    lines = report.format_table().splitlines()
    assert lines[-1] == "first divergence: none" and "layers:" not in lines
    assert not any("layers matched" in line for line in lines)
    report.outputs[0].diverged = True
    assert report.first_divergence is report.outputs[0] and not report.ok
    # a diverged layer comes first, whatever the outputs say
    report.layers = [_report().layers[2], _report().layers[1]]
    assert report.first_divergence is report.layers[0]


def test_framework_of_names_the_runtime(tmp_path):
    from mlconv.errors import OptionError
    from mlconv.verify.compare_source import RUNTIMES, framework_of

    assert framework_of(str(tmp_path)) == "tf"
    assert framework_of("a/M.TFLITE") == "tflite" and framework_of("m.ONNX") == "onnx"
    assert RUNTIMES == {"onnx": "onnxruntime", "tf": "TensorFlow", "tflite": "LiteRT"}
    with pytest.raises(OptionError) as caught:
        framework_of("m.pb")
    assert caught.value.message == (
        "'m.pb': --compare-with-source needs an .onnx file, a SavedModel folder or a .tflite file"
    )


@pytest.mark.parametrize("count", [0, 2])
def test_a_different_number_of_outputs_is_one_error(tmp_path, monkeypatch, count):
    """mlconv's run (replaced here) giving fewer or more outputs than onnxruntime's: one line
    naming both counts, not a traceback from comparing them pairwise."""
    import mlconv
    from mlconv.errors import MlconvError

    path = max_model(tmp_path / "max.onnx")
    monkeypatch.setattr(
        mlconv, "compile", lambda *a, **k: lambda *arrays: [np.zeros((2, 4), np.float32)] * count
    )
    with pytest.raises(MlconvError) as caught:
        compare_with_source(path)
    assert caught.value.message == f"mlconv gives {count} outputs, onnxruntime 1"


def test_compare_with_source_honours_the_callers_tolerances(broken_max, tmp_path):  # noqa: F811
    """With Max lowered to Minimum the output moves by d = max|tanh(max(xw, x)) -
    tanh(min(xw, x))| (numpy here): atol just above d (rtol 0) accepts, just below refuses;
    likewise rtol just above / below d / max|source output| (atol 0)."""
    path = max_model(tmp_path / "max.onnx")
    x = np.random.default_rng(3).standard_normal((2, 4)).astype(np.float32)
    w = np.random.default_rng(1).standard_normal((4, 4)).astype(np.float32)
    source = np.tanh(np.maximum(x @ w, x)).astype(np.float64)
    d = float(np.abs(source - np.tanh(np.minimum(x @ w, x))).max())
    scale = float(np.abs(source).max())
    assert d > 0.1
    for rtol, atol, ok in [
        (0.0, d * 1.02, True),
        (0.0, d * 0.98, False),
        (d / scale * 1.02, 0.0, True),
        (d / scale * 0.98, 0.0, False),
    ]:
        report = compare_with_source(path, {"x": x}, rtol=rtol, atol=atol)
        assert report.ok == ok, (rtol, atol, report.format_table())


def test_equal_infinities_in_the_source_output_agree(tmp_path):
    """Log(0) = -inf on both sides: equal, with the tolerance of the finite values alone (an
    infinite source tensor must not turn the limit negative or infinite)."""
    graph = helper.make_graph(
        [helper.make_node("Log", ["x"], ["y"], name="log")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path = str(tmp_path / "log.onnx")
    onnx.save(model, path)
    x = np.array([[0.0, 0.5, 1.0, 3.0]], np.float32)
    report = compare_with_source(path, {"x": x})
    (row,) = report.outputs
    assert report.ok and row.max_abs < 1e-6 and not row.diverged, report.format_table()


@pytest.mark.parametrize("text", ["cannot load\nsecond line", "one line"])
def test_a_runtime_failure_is_its_first_line(tmp_path, monkeypatch, text):
    """The source runtime failing (onnxruntime replaced here by one that raises): one line,
    the runtime's first line of its message."""
    import onnxruntime

    from mlconv.errors import MlconvError

    def refuse(*args, **kwargs):
        raise RuntimeError(text)

    monkeypatch.setattr(onnxruntime, "InferenceSession", refuse)
    with pytest.raises(MlconvError) as caught:
        compare_with_source(max_model(tmp_path / "max.onnx"))
    first = text.splitlines()[0]
    assert caught.value.message == f"onnxruntime cannot run the model: {first}"

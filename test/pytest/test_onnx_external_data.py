"""ONNX models with external data (`model.onnx.data`, as torch.onnx.export's dynamo exporter
writes them): imported without loading the weights twice, the same IR as the in-file model,
and bad external data is a one-line error."""

from __future__ import annotations

import io
import tracemalloc
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx_graphs import float_model

import mlconv
from mlconv.errors import FrontendError
from mlconv.frontends.onnx_importer import import_onnx, print_module

WIDTH, LAYERS = 256, 8  # 8 x 256 KiB float32 weights: 2 MiB


def _model() -> onnx.ModelProto:
    rng = np.random.default_rng(11)
    nodes, inits, current = [], [], "x"
    for i in range(LAYERS):
        w = rng.standard_normal((WIDTH, WIDTH)).astype(np.float32) * np.float32(WIDTH**-0.5)
        b = rng.standard_normal(WIDTH).astype(np.float32)
        inits += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(b, f"b{i}")]
        nodes += [
            helper.make_node("MatMul", [current, f"w{i}"], [f"m{i}"], name=f"matmul{i}"),
            helper.make_node("Add", [f"m{i}", f"b{i}"], [f"a{i}"], name=f"add{i}"),
            helper.make_node("Tanh", [f"a{i}"], [f"h{i}"], name=f"tanh{i}"),
        ]
        current = f"h{i}"
    # A small int64 shape initializer stays in the file (below the size threshold).
    inits.append(numpy_helper.from_array(np.array([-1, WIDTH], np.int64), "shape"))
    nodes.append(helper.make_node("Reshape", [current, "shape"], ["y"], name="reshape"))
    return float_model(
        nodes, {"x": ["batch", WIDTH]}, {"y": ["batch", WIDTH]}, inits, opset=18, name="mlp"
    )


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("external")
    inline, external = folder / "inline.onnx", folder / "model.onnx"
    onnx.save(_model(), inline)
    onnx.save(
        _model(),
        external,
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location="model.onnx.data",
        size_threshold=1024,
    )
    assert (folder / "model.onnx.data").stat().st_size >= LAYERS * WIDTH * WIDTH * 4
    assert external.stat().st_size < 10_000
    return inline, external


def _text(model) -> str:
    stream = io.StringIO()
    print_module(import_onnx(model), stream)
    return stream.getvalue()


def test_external_data_imports_as_the_inline_model(saved) -> None:
    inline, external = saved
    text = _text(external)
    assert text == _text(inline) == _text(_model())
    assert text.count('dense<"0x') >= 2 * LAYERS


def test_external_data_model_runs_at_two_batch_sizes(saved) -> None:
    _, external = saved
    run = mlconv.compile(str(external), device="cpu")
    session = ort.InferenceSession(str(external), providers=["CPUExecutionProvider"])
    for batch in (1, 3):
        x = np.random.default_rng(batch).standard_normal((batch, WIDTH)).astype(np.float32)
        (y,) = run(x)
        np.testing.assert_allclose(y, session.run(None, {"x": x})[0], rtol=1e-4, atol=1e-5)


def test_a_model_proto_is_given_back_unchanged() -> None:
    proto = _model()
    before = proto.SerializeToString()
    import_onnx(proto)
    assert proto.SerializeToString() == before


def test_weights_are_loaded_once(saved) -> None:
    """The Python heap's peak during import stays near the weights' size: the bytes read from
    the .data file become the dense attributes, with no numpy or protobuf copy beside them."""
    _, external = saved
    weights = LAYERS * (WIDTH * WIDTH + WIDTH) * 4
    tracemalloc.start()
    try:
        module = import_onnx(external)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert module is not None
    assert peak < 1.5 * weights, (peak, weights)


def test_truncated_external_data_is_one_line(saved, tmp_path: Path) -> None:
    _, external = saved
    (tmp_path / "model.onnx").write_bytes(external.read_bytes())
    data = (external.parent / "model.onnx.data").read_bytes()
    (tmp_path / "model.onnx.data").write_bytes(data[: len(data) // 2])
    with pytest.raises(FrontendError) as error:
        import_onnx(tmp_path / "model.onnx")
    message = str(error.value)
    assert (
        "\n" not in message and "cannot load external data: 'model.onnx.data' holds" in message
    ), message


def test_external_data_outside_the_folder_is_refused(tmp_path: Path) -> None:
    proto = _model()
    init = proto.graph.initializer[0]
    init.ClearField("raw_data")
    init.data_location = TensorProto.EXTERNAL
    init.external_data.add(key="location", value="../secret.data")
    (tmp_path / "m").mkdir()
    onnx.save(proto, tmp_path / "m" / "model.onnx")
    with pytest.raises(FrontendError, match="outside the model's folder"):
        import_onnx(tmp_path / "m" / "model.onnx")

"""ONNX Scan-8 (a batch axis before the sequence axis) against onnxruntime: the lowering
(an outer core.Scan over the batch, a Scan-9 of the body inside) at two batch sizes from one
conversion, with two states, a reversed scan input and a value the body reads from outside."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import mlconv


def _scan8_model() -> onnx.ModelProto:
    body = helper.make_graph(
        [
            helper.make_node("Mul", ["x", "w"], ["xw"]),  # w: from the outer graph
            helper.make_node("Add", ["s", "xw"], ["s_out"]),
            helper.make_node("Max", ["m", "r"], ["m_out"]),
            helper.make_node("Sub", ["s_out", "r"], ["y"]),
        ],
        "body",
        [
            helper.make_tensor_value_info("s", TensorProto.FLOAT, [2]),
            helper.make_tensor_value_info("m", TensorProto.FLOAT, [2]),
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
            helper.make_tensor_value_info("r", TensorProto.FLOAT, [2]),
        ],
        [
            helper.make_tensor_value_info("s_out", TensorProto.FLOAT, [2]),
            helper.make_tensor_value_info("m_out", TensorProto.FLOAT, [2]),
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [2]),
        ],
    )
    scan = helper.make_node(
        "Scan",
        ["", "s0", "m0", "xs", "rs"],
        ["s_final", "m_final", "ys"],
        num_scan_inputs=2,
        directions=[0, 1],
        body=body,
    )
    graph = helper.make_graph(
        [scan],
        "scan8",
        [
            helper.make_tensor_value_info("s0", TensorProto.FLOAT, ["B", 2]),
            helper.make_tensor_value_info("m0", TensorProto.FLOAT, ["B", 2]),
            helper.make_tensor_value_info("xs", TensorProto.FLOAT, ["B", 4, 2]),
            helper.make_tensor_value_info("rs", TensorProto.FLOAT, ["B", 4, 2]),
            helper.make_tensor_value_info("w", TensorProto.FLOAT, [2]),
        ],
        [
            helper.make_tensor_value_info("s_final", TensorProto.FLOAT, ["B", 2]),
            helper.make_tensor_value_info("m_final", TensorProto.FLOAT, ["B", 2]),
            helper.make_tensor_value_info("ys", TensorProto.FLOAT, ["B", 4, 2]),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 8)])
    model.ir_version = 3
    return model


@pytest.fixture(scope="module")
def scan8():
    model = _scan8_model()
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return mlconv.compile(model, device="cpu"), session


@pytest.mark.parametrize("batch", [1, 3])
def test_scan8_matches_onnxruntime(scan8, batch):
    run, session = scan8
    rng = np.random.default_rng(batch)
    feeds = {
        "s0": rng.standard_normal((batch, 2)),
        "m0": rng.standard_normal((batch, 2)),
        "xs": rng.standard_normal((batch, 4, 2)),
        "rs": rng.standard_normal((batch, 4, 2)),
        "w": rng.standard_normal(2),
    }
    feeds = {k: v.astype(np.float32) for k, v in feeds.items()}
    expected = session.run(None, feeds)
    actual = run(**feeds)
    for got, want in zip(actual, expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)

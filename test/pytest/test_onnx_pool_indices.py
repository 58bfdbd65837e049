"""MaxPool's Indices output against onnxruntime: batch and channel offsets in the flat index,
row- and column-major storage order, pads, dilations, ceil_mode and a 1-D pool."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

import mlconv

ort = pytest.importorskip("onnxruntime")


@pytest.mark.parametrize(
    "shape, attributes",
    [
        ((2, 3, 7, 6), {"kernel_shape": [3, 2], "strides": [2, 1], "pads": [1, 0, 1, 1]}),
        ((2, 3, 7, 6), {"kernel_shape": [2, 2], "strides": [2, 2], "storage_order": 1}),
        ((1, 2, 9, 8), {"kernel_shape": [2, 3], "dilations": [2, 1], "ceil_mode": 1}),
        ((2, 2, 11), {"kernel_shape": [3], "strides": [2], "pads": [1, 1]}),
    ],
)
def test_max_pool_indices_match_onnxruntime(shape, attributes):
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], **attributes)
    graph = helper.make_graph(
        [node],
        "pool",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("i", TensorProto.INT64, None),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)])
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    want = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    got = mlconv.compile(model, device="cpu")(x)
    np.testing.assert_array_equal(np.asarray(got[0]), want[0])
    np.testing.assert_array_equal(np.asarray(got[1]), want[1])

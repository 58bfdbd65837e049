"""DeformConv against torchvision's deform_conv2d (an independent implementation) where the
backend node cases do not reach: stride 2, dilation 2, two groups, two offset groups, a mask
and a bias, offsets large enough that many samples fall between pixels and off the image."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import mlconv

torch = pytest.importorskip("torch")
ops = pytest.importorskip("torchvision.ops")


def test_deform_conv_matches_torchvision():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 4, 9, 8)).astype(np.float32)
    w = rng.standard_normal((6, 2, 3, 3)).astype(np.float32)
    bias = rng.standard_normal(6).astype(np.float32)
    oh, ow = 4, 3  # (9 + 2 - 5) // 2 + 1, (8 + 2 - 5) // 2 + 1
    offset = (2.5 * rng.standard_normal((2, 2 * 2 * 9, oh, ow))).astype(np.float32)
    mask = rng.uniform(0, 1, (2, 2 * 9, oh, ow)).astype(np.float32)
    node = helper.make_node(
        "DeformConv",
        ["X", "W", "offset", "B", "mask"],
        ["Y"],
        strides=[2, 2],
        dilations=[2, 2],
        pads=[1, 1, 1, 1],
        group=2,
        offset_group=2,
    )
    graph = helper.make_graph(
        [node],
        "deform",
        [
            helper.make_tensor_value_info("X", TensorProto.FLOAT, x.shape),
            helper.make_tensor_value_info("offset", TensorProto.FLOAT, offset.shape),
            helper.make_tensor_value_info("mask", TensorProto.FLOAT, mask.shape),
        ],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w, "W"), numpy_helper.from_array(bias, "B")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])
    (got,) = mlconv.compile(model, device="cpu")(x, offset, mask)
    want = ops.deform_conv2d(
        *(torch.from_numpy(a) for a in (x, offset, w, bias)),
        stride=2,
        padding=1,
        dilation=2,
        mask=torch.from_numpy(mask),
    ).numpy()
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-4)

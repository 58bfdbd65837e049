"""Two-stage detectors' region ops against onnxruntime (issue 29): RoiAlign (avg and max, both
coordinate_transformation_mode values, a fixed and an adaptive sampling ratio) and MaxRoiPool,
on random feature maps and ROIs (some reaching past the map). One conversion of a model with
a dynamic ROI count and image size runs at three image sizes and ROI counts (none among them)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h

import mlconv

ort = pytest.importorskip("onnxruntime")


def _model(node, inputs, opset):
    graph = h.make_graph([node], "g", inputs, [h.make_tensor_value_info("y", T.FLOAT, None)])
    return h.make_model(graph, opset_imports=[h.make_opsetid("", opset)])


def _rois(rng, count, height, width, scale, batch_column=None):
    x1 = rng.uniform(-2, width / scale, count)
    y1 = rng.uniform(-2, height / scale, count)
    w = rng.uniform(0.5, width / scale * 0.7, count)
    hh = rng.uniform(0.5, height / scale * 0.7, count)
    boxes = np.stack([x1, y1, x1 + w, y1 + hh], axis=1).astype(np.float32)
    if batch_column is not None:
        boxes = np.concatenate([batch_column[:, None].astype(np.float32), boxes], axis=1)
    return boxes


@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("transform", ["half_pixel", "output_half_pixel"])
@pytest.mark.parametrize("sampling_ratio", [2, 0])
def test_roi_align_matches_onnxruntime(mode, transform, sampling_ratio):
    node = h.make_node(
        "RoiAlign",
        ["x", "rois", "idx"],
        ["y"],
        mode=mode,
        coordinate_transformation_mode=transform,
        output_height=3,
        output_width=4,
        sampling_ratio=sampling_ratio,
        spatial_scale=0.5,
    )
    model = _model(
        node,
        [
            h.make_tensor_value_info("x", T.FLOAT, [2, 3, "H", "W"]),
            h.make_tensor_value_info("rois", T.FLOAT, ["R", 4]),
            h.make_tensor_value_info("idx", T.INT64, ["R"]),
        ],
        16,
    )
    session = ort.InferenceSession(model.SerializeToString())
    compiled = mlconv.compile(model)
    rng = np.random.default_rng(0)
    # no ROI at all: a level of a detector's multi-scale pooling that gets none
    for height, width, count in ((10, 12, 5), (7, 16, 9), (8, 8, 0)):
        x = rng.standard_normal((2, 3, height, width)).astype(np.float32)
        rois = _rois(rng, count, height, width, 0.5)
        idx = rng.integers(0, 2, count).astype(np.int64)
        (expected,) = session.run(None, {"x": x, "rois": rois, "idx": idx})
        (got,) = compiled(x, rois, idx)
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_max_roi_pool_matches_onnxruntime():
    node = h.make_node("MaxRoiPool", ["x", "rois"], ["y"], pooled_shape=[3, 2], spatial_scale=0.5)
    model = _model(
        node,
        [
            h.make_tensor_value_info("x", T.FLOAT, [2, 3, "H", "W"]),
            h.make_tensor_value_info("rois", T.FLOAT, ["R", 5]),
        ],
        13,
    )
    session = ort.InferenceSession(model.SerializeToString())
    compiled = mlconv.compile(model)
    rng = np.random.default_rng(1)
    for height, width, count in ((9, 11, 4), (12, 8, 7), (8, 8, 0)):
        x = rng.standard_normal((2, 3, height, width)).astype(np.float32)
        rois = _rois(rng, count, height, width, 0.5, rng.integers(0, 2, count))
        (expected,) = session.run(None, {"x": x, "rois": rois})
        (got,) = compiled(x, rois)
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)


def test_roi_align_is_checked():
    """A mode the op does not have is one line at the node."""
    node = h.make_node("RoiAlign", ["x", "rois", "idx"], ["y"], mode="median")
    model = _model(
        node,
        [
            h.make_tensor_value_info("x", T.FLOAT, [1, 1, 4, 4]),
            h.make_tensor_value_info("rois", T.FLOAT, [1, 4]),
            h.make_tensor_value_info("idx", T.INT64, [1]),
        ],
        16,
    )
    with pytest.raises(mlconv.errors.MlconvError, match="unknown mode 'median'"):
        mlconv.compile(onnx.ModelProto.FromString(model.SerializeToString()))

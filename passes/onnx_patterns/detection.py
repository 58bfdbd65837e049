"""Detection ONNX ops: RoiAlign and MaxRoiPool as core.ROIAlign and core.ROIPooling."""

from __future__ import annotations

from mlconv.dialects import core_vision as vision
from mlconv.passes.onnx_patterns import lowering

_ALIGNED = {"half_pixel": "half_pixel", "output_half_pixel": "asymmetric"}


def _roi_align(default_transform):
    def pattern(op, b):
        transform = b.attr(op, "coordinate_transformation_mode", default_transform)
        if transform not in _ALIGNED:
            raise b.fail(f"unknown coordinate_transformation_mode '{transform}'")
        mode = b.attr(op, "mode", "avg")
        if mode not in ("avg", "max"):
            raise b.fail(f"unknown mode '{mode}'")
        return [
            b(
                vision.ROIAlignOp,
                b.input(op, "X"),
                b.input(op, "rois"),
                b.input(op, "batch_indices"),
                pooled_h=b.attr(op, "output_height", 1),
                pooled_w=b.attr(op, "output_width", 1),
                sampling_ratio=b.attr(op, "sampling_ratio", 0),
                spatial_scale=b.attr(op, "spatial_scale", 1.0),
                mode=mode,
                aligned_mode=_ALIGNED[transform],
            )
        ]

    return pattern


# RoiAlign-10 has no coordinate_transformation_mode: its ROIs are not shifted.
lowering("RoiAlign", 10)(_roi_align("output_half_pixel"))
lowering("RoiAlign", 16, 22)(_roi_align("half_pixel"))


@lowering("MaxRoiPool", 1, 22)
def max_roi_pool(op, b):
    pooled = b.attr(op, "pooled_shape", None)
    if pooled is None or len(pooled) != 2:
        raise b.fail("needs pooled_shape (height, width)")
    return [
        b(
            vision.ROIPoolingOp,
            b.input(op, "X"),
            b.input(op, "rois"),
            pooled_h=pooled[0],
            pooled_w=pooled[1],
            spatial_scale=b.attr(op, "spatial_scale", 1.0),
            method="max",
        )
    ]

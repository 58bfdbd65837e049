"""Image builtins: RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR as core.Interpolate over the
NHWC height and width axes, with TensorFlow's coordinate rules (LiteRT's kernels compute them
as TF does; see `tf_patterns/image.py` for the table of modes)."""

from __future__ import annotations

from mlconv.dialects import core
from mlconv.passes.tflite_patterns import lowering


def _resize(op, b, nearest: bool):
    options = op.options()
    align, half = bool(options["align_corners"]), bool(options["half_pixel_centers"])
    if align and half:
        raise b.fail("align_corners and half_pixel_centers cannot both be true")
    if align:
        coordinates = "align_corners"
    elif half:
        coordinates = "tf_half_pixel_for_nn" if nearest else "half_pixel"
    else:
        coordinates = "asymmetric"
    extra = {}
    if nearest:
        extra["nearest_mode"] = "round_prefer_ceil" if align else "floor"
    return [
        b(
            core.InterpolateOp,
            b.x(op, 0),
            b.raw(op, 1),
            b.ints([1, 2]),
            None,
            mode="nearest" if nearest else "linear_onnx",
            shape_calculation_mode="sizes",
            coordinate_transformation_mode=coordinates,
            **extra,
        )
    ]


@lowering("RESIZE_BILINEAR")
def resize_bilinear(op, b):
    return _resize(op, b, nearest=False)


@lowering("RESIZE_NEAREST_NEIGHBOR")
def resize_nearest(op, b):
    return _resize(op, b, nearest=True)

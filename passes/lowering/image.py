"""TensorFlow's resize rules, which the TF patterns (ResizeBilinear, ResizeNearestNeighbor) and
the TFLite ones (RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR: LiteRT's kernels compute them as TF
does) share; the table of modes is in `tf_patterns/image.py`.

- `resize_coordinates(b, align, half, nearest)`: core.Interpolate's
  coordinate_transformation_mode for TF's `align_corners` / `half_pixel_centers` (both true is
  refused, as TensorFlow refuses it).
- `resize(b, x, size, coordinates, nearest)`: core.Interpolate over the NHWC height and width
  to `size`; nearest rounds down without align_corners and half away from zero with it.
"""

from __future__ import annotations

from xdsl.ir import SSAValue

from mlconv.dialects import core_image as image


def resize_coordinates(b, align: bool, half: bool, nearest: bool) -> str:
    if align and half:
        raise b.fail("align_corners and half_pixel_centers cannot both be true")
    if align:
        return "align_corners"
    if half:
        return "tf_half_pixel_for_nn" if nearest else "half_pixel"
    return "asymmetric"


def resize(b, x: SSAValue, size: SSAValue, coordinates: str, nearest: bool) -> SSAValue:
    extra = {}
    if nearest:
        extra["nearest_mode"] = "round_prefer_ceil" if coordinates == "align_corners" else "floor"
    return b(
        image.InterpolateOp,
        x,
        size,
        b.ints([1, 2]),
        None,
        mode="nearest" if nearest else "linear_onnx",
        shape_calculation_mode="sizes",
        coordinate_transformation_mode=coordinates,
        **extra,
    )

"""Image ONNX ops: Resize and Upsample as core.Interpolate; ImageDecoder."""

from __future__ import annotations

from mlconv.dialects import core_image as image
from mlconv.passes.onnx_patterns import lowering


def _interpolate(op, b, x, values, calculation, axes=None, roi=None, **attributes):
    mode = attributes.pop("mode")
    return b(
        image.InterpolateOp,
        x,
        values,
        None if axes is None else b.ints(list(axes)),
        roi,
        mode="linear_onnx" if mode == "linear" else mode,
        shape_calculation_mode=calculation,
        **attributes,
    )


def _given(b, value):
    """The operand unless it is absent or an empty constant (ONNX's "not given")."""
    if value is None:
        return None
    array = b.constant(value)
    return None if array is not None and array.size == 0 else value


def _legacy(op, b):
    """Resize-10 and Upsample: scales only, asymmetric coordinates, nearest rounds down."""
    x = op.operands[0]
    scales = op.operands[1]
    mode = b.attr(op, "mode", "nearest")
    if mode == "bilinear":
        mode = "linear"
    y = _interpolate(
        op,
        b,
        x,
        scales,
        "scales",
        mode=mode,
        coordinate_transformation_mode="asymmetric",
        nearest_mode="floor",
    )
    return [y]


lowering("Resize", 10)(_legacy)
lowering("Upsample", 7, 9)(_legacy)


@lowering("Resize", 11, 13, 18, 19)
def resize(op, b):
    x = b.input(op, "X")
    scales = _given(b, b.input(op, "scales"))
    sizes = _given(b, b.input(op, "sizes"))
    if (scales is None) == (sizes is None):
        raise b.fail("needs exactly one of scales and sizes")
    transform = b.attr(op, "coordinate_transformation_mode", "half_pixel")
    roi = None
    if transform == "tf_crop_and_resize":
        roi = _given(b, b.input(op, "roi"))
        if roi is None:
            raise b.fail("tf_crop_and_resize needs a roi")
    values, calculation = (scales, "scales") if scales is not None else (sizes, "sizes")
    y = _interpolate(
        op,
        b,
        x,
        values,
        calculation,
        axes=b.attr(op, "axes", None),
        mode=b.attr(op, "mode", "nearest"),
        coordinate_transformation_mode=transform,
        nearest_mode=b.attr(op, "nearest_mode", "round_prefer_floor"),
        antialias=bool(b.attr(op, "antialias", 0)),
        cube_coeff=b.attr(op, "cubic_coeff_a", -0.75),
        exclude_outside=bool(b.attr(op, "exclude_outside", 0)),
        extrapolation_value=b.attr(op, "extrapolation_value", 0.0),
        roi=roi,
        keep_aspect_ratio_policy=b.attr(op, "keep_aspect_ratio_policy", "stretch"),
    )
    return [y]


@lowering("ImageDecoder", 20)
def image_decoder(op, b):
    return [
        b(
            image.ImageDecoderOp,
            b.input(op, "encoded_stream"),
            pixel_format=b.attr(op, "pixel_format", "RGB"),
        )
    ]

"""Image core ops: Interpolate (resize by nearest, linear or cubic interpolation) and
ImageDecoder (encoded bytes to pixels, on the host).

Interpolation is separable: each resized axis is done in turn, with the source coordinates,
neighbour indices and weights of every output position computed in numpy at trace time (the
shapes are static), then one gather per neighbour and a weighted sum.
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
from xdsl.utils.exceptions import VerifyException

from mlconv.dialects.core_base import BOOL, FLOAT, INTS, STR, CoreOp, core_op
from mlconv.errors import BackendError, InputError


def source_coordinates(mode, out_size, in_size, scale, roi):
    """Where each output position along one axis samples the input (ONNX/OpenVINO
    coordinate_transformation_mode), and which positions fall outside (tf_crop_and_resize)."""
    y = np.arange(out_size, dtype=np.float64)
    width = scale * in_size
    outside = None
    if mode == "align_corners":
        x = np.zeros(out_size) if width == 1 else y * (in_size - 1) / (width - 1)
    elif mode == "asymmetric":
        x = y / scale
    elif mode == "tf_crop_and_resize":
        start, end = roi
        if width == 1:
            x = np.full(out_size, (end - start) * (in_size - 1) / 2)
        else:
            x = y * (end - start) * (in_size - 1) / (width - 1)
        x = x + start * (in_size - 1)
        outside = (x < 0) | (x > in_size - 1)
    elif mode == "pytorch_half_pixel":
        x = np.full(out_size, -0.5) if width == 1 else (y + 0.5) / scale - 0.5
    elif mode == "half_pixel":
        x = (y + 0.5) / scale - 0.5
    elif mode == "half_pixel_symmetric":
        offset = in_size / 2 * (1 - out_size / width)
        x = offset + (y + 0.5) / scale - 0.5
    elif mode == "tf_half_pixel_for_nn":
        x = (y + 0.5) / scale
    else:
        raise ValueError(f"unknown coordinate_transformation_mode '{mode}'")
    return x, outside


def _cubic(t, a):
    t = np.abs(t)
    near = ((a + 2) * t - (a + 3)) * t * t + 1
    far = ((a * t - 5 * a) * t + 8 * a) * t - 4 * a
    return np.where(t <= 1, near, np.where(t < 2, far, 0.0))


def axis_weights(x, in_size, scale, mode, nearest_mode, cube_coeff, antialias, exclude_outside):
    """(indices, weights), both out x n: output i is sum_k weights[i,k] * input[indices[i,k]].
    Neighbours are counted from `base = ceil(x) - 1`, so the fraction is in (0, 1]."""
    base = np.ceil(x) - 1
    ratio = (x - base)[:, None]
    if mode == "nearest":
        offsets = np.array([0, 1])
        up = {
            "round_prefer_floor": ratio > 0.5,
            "round_prefer_ceil": ratio >= 0.5,
            "floor": np.zeros_like(ratio, bool),
            "ceil": np.ones_like(ratio, bool),
            "simple": np.zeros_like(ratio, bool),
        }[nearest_mode] | (ratio == 1)
        weights = np.concatenate([~up, up], axis=1).astype(np.float64)
    else:
        shrink = min(scale, 1.0) if antialias else 1.0
        reach = 1 if mode in ("linear", "linear_onnx") else 2
        first = math.floor(-reach / shrink) + 1 if antialias else 1 - reach
        offsets = np.arange(first, 1 - first + 1)
        distance = (offsets[None, :] - ratio) * shrink
        if reach == 1:
            weights = np.clip(1 - np.abs(distance), 0, 1)
        else:
            weights = _cubic(distance, cube_coeff)
        if antialias:
            weights = weights / weights.sum(axis=1, keepdims=True)
    indices = base.astype(np.int64)[:, None] + offsets[None, :]
    if exclude_outside:
        weights = np.where((indices < 0) | (indices >= in_size), 0.0, weights)
        total = weights.sum(axis=1, keepdims=True)
        weights = weights / np.where(total == 0, 1.0, total)
    return np.clip(indices, 0, in_size - 1), weights


def output_sizes(shape, values, axes, shape_calculation_mode, keep_aspect_ratio_policy):
    """(sizes, scales) per resized axis from the `scales_or_sizes` operand."""
    values = [float(v) for v in values]
    if shape_calculation_mode == "scales":
        return [int(v * shape[a]) for v, a in zip(values, axes, strict=True)], values
    sizes = [int(v) for v in values]
    scales = [s / shape[a] for s, a in zip(sizes, axes, strict=True)]
    if keep_aspect_ratio_policy != "stretch":
        common = min(scales) if keep_aspect_ratio_policy == "not_larger" else max(scales)
        scales = [common] * len(axes)
        sizes = [int(common * shape[a] + 0.5) for a in axes]
    return sizes, scales


@core_op(
    operands=("image", "scales_or_sizes", "?axes", "?roi"),
    attributes={
        "mode": STR,
        "shape_calculation_mode": STR,
        "coordinate_transformation_mode": (STR, "half_pixel"),
        "nearest_mode": (STR, "round_prefer_floor"),
        "antialias": (BOOL, False),
        "pads_begin": (INTS, ()),
        "pads_end": (INTS, ()),
        "cube_coeff": (FLOAT, -0.75),
        "exclude_outside": (BOOL, False),
        "extrapolation_value": (FLOAT, 0.0),
        "keep_aspect_ratio_policy": (STR, "stretch"),
    },
    static_operands=("scales_or_sizes", "axes", "roi"),
)
class InterpolateOp(CoreOp):
    """Resize `axes` (default all) by nearest, linear (`linear_onnx`) or cubic interpolation
    (OpenVINO opset11 Interpolate; pads_* must be zero).

    `shape_calculation_mode` says whether `scales_or_sizes` holds scales (out = floor(in *
    scale)) or sizes. Each output position maps to a source coordinate by
    `coordinate_transformation_mode`; `antialias` widens the linear/cubic kernel by 1/scale
    when downsampling. mlconv extensions for ONNX Resize: `exclude_outside` (drop and
    renormalize taps outside the input), the `roi` operand (starts then ends per resized
    axis, or per axis of the image) and
    `extrapolation_value` for tf_crop_and_resize, `keep_aspect_ratio_policy` (sizes mode).
    Example:

        %y = "core.Interpolate"(%x, %scales) {mode = "nearest",
               shape_calculation_mode = "scales"}
               : (tensor<1x3x4x4xf32>, tensor<4xf32>) -> tensor<1x3x8x8xf32>
    """

    name = "core.Interpolate"
    VERSION = 11

    @staticmethod
    def semantics(
        image,
        scales_or_sizes,
        axes=None,
        roi=None,
        *,
        mode,
        shape_calculation_mode,
        coordinate_transformation_mode,
        nearest_mode,
        antialias,
        pads_begin,
        pads_end,
        cube_coeff,
        exclude_outside,
        extrapolation_value,
        keep_aspect_ratio_policy,
    ):
        if any(pads_begin) or any(pads_end):
            raise ValueError("Interpolate with padding is not supported")
        rank = image.ndim
        axes = (
            list(range(rank))
            if axes is None
            else [int(a) % rank for a in np.asarray(axes).reshape(-1)]
        )
        values = np.asarray(scales_or_sizes).reshape(-1)
        sizes, scales = output_sizes(
            image.shape, values, axes, shape_calculation_mode, keep_aspect_ratio_policy
        )
        roi = [] if roi is None else [float(v) for v in np.asarray(roi).reshape(-1)]
        if len(roi) == 2 * rank and len(axes) < rank:
            roi = [roi[a] for a in axes] + [roi[rank + a] for a in axes]
        dtype = image.dtype
        work = dtype if jnp.issubdtype(dtype, jnp.floating) else np.float32
        result = image
        for k in sorted(range(len(axes)), key=lambda k: axes[k]):
            axis, size, scale = axes[k], sizes[k], scales[k]
            in_size = image.shape[axis]
            span = (roi[k], roi[k + len(axes)]) if roi else (0.0, 1.0)
            if math.isclose(scale, 1.0) and size == in_size and span == (0.0, 1.0):
                continue
            x, outside = source_coordinates(
                coordinate_transformation_mode, size, in_size, scale, span
            )
            indices, weights = axis_weights(
                x, in_size, scale, mode, nearest_mode, cube_coeff, antialias, exclude_outside
            )
            shape = [1] * result.ndim
            shape[axis] = size
            if mode == "nearest":
                result = jnp.take(result, indices[np.arange(size), np.argmax(weights, 1)], axis)
            else:
                source = result.astype(work)
                total = None
                for j in range(indices.shape[1]):
                    term = jnp.take(source, indices[:, j], axis) * jnp.asarray(
                        weights[:, j].reshape(shape), work
                    )
                    total = term if total is None else total + term
                result = total
            if outside is not None and outside.any():
                fill = jnp.asarray(extrapolation_value, result.dtype)
                result = jnp.where(outside.reshape(shape), fill, result)
        if result.dtype != dtype:
            info = jnp.iinfo(dtype)
            result = jnp.clip(jnp.round(result), info.min, info.max).astype(dtype)
        return result


_PIXEL_FORMATS = ("RGB", "BGR", "Grayscale")


@core_op(
    operands=("encoded",),
    attributes={"pixel_format": (STR, "RGB")},
    static_operands=("encoded",),
)
class ImageDecoderOp(CoreOp):
    """Decode one encoded image (the 1-D uint8 bytes of a BMP, JPEG, JPEG 2000, PNG, PNM, TIFF
    or WebP file) into (H, W, 3) RGB or BGR, or (H, W, 1) grayscale, uint8 pixels, with Pillow
    (the decoder the ONNX reference uses; ONNX ImageDecoder-20). The shape depends on the
    bytes, so like NonZero the op is evaluated where `encoded` is a constant or a model input
    bound per call. Pillow's decompression-bomb limit bounds the pixels it allocates.

        %y = "core.ImageDecoder"(%bytes) {pixel_format = "BGR"}
               : (tensor<1024xui8>) -> tensor<32x32x3xui8>
    """

    name = "core.ImageDecoder"
    VERSION = 1

    def verify_(self) -> None:
        pixel_format = self.attribute_values()["pixel_format"]
        if pixel_format not in _PIXEL_FORMATS:
            raise VerifyException(
                f"pixel_format must be RGB, BGR or Grayscale, got '{pixel_format}'"
            )

    @staticmethod
    def semantics(encoded, *, pixel_format):
        import io  # noqa: PLC0415

        try:
            from PIL import Image, UnidentifiedImageError  # noqa: PLC0415
        except ImportError:
            raise BackendError("ImageDecoder needs Pillow (pip install 'mlconv[images]')") from None
        data = np.asarray(encoded, np.uint8).reshape(-1).tobytes()
        try:
            with Image.open(io.BytesIO(data)) as image:
                image = image.convert("L" if pixel_format == "Grayscale" else "RGB")
                pixels = np.asarray(image, np.uint8)
        except (UnidentifiedImageError, OSError, Image.DecompressionBombError) as error:
            reason = str(error).split(" <")[0]
            raise InputError(f"ImageDecoder cannot decode its bytes: {reason}") from None
        if pixel_format == "Grayscale":
            pixels = pixels[:, :, None]
        elif pixel_format == "BGR":
            pixels = pixels[:, :, ::-1]
        return jnp.asarray(np.ascontiguousarray(pixels))


OPS: list[type[CoreOp]] = [InterpolateOp, ImageDecoderOp]

"""Image TF ops: ResizeBilinear, ResizeNearestNeighbor, ResizeBicubic (core.Interpolate over
the NHWC height and width axes) and AdjustContrastv2.

TensorFlow's coordinate rules (`image_resizer_state.h`), each one of core.Interpolate's
coordinate_transformation_modes:

    align_corners  half_pixel_centers  source coordinate of output y    core mode
    false          false               y * in / out                      asymmetric
    true           false               y * (in - 1) / (out - 1)          align_corners
    false          true                (y + 0.5) * in / out - 0.5        half_pixel
                                       (nearest: (y + 0.5) * in / out)   tf_half_pixel_for_nn

Both true is refused, as TensorFlow refuses it. Nearest rounds down without align_corners and
half away from zero (round_prefer_ceil) with it. Bilinear clamps the neighbours to the image,
as Interpolate does. Bicubic is four gathers per axis with TensorFlow's own taps: Keys' a =
-0.5 with taps outside the image dropped (and the rest renormalized) under half_pixel_centers,
a = -0.75 with clamped taps without (TF's legacy kernel), the fraction rounded to 1/1024 as
TF's coefficient table has it.
"""

from __future__ import annotations

import numpy as np

from mlconv.dialects import core_elementwise as ew
from mlconv.dialects import core_tensor as ct
from mlconv.passes.lowering.image import resize, resize_coordinates
from mlconv.passes.tf_patterns import lowering


def _coordinates(op, b, nearest: bool) -> str:
    align, half = b.attr(op, "align_corners", False), b.attr(op, "half_pixel_centers", False)
    return resize_coordinates(b, align, half, nearest)


def _f32(op):
    """The result's element type (float32 for bilinear and bicubic resizes)."""
    return op.results[0].type.get_element_type()


@lowering("ResizeBilinear")
def resize_bilinear(op, b):
    x = b.input(op, 0)
    if b.dtype(x) != np.float32:
        x = b(ct.ConvertOp, x, destination_type=_f32(op))
    return [resize(b, x, b.input(op, 1), _coordinates(op, b, False), nearest=False)]


@lowering("ResizeNearestNeighbor")
def resize_nearest(op, b):
    coordinates = _coordinates(op, b, True)
    return [resize(b, b.input(op, 0), b.input(op, 1), coordinates, nearest=True)]


_TABLE_SIZE = 1024


def _cubic_table(a: float) -> np.ndarray:
    """TensorFlow's bicubic coefficient table (`InitCoeffsTable`): for offsets i / 1024, the
    weight of a tap at distance x and at distance x + 1, in float32."""
    x = np.arange(_TABLE_SIZE + 1, dtype=np.float32) / np.float32(_TABLE_SIZE)
    x = x.astype(np.float64)
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = ((a * (x + 1) - 5 * a) * (x + 1) + 8 * a) * (x + 1) - 4 * a
    return np.stack([near, far], axis=1).astype(np.float32)


def _bicubic_taps(in_size: int, out_size: int, align: bool, half: bool):
    """(indices, weights), both out x 4, as TensorFlow's `GetWeightsAndIndices` computes them:
    float32 source coordinates, the fraction rounded to 1/1024 into the coefficient table."""
    if align and out_size > 1:
        scale = np.float32(in_size - 1) / np.float32(out_size - 1)
    else:
        scale = np.float32(in_size) / np.float32(out_size)
    y = np.arange(out_size, dtype=np.float32)
    source = (y + np.float32(0.5)) * scale - np.float32(0.5) if half else y * scale
    base = np.floor(source).astype(np.int64)
    offset = np.rint((source - base) * np.float32(_TABLE_SIZE)).astype(np.int64)
    table = _cubic_table(-0.5 if half else -0.75)
    weights = np.stack(
        [
            table[offset, 1],
            table[offset, 0],
            table[_TABLE_SIZE - offset, 0],
            table[_TABLE_SIZE - offset, 1],
        ],
        axis=1,
    ).astype(np.float64)
    wanted = base[:, None] + np.arange(-1, 3)[None, :]
    indices = np.clip(wanted, 0, in_size - 1)
    if half:
        # Keys' kernel: taps outside the image weigh 0 and the rest are renormalized.
        weights = np.where(wanted == indices, weights, 0.0)
        weights = weights / weights.sum(axis=1, keepdims=True)
    return indices, weights.astype(np.float32)


@lowering("ResizeBicubic")
def resize_bicubic(op, b):
    """A weighted sum of four gathers per axis, with TensorFlow's own taps and weights
    (core.Interpolate's cubic mode does not round the fraction to TF's 1/1024 table)."""
    x = b.input(op, 0)
    _coordinates(op, b, False)
    shape = x.type.get_shape() if b.rank(x) == 4 else None
    sizes = b.static(b.input(op, 1), "size").astype(np.int64).reshape(-1)
    if shape is None or min(shape[1:3]) < 0:
        raise b.fail("ResizeBicubic needs a static image height and width")
    if b.dtype(x) != np.float32:
        x = b(ct.ConvertOp, x, destination_type=_f32(op))
    align, half = b.attr(op, "align_corners", False), b.attr(op, "half_pixel_centers", False)
    for axis, in_size, out_size in ((1, shape[1], sizes[0]), (2, shape[2], sizes[1])):
        indices, weights = _bicubic_taps(in_size, int(out_size), align, half)
        view = [1, 1, 1, 1]
        view[axis] = int(out_size)
        total = None
        for k in range(4):
            tap = b(ct.GatherOp, x, b.ints(indices[:, k]), b.ints(axis))
            term = b(ew.MultiplyOp, tap, b.const(weights[:, k].reshape(view)))
            total = term if total is None else b(ew.AddOp, total, term)
        x = total
    return [x]


@lowering("AdjustContrastv2")
def adjust_contrast(op, b):
    # (x - mean) * factor + mean, the mean per image and channel over height and width.
    x, factor = b.input(op, 0), b.input(op, 1)
    mean = b(ct.ReduceMeanOp, x, b.ints([-3, -2]), keep_dims=True)
    return [b(ew.AddOp, b(ew.MultiplyOp, b(ew.SubtractOp, x, mean), factor), mean)]

"""Image builtins: RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR as core.Interpolate over the
NHWC height and width axes, with TensorFlow's coordinate rules (LiteRT's kernels compute them
as TF does; see `tf_patterns/image.py` for the table of modes); int8 RESIZE_BILINEAR in
integers as XNNPACK computes it (below)."""

from __future__ import annotations

import numpy as np

from mlconv.dense import element_type
from mlconv.dialects import core
from mlconv.dialects.core_base import constant_value
from mlconv.passes.lowering.image import resize, resize_coordinates
from mlconv.passes.tflite_patterns import lowering
from mlconv.passes.tflite_patterns.nn import int8_per_tensor


def _resize(op, b, nearest: bool):
    options = op.options()
    align, half = bool(options["align_corners"]), bool(options["half_pixel_centers"])
    coordinates = resize_coordinates(b, align, half, nearest)
    return [resize(b, b.x(op, 0), b.raw(op, 1), coordinates, nearest)]


@lowering("RESIZE_BILINEAR")
def resize_bilinear(op, b):
    exact = _xnnpack_resize_bilinear(op, b)
    return [exact] if exact is not None else _resize(op, b, nearest=False)


# --- int8 RESIZE_BILINEAR as XNNPACK computes it (LiteRT's default kernel) -----------------------
# On the stored integers (input and output share scale and zero point), with weights of 11
# fractional bits: per output row and column, the source coordinate in f32 (TF's rule: align
# corners, half pixel clamped to the input, or legacy), top/left = its integer part, the next
# index clamped, a = round_half_even(frac * 2048); then
#   t = 2048 tl + (tr - tl) a_x,  b = 2048 bl + (br - bl) a_x,
#   q_out = (2048 t + (b - t) a_y + 2^21) >> 22       (int32: |values| < 2^31)
# Interpolating the dequantized values and rounding once (the generic path) is one step off in
# 5-22 of 1664 values of a 7x9 -> 16x13 resize.


def _xnnpack_coordinates(size_in: int, size_out: int, align: bool, half: bool):
    """(first index, second index, weight in 1/2048) per output position, as XNNPACK's q11
    indirection computes them."""
    adjust = 1 if align and size_out != 1 else 0
    scale = np.float32(size_in - adjust) / np.float32(size_out - adjust)
    positions = np.arange(size_out, dtype=np.float32) * scale
    if half and not align:
        offset = np.float32(0.5) * scale - np.float32(0.5)
        positions = np.clip(positions + offset, np.float32(0.0), np.float32(size_in - 1))
    first = positions.astype(np.int64)
    second = np.minimum(first + 1, size_in - 1)
    fraction = (positions - first.astype(np.float32)).astype(np.float32)
    weights = np.rint(fraction * np.float32(2048.0)).astype(np.int32)
    return first, second, weights


def _xnnpack_resize_bilinear(op, b):
    source = b.raw(op, 0)
    qin = b.qtypes.get(source)
    element = op.results[0].type.get_element_type()
    if not (int8_per_tensor(qin) and int8_per_tensor(element)):
        return None
    if (qin.scale_values(), qin.zero_point_values()) != (
        element.scale_values(),
        element.zero_point_values(),
    ):
        return None
    options = op.options()
    align, half = bool(options["align_corners"]), bool(options["half_pixel_centers"])
    size = constant_value(b.raw(op, 1))
    if size is None or align and half:
        return None
    out_h, out_w = (int(v) for v in np.asarray(size).reshape(-1))
    rows = _xnnpack_coordinates(b.dim(source, 1), out_h, align, half)
    columns = _xnnpack_coordinates(b.dim(source, 2), out_w, align, half)
    x = b(core.ConvertOp, source, destination_type=element_type(np.int32))

    def take(value, indices, axis):
        return b(core.GatherOp, value, b.const(indices), b.ints(axis))

    def blend(first, second, weights):  # 2048 first + (second - first) weights
        scaled = b(core.MultiplyOp, first, b.const(np.int32(2048)))
        step = b(core.SubtractOp, second, first)
        return b(core.AddOp, scaled, b(core.MultiplyOp, step, b.const(weights)))

    top, bottom = take(x, rows[0], 1), take(x, rows[1], 1)
    across = columns[2].reshape(1, 1, -1, 1)
    t = blend(take(top, columns[0], 2), take(top, columns[1], 2), across)
    bt = blend(take(bottom, columns[0], 2), take(bottom, columns[1], 2), across)
    acc = blend(t, bt, rows[2].reshape(1, -1, 1, 1))
    acc = b(core.AddOp, acc, b.const(np.int32(1 << 21)))
    y = b(core.BitwiseRightShiftOp, acc, b.const(np.int32(22)))
    return b(core.ConvertOp, y, destination_type=element_type(np.int8))


@lowering("RESIZE_NEAREST_NEIGHBOR")
def resize_nearest(op, b):
    return _resize(op, b, nearest=True)

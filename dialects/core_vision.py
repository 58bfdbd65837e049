"""Vision core ops: GridSample (sampling at given coordinates), ROIAlign and ROIPooling (the
region features of two-stage detectors) and NonMaxSuppression.

NonMaxSuppression's output shape depends on the values of its boxes and scores, so like
NonZero it makes its data static: it is evaluated (folded) when the data is constant.
"""

from __future__ import annotations

import itertools

import jax.numpy as jnp
import numpy as np
from xdsl.utils.exceptions import VerifyException

from mlconv.dialects.core_base import BOOL, FLOAT, INT, STR, CoreOp, core_op

_CUBIC_A = -0.75


def _reflect(x, low, high):
    """Reflect `x` into [low, high] across its bounds, as often as needed."""
    span = high - low
    below = x < low
    distance = jnp.where(below, low - x, x - high)
    folds = jnp.floor(distance / span)
    rest = distance - folds * span
    even = jnp.mod(folds, 2) == 0
    inside_low = low + rest
    inside_high = high - rest
    reflected = jnp.where(
        below, jnp.where(even, inside_low, inside_high), jnp.where(even, inside_high, inside_low)
    )
    return jnp.where((x >= low) & (x <= high), x, reflected)


def _cubic_weights(t):
    a = _CUBIC_A
    w0 = ((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a
    w1 = ((a + 2) * t - (a + 3)) * t * t + 1
    w2 = ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1
    return [w0, w1, w2, 1 - w0 - w1 - w2]


@core_op(
    operands=("data", "grid"),
    attributes={
        "align_corners": (BOOL, False),
        "mode": (STR, "bilinear"),
        "padding_mode": (STR, "zeros"),
    },
)
class GridSampleOp(CoreOp):
    """Sample `data` (N, C, D1..Dr) at the normalized coordinates of `grid` (N, O1..Or, r),
    whose last dim lists them innermost-first (x, y[, z]) in [-1, 1] (OpenVINO opset9
    GridSample, extended to any number of spatial dims). `mode` is bilinear, nearest (round
    half to even) or bicubic (A = -0.75); `padding_mode` zeros, border or reflection.

        %y = "core.GridSample"(%x, %g) {mode = "bilinear", padding_mode = "zeros"}
               : (tensor<1x1x4x4xf32>, tensor<1x6x6x2xf32>) -> tensor<1x1x6x6xf32>
    """

    name = "core.GridSample"
    VERSION = 9

    @staticmethod
    def semantics(data, grid, *, align_corners, mode, padding_mode):
        n, c, *sizes = data.shape
        rank = len(sizes)
        out_dims = grid.shape[1:-1]
        dtype = grid.dtype
        coords = []
        for d, size in enumerate(sizes):
            g = grid[..., rank - 1 - d].astype(dtype)
            if align_corners:
                x = (g + 1) / 2 * (size - 1)
                low, high = 0.0, size - 1.0
            else:
                x = ((g + 1) * size - 1) / 2
                low, high = -0.5, size - 0.5
            if padding_mode == "border":
                x = jnp.clip(x, 0, size - 1)
            elif padding_mode == "reflection":
                x = _reflect(x, low, high)
            coords.append((x, low, high))

        def fetch(indices):
            """data at integer positions (one array per dim), with padding_mode outside."""
            valid = jnp.ones(indices[0].shape, bool)
            flat_index = jnp.zeros(indices[0].shape, np.int64)
            for i, size, (_, low, high) in zip(indices, sizes, coords, strict=True):
                if padding_mode == "zeros":
                    valid = valid & (i >= 0) & (i < size)
                elif padding_mode == "reflection":
                    i = jnp.trunc(_reflect(i.astype(dtype), low, high)).astype(np.int64)
                i = jnp.clip(i, 0, size - 1)
                flat_index = flat_index * size + i
            flat = data.reshape(n, c, -1)
            picked = jnp.take_along_axis(
                flat,
                jnp.broadcast_to(flat_index.reshape(n, 1, -1), (n, c, flat_index[0].size)),
                axis=2,
            ).reshape(n, c, *out_dims)
            return jnp.where(valid[:, None], picked, jnp.zeros((), data.dtype))

        if mode == "nearest":
            return fetch([jnp.round(x).astype(np.int64) for x, _, _ in coords])
        taps = []  # per dim: list of (index, weight)
        for x, _, _ in coords:
            base = jnp.floor(x)
            t = x - base
            base = base.astype(np.int64)
            if mode == "bicubic":
                taps.append([(base + k - 1, w) for k, w in enumerate(_cubic_weights(t))])
            else:
                taps.append([(base, 1 - t), (base + 1, t)])
        result = jnp.zeros((n, c, *out_dims), data.dtype)
        for combo in itertools.product(*taps):
            weight = jnp.ones(combo[0][1].shape, dtype)
            for _, w in combo:
                weight = weight * w
            value = fetch([i for i, _ in combo])
            result = result + (value * weight[:, None].astype(data.dtype))
        return result


def _bilinear_taps(start, bin_size, grid, count, pooled, size, dtype):
    """ROIAlign's sample points along one axis: (R, pooled, count) low and high indices,
    their weights, and whether each point is used (inside the ROI's grid and the map)."""
    step = jnp.arange(pooled, dtype=dtype)[None, :, None]
    sample = jnp.arange(count, dtype=dtype)[None, None, :]
    start, bin_size, grid_f = (v[:, None, None] for v in (start, bin_size, grid.astype(dtype)))
    point = start + step * bin_size + (sample + 0.5) * bin_size / grid_f
    used = (sample < grid_f) & (point >= -1.0) & (point <= size)
    point = jnp.maximum(point, 0)
    low = jnp.floor(point).astype(np.int64)
    at_edge = low >= size - 1
    low = jnp.where(at_edge, size - 1, low)
    high = jnp.where(at_edge, size - 1, low + 1)
    point = jnp.where(at_edge, low.astype(dtype), point)
    upper = point - low.astype(dtype)
    return low, high, 1 - upper, upper, used, sample < grid_f


@core_op(
    operands=("data", "rois", "batch_indices"),
    attributes={
        "pooled_h": INT,
        "pooled_w": INT,
        "sampling_ratio": (INT, 0),
        "spatial_scale": (FLOAT, 1.0),
        "mode": (STR, "avg"),
        "aligned_mode": (STR, "asymmetric"),
    },
)
class ROIAlignOp(CoreOp):
    """Features of each ROI (x1, y1, x2, y2 in image coordinates, times `spatial_scale`) of
    image `batch_indices[r]`, pooled to pooled_h x pooled_w bins of sampling_ratio^2 bilinear
    samples (0: ceil(roi size / bins) per ROI, at most ceil(map size / bins)) (OpenVINO
    opset9 ROIAlign). `aligned_mode` half_pixel shifts the ROI by -0.5 pixel; asymmetric
    does not and makes ROIs at least 1x1. `mode` avg averages the samples; max takes, as
    ONNX and onnxruntime do, the largest weighted bilinear corner of all samples.

        %y = "core.ROIAlign"(%x, %rois, %idx) {pooled_h = 2 : i64, pooled_w = 2 : i64, ...}
               : (tensor<1x3x8x8xf32>, tensor<4x4xf32>, tensor<4xi64>) -> tensor<4x3x2x2xf32>
    """

    name = "core.ROIAlign"
    VERSION = 9

    def verify_(self) -> None:
        values = self.attribute_values()
        if values["mode"] not in ("avg", "max"):
            raise VerifyException(f"mode must be avg or max, got '{values['mode']}'")
        if values["aligned_mode"] not in ("asymmetric", "half_pixel"):
            raise VerifyException(
                f"aligned_mode must be asymmetric or half_pixel, got '{values['aligned_mode']}'"
            )
        if values["pooled_h"] < 1 or values["pooled_w"] < 1:
            raise VerifyException("pooled_h and pooled_w must be positive")

    @staticmethod
    def semantics(
        data,
        rois,
        batch_indices,
        *,
        pooled_h,
        pooled_w,
        sampling_ratio,
        spatial_scale,
        mode,
        aligned_mode,
    ):
        n, c, height, width = data.shape
        dtype = data.dtype
        offset = 0.5 if aligned_mode == "half_pixel" else 0.0
        box = rois.astype(dtype) * spatial_scale - offset
        roi_w = box[:, 2] - box[:, 0]
        roi_h = box[:, 3] - box[:, 1]
        if aligned_mode != "half_pixel":
            roi_w = jnp.maximum(roi_w, 1.0)
            roi_h = jnp.maximum(roi_h, 1.0)
        bin_h, bin_w = roi_h / pooled_h, roi_w / pooled_w
        if sampling_ratio > 0:
            count_h = count_w = sampling_ratio
            grid_h = jnp.full(roi_h.shape, sampling_ratio)
            grid_w = jnp.full(roi_w.shape, sampling_ratio)
        else:
            count_h = max(-(-height // pooled_h), 1)
            count_w = max(-(-width // pooled_w), 1)
            grid_h = jnp.clip(jnp.ceil(roi_h / pooled_h), 0, count_h).astype(np.int64)
            grid_w = jnp.clip(jnp.ceil(roi_w / pooled_w), 0, count_w).astype(np.int64)
        y = _bilinear_taps(box[:, 1], bin_h, grid_h, count_h, pooled_h, height, dtype)
        x = _bilinear_taps(box[:, 0], bin_w, grid_w, count_w, pooled_w, width, dtype)
        # (R, ph, gy, pw, gx) positions and weights of the four corners
        flat = data.reshape(n, c, height * width).transpose(0, 2, 1)
        rows = batch_indices.astype(np.int64).reshape(-1, 1)
        used = y[4][:, :, :, None, None] & x[4][:, None, None, :, :]
        in_grid = y[5][:, :, :, None, None] & x[5][:, None, None, :, :]
        corners = []
        for yi, wy in ((y[0], y[2]), (y[1], y[3])):
            for xi, wx in ((x[0], x[2]), (x[1], x[3])):
                pos = yi[:, :, :, None, None] * width + xi[:, None, None, :, :]
                weight = jnp.where(used, wy[:, :, :, None, None] * wx[:, None, None, :, :], 0)
                samples = int(np.prod(pos.shape[1:]))  # not -1: R may be 0 (an empty level)
                values = flat[rows, pos.reshape(pos.shape[0], samples)]  # (R, S, C)
                values = values.reshape(*pos.shape, c)
                corners.append(weight[..., None].astype(dtype) * values)
        if mode == "avg":
            total = (corners[0] + corners[1] + corners[2] + corners[3]).sum(axis=(2, 4))
            count = jnp.maximum(grid_h * grid_w, 1).astype(dtype)
            out = total / count[:, None, None, None]
        else:
            best = jnp.maximum(
                jnp.maximum(corners[0], corners[1]), jnp.maximum(corners[2], corners[3])
            )
            best = jnp.where(in_grid[..., None], best, -jnp.inf)
            out = best.max(axis=(2, 4))
        return out.transpose(0, 3, 1, 2).astype(dtype)


def _round_half_away(x):
    return jnp.sign(x) * jnp.floor(jnp.abs(x) + 0.5)


@core_op(
    operands=("data", "rois"),
    attributes={
        "pooled_h": INT,
        "pooled_w": INT,
        "spatial_scale": (FLOAT, 1.0),
        "method": (STR, "max"),
    },
)
class ROIPoolingOp(CoreOp):
    """Max of each of pooled_h x pooled_w bins of each ROI (rows [batch, x1, y1, x2, y2],
    corners rounded half away from zero after scaling by `spatial_scale`, at least 1x1);
    an empty bin is 0 (OpenVINO opset2 ROIPooling, method max; ONNX MaxRoiPool).

        %y = "core.ROIPooling"(%x, %rois) {pooled_h = 2 : i64, pooled_w = 2 : i64, ...}
               : (tensor<1x3x8x8xf32>, tensor<4x5xf32>) -> tensor<4x3x2x2xf32>
    """

    name = "core.ROIPooling"
    VERSION = 2

    def verify_(self) -> None:
        method = self.attribute_values()["method"]
        if method != "max":
            raise VerifyException(f"method must be max, got '{method}'")

    @staticmethod
    def semantics(data, rois, *, pooled_h, pooled_w, spatial_scale, method):
        n, c, height, width = data.shape
        dtype = data.dtype
        scaled = _round_half_away(rois[:, 1:].astype(np.float32) * np.float32(spatial_scale))
        scaled = scaled.astype(np.int64)
        batch = rois[:, 0].astype(np.int64)

        def masks(start, end, pooled, size):
            extent = jnp.maximum(end - start + 1, 1).astype(np.float32)
            bin_size = extent / pooled
            step = jnp.arange(pooled, dtype=np.float32)[None, :]
            low = jnp.floor(step * bin_size[:, None]).astype(np.int64) + start[:, None]
            high = jnp.ceil((step + 1) * bin_size[:, None]).astype(np.int64) + start[:, None]
            low, high = jnp.clip(low, 0, size), jnp.clip(high, 0, size)
            index = jnp.arange(size)[None, None, :]
            return (index >= low[..., None]) & (index < high[..., None])  # (R, pooled, size)

        in_h = masks(scaled[:, 1], scaled[:, 3], pooled_h, height)
        in_w = masks(scaled[:, 0], scaled[:, 2], pooled_w, width)
        picked = data[batch]  # (R, C, H, W)
        lowest = jnp.asarray(-jnp.inf, dtype)
        along_w = jnp.where(in_w[:, None, None, :, :], picked[:, :, :, None, :], lowest).max(-1)
        out = jnp.where(
            in_h[:, None, :, None, :], along_w.transpose(0, 1, 3, 2)[:, :, None], lowest
        )
        out = out.max(-1)  # (R, C, ph, pw)
        empty = ~in_h.any(-1)[:, :, None] | ~in_w.any(-1)[:, None, :]
        return jnp.where(empty[:, None], jnp.zeros((), dtype), out).astype(dtype)


def _first(value, default, kind):
    """An optional scalar operand's value (ONNX passes scalars as 0-D or 1-element tensors)."""
    if value is None or np.size(value) == 0:
        return default
    return kind(np.asarray(value).reshape(-1)[0])


def _corners(boxes, center):
    """x0, x1, y0, y1 of each box ([N, 4] corners in either order, or centre and size)."""
    if center:
        x, y, w, h = boxes.T
        boxes = np.stack([x - w / 2, y - h / 2, x + w / 2, y + h / 2], axis=1)
    first, second = boxes[:, :2], boxes[:, 2:]
    low, high = np.minimum(first, second), np.maximum(first, second)
    return low[:, 0], high[:, 0], low[:, 1], high[:, 1]


def _ious(corners, box):
    """IoU of box `box` with every box (0 where they do not overlap), in float64."""
    x0, x1, y0, y1 = corners
    width = np.fmax(0.0, np.minimum(x1[box], x1) - np.maximum(x0[box], x0))
    height = np.fmax(0.0, np.minimum(y1[box], y1) - np.maximum(y0[box], y0))
    inter = width * height
    union = (x1[box] - x0[box]) * (y1[box] - y0[box]) + (x1 - x0) * (y1 - y0) - inter
    overlap = (inter > 0) & (union > 0)
    return np.where(overlap, inter / np.where(overlap, union, 1.0), 0.0)


@core_op(
    operands=(
        "boxes",
        "scores",
        "?max_output_boxes_per_class",
        "?iou_threshold",
        "?score_threshold",
    ),
    attributes={"center_point_box": (BOOL, False)},
    static_operands=(
        "boxes",
        "scores",
        "max_output_boxes_per_class",
        "iou_threshold",
        "score_threshold",
    ),
)
class NonMaxSuppressionOp(CoreOp):
    """Greedy per-(batch, class) selection of boxes by descending score, dropping those whose
    IoU with a selected one exceeds `iou_threshold` and those scoring at most
    `score_threshold`; rows [batch, class, box] (OpenVINO opset9 NonMaxSuppression's
    `selected_indices`, ONNX's order). The row count depends on the values: every operand
    must be a constant.

        %i = "core.NonMaxSuppression"(%b, %s, %k, %iou, %score)
               : (tensor<1x6x4xf32>, tensor<1x1x6xf32>, tensor<1xi64>, tensor<1xf32>,
               tensor<1xf32>) -> tensor<3x3xi64>
    """

    name = "core.NonMaxSuppression"
    VERSION = 9

    @staticmethod
    def semantics(
        boxes,
        scores,
        max_output_boxes_per_class,
        iou_threshold,
        score_threshold,
        *,
        center_point_box,
    ):
        limit = _first(max_output_boxes_per_class, 0, int)
        iou_threshold = _first(iou_threshold, 0.0, float)
        score_threshold = _first(score_threshold, float("-inf"), float)
        boxes = np.asarray(boxes, np.float64)
        scores = np.asarray(scores, np.float64)
        rows = []
        for batch in range(scores.shape[0]):
            corners = _corners(boxes[batch], center_point_box)
            for cls in range(scores.shape[1]):
                # Greedy: a box scoring above the threshold is chosen unless a box chosen before
                # it overlaps it by more than iou_threshold (each choice suppresses its overlaps).
                order = np.argsort(-scores[batch, cls], kind="stable")
                suppressed = np.zeros(len(order), bool)
                chosen: list[int] = []
                for box in order:
                    if len(chosen) >= limit:
                        break
                    if suppressed[box] or not scores[batch, cls, box] > score_threshold:
                        continue
                    chosen.append(int(box))
                    suppressed |= _ious(corners, box) > iou_threshold
                rows.extend([batch, cls, box] for box in chosen)
        return jnp.asarray(np.array(rows, dtype=np.int64).reshape(-1, 3))


OPS: list[type[CoreOp]] = [GridSampleOp, ROIAlignOp, ROIPoolingOp, NonMaxSuppressionOp]

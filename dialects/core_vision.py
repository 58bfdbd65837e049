"""Vision core ops: GridSample (sampling at given coordinates) and NonMaxSuppression.

NonMaxSuppression's output shape depends on the values of its boxes and scores, so like
NonZero it makes its data static: it is evaluated (folded) when the data is constant.
"""

from __future__ import annotations

import itertools

import jax.numpy as jnp
import numpy as np

from mlconv.dialects.core_base import BOOL, STR, CoreOp, core_op

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


OPS: list[type[CoreOp]] = [GridSampleOp, NonMaxSuppressionOp]

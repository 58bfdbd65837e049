"""Pooling core ops over NC[D]HW windows: MaxPool, AvgPool."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jax import lax

from mlconv.dialects.core_base import BOOL, INTS, STR, CoreOp, core_op
from mlconv.dialects.core_conv import PADDING, resolve_padding

_POOL = {
    **PADDING,
    "kernel": INTS,
    "rounding_type": (STR, "floor"),
}


def _window(arg, kernel, strides, dilations, pads_begin, pads_end, auto_pad, rounding_type):
    """A pooling window's dilations (1s when none are given) and its (begin, end) pads on
    `arg`'s spatial dimensions."""
    dilations = tuple(dilations) or (1,) * len(kernel)
    pads = resolve_padding(
        arg.shape[2:],
        kernel,
        strides,
        dilations,
        pads_begin,
        pads_end,
        auto_pad,
        ceil=rounding_type == "ceil",
    )
    return dilations, pads


@core_op(operands=("arg",), attributes={**_POOL, "dilations": (INTS, ())})
class MaxPoolOp(CoreOp):
    """Max pooling over NC[D]HW windows (OpenVINO opset1 MaxPool).

    Padded positions never win. `rounding_type = "ceil"` keeps a last partial window. Example:

        %y = "core.MaxPool"(%x) {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>,
               pads_begin = array<i64: 1, 1>, pads_end = array<i64: 1, 1>}
               : (tensor<1x64x112x112xf32>) -> tensor<1x64x56x56xf32>
    """

    name = "core.MaxPool"
    VERSION = 1

    @staticmethod
    def semantics(
        arg, *, strides, pads_begin, pads_end, kernel, rounding_type, auto_pad, dilations
    ):
        dilations, pads = _window(
            arg, kernel, strides, dilations, pads_begin, pads_end, auto_pad, rounding_type
        )
        # A numpy init value lets jax pick its max-monoid reduce_window primitive.
        if jnp.issubdtype(arg.dtype, jnp.floating):
            init = np.array(-np.inf, arg.dtype)
        else:
            init = np.array(jnp.iinfo(arg.dtype).min, arg.dtype)
        return lax.reduce_window(
            arg,
            init,
            lax.max,
            (1, 1, *kernel),
            (1, 1, *strides),
            [(0, 0), (0, 0), *pads],
            window_dilation=(1, 1, *dilations),
        )


@core_op(operands=("arg",), attributes={**_POOL, "exclude_pad": BOOL, "dilations": (INTS, ())})
class AvgPoolOp(CoreOp):
    """Average pooling over NC[D]HW windows (OpenVINO opset1 AvgPool, `exclude-pad`).

    With `exclude_pad` the divisor counts only input elements; without it, it also counts the
    explicit padding, but never the extension that `rounding_type = "ceil"` adds. Example:

        %y = "core.AvgPool"(%x) {kernel = array<i64: 7, 7>, strides = array<i64: 1, 1>,
               pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, exclude_pad = true}
               : (tensor<1x2048x7x7xf32>) -> tensor<1x2048x1x1xf32>
    """

    name = "core.AvgPool"
    VERSION = 1

    @staticmethod
    def semantics(
        arg,
        *,
        strides,
        pads_begin,
        pads_end,
        kernel,
        rounding_type,
        auto_pad,
        exclude_pad,
        dilations,
    ):
        dilations, pads = _window(
            arg, kernel, strides, dilations, pads_begin, pads_end, auto_pad, rounding_type
        )
        spatial = arg.shape[2:]
        plain = resolve_padding(spatial, kernel, strides, dilations, pads_begin, pads_end, auto_pad)
        window = (1, 1, *kernel)
        stride = (1, 1, *strides)
        padding = [(0, 0), (0, 0), *pads]
        total = lax.reduce_window(
            arg,
            np.array(0, arg.dtype),
            lax.add,
            window,
            stride,
            padding,
            window_dilation=(1, 1, *dilations),
        )
        # The divisor per window, computed once at trace time.
        if exclude_pad:
            counted = np.ones(spatial, np.float64)
            count_pads = pads
        else:
            counted = np.ones(
                tuple(s + lo + hi for s, (lo, hi) in zip(spatial, plain, strict=True)), np.float64
            )
            count_pads = [
                (0, hi - plain_hi) for (_, hi), (_, plain_hi) in zip(pads, plain, strict=True)
            ]
        counted = np.pad(counted, count_pads)
        extent = tuple((k - 1) * d + 1 for k, d in zip(kernel, dilations, strict=True))
        divisor = np.lib.stride_tricks.sliding_window_view(counted, extent)[
            tuple(slice(None, None, s) for s in strides)
        ][(Ellipsis, *(slice(None, None, d) for d in dilations))].sum(
            axis=tuple(range(-len(kernel), 0))
        )
        divisor = divisor[tuple(slice(0, n) for n in total.shape[2:])]
        return total / jnp.asarray(np.maximum(divisor, 1), arg.dtype)


OPS: list[type[CoreOp]] = [
    MaxPoolOp,
    AvgPoolOp,
]

"""XLA's speed for each form tpu-conv-strategy can give a convolution, on this machine.

    python bench/conv_forms.py [--device cpu] [--runs 20] [--xla-defaults]
    python bench/conv_forms.py --pools [--runs 20]

For a few layer shapes of the light models, MobileNet and ShuffleNet (batch 1), times the
source form (NCHW/OIHW `conv_general_dilated`) against the NHWC forms of
passes/tpu_conv_strategy.py (the very functions the pass traces), interleaved, median of
`--runs`; prints each form's time relative to the NCHW convolution, marks the one `choose`
picks and checks they agree. The pass's choices rest on these ratios.

With `--xla-defaults` (XLA's default YNNPACK convolutions) an RGB stem with 24 or 32 outputs
runs 3-10x slower than with 4 input channels (7x7/2 3->24 @224: 15.6 against 1.4 ms); with
mlconv's options (Eigen convolutions) padding does not pay, so the pass does not pad.

`--pools` is the measurement behind passes/tpu_window_strategy.py: `lax.reduce_window` max and
sum against `window_slices` (strided slices joined elementwise) for NHWC pooling shapes, ms.

Every function is jitted with `jax_backend.compiler_options` (the XLA:CPU options mlconv
compiles with; `--xla-defaults`: XLA's own, for comparison). Run it on an idle machine: under load the numbers mean little.
"""

from __future__ import annotations

import argparse
import statistics
import time
from functools import partial

import numpy as np

# (name, channels in, channels out, size, kernel, stride, groups)
SHAPES = [
    ("dense 3x3 64->64 @56", 64, 64, 56, 3, 1, 1),
    ("1x1 256->64 @56", 256, 64, 56, 1, 1, 1),
    ("1x1 512->2048 @7", 512, 2048, 7, 1, 1, 1),
    ("1x1 stride 2 256->512 @56", 256, 512, 56, 1, 2, 1),
    ("depthwise 3x3 C=32 @112", 32, 32, 112, 3, 1, 32),
    ("depthwise 3x3 C=144 @56 s2", 144, 144, 56, 3, 2, 144),
    ("grouped 1x1 g=3 240->60 @28", 240, 60, 28, 1, 1, 3),
    ("grouped 3x3 g=8 128->128 @28", 128, 128, 28, 3, 1, 8),
    ("stem 3x3/2 3->24 @224", 3, 24, 224, 3, 2, 1),
    ("stem 7x7/2 3->24 @224", 3, 24, 224, 7, 2, 1),
    ("3x3 5->28 @112", 5, 28, 112, 3, 1, 1),
    ("grouped 1x1 g=4 24->112 @56", 24, 112, 56, 1, 1, 4),
    ("grouped 1x1 g=4 136->136 @28", 136, 136, 28, 1, 1, 4),
    ("grouped 1x1 g=4 272->272 @14", 272, 272, 14, 1, 1, 4),
    ("grouped 1x1 g=4 544->544 @7", 544, 544, 7, 1, 1, 4),
]

LABELS = {
    "nhwc conv": "conv_nhwc",
    "taps": "depthwise_taps",
    "dot_general": "pointwise_dot",
    "block diagonal": "grouped_block_diagonal",
    "split groups": "grouped_split",
}
"""Form label -> the tpu_conv_strategy function it times (for the "<- chosen" mark)."""

# (name, NHWC shape, window, stride, padding per spatial side)
POOLS = [
    ("3x3/2 111x111x64", (1, 111, 111, 64), 3, 2, 0),
    ("3x3/2 55x55x128", (1, 55, 55, 128), 3, 2, 0),
    ("3x3/1 pad 1 28x28x192", (1, 28, 28, 192), 3, 1, 1),
    ("2x2/2 56x56x256", (1, 56, 56, 256), 2, 2, 0),
    ("7x7/1 7x7x1024", (1, 7, 7, 1024), 7, 1, 0),
]


XLA_DEFAULTS = False
"""Set by `--xla-defaults`: jit with XLA's own options instead of mlconv's."""


def jit(fn):
    """`fn` jitted with the XLA options mlconv compiles CPU programs with (or XLA's defaults
    with `--xla-defaults`)."""
    import jax

    from mlconv.backends.jax_backend import compiler_options

    options = None if XLA_DEFAULTS else compiler_options(jax.devices()[0].platform)
    return jax.jit(fn, compiler_options=options)


def median_times(forms: dict[str, tuple], runs: int) -> dict[str, float]:
    """Median ms per call of each (function, *args) in `forms`, timed in interleaved rounds."""
    import jax

    for fn, *operands in forms.values():  # compile and warm up
        jax.block_until_ready(fn(*operands))
    times: dict[str, list[float]] = {f: [] for f in forms}
    for _ in range(runs):
        for form, (fn, *operands) in forms.items():
            start = time.perf_counter()
            jax.block_until_ready(fn(*operands))
            times[form].append((time.perf_counter() - start) * 1e3)
    return {form: statistics.median(t) for form, t in times.items()}


def check_close(out, reference, what: str) -> None:
    out, reference = np.asarray(out), np.asarray(reference)
    if out.shape != reference.shape:
        raise SystemExit(f"{what}: shape {out.shape}, expected {reference.shape}")
    scale = max(float(np.abs(reference).max()), 1e-6)
    error = float(np.abs(out.astype(np.float64) - reference).max()) / scale
    if error > 1e-4:
        raise SystemExit(f"{what}: differs from the reference form (relative {error:.1e})")


def forms_table(args: argparse.Namespace) -> None:
    import jax
    from jax import lax

    from mlconv.passes.tpu_conv_strategy import (
        Conv,
        choose,
        conv_nhwc,
        depthwise_taps,
        grouped_block_diagonal,
        grouped_split,
        pointwise_dot,
    )

    device = jax.devices(args.device)[0]
    rng = np.random.default_rng(0)
    print(f"{'layer':<30}{'form':<17}{'time / NCHW conv':>18}{'ms':>8}")
    for name, cin, cout, size, k, stride, groups in SHAPES:
        pad = (k // 2, k // 2)
        c = Conv((stride, stride), (pad, pad), (1, 1), groups, cin, cout, (k, k), None, np.float32)
        x = jax.device_put(rng.standard_normal((1, cin, size, size)).astype(np.float32), device)
        w = rng.standard_normal((cout, cin // groups, k, k)).astype(np.float32)
        w_hwio = jax.device_put(np.transpose(w, (2, 3, 1, 0)), device)
        x_nhwc = jax.device_put(np.transpose(np.asarray(x), (0, 2, 3, 1)), device)
        forms = {
            "nchw": (jit(partial(lax.conv_general_dilated, window_strides=c.strides, padding=c.padding, feature_group_count=groups)), x, jax.device_put(w, device)),
            "nhwc conv": (jit(partial(conv_nhwc, c=c)), x_nhwc, w_hwio),
        }  # fmt: skip
        if c.depthwise:
            forms["taps"] = (jit(partial(depthwise_taps, c=c)), x_nhwc, w_hwio)
        if c.pointwise:
            forms["dot_general"] = (jit(partial(pointwise_dot, c=c)), x_nhwc, w_hwio)
        grouped_1x1 = groups > 1 and not c.depthwise and c.kernel == (1, 1)
        if grouped_1x1 and all(p == (0, 0) for p in c.padding):
            forms["block diagonal"] = (jit(partial(grouped_block_diagonal, c=c)), x_nhwc, w_hwio)
        if groups > 1 and not c.depthwise:
            forms["split groups"] = (jit(partial(grouped_split, c=c)), x_nhwc, w_hwio)
        reference = np.transpose(np.asarray(forms["nchw"][0](*forms["nchw"][1:])), (0, 2, 3, 1))
        for form, (fn, a, b) in forms.items():
            if form != "nchw":
                check_close(fn(a, b), reference, f"{name} {form}")
        ms = median_times(forms, args.runs)
        chosen = choose(c, args.device, (1, cin, size, size))
        for form in forms:
            ratio = ms[form] / ms["nchw"]
            mark = (
                " <- chosen" if chosen is not None and LABELS.get(form) == chosen.__name__ else ""
            )
            print(f"{name:<30}{form:<17}{ratio:>18.2f}{ms[form]:>8.2f}{mark}", flush=True)


def pools_table(args: argparse.Namespace) -> None:
    import jax
    from jax import lax

    from mlconv.passes.tpu_window_strategy import window_slices

    device = jax.devices(args.device)[0]
    rng = np.random.default_rng(0)
    print(f"{'pool (NHWC)':<24}{'kind':<6}{'reduce_window ms':>18}{'slices ms':>11}{'ratio':>7}")
    for name, shape, k, stride, pad in POOLS:
        x = jax.device_put(rng.standard_normal(shape).astype(np.float32), device)
        params = {
            "window_dimensions": (1, k, k, 1),
            "window_strides": (1, stride, stride, 1),
            "window_dilation": (1, 1, 1, 1),
            "padding": ((0, 0), (pad, pad), (pad, pad), (0, 0)),
        }
        for kind, init, combine in (("max", -np.inf, lax.max), ("sum", 0.0, lax.add)):
            forms = {
                "reduce_window": (jit(partial(lax.reduce_window, init_value=np.float32(init), computation=combine, window_dimensions=params["window_dimensions"], window_strides=params["window_strides"], padding=params["padding"])), x),
                "slices": (jit(partial(window_slices, kind=kind, params=params)), x),
            }  # fmt: skip
            reference = forms["reduce_window"][0](x)
            check_close(forms["slices"][0](x), reference, f"{name} {kind}")
            ms = median_times(forms, args.runs)
            print(
                f"{name:<24}{kind:<6}{ms['reduce_window']:>18.2f}{ms['slices']:>11.2f}"
                f"{ms['slices'] / ms['reduce_window']:>7.2f}",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--pools", action="store_true", help="reduce_window against slices")
    parser.add_argument(
        "--xla-defaults", action="store_true", help="XLA's default options, not mlconv's"
    )
    args = parser.parse_args()
    global XLA_DEFAULTS
    XLA_DEFAULTS = args.xla_defaults
    if args.pools:
        pools_table(args)
    else:
        forms_table(args)


if __name__ == "__main__":
    main()

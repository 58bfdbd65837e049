"""XLA's speed for each form tpu-conv-strategy can give a convolution, on this machine.

    python bench/conv_forms.py [--device cpu] [--runs 20]

For a few layer shapes of the light models and MobileNet/ShuffleNet (batch 1), times the source
form (NCHW/OIHW `conv_general_dilated`) against the NHWC forms of passes/tpu_conv_strategy.py
(the very functions the pass traces), interleaved, median of `--runs`; prints each form's time
relative to the NCHW convolution and checks they agree. The pass's choices rest on these ratios.
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
]

LABELS = {
    "nhwc conv": "conv_nhwc",
    "taps": "depthwise_taps",
    "dot_general": "pointwise_dot",
    "split groups": "grouped_split",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()

    import jax
    from jax import lax

    from mlconv.passes.tpu_conv_strategy import (
        Conv,
        choose,
        conv_nhwc,
        depthwise_taps,
        grouped_split,
        pointwise_dot,
    )

    device = jax.devices(args.device)[0]
    rng = np.random.default_rng(0)
    print(f"{'layer':<30}{'form':<16}{'time / NCHW conv':>18}")
    for name, cin, cout, size, k, stride, groups in SHAPES:
        pad = (k // 2, k // 2)
        c = Conv((stride, stride), (pad, pad), (1, 1), groups, cin, cout, (k, k), None, np.float32)
        x = jax.device_put(rng.standard_normal((1, cin, size, size)).astype(np.float32), device)
        w = rng.standard_normal((cout, cin // groups, k, k)).astype(np.float32)
        w_hwio = jax.device_put(np.transpose(w, (2, 3, 1, 0)), device)
        x_nhwc = jax.device_put(np.transpose(np.asarray(x), (0, 2, 3, 1)), device)
        forms = {
            "nchw": (jax.jit(partial(lax.conv_general_dilated, window_strides=c.strides, padding=c.padding, feature_group_count=groups)), x, jax.device_put(w, device)),
            "nhwc conv": (jax.jit(partial(conv_nhwc, c=c)), x_nhwc, w_hwio),
        }  # fmt: skip
        if c.depthwise:
            forms["taps"] = (jax.jit(partial(depthwise_taps, c=c)), x_nhwc, w_hwio)
        if c.pointwise:
            forms["dot_general"] = (jax.jit(partial(pointwise_dot, c=c)), x_nhwc, w_hwio)
        if groups > 1 and not c.depthwise:
            forms["split groups"] = (jax.jit(partial(grouped_split, c=c)), x_nhwc, w_hwio)
        reference = np.transpose(np.asarray(forms["nchw"][0](*forms["nchw"][1:])), (0, 2, 3, 1))
        times: dict[str, list[float]] = {f: [] for f in forms}
        for fn, a, b in forms.values():
            out = np.asarray(fn(a, b))
            if out.shape == reference.shape:
                np.testing.assert_allclose(
                    out, reference, rtol=1e-3, atol=1e-3 * np.abs(reference).max()
                )
        for _ in range(args.runs):
            for form, (fn, a, b) in forms.items():
                start = time.perf_counter()
                jax.block_until_ready(fn(a, b))
                times[form].append(time.perf_counter() - start)
        base = statistics.median(times["nchw"])
        chosen = choose(c, args.device)
        for form in forms:
            ratio = statistics.median(times[form]) / base
            mark = (
                " <- chosen" if chosen is not None and LABELS.get(form) == chosen.__name__ else ""
            )
            print(f"{name:<30}{form:<16}{ratio:>18.2f}{mark}")


if __name__ == "__main__":
    main()

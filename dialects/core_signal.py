"""Signal core ops: DFT, STFT and MelWeightMatrix. Complex values are a trailing dim of 2 (real, imaginary); a
trailing dim of 1 is a real signal. The transforms are products with constant DFT matrices
(cos/sin), which map onto dot_general rather than an FFT primitive.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jax import lax

from mlconv.dialects.core_base import BOOL, TYPE, CoreOp, core_op


def _scalar(value, default=None):
    if value is None or np.size(value) == 0:
        return default
    return int(np.asarray(value).reshape(-1)[0])


def _fit(parts, n):
    """Zero-pad or truncate each array's last dim to n."""
    length = parts[0].shape[-1]
    if length < n:
        pad = [(0, 0)] * (parts[0].ndim - 1) + [(0, n - length)]
        return [jnp.pad(p, pad) for p in parts]
    return [p[..., :n] for p in parts]


def _matmul(a, m):
    return jnp.matmul(a, jnp.asarray(m, a.dtype), precision=lax.Precision.HIGHEST)


def _cos_sin(angle):
    """cos and sin of the DFT angles, exactly 0 where they vanish (sin(pi) is 1.2e-16 in
    float64): the imaginary part of a real signal's DC and Nyquist bins is then exactly 0, as
    FFT libraries give it, and its sign (which atan2 reads) is not noise."""
    cos, sin = np.cos(angle), np.sin(angle)
    cos[np.abs(cos) < 1e-12] = 0.0
    sin[np.abs(sin) < 1e-12] = 0.0
    return cos, sin


def _dft_last(real, imag, n, inverse, onesided):
    """DFT of length `n` along the last dim of (real, imag), zero-padded or truncated to n,
    in float64. An inverse onesided transform reads the n // 2 + 1 leading bins of a
    Hermitian spectrum and gives the real signal (imag None)."""
    real, imag = real.astype(np.float64), imag.astype(np.float64)
    if inverse and onesided:
        bins = n // 2 + 1
        real, imag = _fit([real, imag], bins)
        angle = 2 * np.pi * np.outer(np.arange(bins), np.arange(n)) / n
        weight = np.full((bins, 1), 2.0)
        weight[0] = 1.0
        if n % 2 == 0:
            weight[-1] = 1.0
        cos, sin = _cos_sin(angle)
        out = _matmul(real, weight * cos) - _matmul(imag, weight * sin)
        return out / n, None
    real, imag = _fit([real, imag], n)
    bins = n // 2 + 1 if onesided else n
    angle = 2 * np.pi * np.outer(np.arange(n), np.arange(bins)) / n
    cos, sin = _cos_sin(angle)
    sin = (-1.0 if inverse else 1.0) * sin
    out_real = _matmul(real, cos) + _matmul(imag, sin)
    out_imag = _matmul(imag, cos) - _matmul(real, sin)
    if inverse:
        out_real, out_imag = out_real / n, out_imag / n
    return out_real, out_imag


def _complex(real, imag, dtype):
    parts = [real] if imag is None else [real, imag]
    return jnp.stack(parts, axis=-1).astype(dtype)


def _split(signal):
    real = signal[..., 0]
    imag = signal[..., 1] if signal.shape[-1] == 2 else jnp.zeros_like(real)
    return real, imag


@core_op(
    operands=("data", "axis", "?signal_size"),
    attributes={"inverse": (BOOL, False), "onesided": (BOOL, False)},
    static_operands=("axis", "signal_size"),
)
class DFTOp(CoreOp):
    """Discrete Fourier transform along `axis` of a signal whose last dim is 1 (real) or 2
    (complex); `signal_size` zero-pads or truncates it first, `inverse` scales by 1/n, and
    `onesided` keeps the n // 2 + 1 leading bins (OpenVINO opset7 DFT/IDFT and opset9
    RDFT/IRDFT in one op). The result is complex (last dim 2), except for an inverse onesided
    transform, which reads a Hermitian half spectrum and gives a real signal (last dim 1).

        %y = "core.DFT"(%x, %axis) {onesided = true}
               : (tensor<1x10x1xf32>, tensor<i64>) -> tensor<1x6x2xf32>
    """

    name = "core.DFT"
    VERSION = 7

    @staticmethod
    def semantics(data, axis, signal_size, *, inverse, onesided):
        axis = _scalar(axis) % data.ndim
        if axis == data.ndim - 1:
            raise ValueError("the DFT axis cannot be the complex dim")
        real, imag = (jnp.moveaxis(part, axis, -1) for part in _split(data))
        n = _scalar(signal_size, real.shape[-1])
        if inverse and onesided and signal_size is None:
            n = 2 * (real.shape[-1] - 1)
        out = _complex(*_dft_last(real, imag, n, inverse, onesided), data.dtype)
        return jnp.moveaxis(out, -2, axis)


@core_op(
    operands=("signal", "frame_step", "?window", "?frame_length"),
    attributes={"onesided": (BOOL, True)},
    static_operands=("frame_step", "frame_length"),
)
class STFTOp(CoreOp):
    """Short-time Fourier transform of `signal` (batch, length, 1 or 2): frames of
    `frame_length` (the window's length by default) every `frame_step`, each multiplied by
    `window` and transformed; result (batch, frames, bins, 2) (OpenVINO opset15 STFT with
    ONNX's layout).

        %y = "core.STFT"(%x, %step, %w) : (tensor<1x128x1xf32>, tensor<i64>, tensor<16xf32>)
               -> tensor<1x15x9x2xf32>
    """

    name = "core.STFT"
    VERSION = 15

    @staticmethod
    def semantics(signal, frame_step, window, frame_length, *, onesided):
        step = _scalar(frame_step)
        length = _scalar(frame_length, None if window is None else window.shape[0])
        frames = (signal.shape[1] - length) // step + 1
        index = np.arange(frames)[:, None] * step + np.arange(length)[None, :]
        real, imag = (part[:, index] for part in _split(signal))
        if window is not None:
            real, imag = real * window.astype(real.dtype), imag * window.astype(real.dtype)
        return _complex(*_dft_last(real, imag, length, False, onesided), signal.dtype)


@core_op(
    operands=("num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz", "upper_edge_hertz"),
    attributes={"output_type": (TYPE, np.dtype(np.float32))},
    static_operands=(
        "num_mel_bins",
        "dft_length",
        "sample_rate",
        "lower_edge_hertz",
        "upper_edge_hertz",
    ),
)
class MelWeightMatrixOp(CoreOp):
    """The (dft_length // 2 + 1, num_mel_bins) matrix of triangular mel filters that maps a
    onesided spectrum to mel bins, from scalars (ONNX MelWeightMatrix-17, computed as the ONNX
    reference does: band edges evenly spaced in mel over num_mel_bins + 2 steps, rounded down
    to spectrum bins). The shape depends on the values: every operand is static.

        %m = "core.MelWeightMatrix"(%bins, %n, %rate, %low, %high) {output_type = f32}
               : (tensor<i64>, tensor<i64>, tensor<i64>, tensor<f32>, tensor<f32>)
               -> tensor<9x8xf32>
    """

    name = "core.MelWeightMatrix"
    VERSION = 1

    @staticmethod
    def semantics(
        num_mel_bins, dft_length, sample_rate, lower_edge_hertz, upper_edge_hertz, *, output_type
    ):
        bins, length, rate, low, high = (
            np.asarray(v).reshape(())
            for v in (num_mel_bins, dft_length, sample_rate, lower_edge_hertz, upper_edge_hertz)
        )
        if int(bins) < 1 or int(length) < 1 or int(rate) < 1:
            raise ValueError("num_mel_bins, dft_length and sample_rate must be positive")
        edges = np.arange(0, int(bins) + 2)
        low_mel = 2595 * np.log1p(low / 700) / np.log(10)
        high_mel = 2595 * np.log1p(high / 700) / np.log(10)
        step = (high_mel - low_mel) / edges.shape[0]
        edges = 700 * np.expm1((edges * step + low_mel) / 2595 * np.log(10))
        edges = (((length + 1) * edges) // rate).astype(int)
        out = np.zeros((int(length) // 2 + 1, int(bins)))
        for i in range(int(bins)):
            left, center, right = edges[i], edges[i + 1], edges[i + 2]
            if center == left:
                out[center, i] = 1
            else:
                j = np.arange(left, center + 1)
                out[j, i] = (j - left) / float(center - left)
            if right > center:
                j = np.arange(center, right)
                out[j, i] = (right - j) / float(right - center)
        return jnp.asarray(out.astype(output_type))


OPS: list[type[CoreOp]] = [DFTOp, STFTOp, MelWeightMatrixOp]

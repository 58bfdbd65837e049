"""Signal TF ops on complex tensors: RFFT, IRFFT, FFT, IFFT, ComplexAbs, Angle, Real, Imag,
Complex, Conj.

Core has no complex element type: a complex tensor is a float tensor with a trailing dim of 2
(real, imaginary), as core.DFT reads and writes it. The TF ops here are the only ones whose
complex operands and results tf-to-core accepts (`COMPLEX_OPS`); any other TF op meeting a
complex tensor is refused, since its core form would mix the two halves. The 1-D transforms
run along the last axis and `fft_length` zero-pads or truncates the signal first, as in TF.
"""

from __future__ import annotations

import numpy as np

from mlconv.dialects import core_elementwise as ew
from mlconv.dialects import core_signal as signal
from mlconv.dialects import core_tensor as ct
from mlconv.passes.tf_patterns import lowering

# The TF ops that may see complex tensors: those below and the identities.
COMPLEX_OPS = frozenset(
    {
        "RFFT",
        "IRFFT",
        "FFT",
        "IFFT",
        "ComplexAbs",
        "Angle",
        "Real",
        "Imag",
        "Complex",
        "Conj",
        "Identity",
        "IdentityN",
        "StopGradient",
        "Snapshot",
    }
)


def _dft(b, data, length, *, inverse: bool, onesided: bool):
    return b(signal.DFTOp, data, b.ints(-2), length, inverse=inverse, onesided=onesided)


@lowering("RFFT")
def rfft(op, b):
    real = b(ct.UnsqueezeOp, b.input(op, 0), b.ints([-1]))
    return [_dft(b, real, b.input(op, 1), inverse=False, onesided=True)]


@lowering("IRFFT")
def irfft(op, b):
    real = _dft(b, b.input(op, 0), b.input(op, 1), inverse=True, onesided=True)
    return [b(ct.SqueezeOp, real, b.ints([-1]))]


@lowering("FFT", "IFFT")
def fft(op, b):
    return [_dft(b, b.input(op, 0), None, inverse=op.name == "tf.IFFT", onesided=False)]


def _part(b, x, index: int):
    return b(ct.GatherOp, x, b.ints(index), b.ints(-1))


def _scalar(b, value, like):
    return b.const(np.asarray(value, b.dtype(like)))


@lowering("Real")
def real(op, b):
    return [_part(b, b.input(op, 0), 0)]


@lowering("Imag")
def imag(op, b):
    return [_part(b, b.input(op, 0), 1)]


@lowering("Complex")
def complex_(op, b):
    re, im = b.input(op, 0), b.input(op, 1)
    # TF broadcasts the two parts against each other.
    re, im = (
        b(ew.AddOp, re, b(ew.MultiplyOp, im, _scalar(b, 0, im))),
        b(ew.AddOp, im, b(ew.MultiplyOp, re, _scalar(b, 0, re))),
    )
    parts = [b(ct.UnsqueezeOp, v, b.ints([-1])) for v in (re, im)]
    return [b(ct.ConcatOp, parts, axis=-1)]


@lowering("Conj")
def conj(op, b):
    x = b.input(op, 0)
    return [b(ew.MultiplyOp, x, b.const(np.asarray([1, -1], b.dtype(x))))]


@lowering("ComplexAbs")
def complex_abs(op, b):
    x = b.input(op, 0)
    squares = b(ct.ReduceSumOp, b(ew.MultiplyOp, x, x), b.ints([-1]), keep_dims=False)
    return [b(ew.SqrtOp, squares)]


@lowering("Angle")
def angle(op, b):
    """atan2(imag, real), from atan and selects (core has no Atan2)."""
    x = b.input(op, 0)
    re, im = _part(b, x, 0), _part(b, x, 1)
    zero = _scalar(b, 0, re)
    re_zero = b(ew.EqualOp, re, zero)
    safe = b(ct.SelectOp, re_zero, _scalar(b, 1, re), re)
    base = b(ew.AtanOp, b(ew.DivideOp, im, safe))
    half_turn = b(
        ct.SelectOp, b(ew.GreaterEqualOp, im, zero), _scalar(b, np.pi, re), _scalar(b, -np.pi, re)
    )
    left = b(ew.AddOp, base, half_turn)
    quarter = b(
        ct.SelectOp,
        b(ew.GreaterOp, im, zero),
        _scalar(b, np.pi / 2, re),
        b(ct.SelectOp, b(ew.LessOp, im, zero), _scalar(b, -np.pi / 2, re), zero),
    )
    turned = b(ct.SelectOp, b(ew.LessOp, re, zero), left, base)
    return [b(ct.SelectOp, re_zero, quarter, turned)]

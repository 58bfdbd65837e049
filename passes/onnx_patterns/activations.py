"""ONNX activation functions.

Those OpenVINO has as ops (Relu, Elu, Selu, HardSigmoid, HSwish, SoftPlus, Mish, Gelu, Swish,
PRelu, ...) map onto them; the rest (LeakyRelu, Celu, ThresholdedRelu, Shrink) are composed
from elementwise core ops. Attribute defaults are the ONNX schema's, which have not changed
across versions; scalar parameters become constants of the data's type so that float16 and
bfloat16 models stay in their type.
"""

from __future__ import annotations

from mlconv.dialects import core_elementwise as ew
from mlconv.dialects import core_tensor as ct
from mlconv.passes.onnx_patterns import lower_unary, lowering

SELU_ALPHA = 1.67326319217681884765625
SELU_GAMMA = 1.05070102214813232421875

UNARY = {
    "Relu": (ew.ReluOp, (1, 6, 13, 14)),
    "Sigmoid": (ew.SigmoidOp, (1, 6, 13)),
    "Softplus": (ew.SoftPlusOp, (1, 22)),
    "Softsign": (ew.SoftSignOp, (1, 22)),
    "Mish": (ew.MishOp, (18, 22)),
    "HardSwish": (ew.HSwishOp, (14, 22)),
}


lower_unary(UNARY)


def _scalar(b, x, value):
    """A 0-d constant of `x`'s element type."""
    return b.const(value, b.dtype(x))


@lowering("LeakyRelu", 1, 6, 16)
def leaky_relu(op, b):
    x = op.operands[0]
    alpha = _scalar(b, x, b.attr(op, "alpha", 0.01))
    is_positive = b(ew.GreaterEqualOp, x, _scalar(b, x, 0))
    return [b(ct.SelectOp, is_positive, x, b(ew.MultiplyOp, x, alpha))]


@lowering("PRelu", 1, 6, 7, 9, 16)
def prelu(op, b):
    """ONNX broadcasts the slope numpy-style; core.PRelu reads a 1-D slope of channel length
    per channel, so lift a lower-rank slope to the data's rank to keep numpy's meaning."""
    x, slope = op.operands
    rank_x, rank_slope = b.rank(x), b.rank(slope)
    if rank_x is not None and rank_slope is not None and rank_slope < rank_x:
        slope = b(ct.UnsqueezeOp, slope, b.ints(list(range(rank_x - rank_slope))))
    return [b(ew.PReluOp, x, slope)]


@lowering("Elu", 1, 6, 22)
def elu(op, b):
    return [b(ew.EluOp, op.operands[0], alpha=b.attr(op, "alpha", 1.0))]


@lowering("Selu", 1, 6, 22)
def selu(op, b):
    x = op.operands[0]
    alpha = _scalar(b, x, b.attr(op, "alpha", SELU_ALPHA))
    gamma = _scalar(b, x, b.attr(op, "gamma", SELU_GAMMA))
    return [b(ew.SeluOp, x, alpha, gamma)]


@lowering("Celu", 12, 28)
def celu(op, b):
    """celu(x) = max(0, x) + min(0, alpha * (e^(x/alpha) - 1)) = alpha * elu(x / alpha)."""
    x = op.operands[0]
    alpha = _scalar(b, x, b.attr(op, "alpha", 1.0))
    scaled_elu = b(ew.EluOp, b(ew.DivideOp, x, alpha), alpha=1.0)
    return [b(ew.MultiplyOp, scaled_elu, alpha)]


@lowering("ThresholdedRelu", 10, 22)
def thresholded_relu(op, b):
    x = op.operands[0]
    above = b(ew.GreaterOp, x, _scalar(b, x, b.attr(op, "alpha", 1.0)))
    return [b(ct.SelectOp, above, x, _scalar(b, x, 0))]


@lowering("HardSigmoid", 1, 6, 22)
def hard_sigmoid(op, b):
    x = op.operands[0]
    alpha = _scalar(b, x, b.attr(op, "alpha", 0.2))
    beta = _scalar(b, x, b.attr(op, "beta", 0.5))
    return [b(ew.HardSigmoidOp, x, alpha, beta)]


GELU_APPROXIMATIONS = {"none": "ERF", "tanh": "TANH"}


@lowering("Gelu", 20)
def gelu(op, b):
    approximate = b.attr(op, "approximate", "none")
    if approximate not in GELU_APPROXIMATIONS:
        raise b.fail(f"Gelu approximate must be 'none' or 'tanh', not {approximate!r}")
    return [b(ew.GeluOp, op.operands[0], approximation_mode=GELU_APPROXIMATIONS[approximate])]


@lowering("Swish", 24)
def swish(op, b):
    x = op.operands[0]
    return [b(ew.SwishOp, x, _scalar(b, x, b.attr(op, "alpha", 1.0)))]


@lowering("Shrink", 9)
def shrink(op, b):
    """x + bias where x < -lambd, x - bias where x > lambd, else 0."""
    x = op.operands[0]
    lambd, bias = b.attr(op, "lambd", 0.5), b.attr(op, "bias", 0.0)
    below = b(ew.LessOp, x, _scalar(b, x, -lambd))
    above = b(ew.GreaterOp, x, _scalar(b, x, lambd))
    shifted_up = b(ew.AddOp, x, _scalar(b, x, bias))
    shifted_down = b(ew.SubtractOp, x, _scalar(b, x, bias))
    zero = _scalar(b, x, 0)
    return [b(ct.SelectOp, below, shifted_up, b(ct.SelectOp, above, shifted_down, zero))]

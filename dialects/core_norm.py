"""Normalization core ops: BatchNormInference, LRN, MVN, NormalizeL2, Softmax, LogSoftmax."""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
from jax import lax
from xdsl.utils.exceptions import VerifyException

from mlconv.dialects.core_base import BOOL, FLOAT, INT, STR, CoreOp, core_op


@core_op(
    operands=("data", "gamma", "beta", "mean", "variance"),
    attributes={"epsilon": FLOAT},
)
class BatchNormInferenceOp(CoreOp):
    """Batch normalization with fixed statistics over channel axis 1 (OpenVINO opset5).

    y = gamma * (x - mean) / sqrt(variance + epsilon) + beta. Example:

        %y = "core.BatchNormInference"(%x, %g, %b, %m, %v) {epsilon = 1.0e-05 : f64}
               : (tensor<1x64x56x56xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>,
                  tensor<64xf32>) -> tensor<1x64x56x56xf32>
    """

    name = "core.BatchNormInference"
    VERSION = 5

    @staticmethod
    def semantics(data, gamma, beta, mean, variance, *, epsilon):
        shape = (1, -1) + (1,) * (data.ndim - 2)
        scale = (gamma / jnp.sqrt(variance + jnp.asarray(epsilon, variance.dtype))).reshape(shape)
        return (data - mean.reshape(shape)) * scale + beta.reshape(shape)


def shifted(x, axis):
    """x - max(x) along `axis`, shifted once more. XLA may reassociate the subtraction with
    x's producer (a mean: (s - m*n)/n); with large logits (light squeezenet's are ~1e10) the
    first shift then misses 0 by hundreds and every exp underflows. The second shift works on
    small numbers, so its maximum is exactly 0."""
    first = x - jnp.max(x, axis=axis, keepdims=True)
    return first - jnp.max(first, axis=axis, keepdims=True)


@core_op(operands=("arg",), attributes={"axis": (INT, 1)})
class SoftmaxOp(CoreOp):
    """exp(x) / sum(exp(x)) along `axis`, computed stably (OpenVINO opset8 Softmax).

    %y = "core.Softmax"(%x) {axis = -1 : i64} : (tensor<1x1000xf32>) -> tensor<1x1000xf32>
    """

    name = "core.Softmax"
    VERSION = 8

    @staticmethod
    def semantics(arg, *, axis):
        e = jnp.exp(shifted(arg, axis))
        return e / jnp.sum(e, axis=axis, keepdims=True)


@core_op(operands=("arg",), attributes={"axis": (INT, 1)})
class LogSoftmaxOp(CoreOp):
    """log(softmax(x)) along `axis`, computed stably (OpenVINO opset5 LogSoftmax).

    %y = "core.LogSoftmax"(%x) {axis = 1 : i64} : (tensor<2x10xf32>) -> tensor<2x10xf32>
    """

    name = "core.LogSoftmax"
    VERSION = 5

    @staticmethod
    def semantics(arg, *, axis):
        d = shifted(arg, axis)
        return d - jnp.log(jnp.sum(jnp.exp(d), axis=axis, keepdims=True))


@core_op(
    operands=("data", "axes"),
    attributes={"alpha": FLOAT, "beta": FLOAT, "bias": FLOAT, "size": INT},
    static_operands=("axes",),
)
class LRNOp(CoreOp):
    """Local response normalization across `axes` (OpenVINO opset1 LRN).

    y = x / (bias + alpha / size^len(axes) * sum(x^2 over a window of `size`))^beta, the window
    centred on each element ((size-1)/2 before, the rest after). Example:

        %y = "core.LRN"(%x, %axes) {alpha = 1.0e-04 : f64, beta = 0.75 : f64, bias = 1.0 : f64,
               size = 5 : i64} : (tensor<1x64x56x56xf32>, tensor<1xi64>) -> tensor<1x64x56x56xf32>
    """

    name = "core.LRN"
    VERSION = 1

    @staticmethod
    def semantics(data, axes, *, alpha, beta, bias, size):
        axes = sorted(int(a) % data.ndim for a in np.asarray(axes).reshape(-1))
        window = [1] * data.ndim
        pads = [(0, 0)] * data.ndim
        for axis in axes:
            window[axis] = size
            pads[axis] = ((size - 1) // 2, size - 1 - (size - 1) // 2)
        squares = lax.reduce_window(
            data * data, np.array(0, data.dtype), lax.add, window, (1,) * data.ndim, pads
        )
        scale = alpha / math.pow(size, len(axes))
        return data / jnp.power(bias + scale * squares, beta)


@core_op(
    operands=("data", "axes"),
    attributes={"normalize_variance": BOOL, "eps": FLOAT, "eps_mode": (STR, "inside_sqrt")},
    static_operands=("axes",),
)
class MVNOp(CoreOp):
    """Mean-variance normalization over `axes` (OpenVINO opset6 MVN).

    y = (x - mean) / sqrt(var + eps) (`eps_mode = "inside_sqrt"`) or / (sqrt(var) + eps)
    ("outside_sqrt"); without `normalize_variance` only the mean is subtracted. Inputs of less
    than 32-bit float precision are normalized in f32 (ONNX's stash_type). Example:

        %y = "core.MVN"(%x, %axes) {normalize_variance = true, eps = 1.0e-05 : f64}
               : (tensor<2x3x4xf32>, tensor<1xi64>) -> tensor<2x3x4xf32>
    """

    name = "core.MVN"
    VERSION = 6

    @staticmethod
    def semantics(data, axes, *, normalize_variance, eps, eps_mode):
        axes = tuple(int(a) % data.ndim for a in np.asarray(axes).reshape(-1))
        wide = data.astype(jnp.promote_types(data.dtype, jnp.float32))
        centred = wide - jnp.mean(wide, axis=axes, keepdims=True)
        if normalize_variance:
            variance = jnp.mean(centred * centred, axis=axes, keepdims=True)
            if eps_mode == "outside_sqrt":
                centred = centred / (jnp.sqrt(variance) + eps)
            else:
                centred = centred / jnp.sqrt(variance + eps)
        return centred.astype(data.dtype)


@core_op(
    operands=("data", "axes"),
    attributes={"eps": FLOAT, "eps_mode": STR},
    static_operands=("axes",),
)
class NormalizeL2Op(CoreOp):
    """x / sqrt(sum(x^2 over `axes`) + eps) (`eps_mode = "add"`) or
    x / sqrt(max(sum(x^2 over `axes`), eps)) (`"max"`) (OpenVINO opset1 NormalizeL2). Example:

        %y = "core.NormalizeL2"(%x, %axes) {eps = 1.0e-24 : f64, eps_mode = "max"}
               : (tensor<1x6x16xf32>, tensor<1xi64>) -> tensor<1x6x16xf32>
    """

    name = "core.NormalizeL2"
    VERSION = 1

    @staticmethod
    def semantics(data, axes, *, eps, eps_mode):
        axes = tuple(sorted({int(a) % max(data.ndim, 1) for a in np.asarray(axes).reshape(-1)}))
        squares = jnp.sum(data * data, axis=axes, keepdims=True)
        eps = jnp.asarray(eps, data.dtype)
        bounded = jnp.maximum(squares, eps) if eps_mode == "max" else squares + eps
        return data / jnp.sqrt(bounded)

    def verify_semantics(self) -> None:
        mode = self.attribute_values()["eps_mode"]
        if mode not in ("add", "max"):
            raise VerifyException(f"eps_mode must be 'add' or 'max', not '{mode}'")


OPS: list[type[CoreOp]] = [
    BatchNormInferenceOp,
    SoftmaxOp,
    LogSoftmaxOp,
    LRNOp,
    MVNOp,
    NormalizeL2Op,
]

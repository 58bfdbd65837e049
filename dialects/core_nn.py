"""Neural-network core ops: MatMul here; the other families live in their own modules
(core_conv, core_pool, core_norm, ...) and are re-exported so that `core_nn.XOp` keeps working.

Layouts are OpenVINO's: data NC[D]HW, convolution filters OI[D]HW, group-convolution filters
G x O/G x I/G x [D]HW.
"""

from __future__ import annotations

import jax.numpy as jnp

from mlconv.dialects.core_base import BOOL, CoreOp, core_op

# Re-exported: the ops moved to their family modules keep their `core_nn` names.
from mlconv.dialects.core_conv import (  # noqa: F401
    ConvolutionBackpropDataOp,
    ConvolutionOp,
    GroupConvolutionBackpropDataOp,
    GroupConvolutionOp,
    resolve_padding,
)
from mlconv.dialects.core_norm import (  # noqa: F401
    BatchNormInferenceOp,
    LogSoftmaxOp,
    LRNOp,
    MVNOp,
    SoftmaxOp,
    shifted,
)
from mlconv.dialects.core_pool import AvgPoolOp, MaxPoolOp  # noqa: F401


@core_op(
    operands=("a", "b"), attributes={"transpose_a": (BOOL, False), "transpose_b": (BOOL, False)}
)
class MatMulOp(CoreOp):
    """numpy.matmul with optional transposition of the last two dims (OpenVINO opset1 MatMul).

    1-D operands are promoted and the added dim removed again; batch dims broadcast. Example:

        %y = "core.MatMul"(%x, %w) {transpose_b = true}
               : (tensor<1x2048xf32>, tensor<1000x2048xf32>) -> tensor<1x1000xf32>
    """

    name = "core.MatMul"
    VERSION = 1

    @staticmethod
    def semantics(a, b, *, transpose_a, transpose_b):
        if transpose_a and a.ndim > 1:
            a = jnp.swapaxes(a, -1, -2)
        if transpose_b and b.ndim > 1:
            b = jnp.swapaxes(b, -1, -2)
        return jnp.matmul(a, b.astype(a.dtype), preferred_element_type=a.dtype)


OPS: list[type[CoreOp]] = [
    MatMulOp,
]

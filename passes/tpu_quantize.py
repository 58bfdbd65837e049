"""tpu-quantize: lower FakeQuantize-fed convolutions and dots to int8 arithmetic.

Input: tpu dialect as `core-to-tpu` leaves a `core-quantize`d model: a `tpu.conv_general_dilated`
(NCHW/OIHW) or `tpu.dot_general` whose weights are a `tpu.fake_quantize` of constants with 255
levels (possibly reshaped or transposed on the way) and whose data is either a
`tpu.fake_quantize` with 256 levels and one range for the tensor (static or dynamic range), or
a float value (weight-only). Run it before `tpu-fold-constants`, which would fold the weights'
FakeQuantize away. Output:
- the weights as int8 constants (symmetric, per output channel: scale = max|w| / 127);
- static/dynamic: the data quantized to int8 at run time, q = round((x - lo) / s) - 128 with
  s = (hi - lo) / 255, the product taken as int8 x int8 `dot_general` with int32 accumulation
  (preferred_element_type = i32), and the result s * s_w * acc + (lo + 128 s) * s_w * J, where
  J = the same product of a tensor of ones (the zero point's share, padding included), a
  constant computed here;
- weight-only: float data times int8 weights (`dot_general` with mixed operands, f32
  accumulation), scaled by s_w.
A convolution becomes one `dot_general` per kernel tap over a strided slice of the padded
input (a 1x1 convolution is one dot): XLA's integer convolution is ~170x slower than its int8
dot on the CPU. A depthwise convolution is one int32 multiply-add per tap; other grouped ones
stay an integer `conv_general_dilated`. Anything else keeps its FakeQuantize (exact in float).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from mlconv.dense import numpy_dtype
from mlconv.dialects import tpu
from mlconv.errors import PassFailure
from mlconv.fake_quant import fake_quantize_reference
from mlconv.passes.jaxpr_to_tpu import JaxprEmitter
from mlconv.passes.tpu_fold_constants import constant_value, erase_dead, evaluate
from mlconv.passes.tpu_sink_transposes import LIBRARY_CALLS

# Single-operand ops the weights may pass through between their FakeQuantize and the product.
LAYOUT = {"reshape", "transpose", "convert_element_type", "squeeze", "expand_dims"}
NCHW = (0, 1, 2, 3)


def _weights(value: SSAValue) -> np.ndarray | None:
    """The fake-quantized float weights feeding a product, when they are constants through a
    255-level tpu.fake_quantize; else None."""
    chain: list[tpu.PrimitiveOp] = []
    owner = value.owner
    while (
        isinstance(owner, tpu.PrimitiveOp)
        and owner.PRIMITIVE in LAYOUT
        and len(owner.operands) == 1
    ):
        chain.append(owner)
        owner = owner.operands[0].owner
    if not isinstance(owner, tpu.FakeQuantizeOp) or owner.params().get("levels") != 255:
        return None
    inputs = [constant_value(v) for v in owner.operands]
    if any(i is None for i in inputs):
        return None
    result = np.asarray(fake_quantize_reference(*inputs, levels=255))
    for op in reversed(chain):
        result = evaluate(op, [result])[0]
    return result if result.dtype.kind == "f" else None


def _activation(value: SSAValue) -> tuple[SSAValue, SSAValue, SSAValue] | None:
    """(x, low, high) when `value` is a per-tensor 256-level fake_quantize with equal input and
    output ranges; else None."""
    op = value.owner
    if not isinstance(op, tpu.FakeQuantizeOp) or op.params().get("levels") != 256:
        return None
    x, il, ih, ol, oh = op.operands
    for a, b in ((il, ol), (ih, oh)):
        if a is not b:
            va, vb = constant_value(a), constant_value(b)
            if va is None or vb is None or not np.array_equal(va, vb):
                return None
    if any(int(np.prod(v.type.get_shape())) != 1 for v in (il, ih)):
        return None
    return x, il, ih


def _channel_scales(weights: np.ndarray, axis: int) -> np.ndarray:
    reduce = tuple(i for i in range(weights.ndim) if i != axis)
    bound = np.abs(weights).max(axis=reduce).astype(np.float64)
    return np.where(bound > 0, bound / 127.0, 1.0)


class _Product:
    """One conv/dot and how to compute it on int8 (or float) data with int8 weights."""

    def __init__(self, op: tpu.PrimitiveOp, weights: np.ndarray):
        self.op = op
        self.params = op.params()
        self.kind = op.PRIMITIVE
        out_type = op.results[0].type
        self.out_shape = tuple(out_type.get_shape())
        self.out_dtype = np.dtype(numpy_dtype(out_type.element_type))
        self.lhs_shape = tuple(op.operands[0].type.get_shape())
        if self.kind == "dot_general":
            (_, rhs_contract), (_, rhs_batch) = self.params["dimension_numbers"]
            free = [d for d in range(weights.ndim) if d not in rhs_contract and d not in rhs_batch]
            if rhs_batch or len(free) != 1:
                raise ValueError("weights must have one output dimension and no batch")
            axis = free[0]
            # output: batch dims, lhs free dims, rhs free dims: the channel is the last one
            self.scale_shape = (1,) * (len(self.out_shape) - 1) + (weights.shape[axis],)
        else:
            dn = self.params["dimension_numbers"]
            if (
                tuple(dn.lhs_spec) != NCHW
                or tuple(dn.rhs_spec) != NCHW
                or tuple(dn.out_spec) != NCHW
                or weights.ndim != 4
                or any(d != 1 for d in self.params["lhs_dilation"])
                or self.params["batch_group_count"] != 1
            ):
                raise ValueError("only 2-D NCHW convolutions without input dilation")
            axis = 0
            self.scale_shape = (1, weights.shape[0], 1, 1)
        scales = _channel_scales(weights, axis)
        shape = [1] * weights.ndim
        shape[axis] = -1
        self.weights_q = np.clip(np.round(weights / scales.reshape(shape)), -127, 127).astype(
            np.int8
        )
        self.scales = scales.reshape(self.scale_shape).astype(np.float32)

    # --- the product itself -------------------------------------------------------------------
    def product(self, x: Any, accumulate: Any) -> Any:
        """x (int8, or float for weight-only) times the int8 weights, accumulated in `accumulate`."""
        w = self.weights_q
        if self.kind == "dot_general":
            return lax.dot_general(
                x, w, self.params["dimension_numbers"], preferred_element_type=accumulate
            )
        groups = self.params["feature_group_count"]
        channels = self.lhs_shape[1]
        if groups == 1:
            return self._taps(x, accumulate, depthwise=False)
        if groups == channels and w.shape[1] == 1 and w.shape[0] == channels:
            return self._taps(x, accumulate, depthwise=True)
        weights = w if accumulate == jnp.int32 else w.astype(np.float32)
        return lax.conv_general_dilated(
            x,
            weights,
            self.params["window_strides"],
            self.params["padding"],
            rhs_dilation=self.params["rhs_dilation"],
            dimension_numbers=("NCHW", "OIHW", "NCHW"),
            feature_group_count=groups,
            preferred_element_type=accumulate,
        )

    def _taps(self, x: Any, accumulate: Any, depthwise: bool) -> Any:
        w = self.weights_q
        n, _, out_h, out_w = self.out_shape
        (pt, pb), (pl, pr) = self.params["padding"]
        sh, sw = self.params["window_strides"]
        dh, dw = self.params["rhs_dilation"]
        zero = np.zeros((), x.dtype)
        if any((pt, pb, pl, pr)):
            x = lax.pad(x, zero, [(0, 0, 0), (0, 0, 0), (pt, pb, 0), (pl, pr, 0)])
        total = None
        for i in range(w.shape[2]):
            for j in range(w.shape[3]):
                top, left = i * dh, j * dw
                tap = lax.slice(
                    x,
                    (0, 0, top, left),
                    (n, x.shape[1], top + (out_h - 1) * sh + 1, left + (out_w - 1) * sw + 1),
                    (1, 1, sh, sw),
                )
                if depthwise:
                    kernel = w[:, 0, i, j].reshape(1, -1, 1, 1)
                    term = tap.astype(accumulate) * kernel.astype(accumulate)
                else:
                    # [N, C, H, W] . [O, C] -> [N, H, W, O]
                    term = lax.dot_general(
                        tap,
                        w[:, :, i, j],
                        (((1,), (1,)), ((), ())),
                        preferred_element_type=accumulate,
                    )
                total = term if total is None else total + term
        return total if depthwise else jnp.transpose(total, (0, 3, 1, 2))

    def ones_term(self) -> np.ndarray:
        """J: the product of a tensor of ones (batch 1 for a convolution) with the weights."""
        w = self.weights_q.astype(np.float32)
        if self.kind == "dot_general":
            ones = np.ones(self.lhs_shape, np.float32)
            return np.asarray(lax.dot_general(ones, w, self.params["dimension_numbers"]))
        ones = np.ones((1, *self.lhs_shape[1:]), np.float32)
        return np.asarray(
            lax.conv_general_dilated(
                ones,
                w,
                self.params["window_strides"],
                self.params["padding"],
                rhs_dilation=self.params["rhs_dilation"],
                dimension_numbers=("NCHW", "OIHW", "NCHW"),
                feature_group_count=self.params["feature_group_count"],
                precision=lax.Precision.HIGHEST,
            )
        )

    # --- the replacement, traced ----------------------------------------------------------------
    def integer(self, x: Any, low: Any, high: Any) -> Any:
        low = low.reshape(()).astype(np.float32)
        high = high.reshape(()).astype(np.float32)
        step = (high - low) / 255.0
        k = jnp.clip(
            jnp.round((x.astype(np.float32) - low) / (high - low) * 255.0),
            np.float32(0),
            np.float32(255),
        )
        q = (k - 128.0).astype(np.int8)
        acc = self.product(q, jnp.int32)
        offset = low + 128.0 * step
        j_scaled = self.j_scaled
        y = acc.astype(np.float32) * (step * self.scales) + offset * j_scaled
        return y.astype(self.out_dtype)

    def weight_only(self, x: Any) -> Any:
        acc = self.product(x, x.dtype)
        return (acc * self.scales.astype(x.dtype)).astype(self.out_dtype)


def _emit(op: Operation, fn: Any, operands: list[SSAValue]) -> SSAValue:
    structs = [
        jax.ShapeDtypeStruct(tuple(v.type.get_shape()), numpy_dtype(v.type.element_type))
        for v in operands
    ]
    with jax.default_device(jax.devices("cpu")[0]):
        closed = jax.make_jaxpr(fn)(*structs)
    block = op.parent_block()
    assert block is not None
    emitter = JaxprEmitter(lambda new: block.insert_op_before(new, op), op.location)
    (result,) = emitter.emit(closed, operands)
    return result


def quantize_product(op: tpu.PrimitiveOp) -> str | None:
    """Lower one conv/dot; returns "int8", "weight-only" or None (left as it is)."""
    weights = _weights(op.operands[1])
    if weights is None:
        return None
    try:
        product = _Product(op, weights)
    except ValueError:
        return None
    activation = _activation(op.operands[0])
    if activation is not None:
        x, low, high = activation
        with jax.default_device(jax.devices("cpu")[0]):
            product.j_scaled = (product.ones_term() * product.scales).astype(np.float32)
        result = _emit(op, product.integer, [x, low, high])
        kind = "int8"
    elif op.operands[0].type.element_type == op.results[0].type.element_type:
        result = _emit(op, product.weight_only, [op.operands[0]])
        kind = "weight-only"
    else:
        return None
    if result.type != op.results[0].type:
        raise PassFailure.at(
            op, f"quantized result {result.type} differs from {op.results[0].type}"
        )
    op.results[0].replace_all_uses_with(result)
    op.detach()
    op.erase()
    return kind


def quantize_tpu_module(module: ModuleOp) -> dict[str, int]:
    """Lower every quantized product of `module`; returns counts per kind."""
    counts = {"int8": 0, "weight-only": 0, "float": 0}
    products = [
        op
        for op in module.walk()
        if isinstance(op, tpu.PrimitiveOp) and op.PRIMITIVE in LIBRARY_CALLS
    ]
    for op in products:
        kind = quantize_product(op)
        if kind is not None:
            counts[kind] += 1
        elif _weights(op.operands[1]) is not None:
            counts["float"] += 1
    erase_dead(module)
    return counts


@dataclass(frozen=True)
class TpuQuantizePass(ModulePass):
    """tpu-quantize: FakeQuantize-fed convolutions and dots to int8 x int8 -> int32 dot_general (before tpu-fold-constants)."""

    name = "tpu-quantize"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        quantize_tpu_module(op)

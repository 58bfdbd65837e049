"""tpu-io-shapes: transfer-friendly shapes across the host/TPU boundary (seed 003's IO shape optimization).

Input: tpu dialect, `tpu.region`s in function bodies. Output: each region operand and result
whose shape is not transfer-friendly crosses the boundary in one that is, reshaped on the host
side (a `tpu.reshape` outside the region, which the artifact and the JAX backend run on the
host, free of copies) and back on the device side (a `tpu.reshape` inside the region), so the
numbers are identical. A friendly shape has its last dimension a multiple of 128 with the rank
flattened: `[n / 128, 128]` for n elements when 128 divides n, else `[n]` (one dimension, no
padding). Scalars and shapes already friendly are left alone, and so are regions inside a
`tpu.batch` (tpu-batch): their 0th dimension is the batch the batcher splits along.

    %y = "tpu.region"(%x) ({ ^bb0(%a: tensor<2x8x16xf32>): ... }) : (tensor<2x8x16xf32>) -> ...
  becomes
    %t = "tpu.reshape"(%x) {new_sizes = array<i64: 2, 128>, ...} : (tensor<2x8x16xf32>) -> tensor<2x128xf32>
    %y = "tpu.region"(%t) ({ ^bb0(%b: tensor<2x128xf32>):
           %a = "tpu.reshape"(%b) {new_sizes = array<i64: 2, 8, 16>, ...} ... })
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import jax
from jax import lax
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from mlconv.dense import numpy_dtype
from mlconv.dialects import tpu

LANES = 128


def friendly_shape(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The transfer shape of a tensor of `shape` (itself when already friendly)."""
    size = math.prod(shape)
    if not shape or size == 0 or (len(shape) <= 2 and shape[-1] % LANES == 0):
        return shape
    return (size // LANES, LANES) if size % LANES == 0 else (size,)


def _reshape_op(value: SSAValue, shape: tuple[int, ...], location) -> Operation:
    """`tpu.reshape` of `value` to `shape` (the primitive's parameters as jax gives them)."""
    element = value.type.get_element_type()
    aval = jax.ShapeDtypeStruct(tuple(value.type.get_shape()), numpy_dtype(element))
    (eqn,) = jax.make_jaxpr(lambda x: lax.reshape(x, shape))(aval).jaxpr.eqns
    op = tpu.PRIMITIVE_OPS["reshape"].create(
        operands=[value],
        result_types=[TensorType(element, list(shape))],
        attributes={k: tpu.encode_param(v) for k, v in eqn.params.items()},
    )
    op.location = location
    return op


def _static(value: SSAValue) -> tuple[int, ...] | None:
    if not isinstance(value.type, TensorType):
        return None
    shape = tuple(value.type.get_shape())
    return None if any(d < 0 for d in shape) else shape


def _redirect(uses: list, value: SSAValue) -> None:
    for use in uses:
        use.operation.operands[use.index] = value


def reshape_boundary(region: tpu.RegionOp) -> None:
    """Reshape `region`'s operands and results that cross the boundary in unfriendly shapes."""
    block = region.body.block
    outer = region.parent_block()
    for index in range(len(region.inputs)):
        operand = region.inputs[index]
        shape = _static(operand)
        if shape is None or friendly_shape(shape) == shape:
            continue
        outside = _reshape_op(operand, friendly_shape(shape), region.location)
        outer.insert_op_before(outside, region)
        region.operands[index] = outside.results[0]
        arg = Rewriter.replace_value_with_new_type(block.args[index], outside.results[0].type)
        uses = list(arg.uses)
        inside = _reshape_op(arg, shape, region.location)
        block.insert_op_before(inside, block.first_op)
        _redirect(uses, inside.results[0])
    terminator = block.last_op
    after: Operation = region
    for index in range(len(region.results)):
        shape = _static(region.results[index])
        if shape is None or friendly_shape(shape) == shape:
            continue
        inside = _reshape_op(terminator.operands[index], friendly_shape(shape), region.location)
        block.insert_op_before(inside, terminator)
        terminator.operands[index] = inside.results[0]
        result = Rewriter.replace_value_with_new_type(region.results[index], inside.results[0].type)
        uses = list(result.uses)
        outside = _reshape_op(result, shape, region.location)
        outer.insert_op_after(outside, after)
        after = outside
        _redirect(uses, outside.results[0])


@dataclass(frozen=True)
class TpuIoShapesPass(ModulePass):
    """tpu-io-shapes: reshape what crosses the host/TPU boundary into transfer-friendly shapes (last dim a multiple of 128, rank flattened) and back."""

    name = "tpu-io-shapes"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        regions = [r for r in op.walk() if isinstance(r, tpu.RegionOp)]
        for region in regions:
            if isinstance(region.parent_op(), func.FuncOp):
                reshape_boundary(region)

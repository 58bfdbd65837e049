"""tpu-outline-host-head: on the CPU, the layout transpose of a region's input (an NCHW image
turned NHWC for the convolutions) moves into a region of its own placed on the host, which
numpy runs instead of XLA compiling it.

Input/output: tpu dialect. Option `device` = cpu | gpu | tpu; only cpu outlines. Option
`max-elements` (default 1048576): the largest input whose transpose moves. Option
`min-flops` (default 1000000000): the least work in the region's convolutions and dots for
which the transposes move.

XLA:CPU's transpose emitter is among its costliest kernels to compile: the 1x3x224x224 input
of a CNN takes ~35 ms of MLIR and LLVM time, as much as three elementwise kernels, for a copy
that numpy makes in the same ~0.2 ms per call as the compiled kernel. The region then receives
the transposed input as an operand of its own; when nothing else in it read the original, that
operand goes.

numpy makes the copy one channel at a time (`semantics/host_numpy.py`), faster than XLA's
kernel, but the host region around it costs ~0.1 ms per call in Python: under 1% of a region
with 1 GFLOP or more of convolutions and dots (~10 ms at ~100 GFLOP/s), so smaller regions
(light SqueezeNet, ShuffleNet) keep their transpose.

    %y = "tpu.region"(%x) ({
    ^bb0(%a: tensor<1x3x8x8xf32>):
      %t = "tpu.transpose"(%a) {permutation = array<i64: 0, 2, 3, 1>} : (tensor<1x3x8x8xf32>) -> tensor<1x8x8x3xf32>
      ...
    }) {device = "tpu"} : (tensor<1x3x8x8xf32>) -> ...

becomes

    %h = "tpu.region"(%x) ({
    ^bb0(%b: tensor<1x3x8x8xf32>):
      %t = "tpu.transpose"(%b) {permutation = array<i64: 0, 2, 3, 1>} : (tensor<1x3x8x8xf32>) -> tensor<1x8x8x3xf32>
      tpu.yield %t : tensor<1x8x8x3xf32>
    }) {device = "host"} : (tensor<1x3x8x8xf32>) -> tensor<1x8x8x3xf32>
    %y = "tpu.region"(%h) ({
    ^bb0(%a: tensor<1x8x8x3xf32>):
      ...
    }) {device = "tpu"} : (tensor<1x8x8x3xf32>) -> ...
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Block, BlockArgument, Region

from mlconv.dialects import tpu
from mlconv.passes.tpu_conv_strategy import CpuRewritePass
from mlconv.passes.tpu_outline_host_tail import estimated_flops, small_host_value


def input_transposes(region: tpu.RegionOp, max_elements: int) -> list[tpu.PrimitiveOp]:
    """The transposes of `region`'s block arguments that numpy can make on the host, when
    something else stays in the region."""
    block = region.body.block
    found = [
        op
        for op in block.ops
        if isinstance(op, tpu.PRIMITIVE_OPS["transpose"])
        and isinstance(op.operands[0], BlockArgument)
        and op.operands[0].owner is block
        and small_host_value(op.operands[0], max_elements)
    ]
    others = [op for op in block.ops if isinstance(op, tpu.PrimitiveOp) and op not in found]
    return found if others else []


def outline_transpose(region: tpu.RegionOp, transpose: tpu.PrimitiveOp) -> None:
    """Move `transpose` (of a block argument of `region`) into a host region before it."""
    block = region.body.block
    arg = transpose.operands[0]
    assert isinstance(arg, BlockArgument)
    host_block = Block(arg_types=[arg.type])
    transpose.detach()
    result = transpose.results[0]
    moved_uses = list(result.uses)
    host_block.add_op(transpose)
    transpose.operands[0] = host_block.args[0]
    host_block.add_op(tpu.YieldOp.create(operands=[result]))
    host = tpu.RegionOp.create(
        operands=[region.inputs[arg.index]],
        result_types=[result.type],
        regions=[Region(host_block)],
        attributes={"device": StringAttr(tpu.HOST)},
    )
    host.location = region.location
    region.parent_block().insert_op_before(host, region)
    transposed = block.insert_arg(result.type, len(block.args))
    for use in moved_uses:
        use.operation.operands[use.index] = transposed
    operands = [*region.inputs, host.results[0]]
    if not arg.uses:  # nothing else read the input as it came
        del operands[arg.index]
        block.erase_arg(arg)
    region.operands = operands


@dataclass(frozen=True)
class TpuOutlineHostHeadPass(CpuRewritePass):
    """tpu-outline-host-head: on `device` cpu, the transpose of a region's input (NCHW to
    NHWC) moves into a `tpu.region {device = "host"}`, made by numpy, not compiled."""

    name = "tpu-outline-host-head"
    max_elements: int = 1 << 20
    min_flops: int = 1_000_000_000

    def rewrite(self, op: ModuleOp) -> None:
        for region in [r for r in op.walk() if isinstance(r, tpu.RegionOp)]:
            if not region.on_host() and estimated_flops(region) >= self.min_flops:
                for transpose in input_transposes(region, self.max_elements):
                    outline_transpose(region, transpose)

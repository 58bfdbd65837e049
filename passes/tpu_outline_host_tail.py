"""tpu-outline-host-tail: on the CPU, a region's small tail (a classifier's softmax) moves into
a region of its own placed on the host, which runs it in numpy instead of compiling it.

Input/output: tpu dialect. Option `device` = cpu | gpu | tpu; only cpu outlines. Option
`max-elements` (default 16384): the largest operand or result a tail op may have. Option
`min-flops` (default 3000000000): the least work in the region's convolutions and dots for
which a tail is outlined.

XLA:CPU compiles every loop fusion to machine code of its own, and a reduction over more than
32 elements is split into two kernels (a window reduction, then the rest). The softmax that
ends most classifiers, two maxima, a sum and the shifts, exp and division around them, is
about ten such kernels on a [1, 1000] tensor: light SqueezeNet's XLA compile spends a third of
its kernels on it, for a computation that numpy does in ~30 us. On the CPU the host is the
device, so nothing crosses a bus to run it there.

The host pays for it on every call: the numpy ops of a softmax tail take ~0.25 ms right after
the compiled program has run (the interpreter's and numpy's code have left the caches; warm
they take 0.07 ms), where XLA's kernels took next to nothing, and each compile saved is
~0.1 s. A region is outlined only when that cost is under 1% of its run: with its
convolutions and dots at ~100 GFLOP/s on this CPU class, from 3 GFLOP up (light ResNet50,
DenseNet121, Inception v2, VGG19; not SqueezeNet, whose 6 ms run the tail would slow by 5%).

The tail is the largest set of ops whose results reach only the region's yield or other tail
ops, each a primitive that `semantics/host_numpy.py` evaluates, on tensors of at most
`max-elements` elements in an element type numpy computes natively; small constants read only
by the tail go with it. A tail of data movement alone (reshapes, broadcasts, casts) stays, and
so does a region that would be left with no primitive of its own (a model that is all tail is
compiled as it is). The values the tail reads from the region become new results of the
region; a block argument it reads is taken from the region's operand instead.

Example (the end of light SqueezeNet):

    %r = "tpu.region"(%x) ({
      ...
      %s = "tpu.reduce_sum"(%relu) {axes = array<i64: 1, 2>} : (tensor<1x13x13x1000xf32>) -> tensor<1x1000xf32>
      %m = "tpu.reduce_max"(%s) {axes = array<i64: 1>} : (tensor<1x1000xf32>) -> tensor<1xf32>
      ...
      tpu.yield %softmax : tensor<1x1000xf32>
    }) {device = "tpu"} : (tensor<1x3x224x224xf32>) -> tensor<1x1000xf32>

becomes

    %r = "tpu.region"(%x) ({ ... tpu.yield %s : tensor<1x1000xf32> }) {device = "tpu"} : ...
    %t = "tpu.region"(%r) ({
    ^bb0(%a: tensor<1x1000xf32>):
      %m = "tpu.reduce_max"(%a) {axes = array<i64: 1>} : (tensor<1x1000xf32>) -> tensor<1xf32>
      ...
      tpu.yield %softmax : tensor<1x1000xf32>
    }) {device = "host"} : (tensor<1x1000xf32>) -> tensor<1x1000xf32>
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.dialects.builtin import ModuleOp, StringAttr, TensorType
from xdsl.ir import Block, Operation, Region, SSAValue

from mlconv.dense import numpy_dtype
from mlconv.dialects import tpu
from mlconv.errors import MlconvError
from mlconv.passes.tpu_conv_strategy import CpuRewritePass
from mlconv.passes.tpu_sink_transposes import LIBRARY_CALLS
from mlconv.semantics.host_numpy import HOST_ELEMENT_TYPES, HOST_PRIMITIVES

DATA_MOVEMENT = frozenset(
    "reshape squeeze expand_dims broadcast_in_dim convert_element_type copy transpose".split()
)
"""Primitives that compute nothing: a tail of these alone is not worth a region."""


def small_host_value(value: SSAValue, max_elements: int) -> bool:
    """A static tensor of at most `max_elements` elements, in a type numpy computes natively."""
    kind = value.type
    if not isinstance(kind, TensorType):
        return False
    shape = kind.get_shape()
    if any(d < 0 for d in shape) or math.prod(shape) > max_elements:
        return False
    try:
        return numpy_dtype(kind.get_element_type()) in HOST_ELEMENT_TYPES
    except MlconvError:  # an element type numpy has no equivalent for (a quantized type)
        return False


def _runs_on_host(op: Operation, max_elements: int) -> bool:
    if isinstance(op, tpu.ConstantOp):
        return small_host_value(op.output, max_elements)
    return (
        isinstance(op, tpu.PrimitiveOp)
        and op.PRIMITIVE in HOST_PRIMITIVES
        and not op.regions
        and all(small_host_value(v, max_elements) for v in (*op.operands, *op.results))
    )


def estimated_flops(region: tpu.RegionOp) -> int:
    """The multiply-adds of the region's convolutions and dots, twice (from their types)."""
    total = 0
    for op in region.body.walk():
        if not isinstance(op, tpu.PrimitiveOp) or op.PRIMITIVE not in LIBRARY_CALLS:
            continue
        out = math.prod(op.results[0].type.get_shape())
        if op.PRIMITIVE == "dot_general":
            lhs = op.operands[0].type.get_shape()
            (contracting, _), _ = op.params()["dimension_numbers"]
            total += 2 * out * math.prod(lhs[d] for d in contracting)
        else:
            filters = op.operands[1].type.get_shape()
            # Per output element, one filter's worth: every dim but the output features.
            out_features = op.params()["dimension_numbers"].rhs_spec[0]
            total += 2 * out * math.prod(n for d, n in enumerate(filters) if d != out_features)
    return total


def find_tail(region: tpu.RegionOp, max_elements: int) -> list[Operation]:
    """The ops of `region` to outline, in program order (empty when not worth it)."""
    block = region.body.block
    terminator = block.last_op
    ops = list(block.ops)[:-1]
    tail: set[Operation] = set()
    for op in reversed(ops):  # readers before what they read
        readers = {use.operation for result in op.results for use in result.uses}
        if _runs_on_host(op, max_elements) and readers <= tail | {terminator}:
            tail.add(op)
    computes = any(
        isinstance(op, tpu.PrimitiveOp) and op.PRIMITIVE not in DATA_MOVEMENT for op in tail
    )
    stays = any(isinstance(op, tpu.PrimitiveOp) and op not in tail for op in ops)
    return [op for op in ops if op in tail] if computes and stays else []


def outline_tail(region: tpu.RegionOp, tail: list[Operation]) -> None:
    """Move `tail` out of `region` into a host region right after it."""
    block = region.body.block
    terminator = block.last_op
    moved = set(tail)
    # What the tail reads from the rest of the region, in first-read order.
    boundary = list(dict.fromkeys(v for op in tail for v in op.operands if v.owner not in moved))
    host_block = Block(arg_types=[v.type for v in boundary])
    inside = dict(zip(boundary, host_block.args, strict=True))
    for op in tail:
        op.detach()
        host_block.add_op(op)
        for index, operand in enumerate(op.operands):
            if operand in inside:
                op.operands[index] = inside[operand]
    yielded = list(terminator.operands)
    from_tail = [v for v in dict.fromkeys(yielded) if v.owner in moved]
    host_block.add_op(tpu.YieldOp.create(operands=from_tail))

    # The region now yields what it yielded outside the tail, then what the tail reads.
    computed = [v for v in boundary if v.owner is not block]  # not block arguments
    kept = list(dict.fromkeys([v for v in yielded if v.owner not in moved] + computed))
    terminator.detach()
    terminator.erase()
    block.add_op(tpu.YieldOp.create(operands=kept))
    body = Region()
    region.body.move_blocks(body)
    compiled = tpu.RegionOp.create(
        operands=list(region.inputs),
        result_types=[v.type for v in kept],
        regions=[body],
        attributes=dict(region.attributes),
    )
    compiled.location = region.location
    outer = dict(zip(kept, compiled.results, strict=True))
    outer.update((arg, region.inputs[arg.index]) for arg in boundary if arg.owner is block)
    host = tpu.RegionOp.create(
        operands=[outer[v] for v in boundary],
        result_types=[v.type for v in from_tail],
        regions=[Region(host_block)],
        attributes={"device": StringAttr(tpu.HOST)},
    )
    host.location = region.location
    outer.update(zip(from_tail, host.results, strict=True))
    parent = region.parent_block()
    parent.insert_ops_before([compiled, host], region)
    for result, value in zip(region.results, yielded, strict=True):
        result.replace_all_uses_with(outer[value])
    region.detach()
    region.erase()


@dataclass(frozen=True)
class TpuOutlineHostTailPass(CpuRewritePass):
    """tpu-outline-host-tail: on `device` cpu, a region's small tail (a softmax) moves into a
    `tpu.region {device = "host"}`, which the JAX backend runs in numpy, not compiled."""

    name = "tpu-outline-host-tail"
    max_elements: int = 16384
    min_flops: int = 3_000_000_000

    def rewrite(self, op: ModuleOp) -> None:
        regions = [r for r in op.walk() if isinstance(r, tpu.RegionOp)]
        for region in regions:
            if region.on_host() or estimated_flops(region) < self.min_flops:
                continue
            if tail := find_tail(region, self.max_elements):
                outline_tail(region, tail)

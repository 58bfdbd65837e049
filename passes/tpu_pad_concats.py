"""tpu-pad-concats: a concatenation whose elementwise epilogue only convolutions and dots read
becomes a sum of its parts, each zero-padded to the whole, so XLA:CPU computes it inside the
epilogue's loop.

Input/output: tpu dialect. XLA:CPU fuses a concatenate neither into its reader nor into its
operands: each is a copy kernel of its own, compiled once per concatenation (LLVM, ~14 ms of
CPU each here) and run as one more pass over the activation. Pads and adds it fuses. After
tpu-merge-epilogues, SqueezeNet's fire modules end in

    conv(max(add(concatenate(conv_a, conv_b), bias), 0), W)

which this pass makes

    conv(max(add(add(pad(conv_a, 0, hi=64), pad(conv_b, 0, lo=64)), bias), 0), W)

where the pads, the sum and the epilogue are one loop fusion reading both convolutions'
outputs. Light SqueezeNet: 6 of its 8 concatenate kernels go (32 -> 26 kernels).

The parts are padded with zeros along the concatenated axis only and added: each element of
the sum is one part's element plus zeros, exact for every float and integer (x + 0 is x; a
-0.0 part element becomes +0.0, which compares equal). The rule: a concatenation of two or
more float or integer parts, read by a chain of one or more elementwise ops (each the only
reader of the one before) whose last value only convolutions and dots read, so XLA writes the
chain once, as their operand; on `device` cpu only (XLA:GPU and TPU fuse concatenations
themselves). A concatenation read by several ops (Inception's blocks, DenseNet's growing
inputs) stays, and so does one whose epilogue a max pool reads (SqueezeNet's fires 3, 5 and
8): XLA fuses the epilogue into every pooling window's read, and would leave the padded parts
kernels of their own.

Example:

    %c = "tpu.concatenate"(%a, %b) {dimension = 3 : i64}
           : (tensor<1x4x4x2xf32>, tensor<1x4x4x3xf32>) -> tensor<1x4x4x5xf32>
    %r = "tpu.max"(%c, %z) : (tensor<1x4x4x5xf32>, tensor<f32>) -> tensor<1x4x4x5xf32>
    %y = "tpu.conv_general_dilated"(%r, %w) {...} : (tensor<1x4x4x5xf32>, ...) -> ...

becomes `pad(%a)` (3 zero channels after) plus `pad(%b)` (2 before), read by the max.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.rewriter import InsertPoint, Rewriter

from mlconv.dense import numpy_dtype
from mlconv.dialects import tpu
from mlconv.errors import MlconvError
from mlconv.passes.tpu_conv_strategy import CpuRewritePass
from mlconv.passes.tpu_fold_constants import constant, erase_dead
from mlconv.passes.tpu_sink_transposes import (
    ELEMENTWISE,
    LIBRARY_CALLS,
    make_primitive,
    value_shape,
)

P = tpu.PRIMITIVE_OPS


def _paddable(concat: Operation) -> bool:
    """Whether the rule (module docstring) allows padding `concat`'s parts."""
    if len(concat.operands) < 2:
        return False
    try:
        dtype = numpy_dtype(concat.results[0].type.get_element_type())
    except MlconvError:
        return False
    if dtype.kind not in "fiu":
        return False
    value, chain = concat.results[0], 0
    while len(readers := {use.operation for use in value.uses}) == 1:
        (reader,) = readers
        if not isinstance(reader, tpu.PrimitiveOp) or reader.PRIMITIVE not in ELEMENTWISE:
            break
        if len(reader.results) != 1:
            return False
        value, chain = reader.results[0], chain + 1
    return chain > 0 and all(
        isinstance(use.operation, tpu.PrimitiveOp) and use.operation.PRIMITIVE in LIBRARY_CALLS
        for use in value.uses
    )


def pad_concat(concat: Operation) -> None:
    """Replace `concat` by the sum of its zero-padded parts."""
    axis = concat.params()["dimension"]
    result = concat.results[0]
    total = value_shape(result)[axis]
    dtype = numpy_dtype(result.type.get_element_type())
    zero = constant(np.zeros((), dtype), concat.location)
    Rewriter.insert_op(zero, InsertPoint.before(concat))
    summed = None
    offset = 0
    for part in concat.operands:
        size = value_shape(part)[axis]
        config = [(0, 0, 0)] * len(value_shape(part))
        config[axis] = (offset, total - offset - size, 0)
        padded = make_primitive(
            "pad",
            [part, zero.results[0]],
            [result.type],
            {"padding_config": tuple(config)},
            concat.location,
        )
        Rewriter.insert_op(padded, InsertPoint.before(concat))
        if summed is not None:
            add = make_primitive(
                "add", [summed, padded.results[0]], [result.type], {}, concat.location
            )
            Rewriter.insert_op(add, InsertPoint.before(concat))
            padded = add
        summed = padded.results[0]
        offset += size
    result.replace_all_uses_with(summed)


def pad_concats(module: ModuleOp) -> None:
    for op in list(module.walk()):
        if isinstance(op, P["concatenate"]) and _paddable(op):
            pad_concat(op)
    erase_dead(module)


@dataclass(frozen=True)
class TpuPadConcatsPass(CpuRewritePass):
    """tpu-pad-concats: on `device` cpu, a concatenation whose elementwise epilogue only
    convolutions and dots read becomes a sum of zero-padded parts, which XLA:CPU fuses into
    the epilogue's loop; gpu and tpu keep it."""

    name = "tpu-pad-concats"

    def rewrite(self, op: ModuleOp) -> None:
        pad_concats(op)

"""Control-flow ONNX ops: If, Loop, Scan -> core.If, core.Loop, core.Scan.

The ONNX subgraph regions move onto the core op as they are; their ops are ONNX ops that
onnx-to-core lowers afterwards where they stand. Two things change at the move:

- outer-scope references become explicit: every value a body uses but does not define is
  appended to the op's `captured` operands and to each body's block arguments (the same list
  for both If branches), and the body uses the block argument instead;
- `onnx.Yield` becomes `core.Yield`.

Sequence- and optional-typed bodies never reach here: the importer refuses those types.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Region, SSAValue
from xdsl.rewriter import Rewriter

from mlconv.dialects import core_control as cc
from mlconv.dialects import onnx as onnx_dialect
from mlconv.passes.lowering.builder import insert_with_regions
from mlconv.passes.onnx_patterns import lowering

# Tensor-only semantics are the same at every since-version; the later versions widen the
# types (sequences in 13, optionals in 16, new element types since).
_ALL = (1, 11, 13, 16, 19, 21, 23, 24, 25)


def captured_values(regions: list[Region]) -> list[SSAValue]:
    """Values the regions use but that are defined outside all of them, in first-use order."""
    inside: set[SSAValue] = set()
    for region in regions:
        for block in region.blocks:
            inside.update(block.args)
        for op in region.walk():
            inside.update(op.results)
            for nested in op.regions:
                for block in nested.blocks:
                    inside.update(block.args)
    found: dict[SSAValue, None] = {}
    for region in regions:
        for op in region.walk():
            for operand in op.operands:
                if operand not in inside:
                    found.setdefault(operand, None)
    return list(found)


def close_over(region: Region, captured: list[SSAValue]) -> None:
    """Give `region` one trailing block argument per captured value and use it inside;
    replace its onnx.Yield by core.Yield."""
    block = region.block
    arguments = {}
    for value in captured:
        arg = block.insert_arg(value.type, len(block.args))
        arg.name_hint = value.name_hint
        arguments[value] = arg
    for op in region.walk():
        for index, operand in enumerate(op.operands):
            if operand in arguments:
                op.operands[index] = arguments[operand]
    terminator = block.last_op
    if isinstance(terminator, onnx_dialect.YieldOp):
        new = cc.YieldOp.create(operands=list(terminator.values))
        new.location = terminator.location
        Rewriter.replace_op(terminator, new, [])


def build(op, b, op_class, operands, bodies: dict[str, Region], **attributes):
    """The core control op with `bodies` moved from the ONNX op, typed by its semantics
    where the bodies can be evaluated already, else with the ONNX result types."""
    regions = [op.detach_region(region) for region in bodies.values()]
    captured = captured_values(regions)
    for region in regions:
        close_over(region, captured)
    groups = [[v] if isinstance(v, SSAValue) else list(v) for v in [*operands, captured]]
    types = [r.type for r in op.results]
    return insert_with_regions(b, op_class, groups, types, attributes, regions)


@lowering("If", *_ALL)
def if_(op, b):
    return build(
        op, b, cc.IfOp, [b.input(op, "cond")], {"then": op.then_branch, "else": op.else_branch}
    )


@lowering("Loop", *_ALL)
def loop(op, b):
    trip_count = b.input(op, "M")
    condition = b.input(op, "cond")
    carried = b.inputs(op, "v_initial")
    scan_count = len(op.results) - len(carried)
    max_iterations = -1
    if scan_count:
        # Scan outputs need a static row count: a constant trip count, else the model's own
        # declared shape for the first scan output.
        constant_trip = b.constant(trip_count)
        declared = op.results[len(carried)].type
        if constant_trip is not None:
            max_iterations = int(constant_trip.reshape(()))
        elif (
            isinstance(declared, TensorType)
            and declared.get_shape()
            and declared.get_shape()[0] >= 0
        ):
            max_iterations = declared.get_shape()[0]
        else:
            raise b.fail(
                "Loop scan outputs need a constant trip count or a static leading dimension "
                "(set input-shapes, or give the output's shape in the model)"
            )
    if trip_count is None:
        trip_count = b.const(np.iinfo(np.int64).max, np.int64)
    if condition is None:
        condition = b.const(True, np.bool_)
    return build(
        op,
        b,
        cc.LoopOp,
        [trip_count, condition, carried],
        {"body": op.body},
        max_iterations=max_iterations,
    )


@lowering("Scan", 9, 11, 16, 19, 21, 23, 24, 25)
def scan(op, b):
    values = b.inputs(op, "initial_state_and_scan_inputs")
    num_scan_inputs = b.attr(op, "num_scan_inputs")
    split = len(values) - num_scan_inputs
    attributes = {
        name: b.attr(op, name)
        for name in (
            "scan_input_axes",
            "scan_input_directions",
            "scan_output_axes",
            "scan_output_directions",
        )
        if b.attr(op, name) is not None
    }
    return build(
        op, b, cc.ScanOp, [values[:split], values[split:]], {"body": op.body}, **attributes
    )

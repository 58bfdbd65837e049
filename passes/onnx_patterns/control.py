"""Control-flow ONNX ops: If, Loop, Scan -> core.If, core.Loop, core.Scan (Scan-8, with its
batch axis, as a core.Scan over the batch of a core.Scan per batch entry).

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
from xdsl.ir import Block, Region, SSAValue
from xdsl.rewriter import Rewriter

from mlconv.dense import shared_tensor_type
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


# Ops whose result has their input's shape: the model's declared shape of such a user is the
# value's own (ONNX's expanded Range functions cast the Loop's scan output to the output type).
_SAME_SHAPE = (onnx_dialect.OPS["Cast"], onnx_dialect.OPS["CastLike"], onnx_dialect.OPS["Identity"])


def declared_rows(value: SSAValue) -> int | None:
    """The static leading dimension the model declares for `value`, or for a Cast/CastLike/
    Identity of it (shape inference does not run backwards), else None."""
    for candidate in (
        value,
        *(
            use.operation.results[0]
            for use in value.uses
            if isinstance(use.operation, _SAME_SHAPE) and use.index == 0
        ),
    ):
        shape = candidate.type.get_shape() if isinstance(candidate.type, TensorType) else ()
        if shape and shape[0] >= 0:
            return shape[0]
    return None


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
        declared = declared_rows(op.results[len(carried)])
        if constant_trip is not None:
            max_iterations = int(constant_trip.reshape(()))
        elif declared is not None:
            max_iterations = declared
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


def _without_leading_dim(value_type):
    """The type of one slice along the first axis (None where the rank is unknown)."""
    if not isinstance(value_type, TensorType) or not value_type.get_shape():
        return None
    return shared_tensor_type(value_type.get_element_type(), tuple(value_type.get_shape()[1:]))


@lowering("Scan", 8)
def scan_v8(op, b):
    """Scan-8 runs its body per batch entry: states are [batch, ...], scan inputs and outputs
    [batch, sequence, ...]. Lowered as an outer core.Scan over the batch axis (no state; every
    state and scan input sliced on axis 0) whose body is a core.Scan-9 of the original body
    over the per-batch slices, yielding its final states and scan outputs, which the outer
    scan stacks back on axis 0. `sequence_lens` (per-batch lengths) is refused."""
    if b.inputs(op, "sequence_lens"):
        raise b.fail("Scan-8 with sequence_lens (per-batch lengths) is not supported")
    values = b.inputs(op, "initial_state_and_scan_inputs")
    split = len(values) - b.attr(op, "num_scan_inputs")
    slice_types = [_without_leading_dim(v.type) for v in values]
    result_types = [_without_leading_dim(r.type) for r in op.results]
    if None in slice_types or None in result_types:
        raise b.fail("Scan-8 needs ranked inputs and outputs (its batch axis)")
    bodies = {"body": op.body}  # the ONNX graph attribute, moved into the inner scan
    inner_body = op.detach_region(bodies["body"])
    inner_captured = captured_values([inner_body])
    close_over(inner_body, inner_captured)
    block = Block(arg_types=slice_types)
    directions = b.attr(op, "directions")
    attributes = {} if directions is None else {"scan_input_directions": directions}
    inner = cc.ScanOp.build(
        operands=[list(block.args[:split]), list(block.args[split:]), inner_captured],
        result_types=[result_types],
        attributes={k: cc.ScanOp.ATTRIBUTES[k].encode(v) for k, v in attributes.items()},
        regions=[inner_body],
    )
    inner.location = op.location
    block.add_ops([inner, cc.YieldOp.create(operands=list(inner.results))])
    outer_body = Region(block)
    outer_captured = captured_values([outer_body])
    close_over(outer_body, outer_captured)
    types = [r.type for r in op.results]
    return insert_with_regions(b, cc.ScanOp, [[], values, outer_captured], types, {}, [outer_body])

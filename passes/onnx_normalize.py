"""onnx-normalize: attributes that later opsets made inputs become inputs (onnx -> onnx).

Input: onnx dialect at any opset. Output: the same ops, with every attribute listed in `MOVES`
replaced by a constant operand in the input slot the newer opset reads it from (TopK-1's `k`
becomes the `K` input, Slice-1's `starts` the `starts` input, ...). The op keeps its op type and
the module keeps its opset, so one lowering (reading the input) serves every version. This is
the front phase of OpenVINO's Model Optimizer: shape-agnostic rewrites before legalization.

    %y = "onnx.Unsqueeze"(%x) {axes = [0 : i64]} : (tensor<3xf32>) -> tensor<1x3xf32>
becomes
    %axes = "onnx.Constant"() {value = dense<0> : tensor<1xi64>} : () -> tensor<1xi64>
    %y = "onnx.Unsqueeze"(%x, %axes) : (tensor<3xf32>, tensor<1xi64>) -> tensor<1x3xf32>
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from mlconv.dense import numpy_dtype, to_dense_attr
from mlconv.dialects import onnx as onnx_dialect
from mlconv.dialects.segments import operand_groups, result_groups


@dataclass(frozen=True)
class Move:
    """Attribute `attribute` becomes the operand of slot `slot`, as an array of `dtype`
    (None: the element type of the op's first operand) and of `shape` (None: 1-D)."""

    attribute: str
    slot: str
    dtype: Any = np.int64
    scalar: bool = False


def _like_data(attribute: str, slot: str) -> Move:
    """A scalar of the data's element type (Clip's bounds, Pad's value)."""
    return Move(attribute, slot, dtype=None, scalar=True)


_REDUCTIONS = (
    "ReduceSum",
    "ReduceMean",
    "ReduceMax",
    "ReduceMin",
    "ReduceProd",
    "ReduceL1",
    "ReduceL2",
    "ReduceLogSum",
    "ReduceLogSumExp",
    "ReduceSumSquare",
)

MOVES: dict[str, tuple[Move, ...]] = {
    "TopK": (Move("k", "K"),),
    "Pad": (Move("pads", "pads"), Move("paddings", "pads"), _like_data("value", "constant_value")),
    "Split": (Move("split", "split"),),
    "Slice": (Move("starts", "starts"), Move("ends", "ends"), Move("axes", "axes")),
    "Squeeze": (Move("axes", "axes"),),
    "Unsqueeze": (Move("axes", "axes"),),
    "Clip": (_like_data("min", "min"), _like_data("max", "max")),
    "Upsample": (Move("scales", "scales", dtype=np.float32),),
    "Reshape": (Move("shape", "shape"),),
    **{name: (Move("axes", "axes"),) for name in _REDUCTIONS},
}


def _data_dtype(op: onnx_dialect.OnnxOp) -> np.dtype:
    return numpy_dtype(op.operands[0].type.get_element_type())


def _constant_before(op: onnx_dialect.OnnxOp, array: np.ndarray) -> SSAValue:
    value = to_dense_attr(array)
    constant = onnx_dialect.ConstantOp.create(
        result_types=[value.type], attributes={"value": value}
    )
    constant.location = op.location
    Rewriter.insert_op(constant, InsertPoint.before(op))
    return constant.results[0]


def normalize_op(op: onnx_dialect.OnnxOp) -> bool:
    """Move `op`'s attributes to inputs; False when it has none to move."""
    moves = [m for m in MOVES.get(op.ONNX_OP_TYPE, ()) if m.attribute in op.attributes]
    if not moves:
        return False
    groups = operand_groups(op)
    attributes = dict(op.attributes)
    for move in moves:
        slot = op.INPUTS.index(move.slot)
        value = op.onnx_attr(move.attribute)
        del attributes[move.attribute]
        if groups[slot]:  # both forms present: the input wins, as in the newer opset
            continue
        dtype = _data_dtype(op) if move.dtype is None else move.dtype
        array = np.asarray(value, dtype)
        groups[slot] = [
            _constant_before(op, array.reshape(()) if move.scalar else array.reshape(-1))
        ]
    attributes.pop("operandSegmentSizes", None)
    attributes.pop("resultSegmentSizes", None)
    new_op = type(op).from_slots(
        groups, [[r.type for r in g] for g in result_groups(op)], attributes
    )
    new_op.location = op.location
    Rewriter.replace_op(op, new_op)
    return True


@dataclass(frozen=True)
class OnnxNormalizePass(ModulePass):
    name = "onnx-normalize"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for onnx_op in [o for o in op.walk() if isinstance(o, onnx_dialect.OnnxOp)]:
            normalize_op(onnx_op)


__all__ = ["MOVES", "OnnxNormalizePass", "normalize_op"]

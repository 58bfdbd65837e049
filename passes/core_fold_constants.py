"""core-fold-constants: replace core ops whose operands are all constants by `core.Constant`
(seed 000's partial inference). Input/output: core dialect.

Ops are visited in topological order, each first retyped from its semantics (as
core-infer-shapes does) so that what a folded shape subgraph feeds gets its static type.
A `core.ShapeOf` is folded only with `static-shape=true` (and a static operand shape), so by
default subgraphs that start at ShapeOf stay in the graph and a model keeps working for other
input shapes, as OpenVINO's Model Optimizer does. Ops that would materialize a constant much
larger than their inputs (beyond 2^27 elements) are not folded either. Weights that a model
builds at run time (ONNX ConstantOfShape) are folded below that bound: XLA:CPU miscompiles
convolutions whose filters are broadcasts of a scalar (it returned inf where the folded
weights give the right result, on light_squeezenet).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from mlconv.dense import static_shape
from mlconv.dialects.core_base import CoreOp, constant_value
from mlconv.dialects.core_tensor import ConstantOp, ShapeOfOp
from mlconv.passes.core_infer_shapes import check_acyclic, infer_op, update_signature
from mlconv.semantics.tracing import evaluate

# Folding may grow data at most this much, beyond an absolute allowance.
_MAX_GROWTH = 4
_LARGE = 1 << 27


def folded_values(op: CoreOp, fold_shapes: bool) -> list[np.ndarray] | None:
    """The op's constant results, or None where it must stay."""
    if isinstance(op, ShapeOfOp):
        shape = static_shape(op.arg.type)
        if not fold_shapes or shape is None:
            return None
        return [np.array(shape, dtype=op.attribute_values()["output_type"])]
    inputs = [constant_value(v) for v in op.operands]
    if any(v is None for v in inputs):
        return None
    values = evaluate(op)
    if values is None:
        return None
    produced = sum(v.size for v in values)
    if produced > _LARGE and produced > _MAX_GROWTH * sum(v.size for v in inputs):
        return None
    return values


def fold_op(op: Operation, fold_shapes: bool) -> None:
    if not isinstance(op, CoreOp) or isinstance(op, ConstantOp):
        return
    infer_op(op)
    values = folded_values(op, fold_shapes)
    if values is None:
        return
    constants = [ConstantOp.from_numpy(v) for v in values]
    for constant in constants:
        constant.location = op.location
    Rewriter.replace_op(op, constants, [c.output for c in constants])


@dataclass(frozen=True)
class CoreFoldConstantsPass(ModulePass):
    name = "core-fold-constants"
    static_shape: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in list(op.walk()):
            if not isinstance(function, func.FuncOp) or function.is_declaration:
                continue
            check_acyclic(function.body.block)
            for inner in list(function.body.walk()):
                fold_op(inner, self.static_shape)
            update_signature(function)

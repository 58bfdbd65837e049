"""core-to-tpu: place each function's core computation in a `tpu.region` of tpu ops.

Input: core dialect with static shapes (run core-infer-shapes, and core-fold-constants with
static-shape=true so that shape subgraphs are constants). Output: `func.func` bodies made of
one `tpu.region` and `func.return`; inside, tpu ops (jax.lax primitives) only.

Each core op is lowered by tracing its `semantics` to a jaxpr at the op's shapes (cached per
op kind, attributes and shapes) and emitting one tpu op per primitive. A dynamic input
dimension is an error that names the input and the dimension and says how to fix it.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr, TensorType
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from mlconv.dialects import tpu
from mlconv.dialects.core_base import CoreOp
from mlconv.dialects.core_custom import CustomOp
from mlconv.dialects.core_tensor import ConstantOp
from mlconv.errors import MlconvError, PassFailure
from mlconv.passes.jaxpr_to_tpu import JaxprEmitter, aval_type
from mlconv.semantics.tracing import StaticOperandMissing, static_types, trace


def input_name(function: func.FuncOp, index: int) -> str:
    """The model input's name (`mlconv.name` argument attribute), else `arg<index>`."""
    if function.arg_attrs is not None:
        name = function.arg_attrs.data[index].data.get("mlconv.name")
        if isinstance(name, StringAttr):
            return name.data
    return f"arg{index}"


def check_static_inputs(function: func.FuncOp) -> None:
    for index, arg in enumerate(function.body.block.args):
        if not isinstance(arg.type, TensorType):
            raise PassFailure(
                f"input '{input_name(function, index)}' has no ranked tensor type ({arg.type})"
            )
        shape = arg.type.get_shape()
        dynamic = [i for i, d in enumerate(shape) if d < 0]
        if dynamic:
            name = input_name(function, index)
            example = ",".join("1" if d < 0 else str(d) for d in shape)
            dims = ", ".join(str(d) for d in dynamic)
            text = "x".join("?" if d < 0 else str(d) for d in shape)
            raise PassFailure(
                f"input '{name}' has dynamic dimension {dims} (shape {text}); the TPU needs "
                f"static shapes: fix them with input-shapes={name}:{example}"
            )


class _Lowering:
    def __init__(self, block: Block):
        self.block = block
        self.mapping: dict[SSAValue, SSAValue] = {}

    def value(self, old: SSAValue) -> SSAValue:
        """The lowered value; constants are materialized at their first dynamic use, so the
        shapes and axes that tracing consumed leave nothing behind."""
        if old not in self.mapping and isinstance(old.owner, ConstantOp):
            constant = old.owner
            new = tpu.ConstantOp.create(
                attributes={"value": constant.value}, result_types=[constant.output.type]
            )
            new.location = constant.location
            self.block.add_op(new)
            self.mapping[old] = new.output
        return self.mapping[old]

    def lower(self, op: Operation) -> None:
        if isinstance(op, ConstantOp):
            return
        if not isinstance(op, CoreOp):
            raise PassFailure.at(op, "has no lowering to the tpu dialect")
        if isinstance(op, CustomOp) and not static_types(op.results):
            problem = op.missing_implementation()  # only it could give the result shapes
            if problem:
                raise PassFailure.at(op, problem)
        if not static_types(op.operands) or not static_types(op.results):
            raise PassFailure.at(
                op, "has a dynamic shape; the TPU needs static shapes (set input-shapes)"
            )
        try:
            closed_jaxpr, dynamic = trace(op)
        except StaticOperandMissing as missing:
            raise PassFailure.at(
                op,
                f"operand '{missing.operand}' must be a constant to lower to the TPU; run "
                "core-fold-constants{static-shape=true} first",
            ) from None
        except MlconvError:
            raise  # located already (an op in a control-flow body)
        except Exception as error:
            raise PassFailure.at(op, f"cannot be lowered: {error}".splitlines()[0]) from None
        traced = [aval_type(v.aval) for v in closed_jaxpr.jaxpr.outvars]
        expected = [r.type for r in op.results]
        if traced != expected:
            raise PassFailure.at(
                op, f"result types {expected} disagree with its semantics {traced}"
            )
        emitter = JaxprEmitter(self.block.add_op, op.location)
        outputs = emitter.emit(closed_jaxpr, [self.value(v) for v in dynamic])
        for old, new in zip(op.results, outputs, strict=True):
            self.mapping[old] = new


def lower_function(function: func.FuncOp) -> None:
    body = function.body.block
    ops = list(body.ops)
    terminator = ops[-1] if ops else None
    if not isinstance(terminator, func.ReturnOp):
        raise PassFailure(f"function @{function.sym_name.data} must end with func.return")
    if not any(isinstance(op, CoreOp) for op in ops):
        return
    check_static_inputs(function)
    arg_types = [a.type for a in body.args]
    region_block = Block(arg_types=arg_types)
    lowering = _Lowering(region_block)
    lowering.mapping.update(zip(body.args, region_block.args, strict=True))
    for op in ops[:-1]:
        lowering.lower(op)
    returned = [lowering.value(v) for v in terminator.arguments]
    region_block.add_op(tpu.YieldOp.create(operands=returned))
    region = tpu.RegionOp.create(
        operands=list(body.args),
        result_types=[v.type for v in returned],
        regions=[Region(region_block)],
        attributes={"device": StringAttr("tpu")},
    )
    new_return = func.ReturnOp(*region.results)
    for op in reversed(ops):
        op.detach()
        op.erase(safe_erase=False)
    body.add_op(region)
    body.add_op(new_return)
    function.function_type = func.FunctionType.from_lists(
        arg_types, [r.type for r in region.results]
    )


@dataclass(frozen=True)
class CoreToTpuPass(ModulePass):
    name = "core-to-tpu"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in list(op.walk()):
            if isinstance(function, func.FuncOp) and not function.is_declaration:
                lower_function(function)

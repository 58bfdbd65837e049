"""tpu-batch: put the computation to batch inside a `tpu.batch` op carrying the BatchOptions.

Input: tpu-level IR (`@main` made of `tpu.region`s and `func.return`). Output: the same, with
the batched part moved into the body of one `tpu.batch` op per batched component:

- `component=default` (the seed's default batching): each `tpu.region` of `@main`;
- `component=function_alias` / `concrete_function_name`: the `region`-th `tpu.region`
  (mlconv-convert resolves the function's name to it), its name kept as `component_name`;
- `component=signature_name`: everything `@main` computes, from its arguments to its results.

The seed's shape requirements are checked on the batched values' types (every input has a
dimension, the inputs' 0th dimensions are equal, each output's 0th dimension is their sum);
a breach is a one-line error in the seed's words at the op. The other options are recorded
as given; the batcher (converter/batcher.py) acts on them at run time.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    BoolAttr,
    DenseArrayBase,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    i64,
)
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from mlconv.dialects import tpu
from mlconv.errors import PassFailure


def batch_attributes(pass_: TpuBatchPass) -> dict[str, object]:
    attributes = {
        "num_batch_threads": IntegerAttr(pass_.num_batch_threads, i64),
        "max_batch_size": IntegerAttr(pass_.max_batch_size, i64),
        "batch_timeout_micros": IntegerAttr(pass_.batch_timeout_micros, i64),
        "allowed_batch_sizes": DenseArrayBase.from_list(i64, list(pass_.allowed_batch_sizes)),
        "max_enqueued_batches": IntegerAttr(pass_.max_enqueued_batches, i64),
        "disable_large_batch_splitting": BoolAttr.from_bool(pass_.disable_large_batch_splitting),
        "component": StringAttr(pass_.component),
    }
    if pass_.component_name:
        attributes["component_name"] = StringAttr(pass_.component_name)
    return attributes


def wrap(ops: list[Operation], attributes: dict[str, object], anchor: Operation) -> tpu.BatchOp:
    """Move `ops` (consecutive, in one block) into a new tpu.batch op placed where they were.
    Its operands are the values they use from outside; its results the values used after."""
    inside = set(ops)
    inputs: list[SSAValue] = []
    for op in ops:
        for operand in op.operands:
            if operand.owner not in inside and operand not in inputs:
                inputs.append(operand)
    outputs: list[SSAValue] = []
    for op in ops:
        for result in op.results:
            if any(use.operation not in inside for use in result.uses) and result not in outputs:
                outputs.append(result)
    location = ops[0].location
    problem = tpu.batch_shape_problem([v.type for v in inputs], [v.type for v in outputs])
    if problem:
        raise PassFailure.at(anchor, problem)
    block = Block(arg_types=[v.type for v in inputs])
    batch = tpu.BatchOp.create(
        operands=inputs,
        result_types=[v.type for v in outputs],
        regions=[Region(block)],
        attributes=attributes,
    )
    batch.location = location
    parent = ops[0].parent_block()
    parent.insert_op_before(batch, ops[0])
    for old, new in zip(outputs, batch.results, strict=True):
        _replace_uses(old, new, lambda user: user not in inside)
    for op in ops:
        op.detach()
        block.add_op(op)
    for old, arg in zip(inputs, block.args, strict=True):
        _replace_uses(old, arg, lambda user: user is not batch and batch.is_ancestor(user))
    block.add_op(tpu.YieldOp.create(operands=outputs))
    return batch


def _replace_uses(old: SSAValue, new: SSAValue, where) -> None:
    for use in list(old.uses):
        if where(use.operation):
            use.operation.operands[use.index] = new


@dataclass(frozen=True)
class TpuBatchPass(ModulePass):
    """tpu-batch: wrap the batched TPU functions (or the signature) in tpu.batch with BatchOptions."""

    name = "tpu-batch"

    num_batch_threads: int = 1
    max_batch_size: int = 8
    batch_timeout_micros: int = 0
    allowed_batch_sizes: tuple[int, ...] = ()
    max_enqueued_batches: int = 10
    disable_large_batch_splitting: bool = False
    component: str = "default"
    component_name: str = ""
    region: int = 0

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.component not in tpu.BATCH_COMPONENTS:
            raise PassFailure(
                f"tpu-batch: component must be one of {', '.join(tpu.BATCH_COMPONENTS)}, "
                f"got {self.component!r}"
            )
        sizes = list(self.allowed_batch_sizes)
        if self.max_batch_size <= 0:
            raise PassFailure(
                f"tpu-batch: max_batch_size must be positive, got {self.max_batch_size}"
            )
        if sizes and (sizes[0] <= 0 or any(b <= a for a, b in zip(sizes, sizes[1:], strict=False))):
            raise PassFailure(
                f"tpu-batch: allowed_batch_sizes: entries must increase monotonically (got {sizes})"
            )
        if sizes and sizes[-1] != self.max_batch_size:
            raise PassFailure(
                f"tpu-batch: allowed_batch_sizes: the last entry ({sizes[-1]}) must equal "
                f"max_batch_size ({self.max_batch_size})"
            )
        attributes = batch_attributes(self)
        for function in list(op.walk()):
            if isinstance(function, func.FuncOp) and not function.is_declaration:
                self.batch_function(function, attributes)

    def batch_function(self, function: func.FuncOp, attributes: dict[str, object]) -> None:
        body = function.body.block
        if any(isinstance(o, tpu.BatchOp) for o in body.ops):
            raise PassFailure(f"@{function.sym_name.data} is already batched (tpu.batch)")
        regions = [o for o in body.ops if isinstance(o, tpu.RegionOp)]
        if not regions:
            return
        if self.component == "signature_name":
            ops = [o for o in body.ops if not isinstance(o, func.ReturnOp)]
            wrap(ops, attributes, ops[0])
        elif self.component == "default":
            for region in regions:
                wrap([region], attributes, region)
        else:
            if not 0 <= self.region < len(regions):
                raise PassFailure(
                    f"tpu-batch: region {self.region} does not exist (@{function.sym_name.data} "
                    f"has {len(regions)} tpu.region op(s))"
                )
            wrap([regions[self.region]], attributes, regions[self.region])


def _placed_within(model: Path, alias: str, placement: dict[str, str]) -> int | None:
    """The index of the TPU function that runs the SavedModel function `alias` names (itself
    or a function calling it, e.g. the serving signature placed by default), or None."""
    if not model.is_dir():
        return None
    # lazy: loads 4 more modules (frontends, signature)
    from mlconv.frontends.tf_importer import reachable, read_saved_model

    meta = read_saved_model(model).meta_graphs[0]
    names = [n for n, a in meta.meta_info_def.function_aliases.items() if a == alias]
    library = {f.signature.name: f for f in meta.graph_def.library.function}
    for index, concrete in enumerate(placement.values()):
        if any(n in reachable(library, [concrete]) for n in names):
            return index
    return None


def batch_pass_for(
    options, model: Path, function_names: list[str], placement: dict[str, str]
) -> TpuBatchPass:
    """The tpu-batch pass for ConverterOptions' `batch_options` (mlconv-convert): one entry,
    its `experimental.batch_component` resolved to a TPU function (by alias or concrete name)
    or to the signature @main computes. Errors name the option."""
    entries = list(options)
    if len(entries) > 1:
        raise PassFailure(
            f"batch_options: {len(entries)} entries given; this version batches one component "
            "(give one batch_options entry)"
        )
    (batch,) = entries
    kind = (
        batch.experimental.WhichOneof("batch_component") if batch.HasField("experimental") else None
    )
    value = getattr(batch.experimental, kind) if kind else ""
    region = 0
    field = f"batch_options[0].experimental.{kind}"
    if kind in ("function_alias", "concrete_function_name"):
        if kind == "function_alias":
            known = function_names or ["tpu_function_0"]
            index = _placed_within(model, value, placement)
            if value not in known and index is not None:  # placed within a TPU function
                known = [*known[:index], value, *known[index + 1 :]]
        else:
            known = list(placement.values())  # in the order of the TPU functions
        if value not in known:
            raise PassFailure(
                f"{field}: {value!r} is not a TPU function of this conversion (TPU functions: "
                f"{', '.join(known) or 'none: not a SavedModel'}); mlconv batches TPU functions "
                "or the signature"
            )
        region = known.index(value)
    elif kind == "signature_name":
        known = ["serving_default"]
        if model.is_dir():
            # lazy: loads 4 more modules (frontends, signature)
            from mlconv.frontends.tf_importer import read_saved_model

            meta = read_saved_model(model).meta_graphs[0]
            known = [k for k in meta.signature_def if not k.startswith("__")]
        if value not in known:
            raise PassFailure(f"{field}: no signature {value!r} (signatures: {', '.join(known)})")
    return TpuBatchPass(
        num_batch_threads=batch.num_batch_threads or 1,
        max_batch_size=batch.max_batch_size,
        batch_timeout_micros=batch.batch_timeout_micros,
        allowed_batch_sizes=tuple(batch.allowed_batch_sizes),
        max_enqueued_batches=batch.max_enqueued_batches or 10,
        disable_large_batch_splitting=batch.disable_large_batch_splitting,
        component=kind or "default",
        component_name=value,
        region=region,
    )

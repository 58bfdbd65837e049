"""tpu-report: cost each tpu.region with XLA's own cost analysis (seed 003's conversion report).

Input: tpu dialect. Output: the same IR, each `tpu.region` in a function body (or a
`tpu.batch`, costed for the rows it was converted for) annotated with
`cost = {flops = ..., transcendentals = ..., bytes_accessed = ...}` from XLA's HLO cost
analysis of the region as one jitted program (its constants passed as arguments, as the backend
does, so nothing is folded away). Host ops between regions (tpu-io-shapes' reshapes) cost
nothing: they are views.

`format_report(tpu_costs, cpu_cost)` writes the report in the seed's wording, a function's
cost being its FLOPs plus transcendentals (the TPU's work; memory traffic is reported in the
manifest beside it); mlconv-convert prints it and writes it to OUTDIR/conversion_report.txt:

    -------- Conversion Report --------
    TPU cost of the model: 96.67% (2034/2104)
    CPU cost of the model:  3.33% (70/2104)
    ...
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import jax
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, ModuleOp, i64
from xdsl.passes import ModulePass

from mlconv.dense import numpy_dtype, to_numpy
from mlconv.dialects import tpu
from mlconv.errors import PassFailure

COST_KEYS = {
    "flops": "flops",
    "transcendentals": "transcendentals",
    "bytes accessed": "bytes_accessed",
}


def region_cost(region: tpu.RegionOp) -> dict[str, int]:
    """XLA's cost analysis of `region` compiled alone (HLO level, before backend passes)."""

    # lazy: loads 1 more module (semantics)
    from mlconv.semantics.tpu_blocks import interpret_block

    block = region.body.block
    constants = [op for op in region.body.walk() if isinstance(op, tpu.ConstantOp)]
    values = [to_numpy(op.value) for op in constants]

    def program(args, weights):
        return interpret_block(block, dict(zip(constants, weights, strict=True)), args)

    specs = [
        jax.ShapeDtypeStruct(tuple(a.type.get_shape()), numpy_dtype(a.type.get_element_type()))
        for a in block.args
    ]
    weights = [jax.ShapeDtypeStruct(v.shape, v.dtype) for v in values]
    try:
        analysis = jax.jit(program).lower(specs, weights).cost_analysis() or {}
    except Exception as error:  # a region XLA cannot lower is the backend's error to report
        raise PassFailure.at(region, f"cannot be costed: {error}".splitlines()[0]) from None
    if isinstance(analysis, list | tuple):  # older jax: one dict per computation
        analysis = analysis[0] if analysis else {}
    return {ours: int(analysis.get(theirs, 0)) for theirs, ours in COST_KEYS.items()}


def cost_of(region: tpu.RegionOp) -> dict[str, int] | None:
    """The cost tpu-report recorded on `region`, if any."""
    attr = region.attributes.get("cost")
    if not isinstance(attr, DictionaryAttr):
        return None
    return {k: v.value.data for k, v in attr.data.items() if isinstance(v, IntegerAttr)}


def work(cost: Mapping[str, int]) -> int:
    """A function's cost in the report: its arithmetic (FLOPs and transcendentals)."""
    return int(cost.get("flops", 0)) + int(cost.get("transcendentals", 0))


def format_report(tpu_costs: Mapping[str, int], cpu_cost: int) -> str:
    """The seed's conversion report for TPU functions costing `tpu_costs` and a host part
    costing `cpu_cost`."""
    tpu_total = sum(tpu_costs.values())
    total = tpu_total + cpu_cost

    def percent(cost: int) -> float:
        return 100.0 * cost / total if total else 0.0

    rule = "-" * 32
    lines = [
        "-------- Conversion Report --------",
        f"TPU cost of the model: {percent(tpu_total):5.2f}% ({tpu_total}/{total})",
        f"CPU cost of the model: {percent(cpu_cost):5.2f}% ({cpu_cost}/{total})",
        "",
        "Cost breakdown",
        "=" * 32,
        f"{'%':<10}{'Cost':<8}Name",
        rule,
        f"{percent(cpu_cost):<10.2f}{cpu_cost:<8}[CPU cost]",
        *(f"{percent(c):<10.2f}{c:<8}{name}" for name, c in tpu_costs.items()),
        rule,
    ]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class TpuReportPass(ModulePass):
    """tpu-report: annotate each tpu.region with XLA's cost analysis (flops, transcendentals, bytes accessed) for the conversion report."""

    name = "tpu-report"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for region in [r for r in op.walk() if isinstance(r, tpu.RegionOp)]:
            if isinstance(region.parent_op(), func.FuncOp | tpu.BatchOp):
                cost = region_cost(region)
                region.attributes["cost"] = DictionaryAttr(
                    {k: IntegerAttr(v, i64) for k, v in cost.items()}
                )

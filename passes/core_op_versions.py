"""core-op-versions: write each core op at the lowest OpenVINO opset version that has the
features it uses (seed 002's rule for TFLite, applied to OpenVINO's opsets).

Input: core dialect. Output: the same ops, each carrying `opset = N : i64` (the version an
OpenVINO IR writer puts in `version="opsetN"`; `op_version(op)` reads it, or the op class's
`VERSION` where the pass has not run). An op class's `VERSION` is the opset whose
specification its semantics follows; `VERSION_RULES` lowers it where an older version of the
op computes the same thing with the attributes and operands this op uses:

- Gelu: opset2 for `ERF` (Gelu-2 has no `approximation_mode`), opset7 for `TANH`;
- Softmax: opset1 for a non-negative axis (Softmax-8 added negative axes);
- Pad: opset1 without negative (cropping) pads (Pad-12 added them);
- ShapeOf: opset1 for an i64 result (ShapeOf-3 added `output_type`);
- TopK: opset1 unless `stable` (TopK-11);
- Gather: opset1 without `batch_dims` and with constant non-negative indices, opset7 with
  `batch_dims` and such indices, else opset8 (negative indices);
- GatherND: opset5 without `batch_dims` (GatherND-8 keeps batch dims unmerged);
- ScatterElementsUpdate: opset3 without `reduction` (ScatterElementsUpdate-12);
- MaxPool: opset1 without dilations (MaxPool-8 added them).

With `target-opset=N` the pass fails, listing every op newer than opset N in one error.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, NameLoc, i64
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from mlconv.dialects.core_base import CoreOp, constant_value
from mlconv.errors import OptionError, PassFailure

ATTRIBUTE = "opset"


def _gelu(op: CoreOp) -> int:
    return 2 if op.attribute_values()["approximation_mode"].upper() == "ERF" else 7


def _softmax(op: CoreOp) -> int:
    return 1 if op.attribute_values()["axis"] >= 0 else 8


def _pad(op: CoreOp) -> int:
    if op.attribute_values()["pad_mode"] not in ("constant", "edge", "reflect", "symmetric"):
        return op.VERSION
    pads = [constant_value(v) for v in (op.pads_begin, op.pads_end)]
    if any(p is None for p in pads) or min(int(p.min(initial=0)) for p in pads) < 0:
        return 12
    return 1


def _shape_of(op: CoreOp) -> int:
    return 1 if op.attribute_values()["output_type"] == np.dtype(np.int64) else 3


def _top_k(op: CoreOp) -> int:
    return 11 if op.attribute_values()["stable"] else 1


def _gather(op: CoreOp) -> int:
    indices = constant_value(op.indices)
    if indices is None or (indices.size and int(indices.min()) < 0):
        return 8
    return 1 if op.attribute_values()["batch_dims"] == 0 else 7


def _gather_nd(op: CoreOp) -> int:
    return 5 if op.attribute_values()["batch_dims"] == 0 else 8


def _scatter_elements_update(op: CoreOp) -> int:
    return 3 if op.attribute_values()["reduction"] == "none" else 12


def _max_pool(op: CoreOp) -> int:
    dilations = op.attribute_values()["dilations"] or ()
    return 1 if all(d == 1 for d in dilations) else 8


VERSION_RULES: dict[str, Callable[[CoreOp], int]] = {
    "core.Gelu": _gelu,
    "core.Softmax": _softmax,
    "core.Pad": _pad,
    "core.ShapeOf": _shape_of,
    "core.TopK": _top_k,
    "core.Gather": _gather,
    "core.GatherND": _gather_nd,
    "core.ScatterElementsUpdate": _scatter_elements_update,
    "core.MaxPool": _max_pool,
}


def minimum_version(op: CoreOp) -> int:
    """The lowest opset version of `op`'s kind that has the features this op uses."""
    rule = VERSION_RULES.get(op.name)
    return min(rule(op), op.VERSION) if rule else op.VERSION


def op_version(op: CoreOp) -> int:
    """The opset version `op` is written at: set by core-op-versions, else its class's."""
    attr = op.attributes.get(ATTRIBUTE)
    return attr.value.data if isinstance(attr, IntegerAttr) else op.VERSION


def _where(op: Operation) -> str:
    loc = op.location
    return f'loc("{loc.desc.data}")' if isinstance(loc, NameLoc) else "loc(unknown)"


@dataclass(frozen=True)
class CoreOpVersionsPass(ModulePass):
    """core-op-versions: set each core op's `opset` to the lowest version it needs;
    `target-opset=N` fails listing every op newer than opset N."""

    name = "core-op-versions"
    target_opset: int = 0

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.target_opset < 0:
            raise OptionError(f"core-op-versions: bad target-opset {self.target_opset}")
        too_new = []
        for child in op.walk():
            if not isinstance(child, CoreOp):
                continue
            version = minimum_version(child)
            child.attributes[ATTRIBUTE] = IntegerAttr(version, i64)
            if self.target_opset and version > self.target_opset:
                too_new.append(f"{child.name} needs opset{version} at {_where(child)}")
        if too_new:
            raise PassFailure(
                f"{len(too_new)} op(s) are newer than opset{self.target_opset}: "
                + "; ".join(too_new)
            )


__all__ = ["ATTRIBUTE", "VERSION_RULES", "CoreOpVersionsPass", "minimum_version", "op_version"]

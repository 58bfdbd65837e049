"""Building a module's `@main`: what every importer (ONNX, TF, TFLite, OpenVINO IR) and the
converter's stitched and host-part functions write the same way. Light (xDSL's func and builtin
dialects only), so that an importer does not load the core dialect; `module_io.value_names`
reads the names back."""

from __future__ import annotations

from collections.abc import Iterable

from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, StringAttr
from xdsl.ir import Block, Region


def name_attrs(names: Iterable[str]) -> ArrayAttr:
    """`arg_attrs`/`res_attrs` giving each argument or result its `mlconv.name` (what
    `value_names` reads back)."""
    return ArrayAttr([DictionaryAttr({"mlconv.name": StringAttr(n)}) for n in names])


def main_function(
    block: Block, input_names: Iterable[str], output_names: Iterable[str]
) -> func.FuncOp:
    """`@main` of `block`, which ends in its `func.return`: the types from the block's arguments
    and the returned values, each argument and result named (`name_attrs`)."""
    returned = block.last_op.operands
    return func.FuncOp(
        "main",
        ([a.type for a in block.args], [v.type for v in returned]),
        Region(block),
        arg_attrs=name_attrs(input_names),
        res_attrs=name_attrs(output_names),
    )

"""Operands and results of any IRDL op grouped by their declared definitions: one list per
operand or result definition (empty for an absent optional, several for a variadic). The
onnx and tf dialects declare one definition per framework input/output slot, so these groups
are the slots the framework's own positions refer to."""

from __future__ import annotations

from xdsl.ir import SSAValue
from xdsl.irdl import IRDLOperation


def grouped(op: IRDLOperation, names: list[str]) -> list[list[SSAValue]]:
    """The values of `op`'s fields `names`, one list each (empty for an absent optional)."""
    groups: list[list[SSAValue]] = []
    for name in names:
        value = getattr(op, name)
        if value is None:
            groups.append([])
        elif isinstance(value, SSAValue):
            groups.append([value])
        else:
            groups.append(list(value))
    return groups


def operand_groups(op: IRDLOperation) -> list[list[SSAValue]]:
    return grouped(op, [name for name, _ in type(op).get_irdl_definition().operands])


def result_groups(op: IRDLOperation) -> list[list[SSAValue]]:
    return grouped(op, [name for name, _ in type(op).get_irdl_definition().results])

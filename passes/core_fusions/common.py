"""What the fusion patterns share: reading constants, walking producers, building ops.

A fusion replaces the root op of a subgraph; the ops it bypasses are left without uses and
`core-fuse` removes them afterwards. An inner op whose result is used elsewhere as well is not
fused away (it would have to stay, and the fused op would compute it a second time): `single`
checks that.
"""

from __future__ import annotations

import numpy as np
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter

from mlconv.dialects import core_tensor as ct
from mlconv.dialects.core_base import CoreOp, constant_value

# Constants written by exporters in float32 (1/sqrt(2), sqrt(2/pi), 1/6 ...) match within this.
RTOL = 1e-5


def build(op_class: type[CoreOp], operands: list, result_type, location, **attributes) -> CoreOp:
    op = op_class.build_op(operands, [result_type], **attributes)
    op.location = location
    return op


def constant(array: np.ndarray, location) -> ct.ConstantOp:
    op = ct.ConstantOp.from_numpy(np.ascontiguousarray(array))
    op.location = location
    return op


def insert_constant(array: np.ndarray, anchor: Operation, rewriter: PatternRewriter) -> SSAValue:
    """A new core.Constant inserted before the op being rewritten."""
    op = constant(array, anchor.location)
    rewriter.insert(op)
    return op.output


def scalar(value: SSAValue) -> float | None:
    """The value of a constant holding one element (any shape), else None."""
    array = constant_value(value)
    if array is None or array.size != 1 or not np.issubdtype(array.dtype, np.floating):
        return None
    # The shortest decimal that reads back as the stored float: 1e-05, not 9.99999974e-06.
    return float(str(array.reshape(-1)[0]))


def is_scalar(value: SSAValue, expected: float) -> bool:
    found = scalar(value)
    return found is not None and bool(np.isclose(found, expected, rtol=RTOL, atol=0.0))


def owner(value: SSAValue, op_class: type[CoreOp] | tuple[type[CoreOp], ...]) -> CoreOp | None:
    """The op defining `value` if it is an `op_class`, else None."""
    op = value.owner
    return op if isinstance(op, op_class) else None


def single(value: SSAValue) -> bool:
    """`value` has exactly one use (the op being fused)."""
    return value.uses.get_length() == 1


def other(op: Operation, value: SSAValue) -> SSAValue | None:
    """The operand of binary `op` that is not `value` (None if `value` is not an operand)."""
    a, b = op.operands[:2]
    return b if a is value else a if b is value else None


def operand_pairs(op: Operation) -> tuple[tuple[SSAValue, SSAValue], ...]:
    """Both orders of a commutative binary op's operands."""
    a, b = op.operands[:2]
    return ((a, b), (b, a))


def product_factors(op: Operation, limit: int = 4) -> list[SSAValue]:
    """The factors of the tree of core.Multiply ops rooted at `op`, looking through inner
    multiplies used only there (x * 0.5 * y in any association)."""
    # lazy: loads 1 more module (dialects)
    from mlconv.dialects import core_elementwise as ew

    factors = list(op.operands[:2])
    expanded = True
    while expanded and len(factors) < limit:
        expanded = False
        for index, factor in enumerate(factors):
            inner = owner(factor, ew.MultiplyOp)
            if inner is not None and single(factor):
                factors[index : index + 1] = [inner.input_1, inner.input_2]
                expanded = True
                break
    return factors


def take(factors: list[SSAValue], test) -> SSAValue | None:
    """Remove and return the first factor for which `test` holds."""
    for index, factor in enumerate(factors):
        if test(factor):
            return factors.pop(index)
    return None


def same_type(a: SSAValue, b: SSAValue) -> bool:
    return a.type == b.type


def explicit_attributes(op: CoreOp) -> dict:
    """The attributes `op` carries, as Python values (defaults it leaves out stay out)."""
    return {key: value for key, value in op.attribute_values().items() if key in op.attributes}

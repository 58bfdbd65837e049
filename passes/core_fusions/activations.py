"""Activation fusions: Swish, HSigmoid, HSwish, SoftPlus, Mish, GELU (erf and tanh forms).

Each matches the subgraph as the exporters write it: Keras/TensorFlow (through tf-to-core),
tf2onnx and torch.onnx (through onnx-to-core), in any association of the products:

- Swish: x * sigmoid(x), x * sigmoid(beta * x) (Keras 3's silu writes beta = 1), and seed
  000's x / (1 + exp(-beta * x)).
- HSigmoid: relu6(x + 3) / 6 or * (1/6), relu6 as Clamp(0, 6), Minimum(Maximum(., 0), 6) or
  Minimum(Relu(.), 6); and HardSigmoid(x, alpha = 1/6, beta = 0.5) (torch's hardsigmoid).
- HSwish: x * HSigmoid(x) and x * relu6(x + 3) / 6 (Keras' hard_swish).
- SoftPlus: log(exp(x) + 1). Mish: x * tanh(SoftPlus(x)).
- GELU: 0.5 * x * (1 + erf(x / sqrt(2))) (torch), 0.5 * x * (1 - erf(-x * (1/sqrt(2))))
  (Keras 3), and 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))).
"""

from __future__ import annotations

import math

from xdsl.ir import SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from mlconv.dialects import core_elementwise as ew
from mlconv.dialects.core_base import CoreOp, constant_value
from mlconv.passes.core_fusions.common import (
    build,
    insert_constant,
    is_scalar,
    operand_pairs,
    other,
    owner,
    product_factors,
    scalar,
    single,
    take,
)


def _replace(
    op: CoreOp, op_class: type[CoreOp], operands: list, rewriter: PatternRewriter, **attributes
):
    fused = build(op_class, operands, op.results[0].type, op.location, **attributes)
    rewriter.replace(op, fused, [fused.output])


# --- Swish ---------------------------------------------------------------------------------------


def _beta(x: SSAValue, argument: SSAValue) -> SSAValue | None | bool:
    """For sigmoid(t): None if t is x (beta 1), the beta value if t = beta * x with a constant
    scalar beta, else False."""
    if argument is x:
        return None
    scaled = owner(argument, ew.MultiplyOp)
    if scaled is not None:
        beta = other(scaled, x)
        if beta is not None and scalar(beta) is not None:
            return None if scalar(beta) == 1.0 else beta
    return False


def _swish(op: CoreOp, x: SSAValue, beta: SSAValue | None, rewriter: PatternRewriter) -> None:
    operands = [x]
    if beta is not None:
        array = constant_value(beta)
        operands.append(
            beta if array.ndim == 0 else insert_constant(array.reshape(()), op, rewriter)
        )
    _replace(op, ew.SwishOp, operands, rewriter)


class FuseSwishFromSigmoid(RewritePattern):
    """x * sigmoid(x) and x * sigmoid(beta * x), beta a constant scalar."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ew.MultiplyOp, rewriter: PatternRewriter) -> None:
        for x, gate in operand_pairs(op):
            sigmoid = owner(gate, ew.SigmoidOp)
            if sigmoid is None or not single(gate):
                continue
            beta = _beta(x, sigmoid.arg)
            if beta is not False:
                _swish(op, x, beta, rewriter)
                return


class FuseSwishFromDivision(RewritePattern):
    """x / (1 + exp(-(beta * x))) (seed 000's example), beta a constant scalar."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ew.DivideOp, rewriter: PatternRewriter) -> None:
        x, denominator = op.input_1, op.input_2
        add = owner(denominator, ew.AddOp)
        if add is None or not single(denominator):
            return
        for one, exp in operand_pairs(add):
            exp_op = owner(exp, ew.ExpOp)
            if not is_scalar(one, 1.0) or exp_op is None or not single(exp):
                continue
            negative = owner(exp_op.arg, ew.NegativeOp)
            if negative is None:
                continue
            beta = _beta(x, negative.arg)
            if beta is not False:
                _swish(op, x, beta, rewriter)
                return


# --- HSigmoid / HSwish ---------------------------------------------------------------------------


def _relu6_argument(value: SSAValue) -> SSAValue | None:
    """u where value = relu6(u): Clamp(u, 0, 6), Minimum(Maximum(u, 0), 6), Minimum(Relu(u), 6)."""
    clamp = owner(value, ew.ClampOp)
    if clamp is not None:
        bounds = clamp.attribute_values()
        return clamp.arg if (bounds["min"], bounds["max"]) == (0.0, 6.0) else None
    minimum = owner(value, ew.MinimumOp)
    if minimum is None:
        return None
    for inner, six in operand_pairs(minimum):
        if not is_scalar(six, 6.0) or not single(inner):
            continue
        relu = owner(inner, ew.ReluOp)
        if relu is not None:
            return relu.arg
        maximum = owner(inner, ew.MaximumOp)
        if maximum is not None:
            for u, zero in operand_pairs(maximum):
                if is_scalar(zero, 0.0):
                    return u
    return None


def _plus_three(x_plus_3: SSAValue) -> SSAValue | None:
    """x where the value is x + 3 (used only there)."""
    add = owner(x_plus_3, ew.AddOp)
    if add is None or not single(x_plus_3):
        return None
    for x, three in operand_pairs(add):
        if is_scalar(three, 3.0):
            return x
    return None


def _relu6_of_x_plus_3(value: SSAValue) -> SSAValue | None:
    """x where value = relu6(x + 3), every inner value used only there."""
    if not single(value):
        return None
    u = _relu6_argument(value)
    return None if u is None else _plus_three(u)


def _scaled_by_sixth(op: CoreOp) -> list[SSAValue] | None:
    """The other factors of op = (product) * (1/6) or (product) / 6."""
    if isinstance(op, ew.DivideOp):
        if not is_scalar(op.input_2, 6.0):
            return None
        numerator = owner(op.input_1, ew.MultiplyOp)
        if numerator is not None and single(op.input_1):
            return product_factors(numerator)
        return [op.input_1]
    factors = product_factors(op)
    return factors if take(factors, lambda f: is_scalar(f, 1.0 / 6.0)) is not None else None


class FuseHSigmoidAndHSwish(RewritePattern):
    """relu6(x + 3) / 6 -> HSigmoid(x); x * relu6(x + 3) / 6 -> HSwish(x) (either scaling)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ew.MultiplyOp | ew.DivideOp, rewriter: PatternRewriter) -> None:
        factors = _scaled_by_sixth(op)
        if factors is None:
            return
        if len(factors) == 1:
            x = _relu6_of_x_plus_3(factors[0])
            if x is not None:
                _replace(op, ew.HSigmoidOp, [x], rewriter)
            return
        if len(factors) == 2:
            for x, gate in (factors, factors[::-1]):
                if _relu6_of_x_plus_3(gate) is x:
                    _replace(op, ew.HSwishOp, [x], rewriter)
                    return


class FuseHSigmoidFromHardSigmoid(RewritePattern):
    """HardSigmoid(x, alpha = 1/6, beta = 0.5) (torch's hardsigmoid) is HSigmoid."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ew.HardSigmoidOp, rewriter: PatternRewriter) -> None:
        if is_scalar(op.alpha, 1.0 / 6.0) and is_scalar(op.beta, 0.5):
            _replace(op, ew.HSigmoidOp, [op.data], rewriter)


class FuseHSwishFromHSigmoid(RewritePattern):
    """x * HSigmoid(x) is HSwish(x)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ew.MultiplyOp, rewriter: PatternRewriter) -> None:
        for x, gate in operand_pairs(op):
            hsigmoid = owner(gate, ew.HSigmoidOp)
            if hsigmoid is not None and hsigmoid.arg is x and single(gate):
                _replace(op, ew.HSwishOp, [x], rewriter)
                return


# --- SoftPlus / Mish -----------------------------------------------------------------------------


class FuseSoftPlus(RewritePattern):
    """log(exp(x) + 1) is SoftPlus(x)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ew.LogOp, rewriter: PatternRewriter) -> None:
        add = owner(op.arg, ew.AddOp)
        if add is None or not single(op.arg):
            return
        for exp, one in operand_pairs(add):
            exp_op = owner(exp, ew.ExpOp)
            if exp_op is not None and single(exp) and is_scalar(one, 1.0):
                _replace(op, ew.SoftPlusOp, [exp_op.arg], rewriter)
                return


class FuseMish(RewritePattern):
    """x * tanh(SoftPlus(x)) is Mish(x)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ew.MultiplyOp, rewriter: PatternRewriter) -> None:
        for x, gate in operand_pairs(op):
            tanh = owner(gate, ew.TanhOp)
            if tanh is None or not single(gate):
                continue
            softplus = owner(tanh.arg, ew.SoftPlusOp)
            if softplus is not None and softplus.arg is x and single(tanh.arg):
                _replace(op, ew.MishOp, [x], rewriter)
                return


# --- GELU ----------------------------------------------------------------------------------------

_SQRT2 = math.sqrt(2.0)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def _scaled(value: SSAValue, x: SSAValue, factor: float) -> bool:
    """value = x * factor, or x / (1 / factor)."""
    if isinstance(value.owner, ew.MultiplyOp):
        return any(a is x and is_scalar(c, factor) for a, c in operand_pairs(value.owner))
    if isinstance(value.owner, ew.DivideOp):
        return value.owner.input_1 is x and is_scalar(value.owner.input_2, 1.0 / factor)
    return False


def _negated(value: SSAValue, x: SSAValue) -> bool:
    return isinstance(value.owner, ew.NegativeOp) and value.owner.arg is x


def _minus_x_over_sqrt2(argument: SSAValue, x: SSAValue) -> bool:
    """argument = -(x / sqrt(2)), (-x) / sqrt(2) or (-x) * (1/sqrt(2))."""
    if isinstance(argument.owner, ew.NegativeOp):
        return _scaled(argument.owner.arg, x, 1.0 / _SQRT2)
    scaled = argument.owner
    if isinstance(scaled, ew.MultiplyOp | ew.DivideOp):
        for negative in scaled.operands:
            if isinstance(negative.owner, ew.NegativeOp) and negative.owner.arg is x:
                return _scaled(argument, negative, 1.0 / _SQRT2)
    return False


def _erf_gate(gate: SSAValue, x: SSAValue) -> bool:
    """gate = 1 + erf(x / sqrt(2)), or 1 - erf(-x / sqrt(2)) (Keras 3; erf is odd)."""
    if not single(gate):
        return False
    combine = gate.owner
    if isinstance(combine, ew.AddOp):
        for one, erf in operand_pairs(combine):
            if is_scalar(one, 1.0) and isinstance(erf.owner, ew.ErfOp) and single(erf):
                return _scaled(erf.owner.arg, x, 1.0 / _SQRT2)
    if isinstance(combine, ew.SubtractOp) and is_scalar(combine.input_1, 1.0):
        erf = combine.input_2
        if isinstance(erf.owner, ew.ErfOp) and single(erf):
            return _minus_x_over_sqrt2(erf.owner.arg, x)
    return False


def _cube(value: SSAValue, x: SSAValue) -> bool:
    """value = x^3 as Power(x, 3) or a product of three x."""
    if isinstance(value.owner, ew.PowerOp):
        return value.owner.input_1 is x and is_scalar(value.owner.input_2, 3.0)
    if isinstance(value.owner, ew.MultiplyOp):
        factors = product_factors(value.owner)
        return len(factors) == 3 and all(f is x for f in factors)
    return False


def _tanh_gate(gate: SSAValue, x: SSAValue) -> bool:
    """gate = 1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))."""
    add = owner(gate, ew.AddOp)
    if add is None or not single(gate):
        return False
    for one, tanh in operand_pairs(add):
        if not is_scalar(one, 1.0) or not isinstance(tanh.owner, ew.TanhOp) or not single(tanh):
            continue
        inner = tanh.owner.arg
        scaled = owner(inner, ew.MultiplyOp)
        if scaled is None:
            continue
        for polynomial, c in operand_pairs(scaled):
            if not is_scalar(c, _SQRT_2_OVER_PI) or not isinstance(polynomial.owner, ew.AddOp):
                continue
            for first, term in operand_pairs(polynomial.owner):
                cubic = owner(term, ew.MultiplyOp)
                if first is not x or cubic is None:
                    continue
                if any(is_scalar(k, 0.044715) and _cube(p, x) for p, k in operand_pairs(cubic)):
                    return True
    return False


class FuseGelu(RewritePattern):
    """0.5 * x * (1 + erf(x / sqrt(2))) -> Gelu(ERF); 0.5 * x * (1 + tanh(...)) -> Gelu(TANH)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ew.MultiplyOp, rewriter: PatternRewriter) -> None:
        factors = product_factors(op)
        if len(factors) != 3 or take(factors, lambda f: is_scalar(f, 0.5)) is None:
            return
        for x, gate in (factors, factors[::-1]):
            if _erf_gate(gate, x):
                _replace(op, ew.GeluOp, [x], rewriter, approximation_mode="ERF")
                return
            if _tanh_gate(gate, x):
                _replace(op, ew.GeluOp, [x], rewriter, approximation_mode="TANH")
                return


PATTERNS = (
    FuseSwishFromSigmoid(),
    FuseSwishFromDivision(),
    FuseHSigmoidAndHSwish(),
    FuseHSigmoidFromHardSigmoid(),
    FuseHSwishFromHSigmoid(),
    FuseSoftPlus(),
    FuseMish(),
    FuseGelu(),
)

__all__ = ["PATTERNS"]

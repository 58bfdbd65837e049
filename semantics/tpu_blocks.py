"""A tpu block evaluated under JAX tracing: each tpu op binds its jax primitive, control flow
(tpu.cond/while/scan) becomes the lax construct it came from with its bodies evaluated the
same way. The JAX back end jits it per region; the converter exports it; tpu-report costs it."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from jax import lax
from xdsl.ir import Block, Operation, SSAValue

from mlconv.dialects import tpu
from mlconv.errors import BackendError


def interpret_block(
    block: Block, constants: Mapping[Operation, Any], args: Sequence[Any]
) -> list[Any]:
    """Evaluate a region body under tracing: each op binds its primitive; `constants` gives
    each tpu.constant's (jit argument) value, nested bodies included."""
    env: dict[SSAValue, Any] = dict(zip(block.args, args, strict=True))
    for op in block.ops:
        if isinstance(op, tpu.ConstantOp):
            env[op.output] = constants[op]
        elif isinstance(op, tpu.YieldOp):
            return [env[v] for v in op.values]
        elif isinstance(op, tpu.PrimitiveOp):
            inputs = [env[v] for v in op.operands]
            out = tpu.primitive(op.PRIMITIVE).bind(*inputs, **op.params())
            outputs = out if op.MULTIPLE_RESULTS else [out]
            env.update(zip(op.results, outputs, strict=True))
        elif type(op) in CONTROL_FLOW:
            outputs = CONTROL_FLOW[type(op)](op, constants, [env[v] for v in op.operands])
            env.update(zip(op.results, outputs, strict=True))
        else:
            raise BackendError.at(op, "cannot run in a tpu.region")
    raise BackendError("tpu.region without tpu.yield")


# --- control flow: bodies are interpreted inside the lax construct they came from -------------

Body = Callable[[Block], Callable[..., list[Any]]]
"""How a control-flow op's runner evaluates one of its blocks: block -> function of its args."""


def _body(block: Block, constants: Mapping[Operation, Any]) -> Callable[..., list[Any]]:
    return lambda *values: interpret_block(block, constants, values)


def _run_cond(op: tpu.CondOp, body: Body, inputs: list[Any]) -> list[Any]:
    branches = [body(region.block) for region in op.branches]
    return list(lax.switch(inputs[0], branches, *inputs[1:]))


def _run_while(op: tpu.WhileOp, body_of: Body, inputs: list[Any]) -> list[Any]:
    cond_n, body_n = op.cond_nconsts.value.data, op.body_nconsts.value.data
    cond_consts, body_consts = inputs[:cond_n], inputs[cond_n : cond_n + body_n]
    cond, body = body_of(op.cond.block), body_of(op.body.block)
    return list(
        lax.while_loop(
            lambda carry: cond(*cond_consts, *carry)[0],
            lambda carry: tuple(body(*body_consts, *carry)),
            tuple(inputs[cond_n + body_n :]),
        )
    )


def _run_scan(op: tpu.ScanOp, body_of: Body, inputs: list[Any]) -> list[Any]:
    n_consts, n_carry = op.num_consts.value.data, op.num_carry.value.data
    consts, carry, xs = (
        inputs[:n_consts],
        inputs[n_consts : n_consts + n_carry],
        inputs[n_consts + n_carry :],
    )
    body = body_of(op.body.block)

    def step(carry, slices):
        out = body(*consts, *carry, *slices)
        return tuple(out[:n_carry]), tuple(out[n_carry:])

    final, stacked = lax.scan(
        step,
        tuple(carry),
        tuple(xs),
        length=op.length.value.data,
        reverse=bool(op.reverse.value.data),
    )
    return [*final, *stacked]


RUNNERS: dict[type, Callable[[Any, Body, list[Any]], list[Any]]] = {
    tpu.CondOp: _run_cond,
    tpu.WhileOp: _run_while,
    tpu.ScanOp: _run_scan,
}
"""Each control-flow op as its lax construct, its blocks evaluated by the `Body` given (the
symbolic export passes one that binds the generalized parameters)."""


def _with_constants(
    runner: Callable[[Any, Body, list[Any]], list[Any]],
) -> Callable[..., list[Any]]:
    def run(op: Any, constants: Mapping[Operation, Any], inputs: list[Any]) -> list[Any]:
        return runner(op, lambda block: _body(block, constants), inputs)

    return run


CONTROL_FLOW: dict[type, Callable[..., list[Any]]] = {
    kind: _with_constants(runner) for kind, runner in RUNNERS.items()
}

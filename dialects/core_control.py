"""Control-flow core ops: If, Loop, Scan (OpenVINO If-8, Loop-5, TensorIterator-0), ops whose
bodies are single-block regions of core ops ending in `core.Yield`.

Bodies do not reach outside: every outer value a body uses is an operand of the op (the
`captured` group) and a block argument of each body, so a body is a closed function of its
block arguments. `semantics` runs the bodies inside `lax.cond` / `lax.while_loop` / `lax.scan`
with the body runner it is handed as the keyword `run_block` (`mlconv.semantics.binding`, which
evaluates each body op's own `semantics`; this module does not import it: dialects do not import
the code that runs semantics). Shape inference, folding and core-to-tpu (which then meets the
`cond`, `while` and `scan` primitives) follow from it as for every other core op.

Captured operands that are constants reach the body as numpy arrays, so body ops whose static
operands (shapes, axes) are outer constants still evaluate.
"""

from __future__ import annotations

from typing import Any, ClassVar

import jax
import jax.numpy as jnp
from jax import lax
from xdsl.ir import Block
from xdsl.irdl import IRDLOperation, irdl_op_definition, region_def, traits_def, var_operand_def
from xdsl.traits import IsTerminator
from xdsl.utils.exceptions import VerifyException

from mlconv.dialects.core_base import INT, INTS, CoreOp, constant_value, core_op


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Ends a control-flow body: the values the body gives back (an If branch's results, a
    Loop body's condition, carried values and scan slices, a Scan body's state and slices).

        core.Yield %cond, %sum : tensor<i1>, tensor<2xf32>
    """

    name = "core.Yield"
    values = var_operand_def()
    traits = traits_def(IsTerminator())
    assembly_format = "attr-dict ($values^ `:` type($values))?"


# --- bodies -----------------------------------------------------------------------------------


def _body_args(
    block: Block, dynamic: list[Any], captured: list[Any], constants: dict[int, Any]
) -> list[Any]:
    captured = [constants.get(i, value) for i, value in enumerate(captured)]
    return [*dynamic, *captured]


class _ControlOp(CoreOp):
    """What If, Loop and Scan share: bodies and captured values reach `semantics` as
    attributes (`attribute_values` adds them); the body runner as the keyword `run_block`,
    which callers of `semantics` add for ops that declare `BODIES`
    (`mlconv.semantics.binding.semantics_attributes`)."""

    BODIES: ClassVar[tuple[str, ...]] = ()

    def attribute_values(self) -> dict[str, Any]:
        values = super().attribute_values()
        for body in self.BODIES:
            values[body] = getattr(self, body).block
        captured = self.operand_groups()[-1]
        values["captured_constants"] = {
            i: array for i, v in enumerate(captured) if (array := constant_value(v)) is not None
        }
        return values

    def verify_semantics(self) -> None:
        captured = self.operand_groups()[-1]
        for body in self.BODIES:
            block = getattr(self, body).block
            if not isinstance(block.last_op, YieldOp):
                raise VerifyException(f"body '{body}' must end with core.Yield")
            if len(block.args) < len(captured):
                raise VerifyException(f"body '{body}' needs one block argument per captured value")
            tail = block.args[len(block.args) - len(captured) :] if captured else ()
            for arg, value in zip(tail, captured, strict=True):
                if arg.type != value.type:
                    raise VerifyException(
                        f"body '{body}': captured block argument types must match the captured operands"
                    )


# --- If -------------------------------------------------------------------------------------


@core_op(operands=("cond", "*captured"), results=("*outputs",))
class IfOp(_ControlOp):
    """`then_branch` if `cond` (a one-element boolean tensor) is true, else `else_branch`
    (OpenVINO opset8 If). Both branches take the captured values as block arguments and must
    yield values of the same types.

        %r = "core.If"(%c, %x) ({
        ^bb0(%a: tensor<5xf32>):
          core.Yield %a : tensor<5xf32>
        }, {
        ^bb0(%a: tensor<5xf32>):
          %n = "core.Negative"(%a) : (tensor<5xf32>) -> tensor<5xf32>
          core.Yield %n : tensor<5xf32>
        }) : (tensor<i1>, tensor<5xf32>) -> tensor<5xf32>
    """

    name = "core.If"
    VERSION = 8
    BODIES = ("then_branch", "else_branch")
    then_branch = region_def("single_block")
    else_branch = region_def("single_block")

    @staticmethod
    def semantics(cond, *captured, then_branch, else_branch, captured_constants, run_block):
        predicate = jnp.reshape(jnp.asarray(cond), ()).astype(bool)

        def branch(block):
            return lambda *values: tuple(
                run_block(block, _body_args(block, [], list(values), captured_constants))
            )

        return list(lax.cond(predicate, branch(then_branch), branch(else_branch), *captured))


# --- Loop -----------------------------------------------------------------------------------


@core_op(
    operands=("trip_count", "execution_condition", "*initial", "*captured"),
    attributes={"max_iterations": (INT, -1)},
    results=("*outputs",),
)
class LoopOp(_ControlOp):
    """A loop with ONNX/OpenVINO Loop-5 semantics: while `i < trip_count` and the condition
    holds, run `body(i, condition, *carried, *captured)`, which yields the next condition,
    the next carried values and one slice per scan output. Results: the final carried values,
    then the scan outputs, each the iterations' slices stacked on a new leading axis.

    Scan outputs have a static leading size, `max_iterations` (the constant trip count, or
    the size the model declares): the loop runs at most that often and rows of iterations
    that did not run are zero. Carried values keep their shapes across iterations.

        %y, %ys = "core.Loop"(%n, %true, %y0) ({
        ^bb0(%i: tensor<i64>, %c: tensor<i1>, %y: tensor<1xf32>):
          %next = "core.Add"(%y, %y) : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32>
          core.Yield %c, %next, %next : tensor<i1>, tensor<1xf32>, tensor<1xf32>
        }) {max_iterations = 5 : i64} : (tensor<i64>, tensor<i1>, tensor<1xf32>)
            -> (tensor<1xf32>, tensor<5x1xf32>)
    """

    name = "core.Loop"
    VERSION = 5
    BODIES = ("body",)
    body = region_def("single_block")

    def attribute_values(self) -> dict[str, Any]:
        values = _ControlOp.attribute_values(self)  # core_op rebuilds the class: no bare super()
        values["num_carried"] = len(self.operand_groups()[2])
        return values

    @staticmethod
    def semantics(
        trip_count,
        condition,
        *values,
        body,
        max_iterations,
        num_carried,
        captured_constants,
        run_block,
    ):
        carried, captured = list(values[:num_carried]), list(values[num_carried:])
        trip = jnp.reshape(jnp.asarray(trip_count), ()).astype(jnp.int64)
        keep_going = jnp.reshape(jnp.asarray(condition), ()).astype(bool)

        def step(i, cond, state):
            out = run_block(body, _body_args(body, [i, cond, *state], captured, captured_constants))
            return (
                jnp.reshape(out[0], ()).astype(bool),
                out[1 : 1 + num_carried],
                out[1 + num_carried :],
            )

        probe = jax.eval_shape(lambda *s: step(jnp.int64(0), keep_going, list(s))[2], *carried)
        if probe and max_iterations < 0:
            raise ValueError("a Loop with scan outputs needs max_iterations")
        if probe:
            trip = jnp.minimum(trip, max_iterations)
        buffers = [jnp.zeros((max(max_iterations, 0), *p.shape), p.dtype) for p in probe]

        def cond_fn(loop_state):
            i, cond, _, _ = loop_state
            return jnp.logical_and(i < trip, cond)

        def body_fn(loop_state):
            i, cond, state, scans = loop_state
            cond, state, slices = step(i, cond, state)
            scans = [
                lax.dynamic_update_index_in_dim(b, s, i, 0)
                for b, s in zip(scans, slices, strict=True)
            ]
            return (
                i + 1,
                cond,
                [jnp.asarray(s).astype(c.dtype) for s, c in zip(state, carried, strict=True)],
                scans,
            )

        _, _, final, scans = lax.while_loop(
            cond_fn, body_fn, (jnp.int64(0), keep_going, [jnp.asarray(c) for c in carried], buffers)
        )
        return [*final, *scans]


# --- Scan -----------------------------------------------------------------------------------


@core_op(
    operands=("*initial", "*scan_inputs", "*captured"),
    attributes={
        "scan_input_axes": (INTS, ()),
        "scan_input_directions": (INTS, ()),
        "scan_output_axes": (INTS, ()),
        "scan_output_directions": (INTS, ()),
    },
    results=("*outputs",),
)
class ScanOp(_ControlOp):
    """Iterate a body over slices of the scan inputs (ONNX Scan-9+, OpenVINO TensorIterator):
    `body(*state, *slices, *captured)` yields the next state and one slice per scan output.
    Scan input k is sliced along `scan_input_axes[k]` (default 0), last to first where
    `scan_input_directions[k]` is 1; scan output k stacks its slices along
    `scan_output_axes[k]`, in reverse where `scan_output_directions[k]` is 1. Results: the
    final state, then the scan outputs.

        %s, %ys = "core.Scan"(%s0, %xs) ({
        ^bb0(%s: tensor<2xf32>, %x: tensor<2xf32>):
          %n = "core.Add"(%s, %x) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
          core.Yield %n, %n : tensor<2xf32>, tensor<2xf32>
        }) : (tensor<2xf32>, tensor<3x2xf32>) -> (tensor<2xf32>, tensor<3x2xf32>)
    """

    name = "core.Scan"
    VERSION = 0
    BODIES = ("body",)
    body = region_def("single_block")

    def attribute_values(self) -> dict[str, Any]:
        values = _ControlOp.attribute_values(self)
        groups = self.operand_groups()
        values["num_initial"], values["num_scan_inputs"] = len(groups[0]), len(groups[1])
        return values

    @staticmethod
    def semantics(
        *values,
        body,
        num_initial,
        num_scan_inputs,
        captured_constants,
        scan_input_axes,
        scan_input_directions,
        scan_output_axes,
        scan_output_directions,
        run_block,
    ):
        initial = [jnp.asarray(v) for v in values[:num_initial]]
        inputs = list(values[num_initial : num_initial + num_scan_inputs])
        captured = list(values[num_initial + num_scan_inputs :])

        def setting(table, k):
            return table[k] if k < len(table) else 0

        xs = []
        for k, x in enumerate(inputs):
            x = jnp.moveaxis(jnp.asarray(x), setting(scan_input_axes, k), 0)
            xs.append(jnp.flip(x, 0) if setting(scan_input_directions, k) else x)

        def step(state, slices):
            out = run_block(body, _body_args(body, [*state, *slices], captured, captured_constants))
            next_state = [
                jnp.asarray(s).astype(c.dtype)
                for s, c in zip(out[:num_initial], initial, strict=True)
            ]
            return next_state, out[num_initial:]

        final, ys = lax.scan(step, initial, xs)
        outputs = []
        for k, y in enumerate(ys):
            y = jnp.flip(y, 0) if setting(scan_output_directions, k) else y
            axis = setting(scan_output_axes, k)
            outputs.append(jnp.moveaxis(y, 0, axis if axis >= 0 else axis + y.ndim))
        return [*final, *outputs]


OPS = [YieldOp, IfOp, LoopOp, ScanOp]

"""Recurrent core ops: RNNSequence, GRUSequence, LSTMSequence (OpenVINO opset5).

Layouts are OpenVINO's: X is batch x seq x input, initial states batch x dirs x hidden, W is
dirs x gates*hidden x input, R dirs x gates*hidden x hidden, B dirs x gates*hidden, Y batch x
dirs x seq x hidden. Gate order: LSTM f, i, c, o; GRU z, r, h. Each direction is one lax.scan;
steps past a batch entry's sequence length keep its state and output zeros, and the reverse
direction reads each sequence backwards from its own last valid step.
"""

from __future__ import annotations

import jax.numpy as jnp
from jax import lax

from mlconv.dialects.core_base import BOOL, FLOAT, FLOATS, INT, STR, STRS, CoreOp, core_op


def _activation(name: str, alpha: float | None, beta: float | None):
    name = name.lower()
    table = {
        "sigmoid": jax_sigmoid,
        "tanh": jnp.tanh,
        "relu": lambda x: jnp.maximum(x, 0),
        "affine": lambda x: alpha * x + beta,
        "leakyrelu": lambda x: jnp.where(x >= 0, x, alpha * x),
        "thresholdedrelu": lambda x: jnp.where(x > alpha, x, 0),
        "scaledtanh": lambda x: alpha * jnp.tanh(beta * x),
        "hardsigmoid": lambda x: jnp.clip(alpha * x + beta, 0, 1),
        "elu": lambda x: jnp.where(x >= 0, x, alpha * (jnp.exp(x) - 1)),
        "softsign": lambda x: x / (1 + jnp.abs(x)),
        "softplus": lambda x: jnp.log1p(jnp.exp(x)),
    }
    if name not in table:
        raise ValueError(f"unknown activation '{name}'")
    return table[name]


def jax_sigmoid(x):
    return 1 / (1 + jnp.exp(-x))


# Default alpha/beta of the ONNX activations that take them.
_PARAMETERS = {
    "affine": (1.0, 0.0),
    "leakyrelu": (0.01, None),
    "thresholdedrelu": (1.0, None),
    "scaledtanh": (1.0, 1.0),
    "hardsigmoid": (0.2, 0.5),
    "elu": (1.0, None),
}


def activations(names, alphas, betas):
    """Activation functions; alphas/betas are consumed in order by those that take them."""
    alphas, betas = list(alphas), list(betas)
    functions = []
    for name in names:
        default = _PARAMETERS.get(name.lower(), (None, None))
        alpha = alphas.pop(0) if default[0] is not None and alphas else default[0]
        beta = betas.pop(0) if default[1] is not None and betas else default[1]
        functions.append(_activation(name, alpha, beta))
    return functions


def run_sequence(cell, x, states, lengths, weights, direction, count):
    """Scan `cell(x_t, states, weights_d, d) -> (new_states, h)` over each direction."""
    batch, seq = x.shape[:2]
    if lengths is None:
        lengths = jnp.full((batch,), seq, jnp.int64)
    lengths = lengths.astype(jnp.int64)
    steps = jnp.arange(seq)
    outputs, finals = [], []
    for d in range(count):
        reverse = direction == "reverse" or (direction == "bidirectional" and d == 1)
        # position read at step t: t forwards, lengths-1-t backwards (clamped past the end)
        position = steps[:, None] if not reverse else lengths[None, :] - 1 - steps[:, None]
        position = jnp.clip(position, 0, seq - 1)  # seq x batch
        xs = jnp.take_along_axis(jnp.swapaxes(x, 0, 1), position[:, :, None], axis=0)
        valid = steps[:, None] < lengths[None, :]  # seq x batch

        def step(carry, inputs, d=d):
            x_t, valid_t = inputs
            new, h = cell(x_t, carry, d)
            keep = valid_t[:, None]
            carry = tuple(jnp.where(keep, n, c) for n, c in zip(new, carry, strict=True))
            return carry, jnp.where(keep, h, 0)

        initial = tuple(s[:, d] for s in states)
        final, ys = lax.scan(step, initial, (xs, valid))
        if reverse:  # back to input positions: the same index map, undone
            ys = jnp.take_along_axis(ys, position[:, :, None], axis=0)
            ys = jnp.where(valid[:, :, None], ys, 0)
        outputs.append(jnp.swapaxes(ys, 0, 1))  # batch x seq x hidden
        finals.append(final)
    y = jnp.stack(outputs, axis=1)
    states_out = [jnp.stack([f[i] for f in finals], axis=1) for i in range(len(states))]
    return y, states_out


def _clipped(clip):
    return (lambda v: jnp.clip(v, -clip, clip)) if clip and clip > 0 else (lambda v: v)


_RNN_ATTRIBUTES = {
    "hidden_size": INT,
    "direction": (STR, "forward"),
    "activations_alpha": (FLOATS, ()),
    "activations_beta": (FLOATS, ()),
    "clip": (FLOAT, 0.0),
}


def _directions(rnn, per_direction):
    """From the `_RNN_ATTRIBUTES` values (and `activations`): the number of directions, each
    direction's `per_direction` activation functions, and the clip applied before them."""
    count = 2 if rnn["direction"] == "bidirectional" else 1
    functions = activations_of(
        rnn["activations"], rnn["activations_alpha"], rnn["activations_beta"], per_direction, count
    )
    return count, functions, _clipped(rnn["clip"])


@core_op(
    operands=("x", "initial_hidden_state", "?sequence_lengths", "w", "r", "b"),
    attributes={**_RNN_ATTRIBUTES, "activations": (STRS, ("tanh",))},
    results=("y", "ho"),
)
class RNNSequenceOp(CoreOp):
    """Elman RNN over a sequence: H = f(X W^T + H R^T + B) (OpenVINO opset5 RNNSequence;
    sequence_lengths optional here: all steps when absent). Example:

        %y, %h = "core.RNNSequence"(%x, %h0, %w, %r, %b) {hidden_size = 4 : i64}
               : (tensor<3x2x5xf32>, tensor<3x1x4xf32>, tensor<1x4x5xf32>, tensor<1x4x4xf32>,
                  tensor<1x4xf32>) -> (tensor<3x1x2x4xf32>, tensor<3x1x4xf32>)
    """

    name = "core.RNNSequence"
    VERSION = 5

    @staticmethod
    def semantics(X, initial_hidden_state, sequence_lengths, W, R, B, **rnn):
        count, functions, clipped = _directions(rnn, 1)

        def cell(x_t, carry, d):
            (h,) = carry
            f = functions[d][0]
            h = f(clipped(x_t @ W[d].T + h @ R[d].T + B[d]))
            return (h,), h

        y, (ho,) = run_sequence(
            cell, X, (initial_hidden_state,), sequence_lengths, None, rnn["direction"], count
        )
        return y, ho


def activations_of(names, alphas, betas, per_direction, count):
    """The activation functions of each direction (a forward-only list serves both)."""
    functions = activations(names, alphas, betas)
    if len(functions) < per_direction * count:
        functions = functions[:per_direction] * count
    return [functions[d * per_direction : (d + 1) * per_direction] for d in range(count)]


@core_op(
    operands=("x", "initial_hidden_state", "?sequence_lengths", "w", "r", "b"),
    attributes={
        **_RNN_ATTRIBUTES,
        "activations": (STRS, ("sigmoid", "tanh")),
        "linear_before_reset": (BOOL, False),
    },
    results=("y", "ho"),
)
class GRUSequenceOp(CoreOp):
    """GRU over a sequence, gates z, r, h (OpenVINO opset5 GRUSequence). B is
    dirs x 3*hidden (W and R biases summed), or dirs x 4*hidden with `linear_before_reset`
    (z, r summed; then W's and R's h biases apart). Example:

        %y, %h = "core.GRUSequence"(%x, %h0, %w, %r, %b) {hidden_size = 4 : i64}
               : (tensor<3x2x5xf32>, tensor<3x1x4xf32>, tensor<1x12x5xf32>,
                  tensor<1x12x4xf32>, tensor<1x12xf32>) -> (tensor<3x1x2x4xf32>, tensor<3x1x4xf32>)
    """

    name = "core.GRUSequence"
    VERSION = 5

    @staticmethod
    def semantics(
        X, initial_hidden_state, sequence_lengths, W, R, B, *, linear_before_reset, **rnn
    ):
        count, functions, clipped = _directions(rnn, 2)
        n = rnn["hidden_size"]

        def cell(x_t, carry, d):
            (h,) = carry
            f, g = functions[d]
            xw = x_t @ W[d].T
            b = B[d]
            zr = xw[:, : 2 * n] + h @ R[d][: 2 * n].T + b[: 2 * n]
            z = f(clipped(zr[:, :n]))
            r = f(clipped(zr[:, n:]))
            if linear_before_reset:
                hidden = r * (h @ R[d][2 * n :].T + b[3 * n :])
                candidate = g(clipped(xw[:, 2 * n :] + hidden + b[2 * n : 3 * n]))
            else:
                hidden = (r * h) @ R[d][2 * n :].T
                candidate = g(clipped(xw[:, 2 * n :] + hidden + b[2 * n :]))
            h = (1 - z) * candidate + z * h
            return (h,), h

        y, (ho,) = run_sequence(
            cell, X, (initial_hidden_state,), sequence_lengths, None, rnn["direction"], count
        )
        return y, ho


@core_op(
    operands=(
        "x",
        "initial_hidden_state",
        "initial_cell_state",
        "?sequence_lengths",
        "w",
        "r",
        "b",
        "?p",
    ),
    attributes={
        **_RNN_ATTRIBUTES,
        "activations": (STRS, ("sigmoid", "tanh", "tanh")),
        "cell_clip": (FLOAT, 0.0),
    },
    results=("y", "ho", "co"),
)
class LSTMSequenceOp(CoreOp):
    """LSTM over a sequence, gates f, i, c, o (OpenVINO opset5 LSTMSequence; mlconv adds the
    optional peepholes P, dirs x 3*hidden in ONNX's order i, o, f, and `cell_clip`: the cell
    state clipped to [-cell_clip, cell_clip] after each update as TFLite's LSTM kernels do, 0
    for none; `clip` is ONNX's, on the activations' inputs). Example:

        %y, %h, %c = "core.LSTMSequence"(%x, %h0, %c0, %w, %r, %b) {hidden_size = 4 : i64}
               : (tensor<3x2x5xf32>, tensor<3x1x4xf32>, tensor<3x1x4xf32>, tensor<1x16x5xf32>,
                  tensor<1x16x4xf32>, tensor<1x16xf32>)
               -> (tensor<3x1x2x4xf32>, tensor<3x1x4xf32>, tensor<3x1x4xf32>)
    """

    name = "core.LSTMSequence"
    VERSION = 5

    @staticmethod
    def semantics(X, initial_hidden_state, initial_cell_state, sequence_lengths, W, R, B, P, **rnn):
        count, functions, clipped = _directions(rnn, 3)
        clip_cell = _clipped(rnn["cell_clip"])
        n = rnn["hidden_size"]

        def cell(x_t, carry, d):
            h, c = carry
            f, g, hf = functions[d]
            gates = x_t @ W[d].T + h @ R[d].T + B[d]
            gf, gi, gc, go = (gates[:, k * n : (k + 1) * n] for k in range(4))
            if P is not None:
                pi, po, pf = P[d][:n], P[d][n : 2 * n], P[d][2 * n :]
                gi, gf = gi + pi * c, gf + pf * c
            i = f(clipped(gi))
            forget = f(clipped(gf))
            c = clip_cell(forget * c + i * g(clipped(gc)))
            if P is not None:
                go = go + po * c
            o = f(clipped(go))
            h = o * hf(c)
            return (h, c), h

        y, (ho, co) = run_sequence(
            cell,
            X,
            (initial_hidden_state, initial_cell_state),
            sequence_lengths,
            None,
            rnn["direction"],
            count,
        )
        return y, ho, co


OPS: list[type[CoreOp]] = [RNNSequenceOp, GRUSequenceOp, LSTMSequenceOp]

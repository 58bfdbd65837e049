"""Recurrent ONNX ops: RNN, GRU, LSTM as core.RNNSequence / GRUSequence / LSTMSequence.

ONNX is sequence-major (layout 0) with states dirs x batch x hidden; core is OpenVINO's
batch-major layout, so inputs and outputs are transposed. W and R biases are summed; LSTM's
gates are reordered from ONNX's i, o, f, c to OpenVINO's f, i, c, o.
"""

from __future__ import annotations

import numpy as np

from mlconv.dialects import core_rnn as rnn
from mlconv.dialects import core_tensor as ct
from mlconv.passes.onnx_patterns import lowering


def _transpose(b, value, order):
    return b(ct.TransposeOp, value, b.ints(order))


def _static_shape(b, value, what):
    shape = value.type.get_shape() if b.rank(value) is not None else None
    if shape is None or any(d < 0 for d in shape):
        raise b.fail(f"needs the static shape of {what}")
    return list(shape)


def _common(op, b, gates):
    x = b.input(op, "X")
    layout = b.attr(op, "layout", 0)
    hidden = op.onnx_attr("hidden_size")
    direction = b.attr(op, "direction", "forward")
    dirs = 2 if direction == "bidirectional" else 1
    x = _transpose(b, x, [1, 0, 2]) if layout == 0 else x
    batch = _static_shape(b, x, "X")[0]
    dtype = b.dtype(x)

    def state(name):
        value = b.input(op, name)
        if value is None:
            return b.const(np.zeros((batch, dirs, hidden), dtype))
        return _transpose(b, value, [1, 0, 2]) if layout == 0 else value

    bias = b.input(op, "B")
    if bias is None:
        bias = b.const(np.zeros((dirs, 2, gates * hidden), dtype))
    else:
        bias = b(ct.ReshapeOp, bias, b.ints([dirs, 2, gates * hidden]))
    lengths = b.input(op, "sequence_lens")
    attributes = {
        "hidden_size": hidden,
        "direction": direction,
        "clip": b.attr(op, "clip", 0.0),
        "activations_alpha": b.attr(op, "activation_alpha", []),
        "activations_beta": b.attr(op, "activation_beta", []),
    }
    names = b.attr(op, "activations", None)
    if names:
        attributes["activations"] = [n.lower() for n in names]
    return x, state, bias, lengths, attributes, layout


def _outputs(op, b, layout, y, *states):
    """The values of the outputs the node has, in order (an omitted Y shifts the others)."""
    if layout == 0:
        values = [_transpose(b, y, [2, 1, 0, 3])] + [_transpose(b, s, [1, 0, 2]) for s in states]
    else:
        values = [_transpose(b, y, [0, 2, 1, 3]), *states]
    return [v for name, v in zip(op.OUTPUTS, values, strict=True) if getattr(op, name) is not None]


@lowering("RNN", 1, 7, 14, 22)
def rnn_(op, b):
    x, state, bias, lengths, attributes, layout = _common(op, b, 1)
    bias = b(ct.ReduceSumOp, bias, b.ints([1]))
    y, h = b(
        rnn.RNNSequenceOp,
        x,
        state("initial_h"),
        lengths,
        b.input(op, "W"),
        b.input(op, "R"),
        bias,
        **attributes,
    )
    return _outputs(op, b, layout, y, h)


@lowering("GRU", 1, 3, 7, 14, 22)
def gru(op, b):
    x, state, bias, lengths, attributes, layout = _common(op, b, 3)
    lbr = bool(b.attr(op, "linear_before_reset", 0))
    hidden = attributes["hidden_size"]
    dirs = 2 if attributes["direction"] == "bidirectional" else 1
    if lbr:
        split = b(ct.ReshapeOp, bias, b.ints([dirs, 2, 3, hidden]))
        summed = b(ct.ReduceSumOp, split, b.ints([1]))  # dirs x 3 x hidden
        zr = b(ct.GatherOp, summed, b.ints([0, 1]), b.ints(1))
        h_parts = b(ct.GatherOp, split, b.ints([2]), b.ints(2))  # dirs x 2 x 1 x hidden
        h_parts = b(ct.ReshapeOp, h_parts, b.ints([dirs, 2, hidden]))
        bias = b(ct.ConcatOp, [zr, h_parts], axis=1)
        bias = b(ct.ReshapeOp, bias, b.ints([dirs, 4 * hidden]))
    else:
        bias = b(ct.ReduceSumOp, bias, b.ints([1]))
    y, h = b(
        rnn.GRUSequenceOp,
        x,
        state("initial_h"),
        lengths,
        b.input(op, "W"),
        b.input(op, "R"),
        bias,
        linear_before_reset=lbr,
        **attributes,
    )
    return _outputs(op, b, layout, y, h)


@lowering("LSTM", 1, 7, 14, 22)
def lstm(op, b):
    if b.attr(op, "input_forget", 0):
        raise b.fail("LSTM with input_forget=1 (coupled input and forget gates) is not supported")
    x, state, bias, lengths, attributes, layout = _common(op, b, 4)
    n = attributes["hidden_size"]
    # ONNX i, o, f, c -> OpenVINO f, i, c, o
    order = b.ints(np.concatenate([np.arange(k * n, (k + 1) * n) for k in (2, 0, 3, 1)]))
    axis = b.ints(1)

    def reorder(value):
        return b(ct.GatherOp, value, order, axis)

    bias = reorder(b(ct.ReduceSumOp, bias, b.ints([1])))
    y, h, c = b(
        rnn.LSTMSequenceOp,
        x,
        state("initial_h"),
        state("initial_c"),
        lengths,
        reorder(b.input(op, "W")),
        reorder(b.input(op, "R")),
        bias,
        b.input(op, "P"),
        **attributes,
    )
    return _outputs(op, b, layout, y, h, c)

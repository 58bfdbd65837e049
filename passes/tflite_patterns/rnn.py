"""TFLite's fused LSTM: UNIDIRECTIONAL_SEQUENCE_LSTM as core.LSTMSequence, the op the ONNX
LSTM lowers to (one recurrent mechanism).

TFLiteConverter fuses tf.keras (Keras 2) LSTM layers into it. Its operands, by TFLite's index:
0 the input; 1-4 input-to-{input, forget, cell, output} weights; 5-8 recurrent-to-{...}
weights; 9-11 peepholes cell-to-{input, forget, output}; 12-15 the gate biases; 16-17 the
projection; 18-19 the output and cell states (variable tensors, zeros: each call starts from
them); 20-23 layer-norm coefficients. core's gate order is f, i, c, o (W, R, B stacked so, one
direction) and its peepholes i, o, f. `fused_activation_function` is the cell's g and h (TANH,
RELU, NONE); `cell_clip` clips the cell state after each update (core.LSTMSequence's
`cell_clip`); `time_major` puts the sequence first. A CIFG LSTM (no input gate), a
projection, layer normalization or diagonal recurrent weights are refused in one line.
"""

from __future__ import annotations

from mlconv.dialects import core
from mlconv.dialects import core_rnn as rnn
from mlconv.passes.tflite_patterns import lowering

_ACTIVATIONS = {"TANH": "tanh", "RELU": "relu", "NONE": "affine"}  # affine: 1 * x + 0
_REFUSED = {
    1: "no input gate (CIFG)",
    16: "a projection",
    20: "layer normalization",
    21: "layer normalization",
    22: "layer normalization",
    23: "layer normalization",
}


@lowering("UNIDIRECTIONAL_SEQUENCE_LSTM")
def unidirectional_sequence_lstm(op, b):
    options = op.options()
    for index, what in _REFUSED.items():
        if (index == 1) == b.absent(op, index):
            raise b.fail(f"has {what}, which mlconv does not lower")
    if options["diagonal_recurrent_tensors"]:
        raise b.fail("has diagonal recurrent weights, which mlconv does not lower")
    activation = _ACTIVATIONS.get(options["fused_activation_function"])
    if activation is None:
        raise b.fail(f"fused activation {options['fused_activation_function']} is not supported")
    x = b.x(op, 0)
    if options["time_major"]:
        x = b.transpose(x, (1, 0, 2))
    n = b.dim(b.x(op, 2), 0)

    def stacked(indices):  # gates f, i, c, o (or peepholes i, o, f), one direction first
        parts = [b.x(op, i) for i in indices]
        return b(core.UnsqueezeOp, b(core.ConcatOp, parts, axis=0), b.ints([0]))

    def state(index):
        return b(core.UnsqueezeOp, b.x(op, index), b.ints([1]))  # batch x 1 x n

    peepholes = None
    if not b.absent(op, 9) or not b.absent(op, 10) or not b.absent(op, 11):
        if b.absent(op, 9) or b.absent(op, 10) or b.absent(op, 11):
            raise b.fail("has some peepholes but not all three, which mlconv does not lower")
        peepholes = stacked([9, 11, 10])
    y, _, _ = b(
        rnn.LSTMSequenceOp,
        x,
        state(18),
        state(19),
        None,
        stacked([2, 1, 3, 4]),
        stacked([6, 5, 7, 8]),
        stacked([13, 12, 14, 15]),
        peepholes,
        hidden_size=n,
        activations=("sigmoid", activation, activation),
        cell_clip=float(options["cell_clip"]),
    )
    y = b(core.SqueezeOp, y, b.ints([1]))  # batch x seq x n
    return [b.transpose(y, (1, 0, 2)) if options["time_major"] else y]

"""Small ONNX models written node by node, for the tests that build their own: one call for the
graph, its float32 inputs and outputs and the model around it.

    from onnx_graphs import float_model
    model = float_model(nodes, {"x": [1, 3, 8, 8]}, {"y": [1, 5]}, weights, opset=17)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import onnx
from onnx import TensorProto, helper


def float_model(
    nodes: Sequence[onnx.NodeProto],
    inputs: Mapping[str, Sequence[int | str]],
    outputs: Mapping[str, Sequence[int | str]],
    initializers: Sequence[onnx.TensorProto] = (),
    *,
    opset: int = 17,
    name: str = "g",
) -> onnx.ModelProto:
    """A model of `nodes` whose inputs and outputs (name: shape, a dim may be a name) are float32,
    importing the default domain at `opset`."""
    graph = helper.make_graph(
        list(nodes),
        name,
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s)) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s)) for n, s in outputs.items()],
        list(initializers),
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])

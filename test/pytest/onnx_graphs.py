"""Small ONNX models written node by node, for the tests that build their own: one call for the
graph, its float32 inputs and outputs and the model around it.

    from onnx_graphs import Weights, float_model
    weight = Weights(np.random.default_rng(0), 0.3)
    nodes = [helper.make_node("MatMul", ["x", weight(4, 5)], ["y"])]
    model = float_model(nodes, {"x": [2, 4]}, {"y": [2, 5]}, weight.initializers, opset=17)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


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


class Weights:
    """Initializers made while the nodes are written: `weight(*shape)` adds a float32 tensor
    of `rng`'s standard normals times `scale`, named w0, w1, ..., and returns its name for a
    node's inputs; `initializers` holds them in order."""

    def __init__(self, rng: np.random.Generator, scale: float):
        self.rng, self.scale = rng, scale
        self.initializers: list[onnx.TensorProto] = []

    def __call__(self, *shape: int) -> str:
        name = f"w{len(self.initializers)}"
        array = (self.rng.standard_normal(shape) * self.scale).astype(np.float32)
        self.initializers.append(numpy_helper.from_array(array, name))
        return name

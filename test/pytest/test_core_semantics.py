"""mlconv.semantics.tracing: one trace per op kind, attributes, static values and operand types,
shared by the lowering's builder, core-infer-shapes and core-to-tpu (compile time)."""

from __future__ import annotations

import numpy as np
import onnxruntime
from onnx import helper, numpy_helper
from onnx_graphs import float_model

from mlconv.backends.jax_backend import compile_module
from mlconv.dialects import make_context
from mlconv.frontends.load import load_model
from mlconv.passes.core_infer_shapes import CoreInferShapesPass
from mlconv.passes.core_to_tpu import CoreToTpuPass
from mlconv.passes.pipelines import lower_to_core
from mlconv.semantics.tracing import clear_traces, trace_misses


def conv_model():
    rng = np.random.default_rng(7)
    inits = [
        numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w1"),
        numpy_helper.from_array(rng.standard_normal((4,)).astype(np.float32), "b1"),
        numpy_helper.from_array(rng.standard_normal((4, 4, 1, 1)).astype(np.float32), "w2"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2"], ["c2"]),
        helper.make_node("Add", ["c2", "r1"], ["a"]),
        helper.make_node("Sigmoid", ["a"], ["y"]),
    ]
    return float_model(nodes, {"x": [1, 3, 8, 8]}, {"y": [1, 4, 8, 8]}, inits)


def test_shape_inference_and_core_to_tpu_reuse_the_lowering_traces():
    model = conv_model()
    clear_traces()
    module = load_model(model)
    lower_to_core(module)
    traced = trace_misses()
    assert traced > 0  # the builder typed each new op from a trace
    ctx = make_context()
    CoreInferShapesPass().apply(ctx, module)
    CoreInferShapesPass().apply(ctx, module)
    CoreToTpuPass().apply(ctx, module)
    assert trace_misses() == traced
    x = np.random.default_rng(8).standard_normal((1, 3, 8, 8)).astype(np.float32)
    (got,) = compile_module(module, "cpu")(x)
    session = onnxruntime.InferenceSession(model.SerializeToString())
    (want,) = session.run(None, {"x": x})
    assert np.std(want) > 0.05
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)

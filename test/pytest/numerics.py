"""Running IR at any level on given inputs, for tests of the invariant "numerics are preserved
by every pass" (../shared/DESIGN.md).

`run_module(module, inputs)` lowers a *clone* of the module to tpu ops (whatever its level:
onnx, core or tpu) with `mlconv.api.lower_to_tpu`, compiles it with the JAX backend and runs it,
so the module given is left as it was and can be run before and after a pass.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType

from mlconv.api import lower_to_tpu
from mlconv.backends.jax_backend import compile_module
from mlconv.dense import numpy_dtype
from mlconv.dialects import make_context
from mlconv.passes.pipeline_spec import parse_pass_pipeline

LIGHT_MODELS = Path(os.path.dirname(onnx.__file__)) / "backend" / "test" / "data" / "light"


def main_function(module: ModuleOp) -> func.FuncOp:
    return next(
        op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == "main"
    )


def random_inputs(module: ModuleOp, seed: int = 0) -> list[np.ndarray]:
    """One random array per `@main` argument (static shapes), standard normal for floats."""
    rng = np.random.default_rng(seed)
    arrays = []
    for arg in main_function(module).body.block.args:
        assert isinstance(arg.type, TensorType), arg.type
        shape = tuple(arg.type.get_shape())
        assert all(d >= 0 for d in shape), f"dynamic input shape {shape}: give input shapes"
        dtype = numpy_dtype(arg.type.get_element_type())
        if np.issubdtype(dtype, np.floating):
            arrays.append(rng.standard_normal(shape).astype(dtype))
        else:
            arrays.append(rng.integers(0, 4, shape).astype(dtype))
    return arrays


def run_module(
    module: ModuleOp, inputs: Sequence[np.ndarray], device: str = "cpu", input_shapes: str = ""
) -> list[np.ndarray]:
    """`@main` of `module` (any level) on `inputs`; the module itself is not changed."""
    clone = module.clone()
    lower_to_tpu(clone, input_shapes)
    return compile_module(clone, device)(*inputs)


def apply_passes(module: ModuleOp, pipeline: str) -> ModuleOp:
    """A clone of `module` with `pipeline` (`a,b{k=v}` or `builtin.module(...)`) applied."""
    clone = module.clone()
    ctx = make_context()
    for module_pass in parse_pass_pipeline(pipeline):
        module_pass.apply(ctx, clone)
    clone.verify()
    return clone


def onnxruntime_outputs(model: str | os.PathLike | onnx.ModelProto, inputs: Sequence[np.ndarray]):
    """The model's outputs on `inputs` (in graph input order) by onnxruntime on the CPU."""
    import onnxruntime

    proto = model if isinstance(model, onnx.ModelProto) else onnx.load(str(model))
    session = onnxruntime.InferenceSession(
        proto.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    names = [i.name for i in session.get_inputs()]
    return session.run(None, dict(zip(names, inputs, strict=True)))


def assert_outputs_close(actual, expected, rtol: float, atol: float, what: str = "") -> None:
    assert len(actual) == len(expected), f"{what}: {len(actual)} outputs, expected {len(expected)}"
    for index, (a, e) in enumerate(zip(actual, expected, strict=True)):
        a, e = np.asarray(a), np.asarray(e)
        assert a.shape == e.shape, f"{what} output {index}: shape {a.shape}, expected {e.shape}"
        np.testing.assert_allclose(a, e, rtol=rtol, atol=atol, err_msg=f"{what} output {index}")


def expose_logits(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of `model` that also outputs the input of each Softmax node.

    The light models' weights are constant fills: their softmax outputs are uniform (0.001 for
    every class) whatever the computation before, so comparing them alone proves little. The
    logits do depend on every layer."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    outputs = {o.name for o in copy.graph.output}
    for node in copy.graph.node:
        if node.op_type == "Softmax" and node.input[0] not in outputs:
            copy.graph.output.append(
                onnx.helper.make_tensor_value_info(node.input[0], onnx.TensorProto.FLOAT, None)
            )
            outputs.add(node.input[0])
    return copy

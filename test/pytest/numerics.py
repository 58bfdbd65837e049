"""Running IR at any level on given inputs, for tests of the invariant "numerics are preserved
by every pass" (../shared/DESIGN.md), and the models those tests run.

`interpret(module, inputs)` runs a module by the reference interpreter of its own level
(`mlconv.interpreters`: onnx ops by onnx.reference, core ops by their semantics, tpu ops by
their primitives, op by op, no pass and no jit in between), so the IR right before a pass and
right after it are each run as they are. `run_module(module, inputs)` is the compiler's way
instead: the rest of the pipeline to tpu ops and one jitted XLA program.

The light models of the onnx wheel build their weights with ConstantOfShape (constant fills):
every output is the same whatever the input. `randomize_weights` gives them seeded random
weights, so that their outputs depend on the input and a wrong layout shows.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
import onnx.numpy_helper
from xdsl.dialects.builtin import ModuleOp, TensorType

from mlconv.backends.jax_backend import compile_module
from mlconv.backends.jax_backend import find_main as main_function
from mlconv.dense import numpy_dtype
from mlconv.dialects import make_context
from mlconv.interpreters import Recorder
from mlconv.interpreters import run_module as _interpret
from mlconv.passes.lowering import registry
from mlconv.passes.pipeline_spec import parse_pass_pipeline
from mlconv.passes.pipelines import lower_to_tpu

LIGHT_MODELS = Path(os.path.dirname(onnx.__file__)) / "backend" / "test" / "data" / "light"


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


def interpret(
    module: ModuleOp, inputs: Sequence[np.ndarray], recorder: Recorder | None = None
) -> list[np.ndarray]:
    """`@main` of `module` on `inputs` by the reference interpreter of the module's level
    (onnx, core or tpu); the module is not changed and no pass runs."""
    return _interpret(module, inputs, recorder)


def run_module(
    module: ModuleOp, inputs: Sequence[np.ndarray], device: str = "cpu", input_shapes: str = ""
) -> list[np.ndarray]:
    """`@main` of `module` (any level) lowered to tpu ops and compiled with JAX (the whole
    pipeline, on a clone: the module itself is not changed)."""
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


def assert_scaled_close(actual, expected, rtol: float, what: str = "") -> None:
    """Each output within `rtol` of the largest |expected| value of that output (a tolerance
    that does not depend on how many values sit near zero)."""
    assert len(actual) == len(expected), f"{what}: {len(actual)} outputs, expected {len(expected)}"
    for index, (a, e) in enumerate(zip(actual, expected, strict=True)):
        a, e = np.asarray(a), np.asarray(e)
        assert a.shape == e.shape, f"{what} output {index}: shape {a.shape}, expected {e.shape}"
        assert a.dtype == e.dtype, f"{what} output {index}: dtype {a.dtype}, expected {e.dtype}"
        if np.issubdtype(e.dtype, np.floating):
            scale = float(np.abs(e).max(initial=0)) or 1.0
            diff = np.abs(a.astype(np.float64) - e.astype(np.float64))
            worst = float(np.nanmax(diff, initial=0)) if diff.size else 0.0
            assert not np.isnan(diff).any() or np.array_equal(np.isnan(a), np.isnan(e)), (
                f"{what} output {index}: NaN where the reference has none"
            )
            assert worst <= rtol * scale, (
                f"{what} output {index}: max abs diff {worst:.3g} is {worst / scale:.3g} of the "
                f"largest |value| {scale:.3g} (allowed {rtol:g})"
            )
        else:
            np.testing.assert_array_equal(a, e, err_msg=f"{what} output {index}")


def expose_logits(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of `model` that also outputs the input of each Softmax node (logits change
    with every layer where softmax outputs may saturate)."""
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


def randomize_weights(
    model: onnx.ModelProto, seed: int, image_size: int | None = None
) -> onnx.ModelProto:
    """A copy of `model` whose weights are seeded random values: every ConstantOfShape (the
    light models' constant fills) becomes an initializer, and every float initializer of more
    than one element is redrawn. Filters and matrices are He-normal (std sqrt(2 / fan_in)) so
    that activations keep a unit size through ReLU layers; vectors (biases, batch-norm
    parameters) are drawn around a value that keeps variances positive. `image_size` sets the
    input's spatial dims (a smaller image for a fast test; the output types are then left to
    shape inference)."""
    rng = np.random.default_rng(seed)
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    graph = copy.graph
    shapes = {t.name: onnx.numpy_helper.to_array(t) for t in graph.initializer}

    def draw(shape: tuple[int, ...], name: str) -> np.ndarray:
        if len(shape) >= 2:
            fan_in = int(np.prod(shape[1:])) if len(shape) > 2 else shape[-1]
            return rng.standard_normal(shape) * np.sqrt(2.0 / max(fan_in, 1))
        if "var" in name or "scale" in name or name.endswith("_s_0"):
            return rng.uniform(0.5, 1.5, shape)
        return rng.normal(0.0, 0.1, shape)

    nodes = []
    for node in graph.node:
        if node.op_type == "ConstantOfShape" and node.input[0] in shapes:
            shape = tuple(int(d) for d in shapes[node.input[0]])
            array = draw(shape, node.output[0]).astype(np.float32)
            graph.initializer.append(onnx.numpy_helper.from_array(array, node.output[0]))
        else:
            nodes.append(node)
    del graph.node[:]
    graph.node.extend(nodes)
    used = {name for node in graph.node for name in node.input}
    kept = [t for t in graph.initializer if t.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    dropped = {name for name in shapes if name not in used}
    inputs = [value for value in graph.input if value.name not in dropped]
    del graph.input[:]
    graph.input.extend(inputs)
    for init in graph.initializer:
        array = onnx.numpy_helper.to_array(init)
        if array.dtype == np.float32 and array.size > 1:
            init.CopyFrom(
                onnx.numpy_helper.from_array(
                    draw(array.shape, init.name).astype(np.float32), init.name
                )
            )
    if image_size is not None:
        initialized = {t.name for t in graph.initializer}
        for value in graph.input:
            dims = value.type.tensor_type.shape.dim
            if value.name not in initialized and len(dims) == 4:
                dims[2].dim_value = dims[3].dim_value = image_size
        for value in graph.output:
            value.type.tensor_type.ClearField("shape")
    return copy


def replace_lowering(monkeypatch, key: tuple[str, str, int], lowering) -> None:
    """For one test, lower (source, op, since-version) `key` to core by `lowering`
    (`lowering(op, b)`, as the pattern tables write it): a wrong pass that the numerics checks
    must catch."""
    registry.load(key[0])
    monkeypatch.setitem(registry.TABLES["core"], key, lowering)

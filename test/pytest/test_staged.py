"""backends/staged.py: a model whose static operands depend on NonZero's results compiles its
shape-static prefix once per input shapes and runs the data-dependent tail per call; an input
whose value reaches a static operand directly still compiles per value (specialize.py).
SSDlite itself: test_exporters_torch.py::test_ssdlite_matches_onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import mlconv
from mlconv.backends.specialize import SpecializingModule
from mlconv.backends.staged import StagedProgram
from mlconv.errors import BackendError


def _nonzero_model(path, seed: int = 0) -> None:
    """y = relu(x @ w + b); the positive entries of y - 0.5 (NonZero -> GatherND), their
    count, and y: the tail's shapes depend on x's values, the prefix's only on x's shape."""
    rng = np.random.default_rng(seed)
    w = numpy_helper.from_array(rng.standard_normal((8, 6)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(6).astype(np.float32), "b")
    half = numpy_helper.from_array(np.array(0.5, np.float32), "half")
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["xw"]),
        helper.make_node("Add", ["xw", "b"], ["pre"]),
        helper.make_node("Relu", ["pre"], ["y"]),
        helper.make_node("Sub", ["y", "half"], ["shifted"]),
        helper.make_node("Greater", ["shifted", "zero"], ["mask"]),
        helper.make_node("NonZero", ["mask"], ["where"]),
        helper.make_node("Transpose", ["where"], ["rows"], perm=[1, 0]),
        helper.make_node("GatherND", ["shifted", "rows"], ["picked"]),
        helper.make_node("Shape", ["picked"], ["count"]),
    ]
    zero = numpy_helper.from_array(np.array(0.0, np.float32), "zero")
    graph = helper.make_graph(
        nodes,
        "nonzero_tail",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 8])],
        [
            helper.make_tensor_value_info("picked", TensorProto.FLOAT, [None]),
            helper.make_tensor_value_info("count", TensorProto.INT64, [1]),
            helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 6]),
        ],
        [w, b, half, zero],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, str(path))


def test_prefix_compiled_once_tail_per_call(tmp_path):
    path = tmp_path / "nonzero.onnx"
    _nonzero_model(path)
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    run = mlconv.compile(str(path), quiet=True)
    assert isinstance(run, SpecializingModule)
    counts = set()
    for seed, n in [(1, 4), (2, 4), (3, 4), (4, 3), (5, 3)]:
        x = np.random.default_rng(seed).standard_normal((n, 8)).astype(np.float32)
        expected = session.run(None, {"x": x})
        got = run(x)
        for e, g in zip(expected, got, strict=True):
            assert g.shape == e.shape and g.dtype == e.dtype
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)
        counts.add(int(expected[1][0]))
    assert len(counts) > 1, "every input picked as many entries: the tail's shapes never moved"
    # One prefix per input shape (4x8, 3x8), whatever the values; both staged.
    assert run.compilations == 2
    assert all(isinstance(p, StagedProgram) for p in run._programs.values())


def test_value_reaching_a_static_operand_directly_compiles_per_value(tmp_path):
    """Reshape's shape is an input: no data-dependent op sits between, so each shape value
    is its own program (the path before staging)."""
    graph = helper.make_graph(
        [helper.make_node("Reshape", ["x", "shape"], ["y"])],
        "reshape_by_input",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6]),
            helper.make_tensor_value_info("shape", TensorProto.INT64, [2]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    path = tmp_path / "reshape.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    run = mlconv.compile(str(path), quiet=True)
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    for shape in ([3, 4], [4, 3], [3, 4]):
        np.testing.assert_array_equal(run(x, np.array(shape)), [x.reshape(shape)])
    assert run.compilations == 2
    assert not any(isinstance(p, StagedProgram) for p in run._programs.values())


def test_tail_op_refusing_its_values_is_one_located_line(tmp_path):
    """The tail reshapes the picked entries to pairs: an odd count is refused by Reshape's
    semantics at run time, as one line naming the op; an even count runs."""
    pairs = numpy_helper.from_array(np.array([-1, 2], np.int64), "pairs")
    zero = numpy_helper.from_array(np.array(0.0, np.float32), "zero")
    graph = helper.make_graph(
        [
            helper.make_node("Greater", ["x", "zero"], ["mask"]),
            helper.make_node("NonZero", ["mask"], ["where"]),
            helper.make_node("Transpose", ["where"], ["rows"], perm=[1, 0]),
            helper.make_node("GatherND", ["x", "rows"], ["picked"]),
            helper.make_node("Reshape", ["picked", "pairs"], ["y"], name="to_pairs"),
        ],
        "pairs",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 2])],
        [pairs, zero],
    )
    path = tmp_path / "pairs.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    run = mlconv.compile(str(path), quiet=True)
    x = np.array([1.0, -2.0, 3.0, 4.0, -5.0, 6.0], np.float32)
    np.testing.assert_array_equal(run(x)[0], [[1.0, 3.0], [4.0, 6.0]])
    with pytest.raises(BackendError) as caught:
        run(np.array([1.0, -2.0, 3.0, 4.0, -5.0, -6.0], np.float32))
    assert "\n" not in str(caught.value) and "to_pairs" in str(caught.value)
    assert run.compilations == 1

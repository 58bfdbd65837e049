"""Every element type the compiler accepts goes end to end: model inputs, dense constants
(initializers), the backend's input conversion and the outputs' dtypes, compared with
onnxruntime (numpy where onnxruntime has no kernel for the type)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import helper, numpy_helper

import mlconv

DTYPES = {
    "bool": np.bool_,
    "int8": np.int8,
    "int16": np.int16,
    "int32": np.int32,
    "int64": np.int64,
    "uint8": np.uint8,
    "uint16": np.uint16,
    "uint32": np.uint32,
    "uint64": np.uint64,
    "float16": np.float16,
    "bfloat16": ml_dtypes.bfloat16,
    "float32": np.float32,
    "float64": np.float64,
}


def sample(dtype, shape=(2, 3), seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype) == np.bool_:
        return rng.integers(0, 2, shape).astype(np.bool_)
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        # extremes too: the input conversion must not clip or wrap them
        values = rng.integers(max(info.min, -100), min(info.max, 100), shape).astype(dtype)
        values.flat[0], values.flat[-1] = info.min, info.max
        return values
    return rng.standard_normal(shape).astype(dtype)


def model(op_type, dtype):
    """`op_type(x, c)` (or `Identity(x)`) with c an initializer of the same type."""
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    inputs = ["x"] if op_type == "Identity" else ["x", "c"]
    initializers = (
        [] if op_type == "Identity" else [numpy_helper.from_array(sample(dtype, seed=1), "c")]
    )
    graph = helper.make_graph(
        [helper.make_node(op_type, inputs, ["y"])],
        f"{op_type}_{np.dtype(dtype).name}",
        [helper.make_tensor_value_info("x", elem, [2, 3])],
        [helper.make_tensor_value_info("y", elem, [2, 3])],
        initializer=initializers,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def reference(proto, x, numpy_fn):
    try:
        session = onnxruntime.InferenceSession(
            proto.SerializeToString(), providers=["CPUExecutionProvider"]
        )
        return session.run(None, {"x": x})[0]
    except Exception:  # no onnxruntime kernel for this type (bfloat16, unsigned Add, ...)
        return numpy_fn()


# Add on bool is Or in ONNX terms; the type does not exist for Add, so bool takes Or.
BINARY = {np.dtype(np.bool_): "Or"}


@pytest.mark.parametrize("name", sorted(DTYPES))
@pytest.mark.parametrize("op_type", ["Identity", "Add"])
def test_element_type_end_to_end(op_type, name):
    dtype = DTYPES[name]
    if op_type == "Add":
        op_type = BINARY.get(np.dtype(dtype), "Add")
    proto = model(op_type, dtype)
    onnx.checker.check_model(proto)
    x = sample(dtype)
    constant = sample(dtype, seed=1)
    numpy_fns = {
        "Identity": lambda: x,
        "Add": lambda: (x + constant).astype(dtype),
        "Or": lambda: np.logical_or(x, constant),
    }
    expected = reference(proto, x, numpy_fns[op_type])
    (got,) = mlconv.compile(proto, device="cpu")(x)
    assert got.dtype == np.dtype(dtype)
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got.astype(np.float64), np.asarray(expected).astype(np.float64))

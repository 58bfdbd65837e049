"""Calls are checked against the model's declared signature (issue 7, item 3), and a model with
dynamic dims compiles once per call signature into a bounded LRU cache."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import mlconv
from mlconv.backends.specialize import DEFAULT_CACHE_SIZE, SpecializingModule
from mlconv.errors import InputError, MlconvError, OptionError

RNG = np.random.default_rng(7)
W = RNG.standard_normal((4, 3)).astype(np.float32)
B = RNG.standard_normal(3).astype(np.float32)


def _model(batch: int | str, features: int | str = 4) -> onnx.ModelProto:
    """y = relu(x @ W + b) over x[batch, features], ids passed through as int64."""
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w"], ["m"]),
            helper.make_node("Add", ["m", "b"], ["a"]),
            helper.make_node("Relu", ["a"], ["y"]),
            helper.make_node("Identity", ["ids"], ["ids_out"]),
        ],
        "mlp",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, features]),
            helper.make_tensor_value_info("ids", TensorProto.INT64, [batch]),
        ],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 3]),
            helper.make_tensor_value_info("ids_out", TensorProto.INT64, [batch]),
        ],
        [onnx.numpy_helper.from_array(W, "w"), onnx.numpy_helper.from_array(B, "b")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _inputs(batch: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((batch, 4)).astype(np.float32), rng.integers(0, 9, batch)


@pytest.fixture(scope="module")
def static_run():
    return mlconv.compile(_model(2), device="cpu")


@pytest.fixture(scope="module")
def dynamic_run():
    return mlconv.compile(_model("N"), device="cpu")


@pytest.mark.parametrize("which", ["static_run", "dynamic_run"])
@pytest.mark.parametrize(
    ("args", "named", "message"),
    [
        (
            (np.zeros((2, 5), np.float32), np.zeros(2, np.int64)),
            {},
            "input 'x': expected shape [{b}, 4], got [2, 5]",
        ),
        (
            (np.zeros((2, 4, 1), np.float32), np.zeros(2, np.int64)),
            {},
            "input 'x': expected shape [{b}, 4], got [2, 4, 1]",
        ),
        (
            (np.zeros((2, 4)), np.zeros(2, np.int64)),
            {},
            "input 'x': expected dtype float32, got float64",
        ),
        (
            (np.zeros((2, 4), np.float32), np.zeros(2, np.int32)),
            {},
            "input 'ids': expected dtype int64, got int32",
        ),
        ((np.zeros((2, 4), np.float32),), {}, "expected 2 input(s) (x, ids), got 1"),
        (
            (None, np.zeros(2, np.int64)),
            {},
            "input 'x': got None (an empty optional), which is not supported",
        ),
        (
            (),
            {"x": np.zeros((2, 4), np.float32), "idz": np.zeros(2, np.int64)},
            "missing inputs: ids; unknown inputs: idz (the model's inputs: x, ids)",
        ),
        (
            (),
            {"x": np.zeros((2, 4), np.float32)},
            "missing inputs: ids (the model's inputs: x, ids)",
        ),
    ],
)
def test_inputs_contradicting_the_model_are_one_line(which, args, named, message, request) -> None:
    run = request.getfixturevalue(which)
    with pytest.raises(InputError) as error:
        run(*args, **named)
    text = str(error.value)
    assert "\n" not in text
    assert message.format(b=2 if which == "static_run" else "?") in text, text


def test_static_batch_contradiction_like_onnxruntime(static_run) -> None:
    """onnxruntime refuses batch 3 for a model declaring batch 2; so does mlconv."""
    x, ids = _inputs(3)
    session = ort.InferenceSession(
        _model(2).SerializeToString(), providers=["CPUExecutionProvider"]
    )
    with pytest.raises(Exception, match="Got invalid dimensions"):
        session.run(None, {"x": x, "ids": ids})
    with pytest.raises(InputError, match=r"input 'x': expected shape \[2, 4\], got \[3, 4\]"):
        static_run(x, ids)
    x, ids = _inputs(2)
    y, ids_out = static_run(x, ids)
    np.testing.assert_allclose(y, session.run(None, {"x": x, "ids": ids})[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(ids_out, ids)


def test_python_lists_are_converted_to_the_declared_dtype(static_run) -> None:
    x, ids = _inputs(2, seed=3)
    y, ids_out = static_run(x.tolist(), ids.tolist())
    np.testing.assert_allclose(y, np.maximum(x @ W + B, 0), rtol=1e-5, atol=1e-6)
    assert ids_out.dtype == np.int64


def test_specialization_cache_is_an_lru_of_bounded_size() -> None:
    run = mlconv.compile(_model("N"), device="cpu", cache_size=2)
    assert isinstance(run, SpecializingModule)
    assert run.cache_size == 2 and run.cached == 0
    for step, batch in enumerate([1, 3, 1, 5, 3, 3]):
        x, ids = _inputs(batch, seed=step)
        y, ids_out = run(x, ids)
        np.testing.assert_allclose(y, np.maximum(x @ W + B, 0), rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(ids_out, ids)
        assert run.cached <= 2
    # 1 and 3 compiled; 1 hit; 5 evicts 3 (least recently used); 3 again evicts 1; 3 hits.
    assert run.compilations == 4
    assert run.cached == 2
    assert sorted(key[0][0][0][0] for key in run._programs) == [3, 5]


def test_default_cache_size_and_bad_value() -> None:
    assert mlconv.compile(_model("N"), device="cpu").cache_size == DEFAULT_CACHE_SIZE
    with pytest.raises(OptionError, match="cache_size must be a positive integer"):
        mlconv.compile(_model("N"), device="cpu", cache_size=0)


def test_dynamic_dims_accept_any_size_and_keep_static_ones(dynamic_run) -> None:
    for batch in (1, 4):
        x, ids = _inputs(batch, seed=batch)
        y, _ = dynamic_run(x, ids)
        np.testing.assert_allclose(y, np.maximum(x @ W + B, 0), rtol=1e-5, atol=1e-6)
    assert isinstance(InputError("x"), MlconvError)


def test_optional_tensor_input_is_the_tensor() -> None:
    """An optional(tensor) graph input is imported as the tensor: OptionalHasElement is true and
    OptionalGetElement is the tensor, as onnxruntime computes; None is refused in one line."""
    tensor = helper.make_tensor_type_proto(TensorProto.FLOAT, ["n"])
    graph = helper.make_graph(
        [
            helper.make_node("OptionalHasElement", ["x"], ["has"]),
            helper.make_node("OptionalGetElement", ["x"], ["element"]),
            helper.make_node("Mul", ["element", "element"], ["y"]),
        ],
        "optional",
        [helper.make_value_info("x", helper.make_optional_type_proto(tensor))],
        [
            helper.make_tensor_value_info("has", TensorProto.BOOL, []),
            helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n"]),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    run = mlconv.compile(model, device="cpu")
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for size in (3, 5):
        x = RNG.standard_normal(size).astype(np.float32)
        got, want = run(x), session.run(None, {"x": x})
        for actual, expected in zip(got, want, strict=True):
            np.testing.assert_array_equal(actual, expected)
    with pytest.raises(InputError, match="input 'x': got None"):
        run(None)

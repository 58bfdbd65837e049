"""No lowering ignores what its source op says: every attribute (and optional input) of every
(op, version) with a lowering is read by its pattern, or listed below with the reason it cannot
change the result. A pattern that never looks at an attribute computes the same thing whatever
the attribute says: Dropout's `training_mode` was ignored and training-mode Dropout returned its
input.

The scan is static: the string constants of the pattern, of the functions and tables of its
package it refers to (transitively) and of the builder methods it calls; ONNX inputs also count
as read when the pattern takes `op.operands` whole or at their index. Attributes that
onnx-normalize moves to inputs are read through the input. Schemas come from the frameworks
themselves: `onnx.defs`, TensorFlow's OpDef registry, and the TFLite schema the tflite dialect
is generated from.
"""

from __future__ import annotations

import ast
import functools
import inspect
import textwrap
import types

import numpy as np
import onnx.defs
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import mlconv
from mlconv.errors import MlconvError
from mlconv.frontends.load import load_model
from mlconv.passes.onnx_normalize import MOVES
from mlconv.passes.pipelines import lower_to_core

# (op type or "*", attribute) -> why a pattern that never reads it is still right.
ONNX_UNREAD: dict[tuple[str, str], str] = {
    (
        "*",
        "consumed_inputs",
    ): "opset-1 in-place hint for Caffe2's memory planner; no effect on values",
    ("Cast", "to"): "the importer types the result from it; the pattern converts to that type",
    ("BitCast", "to"): "the importer types the result from it; the pattern reads the result type",
    ("MelWeightMatrix", "output_datatype"): (
        "the importer types the result from it; the pattern reads the result type"
    ),
    ("QuantizeLinear", "output_dtype"): "the importer types the result from it",
    ("DequantizeLinear", "output_dtype"): "the importer types the result from it",
    ("Constant", "sparse_value"): "no dense value: refused ('Constant without a tensor...')",
    ("Constant", "value_string"): "no dense value: refused ('Constant without a tensor...')",
    ("Constant", "value_strings"): "no dense value: refused ('Constant without a tensor...')",
    ("GRU", "output_sequence"): "opset 1: whether Y is produced; Y is computed when used",
    ("LSTM", "output_sequence"): "opset 1: whether Y is produced; Y is computed when used",
    ("RNN", "output_sequence"): "opset 1: whether Y is produced; Y is computed when used",
    ("Gemm", "broadcast"): "opset 1/6: allows C to broadcast; a valid C gives the same result",
    ("If", "then_branch"): "a region of the op, lowered with it",
    ("If", "else_branch"): "a region of the op, lowered with it",
    ("Split", "num_outputs"): "equal to the number of results the pattern splits into",
    ("TopK", "sorted"): "sorted=0 leaves the order unspecified: sorted output is valid",
}

# TF attributes of a kind other than type/list(type) no pattern reads.
TF_UNREAD: dict[tuple[str, str], str] = {
    ("*", "then_branch"): "the importer already made the branch function a region of the op",
    ("*", "else_branch"): "the importer already made the branch function a region of the op",
    ("*", "cond"): "the importer already made the cond function a region of the op",
    ("*", "body"): "the importer already made the body function a region of the op",
    ("*", "output_shapes"): "shape hints; the regions' own types are used",
    ("*", "parallel_iterations"): "a scheduling hint; no effect on the values",
    ("*", "use_cudnn_on_gpu"): "a kernel choice; no effect on the values",
    ("Conv2DBackpropInput", "explicit_paddings"): (
        "KNOWN GAP (2026-11-27): EXPLICIT padding is not read; Keras writes SAME/VALID only"
    ),
    ("SplitV", "num_split"): "equals the length of size_splits, which the pattern reads",
    ("TensorListSetItem", "resize_if_index_out_of_bounds"): (
        "the list is a fixed [n, ...] tensor sized by the loop; RNN loops never write past it"
    ),
    ("TensorListStack", "num_elements"): "the list's length, already its tensor's first dim",
    ("*", "N"): "the number of inputs, which the pattern takes as they are",
    ("*", "grad_a"): "gradient hint; no effect on the forward value",
    ("*", "grad_b"): "gradient hint; no effect on the forward value",
    ("*", "grad_x"): "gradient hint; no effect on the forward value",
    ("*", "grad_y"): "gradient hint; no effect on the forward value",
    ("Conv2D", "use_cudnn_on_gpu"): "kernel choice on GPUs; no effect on values",
    ("EnsureShape", "shape"): "a run-time shape assertion: the value passes through unchecked",
    ("Equal", "incompatible_shape_error"): "only for shapes that cannot broadcast, refused",
    ("NotEqual", "incompatible_shape_error"): "only for shapes that cannot broadcast, refused",
    ("*", "exponential_avg_factor"): "updates running statistics in training, refused",
    ("PreventGradient", "message"): "gradient-time error text; no effect on the forward value",
}

# TFLite builtin-options fields no pattern reads.
TFLITE_UNREAD: dict[tuple[str, str], str] = {
    ("CAST", "in_data_type"): "the tensors' types say the same",
    ("CAST", "out_data_type"): "the tensors' types say the same",
    ("SHAPE", "out_type"): "the result tensor's type says the same",
    ("PACK", "values_count"): "the number of inputs",
    ("DEPTHWISE_CONV_2D", "depth_multiplier"): "TFLite's kernels derive it from the shapes too",
    ("CONV_2D", "quantized_bias_type"): "the bias tensor's type says the same",
    ("FULLY_CONNECTED", "quantized_bias_type"): "the bias tensor's type says the same",
    ("ADD", "pot_scale_int16"): "picks LiteRT's int16 kernel; mlconv dequantizes, adds in "
    "float and requantizes for both (int16 not compared with LiteRT yet)",
    ("SUB", "pot_scale_int16"): "as ADD's",
    ("BATCH_MATMUL", "asymmetric_quantize_inputs"): "hybrid kernels (float input, int8 "
    "weights): mlconv multiplies in float with the dequantized weights, where LiteRT also "
    "quantizes the input at run time, so mlconv is closer to the float model than LiteRT",
    ("FULLY_CONNECTED", "asymmetric_quantize_inputs"): "as BATCH_MATMUL's",
    ("UNIDIRECTIONAL_SEQUENCE_LSTM", "asymmetric_quantize_inputs"): "as BATCH_MATMUL's",
    ("UNIDIRECTIONAL_SEQUENCE_LSTM", "proj_clip"): "clips the projection's output; a "
    "projection is refused",
    ("IF", "then_subgraph_index"): "the importer holds the subgraph as the then_branch region",
    ("IF", "else_subgraph_index"): "the importer holds the subgraph as the else_branch region",
    ("WHILE", "cond_subgraph_index"): "the importer holds the subgraph as the cond region",
    ("WHILE", "body_subgraph_index"): "the importer holds the subgraph as the body region",
}


@functools.cache
def _body(function: types.FunctionType) -> ast.Module:
    """The function's source without its decorators (`@lowering(...)` names the op, and
    refers to the whole pattern table)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            node.decorator_list = []
    return tree


class Reads:
    """What a pattern reads, from its source and what it refers to in its package."""

    def __init__(self, pattern: types.FunctionType, package: str, builder: type):
        self.package, self.builder = package, builder
        self.strings: set[str] = set()
        self.operand_index = -1  # highest op.operands[i] read; a large number: all of them
        self._seen: set[object] = set()
        self._visit(pattern)

    def _visit(self, function: types.FunctionType) -> None:
        if function in self._seen:
            return
        self._seen.add(function)
        tree = _body(function)
        parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if not isinstance(parents.get(node), ast.Expr):  # not a docstring
                    self.strings.add(node.value)
            elif isinstance(node, ast.Name) and node.id in function.__globals__:
                self._refer(function.__globals__[node.id])
            elif isinstance(node, ast.Attribute) and node.attr == "operands":
                parent = parents.get(node)
                if (
                    isinstance(parent, ast.Subscript)
                    and parent.value is node
                    and isinstance(parent.slice, ast.Constant)
                ):
                    self.operand_index = max(self.operand_index, parent.slice.value)
                else:
                    self.operand_index = 1 << 20
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "b"
                and isinstance(getattr(self.builder, node.attr, None), types.FunctionType)
            ):
                self._visit(getattr(self.builder, node.attr))
        for cell in function.__closure__ or ():
            try:
                self._refer(cell.cell_contents)
            except ValueError:  # an empty cell
                continue

    def _refer(self, value: object) -> None:
        if isinstance(value, types.FunctionType) and value.__module__.startswith(self.package):
            self._visit(value)
        elif isinstance(value, str):
            self.strings.add(value)
        elif isinstance(value, dict):
            for key, item in value.items():
                self._refer(key)
                self._refer(item)
        elif isinstance(value, list | tuple | set | frozenset):
            for item in value:
                self._refer(item)


def _listed(table: dict[tuple[str, str], str], op: str, name: str) -> bool:
    return (op, name) in table or ("*", name) in table


def _check(found: list[str], stale: set[tuple[str, str]], table_name: str) -> None:
    assert not found, (
        f"read by no pattern and not in {table_name} (read it, refuse it, or say why it "
        f"cannot matter): {found}"
    )
    assert not stale, f"{table_name} lists entries that are read now or do not exist: {stale}"


def test_onnx_patterns_read_every_attribute_and_input():
    from mlconv.passes.lowering import patterns
    from mlconv.passes.onnx_patterns.builder import OnnxReader

    found, used = [], set()
    for (op, version), pattern in sorted(patterns("onnx").items()):
        if "." in op:  # a plugin's custom-domain op (`<domain>.<op_type>`): no ONNX schema
            continue
        schema = onnx.defs.get_schema(op, version)
        assert schema.since_version == version, f"{op}-{version} is not a since-version"
        reads = Reads(pattern, "mlconv.passes.onnx_patterns", OnnxReader)
        moved = {move.attribute for move in MOVES.get(op, ())}
        for name in schema.attributes:
            if name in reads.strings or name in moved:
                continue
            key = (op, name) if (op, name) in ONNX_UNREAD else ("*", name)
            if key in ONNX_UNREAD:
                used.add(key)
            else:
                found.append(f"{op}-{version}.{name}")
        for index, formal in enumerate(schema.inputs):
            if formal.name not in reads.strings and index > reads.operand_index:
                found.append(f"{op}-{version} input {formal.name}")
    _check(found, set(ONNX_UNREAD) - used, "ONNX_UNREAD")


def test_tf_patterns_read_every_attribute():
    pytest.importorskip("tensorflow")
    from tensorflow.python.framework import op_def_registry

    from mlconv.passes.lowering import patterns
    from mlconv.passes.tf_patterns.builder import TfReader

    found, used = [], set()
    for (op, _), pattern in sorted(patterns("tf").items()):
        if op == "Yield":  # the tf dialect's own region terminator (If/While bodies), no TF op
            continue
        op_def = op_def_registry.get(op)
        assert op_def is not None, f"tf.{op} is not a TensorFlow op"
        reads = Reads(pattern, "mlconv.passes.tf_patterns", TfReader)
        for attr in op_def.attr:
            if attr.type in ("type", "list(type)") or attr.name in reads.strings:
                continue
            key = (op, attr.name) if (op, attr.name) in TF_UNREAD else ("*", attr.name)
            if key in TF_UNREAD:
                used.add(key)
            else:
                found.append(f"{op}.{attr.name}")
    _check(found, set(TF_UNREAD) - used, "TF_UNREAD")


def test_tflite_patterns_read_every_option():
    from mlconv.dialects import tflite
    from mlconv.passes.lowering import patterns
    from mlconv.passes.tflite_patterns.builder import TfliteReader

    found, used = [], set()
    for (op, _), pattern in sorted(patterns("tflite").items()):
        reads = Reads(pattern, "mlconv.passes.tflite_patterns", TfliteReader)
        for field in tflite.fields_of(op):
            name = field["name"]
            if name in reads.strings:
                continue
            if _listed(TFLITE_UNREAD, op, name):
                used.add((op, name) if (op, name) in TFLITE_UNREAD else ("*", name))
            else:
                found.append(f"{op}.{name}")
    _check(found, set(TFLITE_UNREAD) - used, "TFLITE_UNREAD")


# --- what the attributes found above do -------------------------------------------------------


def _model(node, inputs, outputs, initializers=(), opset=22):
    graph = helper.make_graph([node], "g", inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _refusal(model) -> str:
    with pytest.raises(MlconvError) as info:
        mlconv.compile(model, device="cpu")
    text = str(info.value)
    assert "\n" not in text and 'loc("n")' in text, text
    return text


def _dropout_model(shape, seed, runtime_flags: bool, ratio=0.3):
    attributes = {} if seed is None else {"seed": seed}
    node = helper.make_node("Dropout", ["x", "r", "t"], ["y", "mask"], name="n", **attributes)
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)]
    initializers = []
    if runtime_flags:
        inputs += [
            helper.make_tensor_value_info("r", TensorProto.FLOAT, []),
            helper.make_tensor_value_info("t", TensorProto.BOOL, []),
        ]
    else:
        initializers = [
            numpy_helper.from_array(np.asarray(ratio, np.float32), "r"),
            numpy_helper.from_array(np.asarray(True), "t"),
        ]
    outputs = [
        helper.make_tensor_value_info("y", TensorProto.FLOAT, shape),
        helper.make_tensor_value_info("mask", TensorProto.BOOL, shape),
    ]
    return _model(node, inputs, outputs, initializers)


@pytest.mark.parametrize("runtime_flags", [False, True], ids=["constant", "runtime"])
def test_training_dropout_draws_the_seeded_mask(runtime_flags):
    """Training-mode Dropout keeps about 1 - ratio of the values, scales them by 1/(1 - ratio),
    zeroes the rest, draws the mask from the seed (as onnx's reference does) and is the
    identity when training_mode is false at run time."""
    shape, ratio = [64, 250], 0.3
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32) + 2.0
    flags = [np.float32(ratio), np.bool_(True)] if runtime_flags else []
    model = _dropout_model(shape, 7, runtime_flags, ratio)
    run = mlconv.compile(model, device="cpu")
    y, mask = run(x, *flags)
    assert mask.dtype == np.bool_ and y.shape == x.shape
    kept = mask.mean()
    assert abs(kept - (1 - ratio)) < 5 * np.sqrt(ratio * (1 - ratio) / x.size), kept
    np.testing.assert_allclose(y[mask], x[mask] / np.float32(1 - ratio), rtol=1e-6)
    assert not y[~mask].any()
    feeds = {"x": x} | ({"r": flags[0], "t": flags[1]} if runtime_flags else {})
    want_y, want_mask = ReferenceEvaluator(model).run(None, feeds)
    np.testing.assert_array_equal(mask, want_mask)
    np.testing.assert_array_equal(y, want_y)
    other, _ = mlconv.compile(_dropout_model(shape, 8, runtime_flags, ratio), device="cpu")(
        x, *flags
    )
    assert 0.4 < np.mean((other != 0) == mask) < 0.8, "another seed should draw another mask"
    if runtime_flags:
        y, mask = run(x, np.float32(ratio), np.bool_(False))
        np.testing.assert_array_equal(y, x)
        assert mask.all()


def test_training_dropout_without_seed_is_refused():
    text = _refusal(_dropout_model([4, 5], None, runtime_flags=False))
    assert "needs a `seed`" in text


def test_dropout_is_test_0_before_opset_7_is_refused():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])
    node = helper.make_node("Dropout", ["x"], ["y"], name="n")
    assert "is_test=0" in _refusal(_model(node, [x], [y], opset=6))
    node = helper.make_node("Dropout", ["x"], ["y"], name="n", is_test=1)
    value = np.arange(3, dtype=np.float32)
    np.testing.assert_array_equal(mlconv.compile(_model(node, [x], [y], opset=6))(value)[0], value)


def _batch_norm_model(attributes, statistics_shape, opset):
    rng = np.random.default_rng(1)
    names = ("scale", "b", "mean", "var")
    arrays = [rng.uniform(0.5, 2, statistics_shape).astype(np.float32) for _ in names]
    node = helper.make_node("BatchNormalization", ["x", *names], ["y"], name="n", **attributes)
    shape = [2, *([3, 4, 5] if len(statistics_shape) > 1 else [3, 4, 5])]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)]
    initializers = [numpy_helper.from_array(a, n) for a, n in zip(arrays, names, strict=True)]
    return _model(node, inputs, outputs, initializers, opset), arrays, shape


def test_batch_norm_is_test_0_before_opset_7_is_refused():
    model, _, _ = _batch_norm_model({}, [3], opset=6)
    assert "is_test=0" in _refusal(model)


def test_batch_norm_spatial_0_normalizes_per_element():
    model, (scale, bias, mean, var), shape = _batch_norm_model({"spatial": 0}, [3, 4, 5], opset=7)
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    want = (x - mean) / np.sqrt(var + 1e-5) * scale + bias
    np.testing.assert_allclose(mlconv.compile(model)(x)[0], want, rtol=1e-5, atol=1e-5)


def test_lstm_input_forget_is_refused():
    rng = np.random.default_rng(3)
    w = numpy_helper.from_array(rng.standard_normal((1, 8, 3)).astype(np.float32), "w")
    r = numpy_helper.from_array(rng.standard_normal((1, 8, 2)).astype(np.float32), "r")
    node = helper.make_node(
        "LSTM", ["x", "w", "r"], ["", "y_h"], name="n", hidden_size=2, input_forget=1
    )
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 1, 3])
    y = helper.make_tensor_value_info("y_h", TensorProto.FLOAT, [1, 1, 2])
    assert "input_forget" in _refusal(_model(node, [x], [y], [w, r]))


@pytest.mark.parametrize("op", ["LayerNormalization", "RMSNormalization"])
def test_float16_normalization_computes_in_the_stash_type(op):
    """float16 inputs are normalized in float32 (stash_type 1, as the ONNX function bodies
    cast), then cast back: within one float16 step of that, where float16 arithmetic is not."""
    rng = np.random.default_rng(4)
    x = (rng.standard_normal((2, 1024)) * 0.05 + 30.0).astype(np.float16)
    scale = rng.uniform(0.5, 2, 1024).astype(np.float16)
    node = helper.make_node(op, ["x", "scale"], ["y"], name="n", axis=-1)
    io = [helper.make_tensor_value_info(n, TensorProto.FLOAT16, [2, 1024]) for n in "xy"]
    model = _model(node, io[:1], io[1:], [numpy_helper.from_array(scale, "scale")], opset=23)
    wide = x.astype(np.float32)
    if op == "LayerNormalization":
        centred = wide - wide.mean(-1, keepdims=True)
        normalized = centred / np.sqrt((centred**2).mean(-1, keepdims=True) + 1e-5)
    else:
        normalized = wide / np.sqrt((wide**2).mean(-1, keepdims=True) + 1e-5)
    want = normalized.astype(np.float16) * scale
    # XLA:CPU fuses float16 arithmetic in float32, so the numbers alone cannot tell: the core
    # IR must do it. Every reduction runs on float32.
    core = str(lower_to_core(load_model(model)))
    reductions = [line for line in core.splitlines() if "core.ReduceMean" in line or "MVN" in line]
    assert reductions and all("xf16>" not in line.split("->")[0] for line in reductions), core
    got = mlconv.compile(model)(x)[0]
    assert got.dtype == np.float16
    np.testing.assert_allclose(
        got.astype(np.float32), want.astype(np.float32), rtol=2e-3, atol=2e-3
    )


def test_tf_cast_truncate_to_a_narrower_float_is_refused(tmp_path):
    tf = pytest.importorskip("tensorflow")

    class Module(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([3], tf.float32, name="x")])
        def f(self, x):
            return {"y": tf.raw_ops.Cast(x=x, DstT=tf.bfloat16, Truncate=True)}

    module = Module()
    tf.saved_model.save(module, str(tmp_path), signatures={"serving_default": module.f})
    with pytest.raises(MlconvError) as info:
        mlconv.compile(str(tmp_path), device="cpu")
    assert "Truncate=true" in str(info.value) and "\n" not in str(info.value)

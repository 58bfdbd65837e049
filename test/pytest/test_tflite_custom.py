"""TFLite CUSTOM operators: a .tflite file converted by TensorFlow with `allow_custom_ops=True`
(Erfinv and ApproximateEqual have no TFLite builtin) imports as `tflite.CUSTOM` ops carrying
their custom code and flexbuffer options decoded into attributes; with allow-custom they become
`core.Custom` (domain "tflite") and run through Python implementations registered in
`mlconv.custom_ops`, compared with TensorFlow running the same function; without the option the
model is refused listing the ops. Written back (the imported IR, or core.Custom through
core-to-tflite) they stay CUSTOM operators with their options. Options of every flexbuffer kind, options that are not a
flexbuffer and bad custom codes are checked on files rewritten with the TFLite schema.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
from flatbuffers import flexbuffers  # noqa: E402 - installed with tensorflow
from scipy import special  # noqa: E402
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr  # noqa: E402

import mlconv  # noqa: E402
import mlconv.custom_ops as custom_ops  # noqa: E402
from mlconv.dialects import tflite  # noqa: E402
from mlconv.errors import FrontendError, PassFailure  # noqa: E402
from mlconv.frontends.tflite_importer import import_tflite, tflite_schema  # noqa: E402
from mlconv.passes.lowering.driver import HINT  # noqa: E402

TOLERANCE = 0.3
WEIGHTS = np.random.default_rng(11).standard_normal((4, 4)).astype(np.float32)


def source(x, y):
    """The TF function: Erfinv and ApproximateEqual become CUSTOM ops, the rest builtins."""
    h = tf.tanh(tf.matmul(x, WEIGHTS)) * 0.9
    e = tf.math.erfinv(h)
    a = tf.cast(tf.raw_ops.ApproximateEqual(x=x, y=y, tolerance=TOLERANCE), tf.float32)
    return e * 2.0 + a


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    spec = [tf.TensorSpec([2, 4], tf.float32, name="x"), tf.TensorSpec([2, 4], tf.float32, "y")]
    fn = tf.function(source, input_signature=spec)
    converter = tf.lite.TFLiteConverter.from_concrete_functions([fn.get_concrete_function()], fn)
    converter.allow_custom_ops = True
    path = tmp_path_factory.mktemp("custom") / "custom.tflite"
    path.write_bytes(converter.convert())
    return path


def erfinv(x, *, T):
    assert T == 0  # TensorType FLOAT32: the converter writes the TF op's attributes
    return special.erfinv(x).astype(x.dtype)


def approximate_equal(x, y, *, tolerance, T):
    return np.abs(x - y) < np.float32(tolerance)


@pytest.fixture
def registered():
    custom_ops.register("tflite", "Erfinv", erfinv)
    custom_ops.register("tflite", "ApproximateEqual", approximate_equal)
    yield
    custom_ops.unregister("tflite", "Erfinv")
    custom_ops.unregister("tflite", "ApproximateEqual")


def inputs(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """x, and y within the tolerance of x in about half of the places."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, 4)).astype(np.float32)
    return x, (x + rng.uniform(-0.6, 0.6, (2, 4))).astype(np.float32)


def custom_ops_of(module) -> list[tflite.CustomOp]:
    return [op for op in module.walk() if isinstance(op, tflite.CustomOp)]


def test_import_decodes_code_and_options(model):
    module = import_tflite(model)
    ops = {op.custom_code.data: op for op in custom_ops_of(module)}
    assert sorted(ops) == ["ApproximateEqual", "Erfinv"]
    options = ops["ApproximateEqual"].custom_options.data
    assert options["tolerance"].value.data == pytest.approx(TOLERANCE, rel=1e-7)
    assert options["T"].value.data == 0
    assert ops["ApproximateEqual"].raw_options is None
    assert [o.type.get_element_type().width.data for o in ops["ApproximateEqual"].results] == [1]
    text = str(module)
    assert '"tflite.CUSTOM"' in text
    from xdsl.parser import Parser

    from mlconv.dialects import make_context

    assert str(Parser(make_context(), text).parse_module()) == text  # round trip


@pytest.mark.parametrize("seed", [0, 1])
def test_allow_custom_runs_registered_implementations(model, registered, seed):
    run = mlconv.compile(str(model), device="cpu", allow_custom=True, quiet=True)
    x, y = inputs(seed)
    expected = source(tf.constant(x), tf.constant(y)).numpy()
    (got,) = run(x, y)
    near = np.abs(x - y) < TOLERANCE
    assert 0 < near.sum() < near.size  # both branches of the tolerance are taken
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_tolerance_attribute_reaches_the_implementation(model, registered):
    """Changing the decoded tolerance in the IR changes the result: attributes are live."""
    from xdsl.dialects.builtin import DictionaryAttr, FloatAttr, f64

    module = import_tflite(model)
    (approx,) = [op for op in custom_ops_of(module) if op.custom_code.data == "ApproximateEqual"]
    approx.attributes["custom_options"] = DictionaryAttr(
        {**approx.custom_options.data, "tolerance": FloatAttr(10.0, f64)}
    )
    run = mlconv.compile(module, device="cpu", allow_custom=True, quiet=True)
    x, y = inputs(0)
    (got,) = run(x, y)
    expected = source(tf.constant(x), tf.constant(y)).numpy() + ~(np.abs(x - y) < TOLERANCE)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_without_allow_custom_the_ops_are_listed(model, registered):
    with pytest.raises(PassFailure) as caught:
        mlconv.compile(str(model), device="cpu", quiet=True)
    assert str(caught.value) == (
        "error: no lowering to core for 2 tflite op type(s): "
        "tflite.ApproximateEqual (1 node: ApproximateEqual); tflite.Erfinv (1 node: erfinv/Erfinv)"
        + HINT
    )


def test_mlconv_run_lists_the_op_in_one_line(model, tmp_path):
    x, y = inputs(0)
    np.savez(tmp_path / "in.npz", x=x, y=y)
    tool = Path(sys.executable).parent / "mlconv-run"
    result = subprocess.run(
        [tool, model, "--inputs", tmp_path / "in.npz", "--outputs", tmp_path / "o.npz"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "tflite.Erfinv (1 node: erfinv/Erfinv)" in lines[0], result.stderr


def test_a_pattern_for_the_custom_code_lowers_it(model, registered):
    """A plugin's pattern keyed by the custom code, ("tflite", "ApproximateEqual"), lowers the
    op to core ops: only Erfinv is left to the host."""
    from mlconv.dialects import core
    from mlconv.passes.lowering import register, unregister
    from mlconv.passes.pipelines import lower_to_core

    def lower(op, b):
        x, y = op.operands
        tolerance = op.custom_options.data["tolerance"].value.data
        distance = b(core.AbsOp, b(core.SubtractOp, x, y))
        return [b(core.LessOp, distance, b.const(np.asarray(tolerance, np.float32)))]

    register("tflite", "ApproximateEqual", None, lower)
    try:
        module = lower_to_core(import_tflite(model), allow_custom=True)
        customs = [op.op_type.data for op in module.walk() if isinstance(op, core.CustomOp)]
        assert customs == ["Erfinv"]
        run = mlconv.compile(str(model), device="cpu", allow_custom=True, quiet=True)
    finally:
        unregister("tflite", "ApproximateEqual", None)
    x, y = inputs(1)
    (got,) = run(x, y)
    np.testing.assert_allclose(got, source(tf.constant(x), tf.constant(y)).numpy(), atol=1e-5)


def test_written_back_the_file_imports_the_same(model, tmp_path):
    """write_tflite keeps each CUSTOM operator: its code and its options as a flexbuffer."""
    from mlconv.backends.tflite_writer import write_tflite

    module = import_tflite(model)
    write_tflite(module, tmp_path / "again.tflite")
    assert str(import_tflite(tmp_path / "again.tflite")) == str(module)


def test_exported_from_core_and_run_again(model, registered, tmp_path):
    """.tflite -> core (allow-custom) -> core-to-tflite-pipeline -> .tflite: the CUSTOM ops come
    back with their codes and options, and the file runs as TensorFlow computes."""
    from mlconv.backends.tflite_writer import export_tflite
    from mlconv.passes.pipelines import lower_to_core

    module = lower_to_core(import_tflite(model), allow_custom=True)
    export_tflite(module, str(tmp_path / "exported.tflite"))
    again = import_tflite(tmp_path / "exported.tflite")
    options = {op.custom_code.data: op.custom_options for op in custom_ops_of(again)}
    assert sorted(options) == ["ApproximateEqual", "Erfinv"]
    assert options["ApproximateEqual"].data["tolerance"].value.data == pytest.approx(TOLERANCE)
    run = mlconv.compile(str(tmp_path / "exported.tflite"), allow_custom=True, quiet=True)
    x, y = inputs(2)
    (got,) = run(x, y)
    np.testing.assert_allclose(got, source(tf.constant(x), tf.constant(y)).numpy(), atol=1e-5)


def rewrite(model: Path, tmp_path: Path, code: str, options: bytes) -> Path:
    """The model with its Erfinv operator renamed `code`, with `options` as custom_options."""
    import flatbuffers

    schema = tflite_schema()
    tree = schema.ModelT.InitFromObj(schema.Model.GetRootAs(model.read_bytes(), 0))
    graph = tree.subgraphs[0]
    for op in graph.operators:
        if tree.operatorCodes[op.opcodeIndex].customCode == b"Erfinv":
            tree.operatorCodes[op.opcodeIndex].customCode = code.encode()
            op.customOptions = list(options)
    builder = flatbuffers.Builder(1024)
    builder.Finish(tree.Pack(builder), file_identifier=b"TFL3")
    path = tmp_path / f"custom_{code}.tflite"
    path.write_bytes(bytes(builder.Output()))
    return path


def test_every_flexbuffer_kind_reaches_the_implementation(model, tmp_path):
    options = {
        "use_regular_nms": True,
        "max_detections": 10,
        "nms_score_threshold": 0.25,
        "name": "boxes",
        "scales": [10.0, 10.0, 5.0, 5.0],
        "order": [3, 1, 2],
        "blob": b"\x00\x01\xfe",
    }
    path = rewrite(model, tmp_path, "Shifted", flexbuffers.Dumps(options))
    (op,) = [op for op in custom_ops_of(import_tflite(path)) if op.custom_code.data == "Shifted"]
    assert sorted(op.custom_options.data) == sorted(options)
    assert isinstance(op.custom_options.data["blob"], DenseIntOrFPElementsAttr)
    from mlconv.backends.tflite_writer import write_tflite

    write_tflite(op.get_toplevel_object(), tmp_path / "again.tflite")  # every kind written back
    assert str(import_tflite(tmp_path / "again.tflite")) == str(op.get_toplevel_object())
    seen = {}

    def shifted(x, **attributes):
        seen.update(attributes)
        return x + np.float32(attributes["max_detections"])

    custom_ops.register("tflite", "Shifted", shifted)
    custom_ops.register("tflite", "ApproximateEqual", approximate_equal)
    try:
        run = mlconv.compile(str(path), device="cpu", allow_custom=True, quiet=True)
        x, y = inputs(0)
        (got,) = run(x, y)
    finally:
        custom_ops.unregister("tflite", "Shifted")
        custom_ops.unregister("tflite", "ApproximateEqual")
    h = np.tanh(x @ WEIGHTS) * np.float32(0.9)
    expected = (h + 10) * 2 + (np.abs(x - y) < TOLERANCE)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    assert seen == {
        "blob": b"\x00\x01\xfe",
        "use_regular_nms": True,
        "max_detections": 10,
        "nms_score_threshold": 0.25,
        "name": "boxes",
        "scales": (10.0, 10.0, 5.0, 5.0),
        "order": (3, 1, 2),
    }


def test_options_that_are_not_a_flexbuffer_stay_bytes(model, tmp_path):
    raw = np.asarray([1.5, -2.0], np.float32).tobytes()  # a packed C struct, as old ops write
    path = rewrite(model, tmp_path, "Packed", raw)
    (op,) = [op for op in custom_ops_of(import_tflite(path)) if op.custom_code.data == "Packed"]
    assert op.custom_options.data == {}
    assert op.raw_options is not None
    assert np.asarray(op.raw_options.get_values(), np.uint8).tobytes() == raw


@pytest.mark.parametrize(
    "code, options, message",
    [
        ("Nested", flexbuffers.Dumps({"inner": {"a": 1}}), "option 'inner' is a nested map"),
        ("ADD", b"", "custom_code 'ADD' is the name of a builtin operator"),
        ("", b"", "custom_code must not be empty"),
    ],
)
def test_bad_custom_operators_are_one_line_errors(model, tmp_path, code, options, message):
    path = rewrite(model, tmp_path, code, options)
    with pytest.raises(FrontendError) as caught:
        import_tflite(path)
    text = str(caught.value)
    assert message in text and "\n" not in text
    assert 'loc("erfinv/Erfinv")' in text


def test_options_flexbuffers_cannot_hold_are_one_line_errors(tmp_path):
    """A core.Custom attribute with no flexbuffer form (a type) stops the TFLite writer at the
    op, and nothing is written."""
    from xdsl.parser import Parser

    from mlconv.backends.tflite_writer import export_tflite
    from mlconv.dialects import make_context
    from mlconv.errors import BackendError

    text = """
    func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
      %a = "core.Custom"(%x) {domain = "com.acme", op_type = "Typed", attrs = {to = f32}} : (tensor<2xf32>) -> tensor<2xf32> loc("typed")
      func.return %a : tensor<2xf32>
    }
    """
    out = tmp_path / "typed.tflite"
    with pytest.raises(BackendError) as caught:
        export_tflite(Parser(make_context(), text).parse_module(), str(out))
    assert caught.value.location == "typed" and "\n" not in str(caught.value)
    assert "option 'to' cannot be written as a flexbuffer" in str(caught.value)
    assert not out.exists()


def test_quantized_operands_reach_the_implementation_dequantized():
    """Between int8 tensors the implementation sees real values and its result is requantized
    (half away from zero), as every TFLite lowering computes."""
    from xdsl.parser import Parser

    from mlconv.dialects import make_context

    text = Path(__file__).parents[1] / "filecheck/passes/Inputs/tflite-custom-quantized.mlir"
    module = Parser(make_context(), text.read_text()).parse_module()
    custom_ops.register("tflite", "Scale", lambda x, *, factor: x * np.float32(factor))
    try:
        run = mlconv.compile(module, device="cpu", allow_custom=True, quiet=True)
        x = np.random.default_rng(3).integers(-128, 128, (1, 4)).astype(np.int8)
        (got,) = run(x)
    finally:
        custom_ops.unregister("tflite", "Scale")
    real = (x.astype(np.float32) + 1) * 0.5 * 2.0
    scaled = real / 0.25
    expected = np.clip(np.sign(scaled) * np.floor(np.abs(scaled) + 0.5) + 3, -128, 127)
    np.testing.assert_array_equal(got, expected.astype(np.int8))

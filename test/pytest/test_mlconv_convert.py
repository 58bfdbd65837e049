"""mlconv-convert (the TPU Inference Converter of seed 003): ConverterOptions text protos, the
artifact folder, and running it with `mlconv.load` and `mlconv-run` without the source model.

Models are built here with fixed seeds and random weights, and each test first shows that its
reference moves with the input (`sensitivity.assert_input_sensitive`).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
import sensitivity  # noqa: E402 - a module beside this one (conftest.py)
from onnx import TensorProto, helper, numpy_helper
from onnx_graphs import float_model

# The seed's own example (its docker command line, TPU_FUNCTIONS), with the batching block that
# a later version supports (BATCH_OPTIONS); see test_batching_needs_functions_converted_for_one_row
# and test_batching.py.
from seed_models import BATCH_OPTIONS, TPU_FUNCTIONS, convert_onnx, save_tpu_func

import mlconv
from mlconv.converter.options import (
    GENERATED,
    ConversionSettings,
    field_path_at,
    parse_converter_options,
)
from mlconv.converter.saved_model_writer import tf_name
from mlconv.errors import InputError, MlconvError, OptionError
from mlconv.tools.mlconv_convert import PROG, convert

NO_DEFAULT_OPTIMIZATIONS = "disable_default_optimizations: true\n"


# --------------------------------------------------------------------------- options


def test_seed_example_parses_with_its_values():
    options = parse_converter_options(TPU_FUNCTIONS + BATCH_OPTIONS)
    assert options.tpu_functions[0].function_alias == "tpu_func"
    batch = options.batch_options[0]
    assert (batch.num_batch_threads, batch.max_batch_size, batch.batch_timeout_micros) == (
        2,
        8,
        5000,
    )
    assert list(batch.allowed_batch_sizes) == [2, 4, 8]
    assert batch.max_enqueued_batches == 10


def test_schema_numbers_are_the_seeds():
    from mlconv.converter.options import schema

    pb = schema()
    fields = {f.name: f.number for f in pb.ConverterOptions.DESCRIPTOR.fields}
    assert fields == {
        "tpu_functions": 1,
        "batch_options": 100,
        "disable_default_optimizations": 202,
        "io_shape_optimization": 200,
        "bfloat16_optimization": 201,
        "bfloat16_optimization_options": 203,
        "xla_sharding_options": 204,
        # mlconv's extension: the block the seed's quantization example writes, which its
        # schema listing leaves out.
        "external_feature_configs": 300,
    }
    tpu = {f.name: (f.number, f.containing_oneof.name) for f in pb.TpuFunction.DESCRIPTOR.fields}
    assert tpu == {
        "function_alias": (1, "name"),
        "concrete_function_name": (3, "name"),
        "signature_name": (5, "name"),
        "jit_compile_functions": (4, "name"),
    }
    assert pb.ConverterOptions.State.Name(0) == "DEFAULT"
    assert [v.name for v in pb.BFloat16OptimizationOptions.Scope.DESCRIPTOR.values] == [
        "DEFAULT",
        "TPU",
        "ALL",
    ]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("batch_options { max_batch: 3 }", "1:17: batch_options[0].max_batch: "),
        ("bfloat16_optimization: MAYBE", "bfloat16_optimization: Enum type"),
        (
            'batch_options {\n  max_batch_size: "a" }',
            "2:19: batch_options[0].max_batch_size: Couldn't parse integer",
        ),
        (
            'batch_options { max_batch_size: 8 experimental { signature_nam: "s" } }',
            "batch_options[0].experimental.signature_nam: ",
        ),
        (
            'tpu_functions { function_alias: "a" concrete_function_name: "b" }',
            'another member of oneof "name"',
        ),
        (
            "batch_options { max_batch_size: 8 allowed_batch_sizes: 2 allowed_batch_sizes: 4 }",
            "batch_options[0].allowed_batch_sizes: the last entry (4) must equal max_batch_size (8)",
        ),
        (
            "batch_options { max_batch_size: 8 allowed_batch_sizes: 4 allowed_batch_sizes: 2 "
            "allowed_batch_sizes: 8 }",
            "batch_options[0].allowed_batch_sizes: entries must increase monotonically",
        ),
        (
            'tpu_functions { function_alias: "f" } tpu_functions { function_alias: "f" }',
            "tpu_functions[1].function_alias: 'f' is already given by tpu_functions[0]",
        ),
        (
            "xla_sharding_options { num_cores_per_replica: 2 }",
            "xla_sharding_options.topology: required when num_cores_per_replica > 1",
        ),
    ],
)
def test_bad_options_are_one_line_errors_with_the_field_path(text, expected):
    with pytest.raises(OptionError) as error:
        parse_converter_options(text)
    message = str(error.value)
    assert expected in message
    assert "\n" not in message


def test_field_path_counts_repeated_entries():
    text = "batch_options { max_batch_size: 1 }\nbatch_options {\n  experimental {\n    bad: 1 } }"
    assert field_path_at(text, 4, 5) == "batch_options[1].experimental.bad"


@pytest.mark.parametrize(
    "text, io_shapes, bf16",
    [
        ("", True, True),
        (NO_DEFAULT_OPTIMIZATIONS, False, False),
        (NO_DEFAULT_OPTIMIZATIONS + "bfloat16_optimization: ENABLED", False, True),
        ("io_shape_optimization: DISABLED", False, True),
    ],
)
def test_default_states_follow_the_seed(text, io_shapes, bf16):
    settings = ConversionSettings.from_options(parse_converter_options(text))
    assert (settings.io_shape_optimization, settings.bfloat16) == (io_shapes, bf16)
    assert settings.bfloat16_scope == "TPU"


def test_checked_in_generated_module_is_current(tmp_path):
    pytest.importorskip("grpc_tools")
    from mlconv.converter.options import generate

    assert generate(str(tmp_path)).read_text() == GENERATED.read_text()


# --------------------------------------------------------------------------- conversion


def conv_model() -> onnx.ModelProto:
    """Conv -> Relu -> global average pool -> Gemm, random weights, static 2x3x16x16 input."""
    rng = np.random.default_rng(0)
    weights = [
        numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32) * 0.3, "w"),
        numpy_helper.from_array(rng.standard_normal(8).astype(np.float32) * 0.1, "b"),
        numpy_helper.from_array(rng.standard_normal((8, 5)).astype(np.float32), "fc"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("GlobalAveragePool", ["r"], ["p"], name="pool"),
        helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
        helper.make_node("MatMul", ["f", "fc"], ["y"], name="fc"),
    ]
    return float_model(nodes, {"x": [2, 3, 16, 16]}, {"y": [2, 5]}, weights, name="convnet")


def onnxruntime(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    import onnxruntime as ort

    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})[0]


@pytest.fixture(scope="module")
def onnx_artifact(tmp_path_factory):
    model = conv_model()
    folder = tmp_path_factory.mktemp("onnx")
    path, out, manifest = convert_onnx(model, folder, NO_DEFAULT_OPTIMIZATIONS)
    return model, path, out, manifest


def test_onnx_artifact_runs_without_the_source(onnx_artifact):
    model, path, out, manifest = onnx_artifact
    rng = np.random.default_rng(1)
    x, other = (rng.standard_normal((2, 3, 16, 16)).astype(np.float32) for _ in range(2))
    expected = onnxruntime(model, x)
    sensitivity.assert_input_sensitive(expected, onnxruntime(model, other), rtol=1e-5)
    os.rename(path, path.with_suffix(".moved"))  # the artifact must not need the source
    try:
        (got,) = mlconv.load(out)(x)
    finally:
        os.rename(path.with_suffix(".moved"), path)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    assert manifest["inputs"] == [{"name": "x", "dtype": "float32", "shape": [2, 3, 16, 16]}]
    assert [f["name"] for f in manifest["functions"]] == ["tpu_function_0"]
    # disable_default_optimizations: neither bfloat16 nor the IO shapes (both on by default)
    assert manifest["bfloat16"] is False and manifest["io_shape_optimization"] is False
    assert manifest["functions"][0]["inputs"] == [{"input": 0}]
    assert (out / "tpu" / "tpu_function_0.jaxexport").stat().st_size > 8 * 3 * 3 * 3 * 4
    assert "stablehlo" in (out / "tpu" / "tpu_function_0.mlir").read_text()


def test_artifact_checks_its_inputs(onnx_artifact):
    _, _, out, _ = onnx_artifact
    with pytest.raises(
        InputError, match=r"input 'x': expected shape \[2, 3, 16, 16\], got \[2, 3, 8, 16\]"
    ):
        mlconv.load(out)(np.zeros((2, 3, 8, 16), np.float32))


def test_mlconv_run_runs_the_artifact(onnx_artifact, tmp_path):
    model, _, out, _ = onnx_artifact
    x = np.random.default_rng(2).standard_normal((2, 3, 16, 16)).astype(np.float32)
    np.savez(tmp_path / "in.npz", x=x)
    subprocess.run(
        [
            "mlconv-run",
            str(out),
            "--inputs",
            str(tmp_path / "in.npz"),
            "--outputs",
            str(tmp_path / "out.npz"),
        ],
        check=True,
    )
    np.testing.assert_allclose(
        np.load(tmp_path / "out.npz")["y"], onnxruntime(model, x), rtol=1e-5, atol=1e-5
    )


def test_bad_options_write_nothing(tmp_path):
    path = tmp_path / "model.onnx"
    onnx.save(conv_model(), str(path))
    out = tmp_path / "converted"
    result = subprocess.run(
        [
            "mlconv-convert",
            str(path),
            "-o",
            str(out),
            "--converter-options-string",
            "batch_options { max_batch: 1 }",
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "batch_options[0].max_batch" in lines[0], result.stderr
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".converted")]


def test_batching_needs_functions_converted_for_one_row(tmp_path):
    """The seed's batch options on a model of static batch 2 (batching itself: test_batching.py)."""
    path = tmp_path / "model.onnx"
    onnx.save(conv_model(), str(path))
    with pytest.raises(
        MlconvError,
        match=r"batches calls of \[2\] rows; the batcher needs functions converted for one row",
    ):
        convert(str(path), str(tmp_path / "out"), BATCH_OPTIONS)
    assert not (tmp_path / "out").exists()


def test_tpu_functions_name_savedmodel_functions_only(tmp_path):
    path = tmp_path / "model.onnx"
    onnx.save(conv_model(), str(path))
    with pytest.raises(OptionError, match="tpu_functions: names functions of a SavedModel"):
        convert(str(path), str(tmp_path / "out"), TPU_FUNCTIONS)


# --------------------------------------------------------------------------- SavedModel and TFLite


@pytest.fixture(scope="module")
def keras_model():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    tf = pytest.importorskip("tensorflow")
    keras = pytest.importorskip("keras")
    keras.utils.set_random_seed(0)
    inputs = keras.Input((12, 12, 3), batch_size=2)
    x = keras.layers.Conv2D(6, 3, padding="same", activation="relu")(inputs)
    x = keras.layers.DepthwiseConv2D(3, padding="same")(x)
    x = keras.layers.GlobalAveragePooling2D()(x)
    outputs = keras.layers.Dense(4)(x)
    return tf, keras.Model(inputs, outputs)


@pytest.fixture(scope="module")
def keras_saved_model(keras_model, tmp_path_factory):
    """The seed's pattern: `tpu_func` (the Keras model) under a function alias, called by the
    serving signature, which does host work around it (`* 2`)."""
    tf, model = keras_model
    saved = tmp_path_factory.mktemp("keras") / "saved"
    spec = [tf.TensorSpec((2, 12, 12, 3), tf.float32)]
    module = save_tpu_func(tf, saved, model, spec, host=lambda y: y * 2.0)
    return tf, model, module, saved


def serve_saved_model(tf, folder: Path, **inputs: np.ndarray) -> dict[str, np.ndarray]:
    """The seed's serving code on OUTDIR/saved_model."""
    loaded = tf.saved_model.load(str(folder))
    results = loaded.signatures["serving_default"](**{k: tf.constant(v) for k, v in inputs.items()})
    return {name: value.numpy() for name, value in results.items()}


def xla_call_functions(folder: Path) -> list[str]:
    from tensorflow.core.protobuf import saved_model_pb2

    proto = saved_model_pb2.SavedModel()
    proto.ParseFromString((folder / "saved_model.pb").read_bytes())
    library = proto.meta_graphs[0].graph_def.library.function
    return [f.signature.name for f in library if any(n.op == "XlaCallModule" for n in f.node_def)]


def test_savedmodel_function_alias_is_placed(keras_saved_model, tmp_path):
    tf, model, module, saved = keras_saved_model
    out = tmp_path / "converted"
    manifest = convert(str(saved), str(out), TPU_FUNCTIONS + NO_DEFAULT_OPTIMIZATIONS)
    assert [f["name"] for f in manifest["functions"]] == ["tpu_func"]
    rng = np.random.default_rng(3)
    x, other = (rng.standard_normal((2, 12, 12, 3)).astype(np.float32) for _ in range(2))
    expected = model(x).numpy()
    sensitivity.assert_input_sensitive(expected, model(other).numpy(), rtol=1e-5)
    (got,) = mlconv.load(out)(x)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    recorded = json.loads((out / "manifest.json").read_text())["converter_options"]
    assert 'function_alias: "tpu_func"' in recorded
    # OUTDIR/saved_model: the seed's serving code runs it; tpu_func is one XlaCallModule, the
    # signature's host part (`* 2`) stays TensorFlow; names, signature and alias are kept.
    assert manifest["saved_model"] == "saved_model"
    served = serve_saved_model(tf, out / "saved_model", x=x)
    np.testing.assert_allclose(served["y"], module.serve(x)["y"].numpy(), rtol=1e-5, atol=1e-5)
    (placed,) = xla_call_functions(out / "saved_model")
    assert "tpu_func" in placed
    loaded = tf.saved_model.load(
        str(out / "saved_model"),
        options=tf.saved_model.LoadOptions(experimental_load_function_aliases=True),
    )
    aliased = loaded.function_aliases["tpu_func"]
    np.testing.assert_allclose(aliased(tf.constant(x)).numpy(), expected, rtol=1e-5, atol=1e-5)
    # The report: the host part is the signature's `* 2` on a 2x4 result (8 units); tpu_func
    # costs what XLA counts for it.
    assert manifest["report"]["cpu"] == 8
    assert manifest["report"]["tpu"]["tpu_func"]["flops"] > 2 * 12 * 12 * 6 * 27 * 2
    text = (out / "conversion_report.txt").read_text()
    assert "CPU cost of the model:" in text and "[CPU cost]" in text and "tpu_func" in text


def test_seed_example_options_text_end_to_end(tmp_path):
    """The seed's own example (tpu_functions + batch_options, defaults on) on a Keras model
    saved with a `tpu_func` alias and a None batch: converted for one row, the artifact and the
    SavedModel form serve any number of rows, matching TensorFlow within bf16's 2e-2."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    tf = pytest.importorskip("tensorflow")
    keras = pytest.importorskip("keras")
    keras.utils.set_random_seed(18)
    layers = keras.Sequential([keras.layers.Dense(32, activation="relu"), keras.layers.Dense(5)])
    spec = [tf.TensorSpec((None, 24), tf.float32)]
    layers.build((None, 24))
    saved = tmp_path / "saved"
    module = save_tpu_func(tf, saved, layers, spec, host=lambda y: y - 1.0)
    out = tmp_path / "converted"
    manifest = convert(str(saved), str(out), TPU_FUNCTIONS + BATCH_OPTIONS)
    rng = np.random.default_rng(19)
    x, other = (rng.standard_normal((3, 24)).astype(np.float32) for _ in range(2))
    expected = module.serve(x)["y"].numpy()
    sensitivity.assert_input_sensitive(expected, module.serve(other)["y"].numpy(), rtol=5e-3)
    served = serve_saved_model(tf, out / "saved_model", x=x)["y"]
    loaded = mlconv.load(out, allow_tensorflow=True)
    try:
        (got,) = loaded(x)
        # the signature whole: its host part (`- 1`, any number of rows) kept in TensorFlow
        # around the batching TPU function
        assert manifest["signatures"]["serving_default"]["runtime"] == "tensorflow"
        whole = loaded.signatures["serving_default"](x=x)["y"]
    finally:
        getattr(loaded, "close", lambda: None)()
    for result in (served, got - 1.0, whole):
        assert result.shape == (3, 5)
        error = float(np.abs(result - expected).max() / np.abs(expected).max())
        assert 1e-6 < error < 2e-2, error


def test_savedmodel_form_in_bfloat16_by_default(keras_saved_model, tmp_path):
    tf, model, module, saved = keras_saved_model
    out = tmp_path / "converted"
    convert(str(saved), str(out), TPU_FUNCTIONS)
    x = np.random.default_rng(7).standard_normal((2, 12, 12, 3)).astype(np.float32)
    expected = module.serve(x)["y"].numpy()
    for got in (serve_saved_model(tf, out / "saved_model", x=x)["y"], 2 * mlconv.load(out)(x)[0]):
        assert got.dtype == np.float32
        error = float(np.abs(got - expected).max() / np.abs(expected).max())
        assert 1e-6 < error < 2e-2, error


def test_onnx_artifact_has_a_saved_model(onnx_artifact):
    tf = pytest.importorskip("tensorflow")
    model, _, out, manifest = onnx_artifact
    x = np.random.default_rng(8).standard_normal((2, 3, 16, 16)).astype(np.float32)
    served = serve_saved_model(tf, out / "saved_model", x=x)
    assert list(served) == ["y"]
    np.testing.assert_allclose(served["y"], onnxruntime(model, x), rtol=1e-5, atol=1e-5)
    assert xla_call_functions(out / "saved_model")


def test_tflite_model_converts(keras_model, tmp_path):
    tf, model = keras_model
    from ai_edge_litert.interpreter import Interpreter

    path = tmp_path / "model.tflite"
    path.write_bytes(tf.lite.TFLiteConverter.from_keras_model(model).convert())
    out = tmp_path / "converted"
    manifest = convert(str(path), str(out), NO_DEFAULT_OPTIMIZATIONS)
    input_name = tf_name(manifest["inputs"][0]["name"])
    interpreter = Interpreter(model_path=str(path))
    interpreter.allocate_tensors()

    def litert(x):
        interpreter.set_tensor(interpreter.get_input_details()[0]["index"], x)
        interpreter.invoke()
        return interpreter.get_tensor(interpreter.get_output_details()[0]["index"])

    rng = np.random.default_rng(4)
    x, other = (rng.standard_normal((2, 12, 12, 3)).astype(np.float32) for _ in range(2))
    expected = litert(x)
    sensitivity.assert_input_sensitive(expected, litert(other), rtol=1e-5)
    (got,) = mlconv.load(out)(x)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    (served,) = serve_saved_model(tf, out / "saved_model", **{input_name: x}).values()
    np.testing.assert_allclose(served, expected, rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------- bfloat16


def test_tpu_bf16_pass_numerics_before_and_after():
    """The tpu IR right before tpu-bf16 and right after it, each run by the tpu interpreter."""
    from mlconv.dialects import make_context
    from mlconv.frontends.onnx_importer import import_onnx
    from mlconv.interpreters import run_module
    from mlconv.passes.pipelines import lower_to_tpu
    from mlconv.passes.tpu_bf16 import TpuBf16Pass

    before = lower_to_tpu(import_onnx(conv_model()))
    after = before.clone()
    TpuBf16Pass().apply(make_context(), after)
    after.verify()
    assert "bf16" in str(after) and "bf16" not in str(before)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 16, 16)).astype(np.float32)
    (expected,) = run_module(before, [x])
    (got,) = run_module(after, [x])
    assert got.dtype == np.float32
    error = float(np.abs(got - expected).max() / np.abs(expected).max())
    assert 1e-6 < error < 2e-2, error  # rounded as bfloat16 does, no worse


def converted_text(out: Path) -> str:
    return (out / "tpu" / "tpu_function_0.mlir").read_text()


@pytest.fixture(scope="module")
def onnx_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("bf16") / "model.onnx"
    onnx.save(conv_model(), str(path))
    return path


def test_default_conversion_computes_in_bfloat16(onnx_path, tmp_path):
    manifest = convert(str(onnx_path), str(tmp_path / "out"), "")
    assert manifest["bfloat16"] is True
    assert manifest["not_performed"] == [] and manifest["io_shape_optimization"] is True
    assert "bf16" in converted_text(tmp_path / "out")
    x = np.random.default_rng(6).standard_normal((2, 3, 16, 16)).astype(np.float32)
    expected = onnxruntime(conv_model(), x)
    (got,) = mlconv.load(tmp_path / "out")(x)
    assert got.dtype == np.float32
    error = float(np.abs(got - expected).max() / np.abs(expected).max())
    assert 1e-6 < error < 2e-2, error


def test_bfloat16_disabled_keeps_float32(onnx_path, tmp_path):
    manifest = convert(str(onnx_path), str(tmp_path / "out"), "bfloat16_optimization: DISABLED")
    assert manifest["bfloat16"] is False
    assert "bf16" not in converted_text(tmp_path / "out")


def test_filterlist_keeps_named_ops_float32(onnx_path, tmp_path):
    options = 'bfloat16_optimization_options { filterlist: "conv" scope: ALL }'
    convert(str(onnx_path), str(tmp_path / "out"), options)
    text = converted_text(tmp_path / "out")
    convolutions = [line for line in text.splitlines() if "stablehlo.convolution" in line]
    assert convolutions and all("xf32>" in line and "bf16" not in line for line in convolutions)
    assert "bf16" in text  # the other ops still are


def test_io_shape_optimization_reshapes_the_boundary_on_the_host(onnx_path, tmp_path):
    """On by default: x (2x3x16x16, 1536 floats) crosses as 12x128, y (2x5) as 10; the host
    reshapes it back, in the artifact and in the SavedModel form, with identical numbers."""
    tf = pytest.importorskip("tensorflow")
    x = np.random.default_rng(12).standard_normal((2, 3, 16, 16)).astype(np.float32)
    results = {}
    for state in ("DEFAULT", "DISABLED"):
        out = tmp_path / state
        options = f"bfloat16_optimization: DISABLED\nio_shape_optimization: {state}"
        manifest = convert(str(onnx_path), str(out), options)
        assert manifest["io_shape_optimization"] is (state == "DEFAULT")
        results[state] = (
            mlconv.load(out)(x)[0],
            serve_saved_model(tf, out / "saved_model", x=x)["y"],
            (out / "tpu" / "tpu_function_0.mlir").read_text(),
            manifest,
        )
    loaded, served, text, manifest = results["DEFAULT"]
    assert manifest["functions"][0]["inputs"] == [{"reshape": {"input": 0}, "shape": [12, 128]}]
    assert manifest["outputs"][0]["value"] == {
        "reshape": {"function": "tpu_function_0", "output": 0},
        "shape": [2, 5],
    }
    assert "tensor<12x128xf32>" in text and "-> (tensor<10xf32>" in text
    plain_loaded, plain_served, plain_text, plain = results["DISABLED"]
    assert plain["functions"][0]["inputs"] == [{"input": 0}]
    assert "tensor<2x3x16x16xf32>" in plain_text
    np.testing.assert_array_equal(loaded, plain_loaded)
    np.testing.assert_array_equal(served, plain_served)
    np.testing.assert_allclose(loaded, onnxruntime(conv_model(), x), rtol=1e-5, atol=1e-5)


def bf16_model() -> onnx.ModelProto:
    nodes = [
        helper.make_node("Cast", ["x"], ["h"], name="to_bf16", to=TensorProto.BFLOAT16),
        helper.make_node("Cast", ["h"], ["f"], name="to_f32", to=TensorProto.FLOAT),
        helper.make_node("Relu", ["f"], ["y"], name="relu"),
    ]
    graph = helper.make_graph(
        nodes,
        "already_bf16",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_model_already_in_bfloat16_needs_skip_safety_checks(tmp_path):
    from mlconv.errors import PassFailure

    path = tmp_path / "model.onnx"
    onnx.save(bf16_model(), str(path))
    with pytest.raises(PassFailure, match="already computes in bfloat16.*skip_safety_checks"):
        convert(str(path), str(tmp_path / "refused"), "")
    assert not (tmp_path / "refused").exists()
    options = "bfloat16_optimization_options { skip_safety_checks: true }"
    convert(str(path), str(tmp_path / "out"), options)
    x = np.array([-1.0, 0.5, 2.0, -3.0], np.float32)
    np.testing.assert_array_equal(mlconv.load(tmp_path / "out")(x)[0], np.maximum(x, 0))


# --------------------------------------------------------------------------- placement


@pytest.fixture(scope="module")
def placement_model(tmp_path_factory):
    """A SavedModel of the seed's placement cases: `tpu_func` (a dense layer with random
    weights), `outer` calling it through `middle` (indirectly), `direct` calling it directly,
    `bad_func` with two host-only string ops, `jitted` (jit_compile=True), and a string-taking
    serving signature whose parsing stays on the host."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    tf = pytest.importorskip("tensorflow")
    rng = np.random.default_rng(9)
    spec = [tf.TensorSpec((2, 6), tf.float32)]

    class Module(tf.Module):
        def __init__(self):
            super().__init__()
            self.w = tf.Variable(rng.standard_normal((6, 3)).astype(np.float32))

        @tf.function(input_signature=spec)
        def tpu_func(self, x):
            return tf.tanh(tf.matmul(x, self.w))

        @tf.function(input_signature=spec)
        def middle(self, x):
            return self.tpu_func(x) + 1.0

        @tf.function(input_signature=spec)
        def outer(self, x):
            return self.middle(x) * 3.0

        @tf.function(input_signature=spec)
        def direct(self, x):
            return self.tpu_func(x) * 3.0

        @tf.function(input_signature=[tf.TensorSpec((2, 6), tf.string)])
        def bad_func(self, s):
            return tf.strings.to_number(tf.strings.substr(s, 0, 3))

        @tf.function(input_signature=spec, jit_compile=True)
        def jitted(self, x):
            return tf.nn.relu(tf.matmul(x, self.w)) - 0.5

        @tf.function(input_signature=[tf.TensorSpec((2, 6), tf.string)])
        def serve(self, text):
            return {"y": self.tpu_func(tf.strings.to_number(text)) * 2.0}

    module = Module()
    names = ("tpu_func", "middle", "outer", "direct", "bad_func", "jitted")
    saved = tmp_path_factory.mktemp("placement") / "saved"
    tf.saved_model.save(
        module,
        str(saved),
        signatures={"serving_default": module.serve},
        options=tf.saved_model.SaveOptions(
            function_aliases={name: getattr(module, name) for name in names}
        ),
    )
    return tf, module, saved


def aliases(*names: str) -> str:
    return "".join(f'tpu_functions {{ function_alias: "{n}" }}\n' for n in names)


def test_duplicate_selection_of_one_function_is_refused(placement_model, tmp_path):
    from mlconv.frontends.tf_importer import read_saved_model

    _, _, saved = placement_model
    meta = read_saved_model(saved).meta_graphs[0]
    (concrete,) = [f for f, a in meta.meta_info_def.function_aliases.items() if a == "tpu_func"]
    options = aliases("tpu_func") + f'tpu_functions {{ concrete_function_name: "{concrete}" }}'
    with pytest.raises(OptionError) as error:
        convert(str(saved), str(tmp_path / "out"), options)
    assert str(error.value) == (
        f"error: tpu_functions[1].concrete_function_name: '{concrete}' selects the function "
        f"{concrete}, already selected by tpu_functions[0].function_alias 'tpu_func'; provide "
        "a given function only once"
    )


def test_tpu_function_indirectly_calling_another_is_the_seeds_error(placement_model, tmp_path):
    from mlconv.converter.placement import place_tpu_functions

    _, _, saved = placement_model
    with pytest.raises(OptionError) as error:
        convert(str(saved), str(tmp_path / "out"), aliases("outer", "tpu_func"))
    assert error.value.message == (
        'Unable to place both "outer" and "tpu_func" on the TPU because "outer" indirectly '
        'calls "tpu_func". This behavior is unsupported because it can cause invalid graphs to '
        "be generated."
    )
    options = parse_converter_options(aliases("direct", "tpu_func"))
    placed = place_tpu_functions(saved, options.tpu_functions)  # a direct call is fine
    assert [p.label for p in placed] == ["direct", "tpu_func"]


def test_host_only_ops_in_a_placed_function_are_all_reported(placement_model, tmp_path):
    _, _, saved = placement_model
    result = subprocess.run(
        ["mlconv-convert", str(saved), "-o", str(tmp_path / "out"), "--quiet"]
        + ["--converter-options-string", aliases("bad_func")],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1
    line = result.stderr.strip().splitlines()[-1]  # before it: TensorFlow's own start-up lines
    assert line.startswith(f"{PROG}: loc(\"bad_func/Substr\"): error: 'tf.Substr' op")
    assert "'tf.Substr' op isn't compilable for TPU device. (node bad_func/Substr)" in line
    assert "'tf.StringToNumber' op isn't compilable for TPU device." in line
    assert "Traceback" not in result.stderr and not (tmp_path / "out").exists()


def test_host_ops_outside_placed_functions_stay_on_the_host(placement_model, tmp_path):
    tf, module, saved = placement_model
    out = tmp_path / "out"
    convert(str(saved), str(out), aliases("tpu_func") + NO_DEFAULT_OPTIMIZATIONS)
    rng = np.random.default_rng(10)
    x, other = (rng.standard_normal((2, 6)).astype(np.float32) for _ in range(2))
    text = np.vectorize(lambda v: f"{v:.6f}")(x).astype(object)
    expected = module.serve(tf.constant(text))["y"].numpy()
    served = serve_saved_model(tf, out / "saved_model", text=text)["y"]
    np.testing.assert_allclose(served, expected, rtol=1e-5, atol=1e-5)
    assert xla_call_functions(out / "saved_model")[0].startswith("__inference_tpu_func")
    (got,) = mlconv.load(out)(x)
    np.testing.assert_allclose(got, module.tpu_func(x).numpy(), rtol=1e-5, atol=1e-5)
    sensitivity.assert_input_sensitive(got, module.tpu_func(other).numpy(), rtol=1e-5)


def test_concrete_function_name_places_that_function(placement_model, tmp_path):
    from mlconv.frontends.tf_importer import read_saved_model

    tf, module, saved = placement_model
    meta = read_saved_model(saved).meta_graphs[0]
    (name,) = [f for f, a in meta.meta_info_def.function_aliases.items() if a == "direct"]
    out = tmp_path / "out"
    options = f'tpu_functions {{ concrete_function_name: "{name}" }}\n' + NO_DEFAULT_OPTIMIZATIONS
    manifest = convert(str(saved), str(out), options)
    assert [f["name"] for f in manifest["functions"]] == [name]
    x = np.random.default_rng(15).standard_normal((2, 6)).astype(np.float32)
    np.testing.assert_allclose(
        mlconv.load(out)(x)[0], module.direct(x).numpy(), rtol=1e-5, atol=1e-5
    )
    assert xla_call_functions(out / "saved_model") == [name]


def test_signature_name_places_the_whole_signature(keras_saved_model, tmp_path):
    tf, _, module, saved = keras_saved_model
    out = tmp_path / "out"
    options = 'tpu_functions { signature_name: "serving_default" }\n' + NO_DEFAULT_OPTIMIZATIONS
    manifest = convert(str(saved), str(out), options)
    assert [f["name"] for f in manifest["functions"]] == ["serving_default"]
    assert manifest["report"]["cpu"] == 0  # the signature's `* 2` is on the TPU now
    x = np.random.default_rng(16).standard_normal((2, 12, 12, 3)).astype(np.float32)
    expected = module.serve(x)["y"].numpy()
    np.testing.assert_allclose(mlconv.load(out)(x=x)[0], expected, rtol=1e-5, atol=1e-5)
    served = serve_saved_model(tf, out / "saved_model", x=x)["y"]
    np.testing.assert_allclose(served, expected, rtol=1e-5, atol=1e-5)


def test_signature_with_string_ops_cannot_go_on_the_tpu(placement_model, tmp_path):
    from mlconv.errors import PassFailure

    _, _, saved = placement_model
    options = 'tpu_functions { signature_name: "serving_default" }'
    with pytest.raises(
        PassFailure, match="'tf.StringToNumber' op isn't compilable for TPU device."
    ):
        convert(str(saved), str(tmp_path / "out"), options)


def test_several_tpu_functions_are_placed_each_where_it_is_called(placement_model, tmp_path):
    """The seed's `tpu_func_1` / `tpu_func_2` case: two functions on the TPU, each one an
    XlaCallModule in the SavedModel form, each with its line in the report."""
    tf, module, saved = placement_model
    out = tmp_path / "out"
    manifest = convert(
        str(saved), str(out), aliases("tpu_func", "jitted") + NO_DEFAULT_OPTIMIZATIONS
    )
    assert [f["name"] for f in manifest["functions"]] == ["tpu_func", "jitted"]
    assert [i["name"] for i in manifest["inputs"]] == ["tpu_func.x", "jitted.x"]
    rng = np.random.default_rng(17)
    x, y = (rng.standard_normal((2, 6)).astype(np.float32) for _ in range(2))
    first, second = mlconv.load(out)(x, y)
    np.testing.assert_allclose(first, module.tpu_func(x).numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(second, module.jitted(y).numpy(), rtol=1e-5, atol=1e-5)
    assert len(xla_call_functions(out / "saved_model")) == 2
    loaded = tf.saved_model.load(
        str(out / "saved_model"),
        options=tf.saved_model.LoadOptions(experimental_load_function_aliases=True),
    )
    for name, value in (("tpu_func", x), ("jitted", y)):
        expected = getattr(module, name)(value).numpy()
        got = loaded.function_aliases[name](tf.constant(value)).numpy()
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    text = np.vectorize(lambda v: f"{v:.6f}")(x).astype(object)
    served = serve_saved_model(tf, out / "saved_model", text=text)["y"]
    np.testing.assert_allclose(served, module.serve(tf.constant(text))["y"].numpy(), rtol=1e-5)
    report = (out / "conversion_report.txt").read_text()
    assert "tpu_func\n" in report and "jitted\n" in report


def test_jit_compile_functions_places_the_jit_compiled_function(placement_model, tmp_path):
    tf, module, saved = placement_model
    out = tmp_path / "out"
    options = "tpu_functions { jit_compile_functions: true }\n" + NO_DEFAULT_OPTIMIZATIONS
    manifest = convert(str(saved), str(out), options)
    (function,) = manifest["functions"]
    assert "jitted" in function["name"]
    x = np.random.default_rng(11).standard_normal((2, 6)).astype(np.float32)
    (got,) = mlconv.load(out)(x)
    np.testing.assert_allclose(got, module.jitted(x).numpy(), rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------- report


def test_report_has_the_seeds_wording_and_numbers():
    from mlconv.passes.tpu_report import format_report

    assert format_report({"tpu_func_1": 1017, "tpu_func_2": 1017}, 70) == (
        "-------- Conversion Report --------\n"
        "TPU cost of the model: 96.67% (2034/2104)\n"
        "CPU cost of the model:  3.33% (70/2104)\n"
        "\n"
        "Cost breakdown\n"
        "================================\n"
        "%         Cost    Name\n"
        "--------------------------------\n"
        "3.33      70      [CPU cost]\n"
        "48.34     1017    tpu_func_1\n"
        "48.34     1017    tpu_func_2\n"
        "--------------------------------\n"
    )


def test_onnx_report_costs_the_whole_model_on_the_tpu(onnx_artifact):
    _, _, out, manifest = onnx_artifact
    conv_flops = 2 * 8 * 16 * 16 * 27 * 2  # batch, channels, pixels, taps, multiply-add
    (cost,) = manifest["report"]["tpu"].values()  # XLA skips the padding's taps: a bit less
    assert manifest["report"]["cpu"] == 0 and 0.9 * conv_flops <= cost["flops"] < conv_flops
    assert "TPU cost of the model: 100.00%" in (out / "conversion_report.txt").read_text()


# --------------------------------------------------------------------------- sharding


def mlp_model() -> onnx.ModelProto:
    """MatMul -> Relu -> MatMul on an 8x32 input, random weights."""
    rng = np.random.default_rng(13)
    weights = [
        numpy_helper.from_array(rng.standard_normal((32, 64)).astype(np.float32) * 0.3, "w1"),
        numpy_helper.from_array(rng.standard_normal((64, 16)).astype(np.float32) * 0.3, "w2"),
    ]
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
        helper.make_node("Relu", ["h"], ["r"], name="relu"),
        helper.make_node("MatMul", ["r", "w2"], ["y"], name="fc2"),
    ]
    return float_model(nodes, {"x": [8, 32]}, {"y": [8, 16]}, weights, name="mlp")


def sharding_options(cores: int, mesh_shape, coordinates, assignment=()) -> str:
    """ConverterOptions text with xla_sharding_options (the topology serialized, as the seed's
    schema takes it)."""
    pytest.importorskip("tensorflow")
    from google.protobuf import text_format
    from tensorflow.core.protobuf.tpu import topology_pb2

    from mlconv.converter.options import schema

    topology = topology_pb2.TopologyProto(
        mesh_shape=mesh_shape,
        num_tasks=1,
        num_tpu_devices_per_task=len(coordinates),
        device_coordinates=[v for c in coordinates for v in c],
    )
    options = schema().ConverterOptions(disable_default_optimizations=True)
    options.xla_sharding_options.num_cores_per_replica = cores
    options.xla_sharding_options.topology = topology.SerializeToString()
    options.xla_sharding_options.device_assignment.extend(v for c in assignment for v in c)
    return text_format.MessageToString(options)


# df_2x2 of the seed's schema comment: mesh [2, 2, 1, 2], eight cores.
DF_2X2 = [(x, y, 0, c) for x in range(2) for y in range(2) for c in range(2)]

SHARDED_RUN = """
import json, sys
import numpy as np
import jax
import mlconv
from mlconv.tools.mlconv_convert import convert

model, out, options = sys.argv[1:4]
assert len(jax.devices()) == 8, jax.devices()
x = np.random.default_rng(14).standard_normal((8, 32)).astype(np.float32)
manifest = convert(model, out + "/one", "disable_default_optimizations: true")
(single,) = mlconv.load(out + "/one")(x)
results = {"single": single.tolist()}
for index, text in enumerate(json.loads(options)):
    manifest = convert(model, out + f"/sharded{index}", text)
    loaded = mlconv.load(out + f"/sharded{index}")
    (got,) = loaded(x)
    results[f"sharded{index}"] = got.tolist()
    results[f"sharding{index}"] = manifest["sharding"]
    results[f"hlo{index}"] = open(out + f"/sharded{index}/tpu/tpu_function_0.mlir").read()[:3000]
print(json.dumps(results))
"""


def test_sharded_on_8_host_devices_equals_the_single_device_run(tmp_path):
    model = tmp_path / "mlp.onnx"
    onnx.save(mlp_model(), str(model))
    options = [
        sharding_options(8, [2, 2, 1, 2], DF_2X2),
        sharding_options(
            4, [2, 2, 1, 2], DF_2X2, [(0, 0, 0, 0), (0, 0, 0, 1), (1, 0, 0, 0), (1, 0, 0, 1)]
        ),
    ]
    env = {
        **os.environ,
        "XLA_FLAGS": "--xla_force_host_platform_device_count=8",
        "JAX_PLATFORMS": "cpu",
    }
    result = subprocess.run(
        ["python", "-c", SHARDED_RUN, str(model), str(tmp_path), json.dumps(options)],
        capture_output=True,
        text=True,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    got = json.loads(result.stdout.strip().splitlines()[-1])
    single = np.array(got["single"], np.float32)
    x = np.random.default_rng(14).standard_normal((8, 32)).astype(np.float32)
    import onnxruntime as ort

    session = ort.InferenceSession(
        mlp_model().SerializeToString(), providers=["CPUExecutionProvider"]
    )
    np.testing.assert_allclose(single, session.run(None, {"x": x})[0], rtol=1e-5, atol=1e-5)
    assert got["sharding0"] == {
        "axes": ["x", "y", "z", "core"],
        "shape": [2, 2, 1, 2],
        "devices": list(range(8)),
    }
    # The assigned box: x in {0, 1}, y = 0, both cores: devices 0, 1, 4, 5 of the topology.
    assert got["sharding1"] == {
        "axes": ["x", "y", "z", "core"],
        "shape": [2, 1, 1, 2],
        "devices": [0, 1, 4, 5],
    }
    for index, cores in ((0, 8), (1, 4)):  # StableHLO partitioned by XLA SPMD (Shardy)
        assert f"mhlo.num_partitions = {cores} : i32" in got[f"hlo{index}"]
        assert '#sdy.sharding<@mesh, [{"x", "y", "z", "core"}, {}]>' in got[f"hlo{index}"]
        np.testing.assert_allclose(
            np.array(got[f"sharded{index}"], np.float32), single, rtol=1e-6, atol=1e-6
        )


@pytest.mark.parametrize(
    "assignment, message",
    [
        ([(0, 0, 0, 0), (1, 1, 0, 1)], "do not form a box of the topology"),
        ([(0, 0, 0, 0), (3, 0, 0, 0)], r"\[\[3, 0, 0, 0\]\] are not devices of the topology"),
        ([(0, 0, 0, 0)], "gives 1 devices for num_cores_per_replica 2"),
    ],
)
def test_bad_device_assignment_is_one_line(assignment, message, tmp_path):
    model = tmp_path / "mlp.onnx"
    onnx.save(mlp_model(), str(model))
    with pytest.raises(OptionError, match=message) as error:
        convert(
            str(model), str(tmp_path / "out"), sharding_options(2, [2, 2, 1, 2], DF_2X2, assignment)
        )
    assert "\n" not in str(error.value) and not (tmp_path / "out").exists()

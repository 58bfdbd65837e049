"""Textual IR round-trips (issue 7, item 5): for every model the test-suite imports
(`model_zoo.all_models()`), the imported module and the module after every pass of the default
pipeline print, parse back and print identically, and no printed type has a `-1` dimension;
`mlconv-opt` parses what `mlconv-translate` prints.

The default pipeline is the one `mlconv.compile` runs: the framework's front phase, its
lowering to core, the passes after it, then core-to-tpu-pipeline's passes, with each dynamic
input dim bound to 1 as a call of batch 1 would.
"""

from __future__ import annotations

import importlib
import io
import re
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import model_zoo  # noqa: E402 - a module beside this one (conftest.py)
import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.printer import Printer

MODELS = model_zoo.all_models()
BIN = Path(sys.executable).parent
# A -1 dimension in a printed shape: `tensor<-1x...`, `x-1x`, `x-1xf32>`.
MINUS_ONE_DIM = re.compile(r"(?:<|x)-1x")


def print_ir(module: ModuleOp) -> str:
    stream = io.StringIO()
    Printer(stream=stream, print_debuginfo=True).print_op(module)
    return stream.getvalue()


def assert_round_trips(module: ModuleOp, after: str, seen: set[str] | None = None) -> None:
    """`module` prints without -1 dims and parses back to the same text. Text already checked
    (in `seen`) is not parsed again: a pass that changed nothing costs no parse."""
    from mlconv.dialects import make_context

    text = print_ir(module)
    if seen is not None:
        if text in seen:
            return
        seen.add(text)
    found = MINUS_ONE_DIM.search(text)
    assert found is None, f"a -1 dimension is printed after {after}: {found.group(0)}"
    try:
        parsed = Parser(make_context(), text, after).parse_module()
    except Exception as error:  # noqa: BLE001 - shown with the pass it follows
        pytest.fail(f"the IR printed after {after} does not parse: {str(error)[:2000]}")
    again = print_ir(parsed)
    if again != text:
        pairs = zip(text.splitlines(), again.splitlines(), strict=False)
        first = next(((a, b) for a, b in pairs if a != b), ("(lengths differ)", ""))
        pytest.fail(
            f"print(parse(print(m))) != print(m) after {after}: "
            f"{first[0][:300]!r} became {first[1][:300]!r}"
        )


def run_default_pipeline(module: ModuleOp) -> None:
    """Round trip after the import and after every pass of the default pipeline."""
    from mlconv.dialects import make_context
    from mlconv.passes.pipelines import framework_dialects

    seen: set[str] = set()
    assert_round_trips(module, "the import", seen)
    dialects = framework_dialects(module)
    assert len(dialects) == 1, dialects
    ctx = make_context()
    for stage in default_passes(dialects[0], ""):
        if stage.name == "core-infer-shapes":
            stage = type(stage)(input_shapes=batch_one(module))
        stage.apply(ctx, module)
        assert_round_trips(module, stage.name, seen)
    assert all(op.name.startswith(("tpu.", "func.", "builtin.")) for op in module.walk()), (
        "the pipeline did not reach tpu ops"
    )


def default_passes(dialect: str, input_shapes: str):
    from mlconv.passes.pipelines import CoreToTpuPipeline, to_core_passes

    return to_core_passes(dialect) + CoreToTpuPipeline(input_shapes=input_shapes).passes()


def batch_one(module: ModuleOp) -> str:
    """input-shapes binding each dynamic dim of @main's inputs to 1."""
    from mlconv.passes.dry_run import bind_dynamic_dims
    from mlconv.signature.module_io import find_main

    return bind_dynamic_dims(find_main(module))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    paths: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in paths:
            paths[name] = MODELS[name](tmp_path_factory.mktemp(re.sub(r"\W", "_", name)))
        return paths[name]

    return get


def test_the_zoo_has_every_kind_of_model() -> None:
    names = sorted(MODELS)
    assert sum(n.startswith("light_") for n in names) == 9, names
    assert any(n.endswith(".tflite") for n in names) and any(
        n.endswith(".savedmodel") for n in names
    )


@pytest.mark.parametrize("name", sorted(MODELS))
def test_round_trip_after_every_pass(name: str, built) -> None:
    from mlconv.frontends.load import load_model

    run_default_pipeline(load_model(str(built(name))))


TRANSLATE = {".onnx": "--import-onnx", ".tflite": "--import-tflite", ".savedmodel": "--import-tf"}


@pytest.mark.parametrize(
    "name",
    ["light_squeezenet.onnx", "mlp_external_data.onnx", "keras_cnn.tflite", "keras_cnn.savedmodel"],
)
def test_mlconv_opt_parses_what_mlconv_translate_prints(name: str, built, tmp_path: Path) -> None:
    flag = TRANSLATE[Path(name).suffix]
    printed = tmp_path / "imported.mlir"
    translate = subprocess.run(
        [str(BIN / "mlconv-translate"), flag, str(built(name)), "-o", str(printed)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert translate.returncode == 0, translate.stderr
    assert not MINUS_ONE_DIM.search(printed.read_text())
    opt = subprocess.run(
        [str(BIN / "mlconv-opt"), str(printed), "--mlir-print-debuginfo"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert opt.returncode == 0, opt.stderr
    assert opt.stdout.strip() == printed.read_text().strip()


# --- the exporter tests' models (exported_models.py), exported once per session, shared -------

EXPORTED = (
    importlib.import_module("exported_models")
    if Path(__file__).with_name("exported_models.py").is_file()
    else None
)


@pytest.mark.parametrize("case", EXPORTED.CASES if EXPORTED else [], ids="-".join)
def test_exported_model_round_trips_after_every_pass(case, exported) -> None:
    from mlconv.frontends.load import load_model

    folder = exported(case)
    run_default_pipeline(load_model(str(EXPORTED.model_file(folder, case[1]))))


@pytest.mark.required  # CI installs torch (the exporters extra)
@pytest.mark.skipif(EXPORTED is None, reason="exported_models needs torch")
def test_ssdlite_round_trips_after_every_pass(exported) -> None:
    """SSDlite (TorchScript): a call binds the image's shape and, as its NonZero and
    NonMaxSuppression need constant data, its value; the module round-trips after every pass."""
    from xdsl.dialects import func
    from xdsl.dialects.builtin import TensorType, f32
    from xdsl.rewriter import InsertPoint, Rewriter

    from mlconv.dialects import make_context
    from mlconv.dialects.core_tensor import ConstantOp
    from mlconv.frontends.load import load_model
    from mlconv.passes.pipelines import CoreToTpuPipeline, to_core_passes
    from mlconv.signature.module_io import find_main

    module = load_model(str(EXPORTED.ssdlite_file(exported)))
    seen: set[str] = set()
    assert_round_trips(module, "the import", seen)
    ctx = make_context()
    for stage in to_core_passes("onnx"):
        stage.apply(ctx, module)
        assert_round_trips(module, stage.name, seen)
    main = find_main(module)
    (arg,) = main.body.block.args
    image = EXPORTED.detector_image(EXPORTED.DETECTOR_SIZES[0], 0)
    Rewriter.replace_value_with_new_type(arg, TensorType(f32, list(image.shape)))
    (arg,) = main.body.block.args  # a new block argument of the static type
    constant = ConstantOp.from_numpy(image)
    Rewriter.insert_op(constant, InsertPoint.at_start(main.body.block))
    arg.replace_all_uses_with(constant.output)
    main.function_type = func.FunctionType.from_lists([arg.type], main.function_type.outputs)
    for stage in CoreToTpuPipeline().passes():
        stage.apply(ctx, module)
        assert_round_trips(module, stage.name, seen)
    assert all(op.name.startswith(("tpu.", "func.", "builtin.")) for op in module.walk())


@pytest.mark.parametrize("name", ["keras_cnn.tflite", "keras_cnn.savedmodel"])
def test_check_passes_models_that_lower(name: str, built) -> None:
    """`--check`'s dry run (tf/tflite drivers, core-to-tpu at batch 1) finds nothing to report
    on models that compile."""
    flag = TRANSLATE[Path(name).suffix]
    result = subprocess.run(
        [str(BIN / "mlconv-translate"), flag, str(built(name)), "--check"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert (result.returncode, result.stdout) == (0, ""), result.stderr
    assert "error:" not in result.stderr, result.stderr  # TensorFlow logs its own lines there


@pytest.mark.parametrize(
    "array",
    [
        np.array([-np.inf], np.float32),  # printed by xDSL as dense<0xFF800000>, read as 4.29e9
        np.array([np.inf, np.nan, 1.5], np.float32),
        np.full(300, -np.inf, np.float32),
        np.array([np.nan, -0.0], np.float64),
        np.array([np.inf, 2], np.float16),
        np.array([-np.inf, 1], ml_dtypes.bfloat16),
    ],
    ids=lambda a: f"{a.dtype}x{a.size}",
)
def test_non_finite_constants_round_trip(array: np.ndarray) -> None:
    """-inf masks (attention), nan and inf constants keep their values through the text."""
    from mlconv.dense import to_numpy
    from mlconv.dialects import make_context
    from mlconv.dialects.core_tensor import ConstantOp

    module = ModuleOp([ConstantOp.from_numpy(array)])
    assert_round_trips(module, "a constant")
    parsed = Parser(make_context(), print_ir(module)).parse_module()
    np.testing.assert_array_equal(to_numpy(parsed.body.block.first_op.value), array)


def test_hex_float_literals_are_bit_patterns() -> None:
    """MLIR reads `dense<0xFF800000> : tensor<f32>` as -inf (the bits), not as 4286578688.0."""
    from mlconv.dense import to_numpy
    from mlconv.dialects import make_context

    text = '"core.Constant"() {value = dense<[0xFF800000, 0x3FC00000]> : tensor<2xf32>} : () -> tensor<2xf32>'
    parsed = Parser(make_context(), text).parse_module()
    np.testing.assert_array_equal(to_numpy(parsed.body.block.first_op.value), [-np.inf, 1.5])

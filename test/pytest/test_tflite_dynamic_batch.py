"""TFLite writer with a None batch: `shape` 1 and `shape_signature` -1 as TF's converter writes.

A Keras model (Dense + Conv2D + Flatten + Softmax, fixed seeds) with a None batch, saved as a
SavedModel and as .tflite by TFLiteConverter, each written back by `mlconv-translate
--export-tflite`, run in LiteRT at batch 1 and 3 against Keras, op versions against TF's file.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")
litert = pytest.importorskip("ai_edge_litert.interpreter")
schema = pytest.importorskip("tensorflow.lite.python.schema_py_generated")


@pytest.fixture(scope="session")
def saved(tmp_path_factory):
    keras.utils.set_random_seed(7)
    model = keras.Sequential(
        [
            keras.Input((6, 6, 2)),
            keras.layers.Conv2D(4, 3, activation="relu"),
            keras.layers.Flatten(),
            keras.layers.Dense(5),
            keras.layers.Softmax(),
        ]
    )
    folder = tmp_path_factory.mktemp("dyn")
    model.export(str(folder / "sm"), verbose=False)
    converter = tf.lite.TFLiteConverter.from_saved_model(str(folder / "sm"))
    (folder / "tf.tflite").write_bytes(converter.convert())
    return model, folder


def _versions(data: bytes) -> dict[str, int]:
    m = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(data, 0))
    names = {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}
    return {names[max(c.builtinCode, c.deprecatedBuiltinCode)]: c.version for c in m.operatorCodes}


def _run(path, x):
    interp = litert.Interpreter(model_path=str(path))
    i = interp.get_input_details()[0]["index"]
    interp.resize_tensor_input(i, x.shape)
    interp.allocate_tensors()
    interp.set_tensor(i, x)
    interp.invoke()
    return interp.get_tensor(interp.get_output_details()[0]["index"])


def test_savedmodel_flatten_refused_in_one_line(saved):
    """Keras 3's Flatten in a SavedModel is Shape + StridedSlice + Pack + Reshape: core.ShapeOf
    and core.StridedSlice have no TFLite lowering yet, so export refuses in one line naming them."""
    _, folder = saved
    tool = [sys.executable, "-m", "mlconv.tools.mlconv_translate", "-q"]
    opt = [sys.executable, "-m", "mlconv.tools.mlconv_opt", "-q"]
    ir, core = folder / "sm.mlir", folder / "sm.core.mlir"
    for step in (
        [*tool, "--import-tf", str(folder / "sm"), "-o", str(ir)],
        [*opt, str(ir), "-p", "tf-to-core", "-o", str(core)],
    ):
        assert subprocess.run(step, capture_output=True, text=True).returncode == 0
    done = subprocess.run(
        [*tool, "--export-tflite", str(core), "-o", str(folder / "sm.tflite")],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1 and "core.ShapeOf" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert not (folder / "sm.tflite").exists()


@pytest.mark.parametrize("source", ["tf.tflite"])
def test_dynamic_batch_round_trip(saved, source):
    model, folder = saved
    out = folder / f"ours-{source.replace('.', '-')}.tflite"
    tool = [sys.executable, "-m", "mlconv.tools.mlconv_translate", "-q"]
    opt = [sys.executable, "-m", "mlconv.tools.mlconv_opt", "-q"]
    ir, core = out.with_suffix(".mlir"), out.with_suffix(".core.mlir")
    steps = [[*tool, "--import-tflite", str(folder / source), "-o", str(core)]]
    if source == "sm":  # SavedModel: tf dialect, then tf-to-core
        steps = [
            [*tool, "--import-tf", str(folder / source), "-o", str(ir)],
            [*opt, str(ir), "-p", "tf-to-core", "-o", str(core)],
        ]
    for step in [*steps, [*tool, "--export-tflite", str(core), "-o", str(out)]]:
        done = subprocess.run(step, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    m = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(out.read_bytes(), 0))
    graph = m.subgraphs[0]
    first = graph.tensors[graph.inputs[0]]
    assert list(first.shape) == [1, 6, 6, 2] and list(first.shapeSignature) == [-1, 6, 6, 2]
    rng = np.random.default_rng(3)
    for batch in (1, 3):
        x = rng.standard_normal((batch, 6, 6, 2)).astype(np.float32)
        np.testing.assert_allclose(_run(out, x), np.asarray(model(x)), rtol=1e-5, atol=1e-6)
    ours, theirs = _versions(out.read_bytes()), _versions((folder / "tf.tflite").read_bytes())
    assert {k: v for k, v in ours.items() if k in theirs} == {
        k: v for k, v in theirs.items() if k in ours
    }

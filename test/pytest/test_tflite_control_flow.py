"""TFLite IF / WHILE (subgraphs held as regions) against LiteRT, on the file TFLiteConverter
writes for a tf.function with tf.cond and tf.while_loop (a `None` batch, random weights).

Two inputs at batch 2 and 3 take different branches and run the loop a different number of
times (checked on LiteRT's own outputs); mlconv.compile of the .tflite file must match LiteRT
on both, from one conversion. Bad subgraph references are one-line refusals.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")
litert = pytest.importorskip("ai_edge_litert.interpreter")

import mlconv  # noqa: E402
from mlconv.errors import FrontendError  # noqa: E402
from mlconv.frontends.tflite_importer import import_tflite, tflite_schema  # noqa: E402

RTOL = 1e-4


def _converted() -> bytes:
    weights = np.random.default_rng(0).standard_normal((4, 4)).astype(np.float32)

    class Model(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32)])
        def f(self, x):
            h = tf.matmul(x, weights)
            y = tf.cond(
                tf.reduce_sum(x) > 0,
                lambda: tf.sigmoid(h) * 2.0 + 1.0,
                lambda: tf.nn.relu(-h) + 0.5,
            )

            def cond(i, v):
                return tf.reduce_sum(tf.abs(v)) < 100.0

            def body(i, v):
                return i + 1, v * 1.5 + 1.0

            n, z = tf.while_loop(cond, body, (tf.constant(0), y))
            return z, n

    model = Model()
    converter = tf.lite.TFLiteConverter.from_concrete_functions(
        [model.f.get_concrete_function()], model
    )
    return converter.convert()


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    path = tmp_path_factory.mktemp("tflite_cf") / "cf.tflite"
    path.write_bytes(_converted())
    return path


def _litert(path, x):
    interpreter = litert.Interpreter(model_path=str(path))
    interpreter.resize_tensor_input(interpreter.get_input_details()[0]["index"], x.shape)
    interpreter.allocate_tensors()
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], x)
    interpreter.invoke()
    return [interpreter.get_tensor(o["index"]) for o in interpreter.get_output_details()]


INPUTS = {  # batch 2 takes the then branch, batch 3 the else branch
    "then": np.abs(np.random.default_rng(1).standard_normal((2, 4))).astype(np.float32),
    "else": -np.abs(np.random.default_rng(2).standard_normal((3, 4))).astype(np.float32) * 3,
}


def test_file_holds_if_and_while(path):
    text = str(import_tflite(path))
    assert '"tflite.IF"' in text and '"tflite.WHILE"' in text
    assert text.count('"tflite.YIELD"') == 4  # then, else, cond, body


def test_matches_litert_on_both_branches(path):
    compiled = mlconv.compile(str(path))  # one conversion, two batch sizes
    trips = []
    for name, x in INPUTS.items():
        expected = _litert(path, x)
        got = compiled(x)
        got = got if isinstance(got, list | tuple) else [got]
        assert len(got) == len(expected), name
        for g, e in zip(got, expected, strict=True):
            g = np.asarray(g)
            assert g.shape == e.shape and g.dtype == e.dtype, name
            assert np.abs(g - e).max() <= RTOL * np.abs(e).max(), name
        trips += [int(e) for e in expected if e.dtype == np.int32]
    assert (
        len(trips) == 2 and trips[0] != trips[1] and min(trips) > 0
    )  # different trip counts, both loop


def _rewritten(path, tmp_path, change) -> str:
    """The file with its object API model changed by `change(model)`, written next to it."""
    import flatbuffers

    s = tflite_schema()
    model = s.ModelT.InitFromObj(s.Model.GetRootAs(path.read_bytes(), 0))
    change(model)
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    out = tmp_path / "changed.tflite"
    out.write_bytes(bytes(builder.Output()))
    return str(out)


def _main_if(model):
    return next(
        op
        for op in model.subgraphs[0].operators
        if op.builtinOptions is not None and hasattr(op.builtinOptions, "thenSubgraphIndex")
    )


def test_subgraph_index_outside_the_file_is_refused(path, tmp_path):
    def change(model):
        _main_if(model).builtinOptions.thenSubgraphIndex = 99

    with pytest.raises(FrontendError) as error:
        import_tflite(_rewritten(path, tmp_path, change))
    assert error.value.message == (
        "IF names subgraph 99 as its then_subgraph_index, but the file has subgraphs 1 to 4 "
        "besides the main one"
    )


def test_subgraph_holding_itself_is_refused(path, tmp_path):
    def change(model):
        branch = _main_if(model).builtinOptions.elseSubgraphIndex
        import copy

        nested = copy.deepcopy(_main_if(model))
        nested.builtinOptions.thenSubgraphIndex = branch
        nested.inputs = [0, 0]
        nested.outputs = list(model.subgraphs[branch].outputs)
        model.subgraphs[branch].operators.append(nested)

    with pytest.raises(FrontendError, match="holds itself through control flow"):
        import_tflite(_rewritten(path, tmp_path, change))

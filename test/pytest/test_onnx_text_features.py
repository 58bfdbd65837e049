"""TfIdfVectorizer against onnxruntime: the weighted modes (IDF, TFIDF) and a pool whose
grams of one size lie outside [min_gram_length, max_gram_length] (they take ids but are never
counted), on random token rows where many n-grams occur at several skip distances. The
backend node cases cover only mode TF."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import mlconv

ort = pytest.importorskip("onnxruntime")

POOL = [2, 3, 5, 4, 5, 6, 7, 8, 6, 7, 2, 2, 3, 3]  # unigrams 2 3 5 4; bigrams 56 78 67 22 33
INDEXES = [0, 1, 2, 3, 4, 5, 6, 7, 8]


def _model(mode, weights, low, high, skip):
    node = helper.make_node(
        "TfIdfVectorizer",
        ["X"],
        ["Y"],
        mode=mode,
        min_gram_length=low,
        max_gram_length=high,
        max_skip_count=skip,
        ngram_counts=[0, 4],
        ngram_indexes=INDEXES,
        pool_int64s=POOL,
        **({"weights": weights} if weights else {}),
    )
    graph = helper.make_graph(
        [node],
        "tfidf",
        [helper.make_tensor_value_info("X", TensorProto.INT64, [3, 17])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [3, 9])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize(
    "mode, weights, low, high, skip",
    [
        ("TFIDF", [0.5, 1.5, 2.0, 0.25, 3.0, 1.0, 0.75, 4.0, 2.5], 1, 2, 3),
        ("IDF", [0.5, 1.5, 2.0, 0.25, 3.0, 1.0, 0.75, 4.0, 2.5], 1, 2, 2),
        ("IDF", None, 2, 2, 1),
        ("TF", None, 2, 2, 4),
    ],
)
def test_tfidf_matches_onnxruntime(mode, weights, low, high, skip):
    model = _model(mode, weights, low, high, skip)
    onnx.checker.check_model(model)
    x = np.random.default_rng(3).integers(2, 9, size=(3, 17)).astype(np.int64)
    (want,) = ort.InferenceSession(model.SerializeToString()).run(None, {"X": x})
    assert np.count_nonzero(want) > 6  # the rows hit many grams
    (got,) = mlconv.compile(model, device="cpu")(x)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)

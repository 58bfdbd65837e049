"""Keras 3 models as users export them (issue 7): tf2onnx .onnx, SavedModel (`model.export`) and
.tflite (`TFLiteConverter.from_keras_model`, `shape_signature` -1), all with the `(None, ...)`
batch Keras writes; the models are built in `exported_models.py` (a small CNN with a dilated
depthwise convolution, MobileNetV2, a transformer block).

One `mlconv.compile` of the file runs at two batch sizes, never given `input_shapes`, and matches
Keras (tf2onnx, SavedModel) or LiteRT (.tflite) at rtol 1e-3 / atol 1e-4, after the reference on
another input has been shown to differ by 100x the tolerance at least.
"""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
pytest.importorskip("tensorflow")
pytest.importorskip("keras")
pytest.importorskip("tf2onnx")
pytest.importorskip("ai_edge_litert.interpreter")


import exported_models  # noqa: E402 - a module beside this one (conftest.py)

CASES = exported_models.cases("keras")


@pytest.mark.parametrize("case", CASES, ids=[f"{m}-{e}" for m, e in CASES])
def test_matches_keras(exported, case):
    exported_models.check_matches_source(exported(case), case[1])

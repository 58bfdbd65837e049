"""PyTorch models from `torch.onnx.export` (issue 7): torchvision CNNs and Hugging Face ViT,
BERT and GPT-2 built from code with random weights (`exported_models.py`), exported with a
dynamic batch (and sequence length) by the TorchScript exporter (`dynamo=False`, opset 17) and
by the default dynamo exporter (opset 18+, weights in `model.onnx.data`).

One `mlconv.compile` of the exporter's file runs at two batch sizes (the token models also at
two sequence lengths), never given `input_shapes`, and matches PyTorch at rtol 1e-3 / atol 1e-4;
PyTorch's output on another input first differs from it by 100x the tolerance at least.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("torchvision")
pytest.importorskip("transformers")
pytest.importorskip("onnxscript")


import exported_models  # noqa: E402 - a module beside this one (conftest.py)

CASES = [c for c in exported_models.CASES if exported_models.MODELS[c[0]].framework == "torch"]


@pytest.fixture(scope="session")
def exported(request, tmp_path_factory):
    return exported_models.export_cache(request, tmp_path_factory)


@pytest.mark.parametrize("case", CASES, ids=[f"{m}-{e}" for m, e in CASES])
def test_matches_pytorch(exported, case):
    folder = exported(case)
    if case[1] == "dynamo":
        assert (folder / "model.onnx.data").exists(), "the dynamo exporter wrote no external data"
    exported_models.check_matches_source(folder, case[1])

"""Two shape-inference bugs real exports hit (issue 29), each against its source's own outputs.

- A MobileViT-style unfold/fold block exported by torch.onnx with a dynamic batch reshapes
  (B*4, 64, 64) -> (B, 4, 64, -1): the -1 must not come out as 16 (one conversion, two batch
  sizes, against PyTorch).
- An If whose branches both define values named `v` and `t` with different shapes, with a
  ConstantOfShape after it (optimum's merged Whisper decoder has the pattern): ONNX's
  `data_prop` inference would give the else branch the then branch's types (against
  onnxruntime, both branches).
"""

from __future__ import annotations

import pathlib

import numpy as np
import onnx
import pytest

import mlconv

INPUTS = pathlib.Path(__file__).parents[1] / "filecheck" / "tools" / "Inputs"


def test_reshape_minus_one_next_to_dynamic_batch(tmp_path):
    torch = pytest.importorskip("torch")

    class UnfoldFold(torch.nn.Module):
        """MobileViT's unfold -> attention-free mixing -> fold, on 2x2 patches."""

        def __init__(self):
            super().__init__()
            self.mix = torch.nn.Linear(64, 64)

        def forward(self, x):  # (B, 4, 64, 64)
            b = x.shape[0]
            patches = x.reshape(b * 4, 64, 64)
            mixed = self.mix(patches).transpose(1, 2)
            return torch.relu(mixed.reshape(b, 4, 64, -1))

    torch.manual_seed(0)
    model = UnfoldFold().eval()
    path = tmp_path / "unfold_fold.onnx"
    torch.onnx.export(
        model,
        (torch.randn(2, 4, 64, 64),),
        str(path),
        input_names=["x"],
        output_names=["y"],
        dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}},
        opset_version=17,
        dynamo=False,
    )
    compiled = mlconv.compile(str(path))
    rng = np.random.default_rng(0)
    for batch in (1, 3):
        x = rng.standard_normal((batch, 4, 64, 64)).astype(np.float32)
        with torch.no_grad():
            expected = model(torch.from_numpy(x)).numpy()
        (got,) = compiled(x)
        assert got.shape == expected.shape == (batch, 4, 64, 64)
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def test_if_branches_keep_their_own_types():
    ort = pytest.importorskip("onnxruntime")
    model = onnx.load(str(INPUTS / "if-same-names.onnxtxt"))
    session = ort.InferenceSession(model.SerializeToString())
    compiled = mlconv.compile(model)
    rng = np.random.default_rng(1)
    x4 = rng.standard_normal((1, 2, 3, 4)).astype(np.float32)
    x2 = rng.standard_normal((5, 6)).astype(np.float32)
    for cond in (True, False):
        feeds = {"c": np.array(cond), "x4": x4, "x2": x2}
        (expected,) = session.run(None, feeds)
        (got,) = compiled(*feeds.values())
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    assert list(model.graph.node[0].attribute[0].g.node[0].output) == ["v"]  # given back as it came

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

CASES = exported_models.cases("torch")


@pytest.mark.parametrize("case", CASES, ids=[f"{m}-{e}" for m, e in CASES])
def test_matches_pytorch(exported, case):
    folder = exported(case)
    if case[1] == "dynamo":
        assert (folder / "model.onnx.data").exists(), "the dynamo exporter wrote no external data"
    exported_models.check_matches_source(folder, case[1])


def test_ssdlite_matches_onnxruntime(exported):
    """torchvision SSDlite320-MobileNetV3 (random weights) from the TorchScript exporter: its
    post-processing runs NonMaxSuppression inside an If whose Slice step is an outer constant
    unsqueezed in the branch (core-fold-constants folds it). One conversion runs two image
    sizes; boxes, scores and labels match onnxruntime, detections exist and move with the image."""
    import numpy as np
    import onnxruntime

    import mlconv

    path = exported_models.ssdlite_file(exported)
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    run = mlconv.compile(str(path))
    seen = []
    for seed, size in enumerate(exported_models.DETECTOR_SIZES):
        image = exported_models.detector_image(size, seed)
        expected = session.run(None, {"images": image})
        got = run(image)
        assert len(got) == len(expected) == 3
        assert expected[0].shape[0] > 0, "no detections: the comparison would prove nothing"
        for name, e, g in zip(exported_models.DETECTOR_OUTPUTS, expected, got, strict=True):
            assert g.shape == e.shape and g.dtype == e.dtype, f"{name} at {size}"
            np.testing.assert_allclose(
                g, e, rtol=exported_models.RTOL, atol=exported_models.ATOL,
                err_msg=f"{name} at image size {size}",
            )  # fmt: skip
        height, width = size
        seen.append((expected[0] / np.array([width, height, width, height]), expected[2]))
    # Another image gives other detections: boxes relative to the image size, or labels.
    (boxes0, labels0), (boxes1, labels1) = seen
    assert boxes0.shape != boxes1.shape or not np.allclose(boxes0, boxes1, atol=1e-2)
    assert labels0.shape != labels1.shape or not np.array_equal(labels0, labels1)
    # Another image at the first size: its detections differ, yet nothing is compiled; the
    # backbone is compiled once per image size, the post-processing runs per call
    # (backends/staged.py).
    image = exported_models.detector_image(exported_models.DETECTOR_SIZES[0], 7)
    expected = session.run(None, {"images": image})
    assert not np.array_equal(expected[0], seen[0][0] * np.array([320, 240, 320, 240]))
    for name, e, g in zip(exported_models.DETECTOR_OUTPUTS, expected, run(image), strict=True):
        assert g.shape == e.shape and g.dtype == e.dtype, name
        np.testing.assert_allclose(g, e, rtol=exported_models.RTOL, atol=exported_models.ATOL)
    assert run.compilations == len(exported_models.DETECTOR_SIZES)


def _assert_same_detections(expected, got, size) -> None:
    """The same detections: each of onnxruntime's has one of ours with its label, box and score
    (rtol 1e-3, atol 1e-4), in the same order except among scores equal within that tolerance
    (the order of near-equal scores follows float rounding)."""
    import numpy as np

    (boxes, labels, scores), (our_boxes, our_labels, our_scores) = expected, got
    close = {"rtol": exported_models.RTOL, "atol": exported_models.ATOL}
    unused = list(range(len(labels)))
    for i in range(len(labels)):
        same = [
            j for j in unused
            if our_labels[j] == labels[i] and np.allclose(our_boxes[j], boxes[i], **close)
            and np.isclose(our_scores[j], scores[i], **close)
        ]  # fmt: skip
        assert same, f"onnxruntime's detection {i} at {size} has no match: {boxes[i]} {scores[i]}"
        j = same[0]
        assert j == i or np.isclose(scores[i], scores[j], **close), f"order at {size}"
        unused.remove(j)


def test_fasterrcnn_matches_onnxruntime(exported):
    """torchvision Faster R-CNN (MobileNetV3-Large 320 FPN, random weights) from the TorchScript
    exporter with a dynamic image size: the RPN slices its objectness per FPN level at offsets
    computed from the feature maps' shapes, runs NonMaxSuppression per level, pools the
    proposals with RoiAlign per level (a level may get none) and runs NonMaxSuppression per
    class. The data-dependent part runs per call on the host (backends/staged.py) with the
    ONNX semantics of each op, so boxes, labels and scores are onnxruntime's. One conversion,
    two image sizes, one compilation of the backbone each."""
    import numpy as np
    import onnxruntime

    import mlconv

    path = exported_models.fasterrcnn_file(exported)
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    run = mlconv.compile(str(path))
    boxes = []
    for seed, size in enumerate(exported_models.FASTERRCNN_SIZES):
        image = exported_models.detector_image(size, seed)
        expected = session.run(None, {"images": image})
        got = run(image)
        assert len(got) == len(expected) == 3
        assert expected[0].shape[0] > 0, "no detections: the comparison would prove nothing"
        for name, e, g in zip(exported_models.FASTERRCNN_OUTPUTS, expected, got, strict=True):
            assert g.shape == e.shape and g.dtype == e.dtype, f"{name} at {size}"
        _assert_same_detections(expected, got, size)
        height, width = size
        boxes.append(expected[0] / np.array([width, height, width, height]))
    assert boxes[0].shape != boxes[1].shape or not np.allclose(boxes[0], boxes[1], atol=1e-2)
    assert run.compilations == len(exported_models.FASTERRCNN_SIZES)

"""ImageDecoder: one conversion decodes images of two sizes and formats, pixel for pixel as
the ONNX reference implementation (Pillow) gives them; bytes that are no image are one
InputError line, no traceback."""

from __future__ import annotations

import io

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import mlconv
from mlconv.errors import InputError

Image = pytest.importorskip("PIL.Image")


def _model(pixel_format):
    graph = helper.make_graph(
        [helper.make_node("ImageDecoder", ["bytes"], ["pixels"], pixel_format=pixel_format)],
        "decode",
        [helper.make_tensor_value_info("bytes", TensorProto.UINT8, ["n"])],
        [helper.make_tensor_value_info("pixels", TensorProto.UINT8, None)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])


def _encoded(shape, fmt, seed):
    pixels = np.random.default_rng(seed).integers(0, 256, shape).astype(np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, fmt)
    return np.frombuffer(buffer.getvalue(), np.uint8)


@pytest.mark.parametrize("pixel_format", ["BGR", "Grayscale"])
def test_two_images_from_one_conversion_match_the_reference(pixel_format):
    model = _model(pixel_format)
    run = mlconv.compile(model, device="cpu")
    reference = ReferenceEvaluator(model)
    for encoded in (_encoded((5, 7, 3), "PNG", 0), _encoded((9, 4, 3), "JPEG", 1)):
        (want,) = reference.run(None, {"bytes": encoded})
        (got,) = run(encoded)
        assert np.asarray(got).dtype == np.uint8
        np.testing.assert_array_equal(np.asarray(got), want)


def test_bytes_that_are_no_image_are_one_line():
    run = mlconv.compile(_model("RGB"), device="cpu")
    with pytest.raises(InputError) as error:
        run(np.arange(40, dtype=np.uint8))
    assert (
        str(error.value)
        == "error: ImageDecoder cannot decode its bytes: cannot identify image file"
    )

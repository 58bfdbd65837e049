"""Dynamic dims served from a few compiled shapes (backends/padding.py): a dynamo-exported
decoder with a KV cache generates with `mlconv.compile(path)` and no option, the tokens
onnxruntime's, in at most 4 programs; a BERT encoder at 5 sequence lengths compiles once per
bucket, outputs onnxruntime's at the true length; a model whose padding is not exact is refused
with the reason. Compilations are mlconv's own count (`run.compilations`)."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import mlconv
from mlconv.errors import BackendError, OptionError

PROMPT = np.array([1, 5, 9, 20], np.int64)


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    pytest.importorskip("transformers")
    from decoder_models import export_decoder

    return export_decoder("llama", tmp_path_factory.mktemp("llama") / "model.onnx")


def test_decoder_generates_without_recompiling(llama):
    from decoder_models import greedy

    session = onnxruntime.InferenceSession(str(llama))
    expected = greedy(lambda feeds: session.run(None, feeds), PROMPT, 128)
    run = mlconv.compile(str(llama), quiet=True)
    assert type(run).__name__ == "PaddedModule"
    assert greedy(lambda feeds: run(**feeds), PROMPT, 32) == expected[:32]
    assert run.compilations <= 2  # the prompt's program and the past's first bucket (64)
    assert greedy(lambda feeds: run(**feeds), PROMPT, 128) == expected
    assert run.compilations <= 4  # and the buckets 128 and 256 (the past reaches 132)
    assert greedy(lambda feeds: run(**feeds), PROMPT[:3], 8) == greedy(
        lambda feeds: session.run(None, feeds), PROMPT[:3], 8
    )


def test_decoder_without_padding_compiles_every_length(llama):
    from decoder_models import greedy

    run = mlconv.compile(str(llama), quiet=True, pad_dims=False, cache_size=64)
    greedy(lambda feeds: run(**feeds), PROMPT, 3)
    assert run.compilations == 3


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    pytest.importorskip("transformers")
    from exported_models import write_onnx

    path = tmp_path_factory.mktemp("bert") / "model.onnx"
    write_onnx("bert", "torchscript", path)
    return path


def test_encoder_sequence_buckets(bert):
    run = mlconv.compile(
        str(bert), quiet=True,
        pad_dims={"sequence": mlconv.PadTo(buckets=(8, 16), mask="attention_mask")},
    )  # fmt: skip
    session = onnxruntime.InferenceSession(str(bert))
    rng = np.random.default_rng(3)
    for length in (3, 5, 8, 11, 16):
        ids = rng.integers(0, 100, (2, length), np.int64)
        mask = np.ones((2, length), np.int64)
        mask[1, -1] = 0
        (got,) = run(ids, mask)
        (want,) = session.run(None, {"input_ids": ids, "attention_mask": mask})
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    assert run.compilations == 2


def _model(nodes, inputs, outputs, initializers=()):
    graph = helper.make_graph(nodes, "m", inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_inexact_padding_is_refused():
    # A mean over the padded axis: zeros padded in change it.
    model = _model(
        [helper.make_node("ReduceMean", ["x"], ["y"], axes=[1], keepdims=0)],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "n"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
    )
    run = mlconv.compile(model, quiet=True, pad_dims={"n": mlconv.PadTo(buckets=(8,))})
    with pytest.raises(BackendError, match="not exact.*output 'y' differs from the unpadded"):
        run(np.ones((1, 3), np.float32))


def test_ignored_mask_is_refused():
    # A softmax over the padded axis that never reads its mask: the padded positions leak.
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 4)).astype(np.float32), "w")
    model = _model(
        [
            helper.make_node("MatMul", ["x", "w"], ["h"]),
            helper.make_node("Softmax", ["h"], ["s"], axis=1),
            helper.make_node("Identity", ["s"], ["y"]),
        ],
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "n", 4]),
            helper.make_tensor_value_info("mask", TensorProto.INT64, [1, "n"]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "n", 4])],
        [w],
    )
    run = mlconv.compile(model, quiet=True, pad_dims={"n": mlconv.PadTo(buckets=(8,), mask="mask")})
    with pytest.raises(BackendError, match="padding n is not exact"):
        run(rng.standard_normal((1, 3, 4)).astype(np.float32), np.ones((1, 3), np.int64))


def test_unknown_dim_is_an_option_error():
    model = _model(
        [helper.make_node("Relu", ["x"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "n"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "n"])],
    )
    with pytest.raises(OptionError, match="no input has a dim of that name"):
        mlconv.compile(model, quiet=True, pad_dims={"m": mlconv.PadTo()})
    run = mlconv.compile(model, quiet=True, pad_dims={"x:1": mlconv.PadTo(buckets=(4, 8))})
    for n in (1, 3, 5, 7):
        x = np.arange(n, dtype=np.float32)[None] - 2
        np.testing.assert_array_equal(run(x)[0], np.maximum(x, 0))
    assert run.compilations == 2


def _segmentation_net():
    """Two 3x3 convolutions (ReLU between), NCHW with dynamic batch, height and width."""
    rng = np.random.default_rng(5)
    weights = [
        numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w1"),
        numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "b1"),
        numpy_helper.from_array(rng.standard_normal((2, 4, 3, 3)).astype(np.float32), "w2"),
        numpy_helper.from_array(rng.standard_normal(2).astype(np.float32), "b2"),
    ]
    return _model(
        [
            helper.make_node("Conv", ["x", "w1", "b1"], ["h"], pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["h"], ["r"]),
            helper.make_node("Conv", ["r", "w2", "b2"], ["y"], pads=[1, 1, 1, 1]),
        ],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3, "height", "width"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 2, "height", "width"])],
        weights,
    )


def test_segmentation_batch_buckets_and_image_padding_refused():
    model = _segmentation_net()
    session = onnxruntime.InferenceSession(model.SerializeToString())
    rng = np.random.default_rng(6)
    # Rows are independent: the batch pads exactly, one program per bucket.
    run = mlconv.compile(model, quiet=True, pad_dims={"n": mlconv.PadTo(buckets=(2, 4))})
    for batch, size in ((1, 16), (2, 16), (3, 16), (1, 24), (3, 24), (2, 32)):
        x = rng.standard_normal((batch, 3, size, size)).astype(np.float32)
        np.testing.assert_allclose(run(x)[0], session.run(None, {"x": x})[0], rtol=1e-4, atol=1e-4)
    assert run.compilations == 5  # (2|4) x 16, (2|4) x 24, 2 x 32
    # The image is not: the second convolution sees the first one's bias past the border.
    run = mlconv.compile(
        model, quiet=True,
        pad_dims={d: mlconv.PadTo(buckets=(16,)) for d in ("height", "width")},
    )  # fmt: skip
    with pytest.raises(BackendError, match="padding height, width is not exact"):
        run(rng.standard_normal((1, 3, 10, 13)).astype(np.float32))


def test_static_axis_is_an_option_error():
    with pytest.raises(OptionError, match="axis 1 of input 'x' is static"):
        mlconv.compile(_segmentation_net(), quiet=True, pad_dims={"x:1": mlconv.PadTo()})


def _cli(*args):
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = {k: v for k, v in os.environ.items() if k != "MLCONV_DEBUG"}
    executable = Path(sys.executable).parent / "mlconv-run"
    return subprocess.run(
        [str(executable), *map(str, args)], capture_output=True, text=True, env=env, timeout=600
    )


def test_mlconv_run_pad(tmp_path):
    relu = _model(
        [helper.make_node("Relu", ["x"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "n"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "n"])],
    )
    mean = _model(
        [helper.make_node("ReduceMean", ["x"], ["y"], axes=[1], keepdims=0)],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "n"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
    )
    onnx.save(relu, tmp_path / "relu.onnx")
    onnx.save(mean, tmp_path / "mean.onnx")
    x = np.arange(5, dtype=np.float32)[None] - 2
    np.savez(tmp_path / "in.npz", x=x)
    out = tmp_path / "out.npz"
    result = _cli(tmp_path / "relu.onnx", "--inputs", tmp_path / "in.npz", "--outputs", out,
                  "--pad", "n=8,16")  # fmt: skip
    assert result.returncode == 0, result.stderr
    np.testing.assert_array_equal(np.load(out)["y"], np.maximum(x, 0))
    for pad, reason in (("n=8:side=middle", "side must be"), ("n", "bad --pad 'n'")):
        result = _cli(tmp_path / "relu.onnx", "--inputs", tmp_path / "in.npz", "--outputs",
                      tmp_path / "bad.npz", "--pad", pad)  # fmt: skip
        assert result.returncode == 1 and reason in result.stderr, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    result = _cli(tmp_path / "mean.onnx", "--inputs", tmp_path / "in.npz", "--outputs",
                  tmp_path / "bad.npz", "--pad", "n=8")  # fmt: skip
    assert result.returncode == 1 and "padding n is not exact" in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert not (tmp_path / "bad.npz").exists()


def test_verdict_is_recorded_in_the_compilation_cache(tmp_path, monkeypatch):
    from mlconv.backends import compile_cache
    from mlconv.interpreters import run as interpreters_run

    model = _segmentation_net()
    x = np.random.default_rng(7).standard_normal((3, 3, 8, 8)).astype(np.float32)
    pads = {"n": mlconv.PadTo(buckets=(4,))}
    try:
        run = mlconv.compile(model, quiet=True, pad_dims=pads, compilation_cache=tmp_path)
        (want,) = run(x)
        records = list(tmp_path.glob("*/padding/*.json"))
        assert len(records) == 1
        monkeypatch.setattr(
            interpreters_run, "run_module", lambda *a: pytest.fail("verified again")
        )
        again = mlconv.compile(model, quiet=True, pad_dims=pads)
        np.testing.assert_array_equal(again(x)[0], want)
        records[0].write_text('{"cuts": [[7]]}')  # not this model's: ignored, checked anew
        assert mlconv.compile(model, quiet=True, pad_dims=pads).cuts is None
    finally:
        compile_cache.configure(False)

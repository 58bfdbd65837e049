"""The Open Inference Protocol (KServe v2) on `mlconv-run OUTDIR --serve`, talked to by the
protocol's own client library, tritonclient[http] (backends/open_inference.py).

The artifact: a SavedModel whose serving function takes a [None, 10] batch and calls an
aliased `tpu_func` (random weights; the artifact is that TPU function, as in test_batching),
converted with batch options, so every request goes
through the artifact's batcher. Reference: the same artifact loaded in this process.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from seed_models import TPU_FUNCTIONS, save_tpu_func, serving_options
from serve_process import start_server

import mlconv

http = pytest.importorskip("tritonclient.http")
from tritonclient.utils import InferenceServerException  # noqa: E402

FEATURES, UNITS = 10, 4
OPTIONS = TPU_FUNCTIONS + serving_options('function_alias: "tpu_func"')


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    import tensorflow as tf

    from mlconv.tools.mlconv_convert import convert

    class Tanh(tf.Module):  # tanh(x @ w), random weights
        def __init__(self):
            super().__init__()
            weights = np.random.default_rng(32).standard_normal((FEATURES, UNITS))
            self.w = tf.Variable(weights.astype(np.float32))

        def __call__(self, x):
            return tf.tanh(tf.matmul(x, self.w))

    folder = tmp_path_factory.mktemp("oip")
    body = Tanh()
    spec = [tf.TensorSpec(shape=[None, FEATURES], dtype=tf.float32)]
    save_tpu_func(tf, folder / "toy", body, spec, host=lambda y: y * 2.0)
    out = folder / "toy_model"
    manifest = convert(str(folder / "toy"), str(out), OPTIONS, quiet=True)
    assert manifest["batches"], "the artifact must batch"
    process, line, log = start_server(out, folder / "stderr.txt", timeout=180)
    url = line.rsplit("//", 1)[-1]
    model = mlconv.load(out)
    yield {"url": url, "model": model, "weights": body.w.numpy(), "log": Path(log.name)}
    model.close()
    process.terminate()
    process.wait(30)
    log.close()


def _input(x: np.ndarray, binary: bool = True):
    tensor = http.InferInput("x", list(x.shape), "FP32")
    tensor.set_data_from_numpy(x, binary_data=binary)
    return tensor


def test_health_and_metadata(served):
    client = http.InferenceServerClient(served["url"])
    assert client.is_server_live() and client.is_server_ready()
    assert client.is_model_ready("toy_model")
    meta = client.get_model_metadata("toy_model")
    assert meta["inputs"] == [{"name": "x", "datatype": "FP32", "shape": [-1, FEATURES]}]
    (out,) = served["model"].output_names
    assert meta["outputs"] == [{"name": out, "datatype": "FP32", "shape": [-1, UNITS]}]
    assert client.get_model_metadata("toy_model", model_version="1")["name"] == "toy_model"
    with pytest.raises(InferenceServerException, match="no such model") as error:
        client.get_model_metadata("other")
    assert error.value.status() == "404"


@pytest.mark.parametrize("binary", [True, False], ids=["binary", "json"])
def test_infer_equals_the_artifact(served, binary):
    client = http.InferenceServerClient(served["url"])
    x = np.random.default_rng(1).standard_normal((5, FEATURES)).astype(np.float32)
    (out,) = served["model"].output_names
    outputs = [http.InferRequestedOutput(out, binary_data=binary)]
    result = client.infer("toy_model", [_input(x, binary)], outputs=outputs, request_id="r1")
    y = result.as_numpy(out)
    assert y.dtype == np.float32 and y.shape == (5, UNITS)
    np.testing.assert_array_equal(y, served["model"](x)[0])
    np.testing.assert_allclose(y, np.tanh(x @ served["weights"]), rtol=1e-5, atol=1e-5)
    assert result.get_response()["id"] == "r1"


def test_errors_are_the_protocols(served):
    client = http.InferenceServerClient(served["url"])
    x = np.zeros((2, 3), np.float32)  # 3 features where the model takes 10
    with pytest.raises(InferenceServerException, match="Dimensions of inputs") as error:
        client.infer("toy_model", [_input(x)])
    assert error.value.status() == "400"
    wrong = http.InferInput("x", [2, FEATURES], "INT64")
    wrong.set_data_from_numpy(np.zeros((2, FEATURES), np.int64))
    with pytest.raises(InferenceServerException, match="datatype 'INT64', expected FP32"):
        client.infer("toy_model", [wrong])
    with pytest.raises(InferenceServerException, match="no such model") as error:
        client.infer("other", [_input(np.zeros((1, FEATURES), np.float32))])
    assert error.value.status() == "404"


def test_64_concurrent_callers_through_the_batcher(served):
    """64 callers at once (tritonclient's own concurrency), 1 to 8 rows each, distinct values:
    every answer equals the artifact on that caller's rows, none lost or mixed."""
    client = http.InferenceServerClient(served["url"], concurrency=64, network_timeout=120)
    (out,) = served["model"].output_names
    rng = np.random.default_rng(64)
    xs = [
        rng.standard_normal((int(rng.integers(1, 9)), FEATURES)).astype(np.float32)
        for _ in range(192)
    ]
    pending = [
        client.async_infer("toy_model", [_input(x)], request_id=str(i)) for i, x in enumerate(xs)
    ]
    results = [p.get_result(timeout=120) for p in pending]
    for i, (x, result) in enumerate(zip(xs, results, strict=True)):
        assert result.get_response()["id"] == str(i)
        np.testing.assert_array_equal(result.as_numpy(out), served["model"](x)[0])
    assert "Traceback" not in served["log"].read_text()


@pytest.mark.parametrize(
    "header, tail, message",
    [
        ({"name": "x", "shape": [1, 2], "datatype": "FP32", "parameters": {"binary_data_size": 4}},
         b"\0" * 4, "binary_data_size 4 is not shape"),
        ({"name": "x", "shape": [1, 2], "datatype": "FP32", "parameters": {"binary_data_size": 8}},
         b"\0" * 12, "4 bytes after the inputs"),
        ({"name": "x", "shape": [1, 2], "datatype": "FP32", "parameters": {"binary_data_size": 8}},
         b"\0" * 4, "binary data ends early"),
        ({"name": "x", "shape": [1, 3], "datatype": "FP32", "data": [1.0, 2.0]}, b"",
         r"2 values for shape \[1, 3\]"),
        ({"name": "i", "shape": [1], "datatype": "INT64", "data": [10**30]}, b"", "out of range"),
        ({"name": "i", "shape": [1], "datatype": "INT64", "data": [1.5]}, b"", "non-integer"),
        ({"name": "x", "shape": [-1, 2], "datatype": "FP32", "data": []}, b"", "list of sizes"),
        ({"name": "x", "shape": [1 << 30, 2], "datatype": "FP32", "data": []}, b"", "larger than"),
        # 2^19 values within the 1 MiB limit, their 2 MiB of FP32 bytes not
        ({"name": "x", "shape": [1 << 18, 2], "datatype": "FP32", "data": []}, b"", "larger than"),
    ],
)  # fmt: skip
def test_the_parser_refuses_what_does_not_add_up(header, tail, message):
    """The request parser alone (no server): byte counts, shapes and exact values."""
    import json

    from mlconv.backends.http_request import RequestError, RequestLimits
    from mlconv.backends.open_inference import parse_infer
    from mlconv.signature.inputs import InputSpec

    specs = [InputSpec("x", np.dtype("float32"), None), InputSpec("i", np.dtype("int64"), None)]
    other = {"name": "i", "shape": [1], "datatype": "INT64", "data": [3]}
    if header["name"] == "i":
        other = {"name": "x", "shape": [1, 2], "datatype": "FP32", "data": [1.0, 2.0]}
    head = json.dumps({"inputs": [header, other]}).encode()
    limits = RequestLimits(max_body_bytes=1 << 20, max_array_bytes=1 << 20)
    with pytest.raises(RequestError, match=message) as error:
        parse_infer(head + tail, str(len(head)), specs, limits)
    assert error.value.status in (400, 413, 422)
    good = {"name": "x", "shape": [1, 2], "datatype": "FP32", "parameters": {"binary_data_size": 8}}
    good_i = {"name": "i", "shape": [1], "datatype": "INT64", "data": [3]}
    head = json.dumps({"inputs": [good, good_i]}).encode()
    arrays, _ = parse_infer(head + np.float32([1, 2]).tobytes(), str(len(head)), specs, limits)
    np.testing.assert_array_equal(arrays["x"], [[1, 2]])
    assert arrays["i"].dtype == np.int64 and arrays["i"].tolist() == [3]

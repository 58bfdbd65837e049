"""In-graph batching (seed 003's BatchOptions): mlconv-convert's `batch_options`, the tpu.batch
op in the artifact, and the batcher behind `mlconv.load(OUTDIR)` and `mlconv-run --serve`.

The model is a small MLP built here (fixed seed, random weights, dynamic batch) converted for
one row; its reference is the artifact's own unbatched function, row by row, and onnxruntime.
"""

from __future__ import annotations

import io
import json
import os
import random
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import onnx
import pytest
from numerics import onnxruntime_outputs  # a module beside this one (conftest.py)
from onnx import TensorProto, helper, numpy_helper
from seed_models import convert_onnx, serving_options

import mlconv
from mlconv.converter.batcher import (
    LARGEST_REQUEST,
    BatchConfig,
    Batcher,
    InputSignature,
    QueueFullError,
    RequestTooLargeError,
)
from mlconv.errors import BackendError, InputError, MlconvError
from mlconv.tools.mlconv_convert import convert

FEATURES, HIDDEN, CLASSES = 16, 64, 8
BATCH_OPTIONS = serving_options()


def mlp(inputs=("x",), output_shape=("N", CLASSES), transpose=False) -> onnx.ModelProto:
    """x[N,16] -> MatMul -> Tanh -> MatMul -> y[N,8] (a Transpose at the end with `transpose`:
    the output's 0th dimension is then not the rows')."""
    rng = np.random.default_rng(0)
    weights = [
        numpy_helper.from_array(
            rng.standard_normal((FEATURES, HIDDEN)).astype(np.float32) * 0.4, "w1"
        ),
        numpy_helper.from_array(rng.standard_normal(HIDDEN).astype(np.float32) * 0.1, "b1"),
        numpy_helper.from_array(
            rng.standard_normal((HIDDEN, CLASSES)).astype(np.float32) * 0.4, "w2"
        ),
    ]
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
        helper.make_node("Add", ["h", "b1"], ["hb"], name="bias"),
        helper.make_node("Tanh", ["hb"], ["t"], name="tanh"),
        helper.make_node(
            "MatMul", ["t", "w2"], ["z" if transpose or len(inputs) > 1 else "y"], name="fc2"
        ),
    ]
    if transpose:
        nodes.append(helper.make_node("Transpose", ["z"], ["y"], name="swap", perm=[1, 0]))
    if len(inputs) > 1:
        nodes.append(helper.make_node("Add", ["z", "s"], ["y"], name="shift"))
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", FEATURES])]
        + (
            [helper.make_tensor_value_info("s", TensorProto.FLOAT, ["M", CLASSES])]
            if len(inputs) > 1
            else []
        ),
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(output_shape))],
        weights,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def onnxruntime(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    return onnxruntime_outputs(model, [x])[0]


@pytest.fixture(scope="module")
def artifact(tmp_path_factory):
    model = mlp()
    path, out, manifest = convert_onnx(
        model, tmp_path_factory.mktemp("batching"), BATCH_OPTIONS, "mlp"
    )
    return model, path, out, manifest


@pytest.fixture(scope="module")
def served(artifact):
    model = mlconv.load(artifact[2])
    yield model
    model.close()


def test_artifact_records_the_batch_op(artifact):
    _, _, out, manifest = artifact
    (batch,) = manifest["batches"]
    assert batch["component"] == "default"
    assert batch["options"] == {
        "num_batch_threads": 2,
        "max_batch_size": 8,
        "batch_timeout_micros": 2000,
        "allowed_batch_sizes": [2, 4, 8],
        "max_enqueued_batches": 1000,
        "disable_large_batch_splitting": False,
    }
    assert batch["functions"] == [f["name"] for f in manifest["functions"]]
    assert batch["inputs"] == [{"input": 0}]
    assert (out / "tpu" / "batch_0.batched.jaxexport").is_file()
    assert json.loads((out / "manifest.json").read_text())["batches"] == manifest["batches"]


def test_each_allowed_size_is_compiled_once_at_load(served):
    assert dict(served.compilations) == {("batch_0", 2): 1, ("batch_0", 4): 1, ("batch_0", 8): 1}


def test_64_concurrent_callers_get_exactly_their_own_rows(artifact, served):
    """2,000 requests of 1..8 rows from 64 threads: none lost, duplicated or mixed; each equal
    to running it alone (the unbatched function, row by row); padding to 2/4/8 observed."""
    model = artifact[0]
    rng = np.random.default_rng(1)
    sizes = rng.integers(1, 9, size=2000)
    requests = [rng.standard_normal((int(k), FEATURES)).astype(np.float32) for k in sizes]
    alone = served.loaded  # the artifact's function for one row, without the batcher
    everything = np.concatenate(requests)
    reference = onnxruntime(model, everything)
    scale = np.abs(reference).max()
    spread = np.abs(reference - reference.mean(axis=0)).mean()
    assert spread > 0.1 * scale  # rows differ: a mixed-up answer cannot pass
    before = served.stats.copy()
    with ThreadPoolExecutor(max_workers=64) as pool:
        results = list(pool.map(lambda x: served(x)[0], requests))
    stats = served.stats - before
    assert len(results) == len(requests)
    offset = 0
    for index, (x, y) in enumerate(zip(requests, results, strict=True)):
        expected = reference[offset : offset + len(x)]
        offset += len(x)
        assert y.shape == (len(x), CLASSES), index
        np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-5 * scale, err_msg=str(index))
        if index % 100 == 0:  # and against the artifact itself, one row at a time
            single = np.concatenate([alone(row[None])[0] for row in x])
            np.testing.assert_allclose(y, single, rtol=1e-5, atol=1e-6 * scale)
    assert stats["requests"] == 2000 and stats["rows"] == int(sizes.sum())
    ran = {key for key in stats if key.startswith("batches@")}
    assert ran <= {"batches@2", "batches@4", "batches@8"}
    assert stats["padding"] > 0 and stats["batches@8"] > 0
    assert sum(stats[k] for k in ran) < 2000  # requests were batched together


def test_a_request_larger_than_max_batch_size_is_split_and_reassembled(artifact, served):
    x = np.random.default_rng(2).standard_normal((21, FEATURES)).astype(np.float32)
    before = served.stats.copy()
    (y,) = served(x)
    np.testing.assert_allclose(y, onnxruntime(artifact[0], x), rtol=1e-5, atol=1e-5)
    stats = served.stats - before
    assert stats["rows"] == 21 and stats["batches@8"] >= 2


def test_splitting_disabled_refuses_large_requests(artifact, tmp_path):
    text = BATCH_OPTIONS.replace(
        "max_enqueued_batches: 1000", "disable_large_batch_splitting: true"
    )
    out = tmp_path / "nosplit"
    convert(str(artifact[1]), str(out), text)
    with mlconv.load(out) as model:
        x = np.ones((8, FEATURES), np.float32)
        assert model(x)[0].shape == (8, CLASSES)
        with pytest.raises(
            InputError,
            match="request of 9 rows is larger than max_batch_size 8 and disable_large_batch_splitting is set",
        ):
            model(np.ones((9, FEATURES), np.float32))


def test_saved_model_form_batches_with_tensorflows_batch_function(artifact):
    """OUTDIR/saved_model: the batch op is a BatchFunction op with the same options, around
    the XlaCallModule of the body; TensorFlow's batching gives each caller its own rows."""
    import tensorflow as tf

    model, _, out, _ = artifact
    loaded = tf.saved_model.load(str(out / "saved_model"))
    serve = loaded.signatures["serving_default"]
    graph = serve.graph.as_graph_def()
    nodes = [n for f in graph.library.function for n in f.node_def] + list(graph.node)
    (batch,) = [n for n in nodes if n.op == "BatchFunction"]
    # max_batch_size bounds one request in TensorFlow; batches run at most 8 rows (the last
    # allowed size): a request of more rows is split
    assert batch.attr["max_batch_size"].i == LARGEST_REQUEST == 65536  # the documented limit
    assert list(batch.attr["allowed_batch_sizes"].list.i) == [2, 4, 8]
    assert batch.attr["batch_timeout_micros"].i == 2000
    assert batch.attr["num_batch_threads"].i == 2
    assert any(n.op == "XlaCallModule" for n in nodes)
    rng = np.random.default_rng(6)
    xs = [rng.standard_normal((k, FEATURES)).astype(np.float32) for k in (1, 3, 5, 8, 2, 7, 11)]
    with ThreadPoolExecutor(max_workers=7) as pool:
        ys = list(pool.map(lambda x: serve(x=tf.constant(x))["y"].numpy(), xs))
    for x, y in zip(xs, ys, strict=True):
        np.testing.assert_allclose(y, onnxruntime(model, x), rtol=1e-5, atol=1e-5)


def test_tpu_batch_pass_numerics_before_and_after():
    """tpu-batch moves the TPU function into tpu.batch: the same numbers, by the tpu reference
    interpreter and by the JAX backend; the printed IR parses back to the same text."""
    from xdsl.parser import Parser

    from mlconv.backends.jax_backend import compile_module
    from mlconv.dialects import make_context
    from mlconv.frontends.load import load_model
    from mlconv.interpreters import run_module
    from mlconv.passes.pipelines import lower_to_tpu
    from mlconv.passes.tpu_batch import TpuBatchPass

    module = lower_to_tpu(load_model(mlp()), f"x:1,{FEATURES}")
    x = np.random.default_rng(7).standard_normal((1, FEATURES)).astype(np.float32)
    before = run_module(module, [x])
    TpuBatchPass(max_batch_size=8, allowed_batch_sizes=(2, 4, 8)).apply(make_context(), module)
    text = str(module)
    assert '"tpu.batch"' in text
    assert str(Parser(make_context(), text).parse_module()) == text
    after = run_module(module, [x])
    compiled = compile_module(module, "cpu")(x)
    for want, got, jitted in zip(before, after, compiled, strict=True):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(np.asarray(jitted), np.asarray(want), rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------- the queue itself


def gated_batcher(served, **options):
    """A Batcher over the model's compiled executables whose runs wait for `gate`."""
    inner = served.batchers["batch_0"]
    gate, entered = threading.Event(), threading.Event()

    def executable(size):
        run = inner.executable(size)

        def gated(*columns):
            entered.set()
            gate.wait(30)
            return run(*columns)

        return gated

    config = BatchConfig(**{"max_batch_size": 4, "allowed_batch_sizes": (2, 4), **options})
    return Batcher(executable, config, inner.signature, "gated"), gate, entered


def test_a_request_no_queue_could_hold_is_too_large_not_retry_later(served):
    """Issue 28: a request of more rows than max_enqueued_batches x max_batch_size got 503
    "retry later", though a retry can never succeed; it is RequestTooLargeError (HTTP 413),
    even with the queue empty, and one that fits still runs."""
    batcher, gate, _ = gated_batcher(served, max_enqueued_batches=2)
    gate.set()
    try:
        rows = np.zeros((9, FEATURES), np.float32)  # 2 batches of 4 hold 8 rows
        with pytest.raises(RequestTooLargeError, match="needs more than max_enqueued_batches 2"):
            batcher.submit([rows])
        assert batcher.submit([rows[:8]]).result(30)[0].shape[0] == 8
    finally:
        batcher.close()


def test_requests_beyond_max_enqueued_batches_fail_fast(served):
    batcher, gate, entered = gated_batcher(
        served, num_batch_threads=1, max_enqueued_batches=2, batch_timeout_micros=10_000_000
    )
    rng = np.random.default_rng(3)
    xs = [rng.standard_normal((4, FEATURES)).astype(np.float32) for _ in range(4)]
    try:
        first = batcher.submit([xs[0]])  # a full batch: the thread takes it and waits at the gate
        assert entered.wait(30)
        queued = [batcher.submit([x]) for x in xs[1:3]]  # two batches wait
        start = time.perf_counter()
        with pytest.raises(
            QueueFullError,
            match=r"the batch queue is full \(2 batches waiting, max_enqueued_batches 2\)",
        ):
            batcher.submit([xs[3]])
        assert time.perf_counter() - start < 1.0  # at once, not after a timeout
        assert batcher.stats["rejected"] == 1
    finally:
        gate.set()
    for future, x in zip([first, *queued], xs, strict=False):
        expected = np.concatenate([served.loaded(r[None])[0] for r in x])
        np.testing.assert_allclose(future.result(30)[0], expected, rtol=1e-5, atol=1e-6)
    batcher.close()


def test_num_batch_threads_run_batches_in_parallel(served):
    inner = served.batchers["batch_0"]
    gate, inside = threading.Event(), threading.Semaphore(0)

    def executable(size):
        def gated(*columns):
            inside.release()
            gate.wait(30)
            return inner.executable(size)(*columns)

        return gated

    config = BatchConfig(max_batch_size=4, allowed_batch_sizes=(2, 4), num_batch_threads=2)
    batcher = Batcher(executable, config, inner.signature, "parallel")
    xs = [np.full((4, FEATURES), i, np.float32) for i in range(3)]
    futures = [batcher.submit([x]) for x in xs]
    assert inside.acquire(timeout=30) and inside.acquire(timeout=30)  # two batches at once
    assert not inside.acquire(timeout=0.2)  # not three: two threads
    gate.set()
    for future, x in zip(futures, xs, strict=True):
        expected = np.concatenate([served.loaded(r[None])[0] for r in x])
        np.testing.assert_allclose(future.result(30)[0], expected, rtol=1e-5, atol=1e-6)
    batcher.close()


def test_split_request_fills_the_open_batch_first(served):
    batcher, gate, entered = gated_batcher(
        served, num_batch_threads=1, batch_timeout_micros=200_000
    )
    rng = np.random.default_rng(4)
    blocker = rng.standard_normal((4, FEATURES)).astype(np.float32)
    small = rng.standard_normal((1, FEATURES)).astype(np.float32)
    large = rng.standard_normal((6, FEATURES)).astype(np.float32)
    futures = [batcher.submit([blocker])]
    assert entered.wait(30)
    futures += [batcher.submit([small]), batcher.submit([large])]  # 1 + 3 | 3 (padded to 4)
    gate.set()
    for future, x in zip(futures, [blocker, small, large], strict=True):
        expected = np.concatenate([served.loaded(r[None])[0] for r in x])
        np.testing.assert_allclose(future.result(30)[0], expected, rtol=1e-5, atol=1e-6)
    batcher.close()
    assert batcher.stats["batches@4"] == 3 and batcher.stats["padding"] == 1


# --------------------------------------------------------------------------- the seed's messages


def test_requests_breaking_the_shape_requirements_get_the_seeds_messages(served):
    with pytest.raises(
        InputError, match="input 'x': Batching input tensors must have at least one dimension"
    ):
        served(np.float32(1.0))
    with pytest.raises(
        InputError,
        match=r"input 'x': Dimensions of inputs should match: expected \[\?, 16\], got \[2, 15\]",
    ):
        served(np.ones((2, 15), np.float32))
    batcher = served.batchers["batch_0"]
    two = Batcher(
        batcher.executable,
        batcher.config,
        InputSignature(("a", "b"), batcher.signature.dtypes * 2, batcher.signature.trailing * 2),
        "two",
    )
    with pytest.raises(
        InputError,
        match=r"Batching input tensors supplied in a given op invocation must have equal 0th-dimension size \(a: 2, b: 3\)",
    ):
        two.submit([np.ones((2, FEATURES), np.float32), np.ones((3, FEATURES), np.float32)])
    two.close()


def test_an_executable_breaking_the_output_requirement_fails_its_callers(served):
    inner = served.batchers["batch_0"]
    wrong = Batcher(
        lambda size: lambda x: [np.zeros((size + 1, CLASSES), np.float32)],
        inner.config,
        inner.signature,
        "wrong",
    )
    with pytest.raises(
        BackendError,
        match="Batched output tensor's 0th dimension does not equal the sum of the 0th dimension sizes of the input tensors",
    ):
        wrong([np.ones((3, FEATURES), np.float32)])
    wrong.close()


@pytest.mark.parametrize(
    ("model", "shapes", "message"),
    [
        (
            lambda: mlp(transpose=True, output_shape=(CLASSES, "N")),
            "x:1,16",
            "'tpu.region' op Batched output tensor's 0th dimension does not equal the sum of the 0th dimension sizes of the input tensors (output 0 has 0th dimension 8, the inputs 1)",
        ),
        (
            lambda: mlp(inputs=("x", "s")),
            "x:1,16;s:2,8",
            None,  # broadcasting s[2,8] against rows: 0th dimensions 1 and 2
        ),
    ],
    ids=["output", "equal-0th"],
)
def test_conversion_checks_the_shape_requirements(tmp_path, model, shapes, message):
    path = tmp_path / "m.onnx"
    onnx.save(model(), str(path))
    with pytest.raises(MlconvError) as error:
        convert(str(path), str(tmp_path / "out"), BATCH_OPTIONS, input_shapes=shapes)
    text = str(error.value)
    if message is None:
        message = "Batching input tensors supplied in a given op invocation must have equal 0th-dimension size (the inputs' 0th dimensions are 1, 2)"
    assert message in text
    assert not (tmp_path / "out").exists()


def test_function_batching_names_a_tpu_function(artifact, tmp_path):
    text = BATCH_OPTIONS.replace(
        "max_enqueued_batches: 1000", 'experimental { function_alias: "nope" }'
    )
    with pytest.raises(
        MlconvError,
        match=r"batch_options\[0\].experimental.function_alias: 'nope' is not a TPU function of this conversion \(TPU functions: tpu_function_0\)",
    ):
        convert(str(artifact[1]), str(tmp_path / "out"), text)
    text = BATCH_OPTIONS.replace(
        "max_enqueued_batches: 1000", 'experimental { signature_name: "serving_default" }'
    )
    manifest = convert(str(artifact[1]), str(tmp_path / "sig"), text)
    assert manifest["batches"][0]["component"] == "signature_name"
    assert manifest["batches"][0]["component_name"] == "serving_default"
    x = np.random.default_rng(8).standard_normal((11, FEATURES)).astype(np.float32)
    with mlconv.load(tmp_path / "sig") as model:
        np.testing.assert_allclose(model(x=x)[0], onnxruntime(artifact[0], x), rtol=1e-5, atol=1e-5)


def test_savedmodel_function_batching_by_alias(tmp_path):
    """The seed's flow: a SavedModel function with a [None, 10] input signature and an alias,
    placed on the TPU and batched by `experimental.function_alias`."""
    import tensorflow as tf

    class ToyModel(tf.Module):
        def __init__(self):
            super().__init__()
            weights = np.random.default_rng(9).standard_normal((10, 4)).astype(np.float32)
            self.w = tf.Variable(weights)

        @tf.function(input_signature=[tf.TensorSpec(shape=[None, 10], dtype=tf.float32)])
        def tpu_func(self, x):
            return tf.tanh(tf.matmul(x, self.w))

        @tf.function(input_signature=[tf.TensorSpec(shape=[None, 10], dtype=tf.float32)])
        def serve(self, x):
            return {"y": self.tpu_func(x) * 2.0}

    toy = ToyModel()
    source = tmp_path / "toy"
    options = tf.saved_model.SaveOptions(function_aliases={"tpu_func": toy.tpu_func})
    tf.saved_model.save(
        toy, str(source), signatures={"serving_default": toy.serve}, options=options
    )
    text = 'tpu_functions { function_alias: "tpu_func" }\n' + BATCH_OPTIONS.replace(
        "max_enqueued_batches: 1000", 'experimental { function_alias: "tpu_func" }'
    )
    manifest = convert(str(source), str(tmp_path / "out"), text)
    assert manifest["batches"][0]["component_name"] == "tpu_func"
    x = np.random.default_rng(10).standard_normal((13, 10)).astype(np.float32)
    with mlconv.load(tmp_path / "out") as model:
        np.testing.assert_allclose(model(x)[0], np.tanh(x @ toy.w.numpy()), rtol=1e-5, atol=1e-5)
    bad = text.replace(
        'experimental { function_alias: "tpu_func" }', 'experimental { signature_name: "serve" }'
    )
    with pytest.raises(
        MlconvError, match=r"signature_name: no signature 'serve' \(signatures: serving_default\)"
    ):
        convert(str(source), str(tmp_path / "bad"), bad)


# --------------------------------------------------------------------------- mlconv-run --serve


def test_mlconv_run_serve_batches_http_requests(artifact):
    model, _, out, _ = artifact
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    process = subprocess.Popen(
        [sys.executable, "-m", "mlconv.tools.mlconv_run", str(out), "--serve", "--port", "0"],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        line = ""
        while "serving" not in line:
            line = process.stderr.readline()
            assert line, "the server exited before it was ready"
        url = line.strip().rsplit(" ", 1)[-1]
        info = json.loads(urllib.request.urlopen(f"{url}/v1/model", timeout=30).read())
        assert info["batches"][0]["options"]["allowed_batch_sizes"] == [2, 4, 8]
        rng = np.random.default_rng(5)
        xs = [
            rng.standard_normal((random.Random(i).randint(1, 8), FEATURES)).astype(np.float32)
            for i in range(32)
        ]

        def post(x):
            body = json.dumps({"inputs": {"x": x.tolist()}}).encode()
            request = urllib.request.Request(
                f"{url}/v1/predict", body, {"Content-Type": "application/json"}
            )
            return np.asarray(
                json.loads(urllib.request.urlopen(request, timeout=60).read())["outputs"]["y"],
                np.float32,
            )

        with ThreadPoolExecutor(max_workers=16) as pool:
            ys = list(pool.map(post, xs))
        for x, y in zip(xs, ys, strict=True):
            np.testing.assert_allclose(y, onnxruntime(model, x), rtol=1e-5, atol=1e-5)
        buffer = io.BytesIO()
        np.savez(buffer, x=xs[0])
        request = urllib.request.Request(
            f"{url}/v1/predict", buffer.getvalue(), {"Content-Type": "application/x-npz"}
        )
        with np.load(io.BytesIO(urllib.request.urlopen(request, timeout=60).read())) as answer:
            np.testing.assert_allclose(answer["y"], ys[0], rtol=1e-6, atol=1e-6)
        bad = urllib.request.Request(
            f"{url}/v1/predict", json.dumps({"inputs": {"x": [[1.0, 2.0]]}}).encode()
        )
        with pytest.raises(urllib.error.HTTPError) as error:
            urllib.request.urlopen(bad, timeout=30)
        assert error.value.code == 422  # well-formed, a shape the model cannot take
        assert "Dimensions of inputs should match" in json.loads(error.value.read())["error"]
    finally:
        process.terminate()
        process.wait(30)
    assert process.returncode == 0


# --------------------------------------------------------------------------- exact padded sizes


@pytest.mark.parametrize(
    "allowed, rows, sizes",
    [
        # each request alone in its batch: the next allowed size, never the largest
        ((2, 4, 8), [1, 2, 3, 5, 8], [2, 2, 4, 8, 8]),
        # no allowed sizes: a batch runs at its own number of rows
        ((), [1, 3, 7], [1, 3, 7]),
    ],
)
def test_each_batch_runs_at_the_next_allowed_size(allowed, rows, sizes):
    """Issue 31: padding every batch to the largest allowed size passed test_batching (it only
    checked that the sizes used were allowed ones). The executable here records the exact size
    of each batch it is given; each caller still gets exactly its own rows."""
    ran: list[int] = []

    def executable(size):
        def run(x):
            assert x.shape == (size, FEATURES)
            ran.append(size)
            return [x * 2.0]

        return run

    config = BatchConfig(max_batch_size=8, allowed_batch_sizes=allowed)
    signature = InputSignature(("x",), (np.dtype(np.float32),), ((FEATURES,),))
    batcher = Batcher(executable, config, signature, "exact")
    rng = np.random.default_rng(31)
    try:
        for n in rows:  # one at a time: each request is its own batch
            x = rng.standard_normal((n, FEATURES)).astype(np.float32)
            np.testing.assert_array_equal(batcher([x])[0], x * 2.0)
    finally:
        batcher.close()
    assert ran == sizes
    assert batcher.stats["padding"] == sum(sizes) - sum(rows)
    assert config.padded_size(9) == 9  # beyond the largest: split upstream, never padded down


def test_an_open_batch_keeps_filling_while_the_batch_before_it_is_taken():
    """Issue 31 (a surviving mutant: the thread marked the queue's last batch closed, not the
    head it takes). Batches: [4 rows] runs and waits; [4 rows] full and [1 row] open queue
    behind it; once the thread takes the second, a 1-row request still joins the open one:
    three batches of 4, 4 and 2 rows, never a fourth."""
    gate, entered = threading.Semaphore(0), threading.Semaphore(0)
    ran: list[int] = []

    def executable(size):
        def run(x):
            ran.append(size)
            entered.release()
            assert gate.acquire(timeout=30)
            return [x * 2.0]

        return run

    config = BatchConfig(
        max_batch_size=4, allowed_batch_sizes=(2, 4), batch_timeout_micros=30_000_000
    )
    signature = InputSignature(("x",), (np.dtype(np.float32),), ((FEATURES,),))
    batcher = Batcher(executable, config, signature, "fill")
    rng = np.random.default_rng(31)
    xs = [rng.standard_normal((n, FEATURES)).astype(np.float32) for n in (4, 4, 1, 1)]
    futures = [batcher.submit([xs[0]])]
    assert entered.acquire(timeout=30)  # the first batch runs
    futures += [batcher.submit([xs[1]]), batcher.submit([xs[2]])]
    gate.release()
    assert entered.acquire(timeout=30)  # the second runs; the 1-row batch is open, 30 s to go
    futures.append(batcher.submit([xs[3]]))
    for _ in range(3):  # the batches left (a third one spare: a fourth batch must not hang)
        gate.release()
    batcher.close()  # runs what waits at once
    for future, x in zip(futures, xs, strict=True):
        np.testing.assert_array_equal(future.result(30)[0], x * 2.0)
    assert ran == [4, 4, 2]
    assert batcher.stats["padding"] == 0 and batcher.stats["requests"] == 4


def test_a_lone_request_waits_for_the_batch_timeout_then_runs():
    """Issue 31 (a surviving mutant: the deadline `now * timeout` instead of `now + timeout`
    took every batch at once). A lone 1-row request waits batch_timeout_micros (0.25 s) for
    company, then runs padded to 2 rows; the wait is a lower bound, whatever the load."""
    ran: list[int] = []

    def executable(size):
        def run(x):
            ran.append(size)
            return [x * 2.0]

        return run

    config = BatchConfig(max_batch_size=4, allowed_batch_sizes=(2, 4), batch_timeout_micros=250_000)
    signature = InputSignature(("x",), (np.dtype(np.float32),), ((FEATURES,),))
    batcher = Batcher(executable, config, signature, "timeout")
    x = np.ones((1, FEATURES), np.float32)
    try:
        start = time.monotonic()
        np.testing.assert_array_equal(batcher.submit([x]).result(30)[0], x * 2.0)
        assert time.monotonic() - start >= 0.25
    finally:
        batcher.close()
    assert ran == [2]

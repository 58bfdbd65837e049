"""Tests that can fail: deliberate breakages of the compiler, each of which some test other
than the end-to-end onnxruntime comparison must notice (issue 14).

Each mutation is applied with monkeypatching, the tests that should notice it are run, and
this test asserts that they fail, with an assertion (a numerical mismatch), not a crash of the
test itself. The pass-numerics tests run in this process (test_pass_numerics.py's functions,
their IR caches emptied); the model tests of other files, which go through `mlconv.compile`,
run in one pytest subprocess with the mutation loaded as a plugin.

- inputs zeroed inside `mlconv.compile`: the TensorFlow and TFLite model tests;
- `max` emitted as `min` by core-to-tpu (ReLU broken): the core-to-tpu numerics test;
- folded constants scaled by 1.5 in core-fold-constants: its numerics test;
- an NHWC<->NCHW transpose dropped by core-layout-nchw: its numerics test;
- a convolution's padding off by one (one more row/column before, one fewer after): the
  onnx-to-core numerics test (onnx.reference against core semantics).
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).parent


@pytest.fixture
def pass_numerics():
    """test_pass_numerics.py with its IR caches emptied before and after (a mutated pass
    must not leave its output behind for other tests)."""
    module = importlib.import_module("test_pass_numerics")
    module._CASES.clear()
    module._TF_STAGES.clear()
    yield module
    module._CASES.clear()
    module._TF_STAGES.clear()


def assert_caught(test, *args) -> Exception:
    """`test(*args)` fails: with an AssertionError (a numerical mismatch) or a one-line mlconv
    error (an interpreter meeting a result whose shape contradicts its type), not with a crash
    of the test itself."""
    from mlconv.errors import MlconvError

    try:
        test(*args)
    except (AssertionError, MlconvError) as error:
        return error
    raise AssertionError(f"{test.__name__} passed with the compiler broken")


# --- in process: pass-numerics tests -----------------------------------------------------------


def test_max_emitted_as_min_in_core_to_tpu(monkeypatch, pass_numerics) -> None:
    from mlconv.dialects import tpu

    monkeypatch.setitem(tpu.PRIMITIVE_OPS, "max", tpu.PRIMITIVE_OPS["min"])
    error = assert_caught(pass_numerics.test_core_to_tpu, "squeezenet")
    assert "core-to-tpu" in str(error)


def test_folded_constants_scaled_in_core_fold_constants(monkeypatch, pass_numerics) -> None:
    from mlconv.passes import core_fold_constants

    original = core_fold_constants.folded_values

    def scaled(op, fold_shapes):
        values = original(op, fold_shapes)
        if values is None:
            return None
        return [
            (v * np.asarray(1.5, v.dtype)).astype(v.dtype)
            if np.issubdtype(v.dtype, np.floating)
            else v
            for v in values
        ]

    monkeypatch.setattr(core_fold_constants, "folded_values", scaled)
    error = assert_caught(
        pass_numerics.test_core_pass, "convnet", "core-fold-constants{static-shape=true}"
    )
    assert "core-fold-constants" in str(error)


def test_transpose_dropped_in_core_layout_nchw(monkeypatch, pass_numerics, keras_model) -> None:
    """The NHWC->NCHW Transpose the pass leaves at the input is dropped: convolutions then
    read NHWC data as NCHW."""
    from mlconv.dialects import core_tensor
    from mlconv.passes.core_layout_nchw import CoreLayoutNchwPass, permutation

    original = CoreLayoutNchwPass.apply
    dropped = []

    def apply(self, ctx, module):
        original(self, ctx, module)
        for op in module.walk():
            if isinstance(op, core_tensor.TransposeOp) and permutation(op.results[0]) in (
                (0, 3, 1, 2),
                (0, 2, 3, 1),
            ):
                op.results[0].replace_all_uses_with(op.arg)
                op.detach()
                op.erase()
                dropped.append(op)
                return

    monkeypatch.setattr(CoreLayoutNchwPass, "apply", apply)
    assert_caught(pass_numerics.test_core_layout_nchw, keras_model)
    assert dropped


def test_convolution_padding_off_by_one(monkeypatch, pass_numerics) -> None:
    from mlconv.dialects import core_conv

    original = core_conv.resolve_padding

    def shifted(*args, **kwargs):
        return [(low + 1, high - 1) for low, high in original(*args, **kwargs)]

    monkeypatch.setattr(core_conv, "resolve_padding", shifted)
    error = assert_caught(pass_numerics.test_onnx_to_core, "convnet")
    assert "onnx-to-core" in str(error)


@pytest.fixture(scope="module")
def keras_model(tmp_path_factory):
    """test_pass_numerics's Keras CNN (SavedModel, .tflite, inputs)."""
    pytest.importorskip("tensorflow")
    return importlib.import_module("test_pass_numerics").keras_model.__wrapped__(tmp_path_factory)


# --- in a subprocess: model tests through mlconv.compile ----------------------------------------

PLUGIN = '''
"""Loaded with -p: every callable mlconv.compile returns runs on zeros instead of its inputs."""
import numpy as np

import mlconv
import mlconv.api

_original = mlconv.api.compile


def _zeroed_compile(*args, **kwargs):
    run = _original(*args, **kwargs)

    def zeroed(*inputs, **named):
        inputs = [np.zeros_like(np.asarray(x)) for x in inputs]
        named = {k: np.zeros_like(np.asarray(v)) for k, v in named.items()}
        return run(*inputs, **named)

    return zeroed


mlconv.api.compile = mlconv.compile = _zeroed_compile
'''

# Model tests through mlconv.compile that must notice: TensorFlow and LiteRT references.
ZEROED_INPUT_TESTS = [
    "test_tf_to_core.py::test_transformer_block_matches_tensorflow",
    "test_tflite_to_core.py::test_matches_litert[cnn_float]",
]


def test_inputs_zeroed_inside_compile(tmp_path) -> None:
    pytest.importorskip("tensorflow")
    (tmp_path / "mlconv_zero_inputs.py").write_text(textwrap.dedent(PLUGIN))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env.get("PYTHONPATH", "")])
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-rA",
        "-p",
        "no:cacheprovider",
        "-p",
        "mlconv_zero_inputs",
        "-o",
        "addopts=--import-mode=importlib",
        *[str(HERE / t) for t in ZEROED_INPUT_TESTS],
    ]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900)
    print(done.stdout[-5000:])
    summary = done.stdout
    for test in ZEROED_INPUT_TESTS:
        name = test.split("::")[1]
        failed = [
            line for line in summary.splitlines() if line.startswith("FAILED") and name in line
        ]
        assert failed, f"{test} did not fail with zeroed inputs:\n{summary[-3000:]}"
    # The tests failed on their comparison, not on a crash.
    assert summary.count("AssertionError") >= len(ZEROED_INPUT_TESTS), summary[-3000:]

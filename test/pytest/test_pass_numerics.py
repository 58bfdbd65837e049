"""Numerics are preserved by every pass (../shared/DESIGN.md's invariant), on real models.

For each pass, the light models of the onnx wheel (squeezenet and resnet50, for speed) are run
before and after the pass on the same random inputs and the outputs compared: core-level
passes by running both modules through the rest of the pipeline (`numerics.run_module`),
onnx-to-core against onnxruntime on the original model. The light models' softmax outputs
are uniform (their weights are constant fills), so the logits are compared too
(`numerics.expose_logits`).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import onnx
import pytest

from mlconv.frontends.onnx_importer import import_onnx


def _helpers():
    """test/pytest/numerics.py (pytest runs with --import-mode=importlib: no sys.path entry)."""
    name = "mlconv_test_numerics"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("numerics.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


numerics = _helpers()
LIGHT_MODELS = numerics.LIGHT_MODELS
apply_passes = numerics.apply_passes
assert_outputs_close = numerics.assert_outputs_close
onnxruntime_outputs = numerics.onnxruntime_outputs
random_inputs = numerics.random_inputs
run_module = numerics.run_module

MODELS = ["light_squeezenet", "light_resnet50"]

# Passes that only move work around compare tightly; XLA may still fuse the two programs
# differently (a folded constant is computed by numpy, not inside the XLA program).
RTOL, ATOL = 1e-5, 1e-5


class Model:
    """A model at the core level, with random inputs and its core-level outputs on them."""

    def __init__(self, name: str):
        self.path = LIGHT_MODELS / f"{name}.onnx"
        self.proto = numerics.expose_logits(onnx.load(str(self.path)))
        self.onnx_module = import_onnx(self.proto)
        self.core = apply_passes(self.onnx_module, "onnx-to-core")
        self.inputs = random_inputs(self.core)
        self._outputs = None

    @property
    def core_outputs(self):
        if self._outputs is None:
            self._outputs = run_module(self.core, self.inputs)
        return self._outputs


_CACHE: dict[str, Model] = {}


@pytest.fixture(params=MODELS)
def model(request) -> Model:
    if request.param not in _CACHE:
        _CACHE[request.param] = Model(request.param)
    return _CACHE[request.param]


def test_onnx_to_core_matches_onnxruntime(model: Model) -> None:
    expected = onnxruntime_outputs(model.proto, model.inputs)
    assert_outputs_close(model.core_outputs, expected, rtol=1e-3, atol=1e-4, what="onnx-to-core")


@pytest.mark.parametrize(
    "pipeline",
    [
        "core-infer-shapes",
        "core-fold-constants",
        "core-fold-constants{static-shape=true}",
        "canonicalize",
        "cse",
    ],
)
def test_core_pass_preserves_numerics(model: Model, pipeline: str) -> None:
    after = apply_passes(model.core, pipeline)
    assert_outputs_close(
        run_module(after, model.inputs), model.core_outputs, rtol=RTOL, atol=ATOL, what=pipeline
    )


def test_core_to_tpu_preserves_numerics(model: Model) -> None:
    """core-to-tpu alone, on a module made static first; the result runs as it is."""
    before = apply_passes(model.core, "core-infer-shapes,core-fold-constants{static-shape=true}")
    after = apply_passes(before, "core-to-tpu")
    assert not [op for op in after.walk() if op.name.startswith("core.")]
    assert_outputs_close(
        run_module(after, model.inputs),
        run_module(before, model.inputs),
        rtol=RTOL,
        atol=ATOL,
        what="core-to-tpu",
    )


def test_run_module_leaves_the_module_unchanged(model: Model) -> None:
    text = str(model.core)
    run_module(model.core, model.inputs)
    assert str(model.core) == text

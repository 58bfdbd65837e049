"""The Model Explorer adapter extension (Model Explorer imports `<extension>.main`).

One adapter per level, so the page's adapter selector (and `mlconv-view --level`, which names
the adapter by id) picks the level: `mlconv_core` (the default for .onnx), `mlconv_framework`,
`mlconv_tpu`. `MLCONV_EXPLORER_INPUT_SHAPES` (`x:1,3,224,224`) fixes dynamic dims for the tpu
level. A model mlconv cannot read is reported by the page as one line, with its location.
The page picks adapters by file extension: give a SavedModel as its `saved_model.pb` (the
folder is loaded), and pick `mlconv (...)` in the adapter selector for .tflite/.mlir/.pb, where
Model Explorer's built-in adapters come first (`mlconv-view` names the adapter itself).
"""

from __future__ import annotations

import os

from model_explorer import Adapter, AdapterMetadata, ModelExplorerGraphs

from mlconv.errors import MlconvError
from mlconv.explorer import model_argument, model_graphs

FILE_EXTENSIONS = ["onnx", "tflite", "mlir", "pb"]
INPUT_SHAPES_VARIABLE = "MLCONV_EXPLORER_INPUT_SHAPES"
ADAPTER_IDS = {"core": "mlconv_core", "framework": "mlconv_framework", "tpu": "mlconv_tpu"}


class ConversionFailed(Exception):
    """A model the adapter cannot show; its text is the one-line mlconv error."""


_CONVERTED: dict[tuple[str, str], ModelExplorerGraphs] = {}
"""Graphs `mlconv-view` already built in this process, so the page does not convert twice."""


def _key(model_path: str, level: str) -> tuple[str, str]:
    return os.path.abspath(model_argument(model_path)), level


def remember(model_path: str, level: str, graphs: ModelExplorerGraphs) -> None:
    """Serve `graphs` for (model_path, level) without converting again."""
    _CONVERTED[_key(model_path, level)] = graphs


def convert_at_level(model_path: str, level: str) -> ModelExplorerGraphs:
    known = _CONVERTED.get(_key(model_path, level))
    if known is not None:
        return known
    try:
        graphs = model_graphs(model_path, level, os.environ.get(INPUT_SHAPES_VARIABLE, ""))
    except MlconvError as error:
        raise ConversionFailed(error.render(model_path)) from None
    return {"graphs": graphs}


class LevelAdapter:
    """What the three adapters share: `convert` shows the model at the class's `LEVEL`. A
    mixin, not a base: Model Explorer registers every class its `Adapter` metaclass makes, and
    takes an adapter for one by its direct base `Adapter`."""

    LEVEL: str

    def convert(self, model_path: str, settings: dict) -> ModelExplorerGraphs:
        return convert_at_level(model_path, self.LEVEL)


def _metadata(level: str, name: str, description: str) -> AdapterMetadata:
    return AdapterMetadata(
        id=ADAPTER_IDS[level], name=name, description=description, fileExts=FILE_EXTENSIONS
    )


class MlconvCoreAdapter(LevelAdapter, Adapter):
    """The model lowered to mlconv's core opset."""

    LEVEL = "core"
    metadata = _metadata(
        LEVEL,
        "mlconv (core)",
        "An mlconv model (ONNX, SavedModel, TFLite, .mlir) lowered to the core opset.",
    )


class MlconvFrameworkAdapter(LevelAdapter, Adapter):
    """The model in its framework dialect (onnx, tf, tflite), as mlconv imports it."""

    LEVEL = "framework"
    metadata = _metadata(
        LEVEL,
        "mlconv (framework dialect)",
        "An mlconv model as imported: onnx, tf or tflite dialect, or the .mlir as is.",
    )


class MlconvTpuAdapter(LevelAdapter, Adapter):
    """The model lowered to tpu ops (jax.lax level), as mlconv compiles it."""

    LEVEL = "tpu"
    metadata = _metadata(
        LEVEL, "mlconv (tpu)", "An mlconv model lowered to the tpu dialect (static shapes)."
    )

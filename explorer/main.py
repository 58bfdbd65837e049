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


class MlconvCoreAdapter(Adapter):
    """The model lowered to mlconv's core opset."""

    metadata = AdapterMetadata(
        id="mlconv_core",
        name="mlconv (core)",
        description="An mlconv model (ONNX, SavedModel, TFLite, .mlir) lowered to the core opset.",
        fileExts=FILE_EXTENSIONS,
    )

    def convert(self, model_path: str, settings: dict) -> ModelExplorerGraphs:
        return convert_at_level(model_path, "core")


class MlconvFrameworkAdapter(Adapter):
    """The model in its framework dialect (onnx, tf, tflite), as mlconv imports it."""

    metadata = AdapterMetadata(
        id="mlconv_framework",
        name="mlconv (framework dialect)",
        description="An mlconv model as imported: onnx, tf or tflite dialect, or the .mlir as is.",
        fileExts=FILE_EXTENSIONS,
    )

    def convert(self, model_path: str, settings: dict) -> ModelExplorerGraphs:
        return convert_at_level(model_path, "framework")


class MlconvTpuAdapter(Adapter):
    """The model lowered to tpu ops (jax.lax level), as mlconv compiles it."""

    metadata = AdapterMetadata(
        id="mlconv_tpu",
        name="mlconv (tpu)",
        description="An mlconv model lowered to the tpu dialect (static shapes).",
        fileExts=FILE_EXTENSIONS,
    )

    def convert(self, model_path: str, settings: dict) -> ModelExplorerGraphs:
        return convert_at_level(model_path, "tpu")


ADAPTER_IDS = {"core": "mlconv_core", "framework": "mlconv_framework", "tpu": "mlconv_tpu"}

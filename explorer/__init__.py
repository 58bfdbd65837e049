"""Model Explorer adapter: see an mlconv model at any level in Google's Model Explorer.

    model-explorer model.onnx --extensions=mlconv.explorer
    mlconv-view model.onnx --level tpu --overlay-errors

Model Explorer imports `mlconv.explorer.main` (its adapter classes, one per level); `graph`
turns IR into Model Explorer graphs, `overlay` per-layer errors into node data. Needs the
`view` extra (`pip install 'mlconv[view]'`); nothing here imports it until used.
"""

from __future__ import annotations

import os
from pathlib import Path

from xdsl.dialects.builtin import ModuleOp

from mlconv.errors import OptionError

LEVELS = ("framework", "core", "tpu")
"""framework: the imported dialect (onnx/tf/tflite, or the .mlir as written); core: lowered
to the core opset; tpu: lowered to tpu ops (static shapes needed)."""


def model_argument(path: str | os.PathLike) -> str:
    """The path mlconv loads: a SavedModel's `saved_model.pb` stands for its folder."""
    path = Path(path)
    if path.name == "saved_model.pb":
        return str(path.parent)
    return str(path)


def load_at_level(path: str | os.PathLike, level: str = "core", input_shapes: str = "") -> ModuleOp:
    """The model at `path` imported and lowered to `level` (one of LEVELS)."""
    # lazy: loads JAX, numpy and turns on jax_enable_x64, which this module does not
    from mlconv.frontends.load import load_model
    from mlconv.passes.pipelines import lower_to_core, lower_to_tpu

    if level not in LEVELS:
        raise OptionError(f"unknown level '{level}' (expected one of {', '.join(LEVELS)})")
    module = load_model(model_argument(path))
    if level == "core":
        lower_to_core(module)
    elif level == "tpu":
        lower_to_tpu(module, input_shapes)
    return module


def model_graphs(path: str | os.PathLike, level: str = "core", input_shapes: str = ""):
    """The model at `path`, lowered to `level`, as a list of Model Explorer graphs."""
    # lazy: loads JAX, Model Explorer, numpy, which this module does not
    from mlconv.explorer.graph import module_graphs

    return module_graphs(load_at_level(path, level, input_shapes))

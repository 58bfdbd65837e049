"""Model loading, the first step of every driver: a path (.onnx, a TF SavedModel folder,
.tflite, .mlir), an `onnx.ModelProto` or a ModuleOp in, its framework-dialect module out."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from xdsl.dialects.builtin import ModuleOp

from mlconv.errors import FrontendError, OptionError


def load_model(model: Any, **frontend_options: Any) -> ModuleOp:
    """Import `model` into its framework dialect (or parse it, for .mlir)."""
    if isinstance(model, ModuleOp):
        return model
    if not isinstance(model, str | os.PathLike):
        import onnx

        if isinstance(model, onnx.ModelProto):
            # lazy: loads numpy, onnx, protobuf, which this module does not
            from mlconv.frontends.onnx_importer import import_onnx

            return import_onnx(model)
        raise FrontendError(
            f"cannot compile a {type(model).__name__}: give a path or an onnx.ModelProto"
        )
    path = Path(model)
    if path.is_dir():
        # lazy: loads 3 more modules (frontends, signature)
        from mlconv.frontends.tf_importer import import_tf

        return import_tf(str(path), **frontend_options)
    suffix = path.suffix.lower()
    if suffix == ".tflite":
        # lazy: loads numpy, which this module does not
        from mlconv.frontends.tflite_importer import import_tflite

        return import_tflite(str(path))
    if suffix == ".mlir":
        return parse_mlir_file(path)
    # lazy: loads numpy, onnx, protobuf, which this module does not
    from mlconv.frontends.onnx_importer import import_onnx

    return import_onnx(str(path))


def parse_mlir_file(path: Path) -> ModuleOp:
    from xdsl.parser import Parser
    from xdsl.utils.exceptions import ParseError

    # lazy: loads numpy, which this module does not
    from mlconv.dialects import make_context

    try:
        text = path.read_text()
    except OSError as error:
        raise FrontendError(f"{path}: cannot read: {error.strerror}") from None
    try:
        module = Parser(make_context(), text, str(path)).parse_module()
    except ParseError as error:
        raise FrontendError(f"{path}: {str(error).splitlines()[0]}") from None
    module.verify()
    return module


def format_input_shapes(shapes: str | Mapping[str, Sequence[int | None]] | None) -> str:
    """{"x": [1, 3, None]} -> "x:1,3,?" (the input-shapes option's syntax)."""
    if not shapes:
        return ""
    if isinstance(shapes, str):
        return shapes
    if not isinstance(shapes, Mapping):
        raise OptionError("input_shapes must be a dict name -> dims or a 'x:1,3,224,224' string")
    return ";".join(
        f"{name}:" + ",".join("?" if d is None or d < 0 else str(int(d)) for d in dims)
        for name, dims in shapes.items()
    )

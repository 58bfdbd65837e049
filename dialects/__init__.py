"""Dialect registry: name -> lazy factory, so a tool loads only the dialects a file uses."""

from __future__ import annotations

import importlib
from collections.abc import Callable

from xdsl.context import Context
from xdsl.dialects.arith import Arith
from xdsl.dialects.builtin import Builtin
from xdsl.dialects.func import Func
from xdsl.ir import Dialect

import mlconv.dense  # noqa: F401 - installs the fast printer for large dense constants


def _lazy(module: str, attribute: str) -> Callable[[], Dialect]:
    return lambda: getattr(importlib.import_module(f"mlconv.dialects.{module}"), attribute)


DIALECTS: dict[str, Callable[[], Dialect]] = {
    "onnx": _lazy("onnx", "ONNX"),
    "core": _lazy("core", "Core"),
    "tpu": _lazy("tpu", "TPU"),
    "quant": _lazy("quant", "Quant"),
    "tflite": _lazy("tflite", "TFLite"),
    "tf": _lazy("tf", "TF"),
}


def make_context(*, allow_unregistered: bool = False) -> Context:
    """A context with builtin, func and every mlconv dialect registered (loaded on first use),
    the dialects of installed plugins included (`mlconv.plugins`)."""
    # the plugin registry imports this package back (the one documented cycle)
    from mlconv import plugins
    from mlconv.dialects import xdsl_fixes

    plugins.load()
    xdsl_fixes.apply()
    ctx = Context(allow_unregistered=allow_unregistered)
    ctx.load_dialect(Builtin)
    ctx.load_dialect(Func)
    ctx.load_dialect(Arith)
    for name, factory in DIALECTS.items():
        ctx.register_dialect(name, factory)
    return ctx

"""Seed 003's pieces that several tests and bench/batching.py share: its options texts and its
model pattern, a SavedModel whose `tpu_func` is saved under a function alias and called by the
serving signature.

    from seed_models import BATCH_OPTIONS, TPU_FUNCTIONS, save_tpu_func, serving_options
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

TPU_FUNCTIONS = """tpu_functions {
  function_alias: "tpu_func"
}
"""
"""The seed's first example's `tpu_functions` block."""

_BATCH_FIELDS = """  num_batch_threads: 2
  max_batch_size: 8
  batch_timeout_micros: {timeout_micros}
  allowed_batch_sizes: 2
  allowed_batch_sizes: 4
  allowed_batch_sizes: 8
  max_enqueued_batches: {max_enqueued}
"""


def batch_options(
    experimental: str = "", timeout_micros: int = 5000, max_enqueued: int = 10
) -> str:
    """The seed's `batch_options` block, with an `experimental { ... }` block holding
    `experimental` (one field, e.g. `signature_name: "serving_default"`) when given."""
    fields = _BATCH_FIELDS.format(timeout_micros=timeout_micros, max_enqueued=max_enqueued)
    inner = f"  experimental {{\n    {experimental}\n  }}\n" if experimental else ""
    return "batch_options {\n" + fields + inner + "}\n"


BATCH_OPTIONS = batch_options()
"""The seed's `batch_options` block (max_batch_size 8, allowed 2/4/8, 5 ms, two threads)."""


def serving_options(experimental: str = "") -> str:
    """The serving tests' options: the seed's batch sizes with a 2 ms window and room for
    1000 queued batches (so that many concurrent callers are batched, none refused), default
    optimizations off."""
    batching = batch_options(experimental, timeout_micros=2000, max_enqueued=1000)
    return "disable_default_optimizations: true\n" + batching


def save_tpu_func(tf: Any, folder: Path, body: Any, spec: list, host: Any = None) -> Any:
    """Save the seed's pattern to `folder`: a tf.Module whose `tpu_func(x)` is `body(x)` (a
    Keras model or a tf.Module, tracked so that its variables are saved), exported under the
    function alias `tpu_func`, and whose `serving_default` returns {"y": host(tpu_func(x))}
    (`tpu_func(x)` alone without `host`); both with input signature `spec`. Returns the
    module."""

    class Module(tf.Module):
        def __init__(self):
            super().__init__()
            self.body = body

        @tf.function(input_signature=spec)
        def tpu_func(self, x):
            return self.body(x)

        @tf.function(input_signature=spec)
        def serve(self, x):
            y = self.tpu_func(x)
            return {"y": y if host is None else host(y)}

    module = Module()
    tf.saved_model.save(
        module,
        str(folder),
        signatures={"serving_default": module.serve},
        options=tf.saved_model.SaveOptions(function_aliases={"tpu_func": module.tpu_func}),
    )
    return module


def convert_file(path: Path, options: str, **convert_options: Any) -> tuple[Path, dict]:
    """mlconv-convert of the model file `path` with `options` into the folder `converted`
    beside it: (the artifact folder, its manifest)."""
    from mlconv.tools.mlconv_convert import convert

    out = path.parent / "converted"
    return out, convert(str(path), str(out), options, **convert_options)


def convert_onnx(model: Any, folder: Path, options: str, name: str = "model") -> tuple:
    """`model` (an onnx.ModelProto) saved as folder/NAME.onnx and converted (`convert_file`):
    (the .onnx path, the artifact folder, its manifest)."""
    import onnx

    path = folder / f"{name}.onnx"
    onnx.save(model, str(path))
    return (path, *convert_file(path, options))

"""Reference interpreters, one per IR level, in the manner of xDSL's `xdsl/interpreters/`.

Each runs a module's `@main` op by op, eagerly, with no pass and no `jax.jit` in between, so
the IR right before a pass and the IR right after it can each be run by the interpreter of its
own level and compared (the invariant "numerics are preserved by every pass",
../shared/DESIGN.md):

- `onnx`: every onnx-dialect op by `onnx.reference`'s implementation of its op type, at the
  since-version whose inputs the op's operands fill (`interpreters/onnx.py`);
- `core`: every core op by its `semantics`, static operands bound to the values computed
  before it (`interpreters/core.py`);
- `tpu`: every tpu op by binding its jax primitive with its decoded parameters
  (`interpreters/tpu.py`).

`run_module(module, inputs)` (`interpreters/run.py`) picks the interpreter from the ops the module holds. Every run
keeps each op's results by the op's location (`Recorder`), so a tool can name the first op
whose result differs between two levels.
"""

from __future__ import annotations

import mlconv.semantics  # noqa: F401 - int64 values stay int64 (jax_enable_x64)
from mlconv.interpreters.common import Recorder, level_of
from mlconv.interpreters.run import run_module

__all__ = ["Recorder", "level_of", "run_module"]

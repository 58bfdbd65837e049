"""`run_module`: a module's `@main` run by the interpreter of its level. It sits above the three
level interpreters (which share `interpreters/common.py`) so that each imports downwards only."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.interpreters.func import FuncFunctions

from mlconv.dense import numpy_dtype
from mlconv.errors import BackendError
from mlconv.interpreters.common import Recorder, ReferenceInterpreter, level_of
from mlconv.interpreters.core import CoreFunctions
from mlconv.interpreters.onnx import OnnxFunctions
from mlconv.interpreters.tpu import TpuFunctions
from mlconv.signature.module_io import find_main

LEVEL_FUNCTIONS = {"onnx": OnnxFunctions, "core": CoreFunctions, "tpu": TpuFunctions}


def run_module(
    module: ModuleOp, inputs: Sequence[Any], recorder: Recorder | None = None
) -> list[np.ndarray]:
    """`@main` of `module` on `inputs`, op by op, by the interpreter of the module's level."""
    level = level_of(module)
    main = find_main(module, "interpret")
    arguments = main.body.block.args
    if len(inputs) != len(arguments):
        raise BackendError(f"expected {len(arguments)} inputs, got {len(inputs)}")
    values = []
    for arg, value in zip(arguments, inputs, strict=True):
        if isinstance(arg.type, TensorType):
            value = np.asarray(value, dtype=numpy_dtype(arg.type.get_element_type()))
        values.append(value)
    interpreter = ReferenceInterpreter(module, listeners=(recorder,) if recorder else ())
    interpreter.register_implementations(FuncFunctions())
    interpreter.register_implementations(LEVEL_FUNCTIONS[level](module))
    return [np.asarray(r) for r in interpreter.call_op(main, tuple(values))]

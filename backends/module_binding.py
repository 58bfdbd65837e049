"""`bind_module`: a core-level module specialized to concrete inputs, the step that both
per-shape compilation (`specialize.py`) and staging (`staged.py`) start from."""

from __future__ import annotations

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from mlconv.dense import element_type, numpy_dtype
from mlconv.dialects.core_tensor import ConstantOp
from mlconv.errors import BackendError
from mlconv.passes.core_infer_shapes import update_signature
from mlconv.signature.module_io import find_main


def bind_module(module: ModuleOp, arrays: list[np.ndarray], bound: list[int]) -> ModuleOp:
    """A copy of `module` whose @main takes the arrays' shapes, the inputs at `bound` replaced
    by core.Constants of their values."""
    module = module.clone()
    main = find_main(module)
    block = main.body.block
    for arg, array in zip(list(block.args), arrays, strict=True):
        declared = arg.type
        if isinstance(declared, TensorType) and len(declared.get_shape()) != array.ndim:
            raise BackendError(
                f"input has rank {array.ndim}, the model expects {len(declared.get_shape())}"
            )
        element = (
            declared.get_element_type()
            if isinstance(declared, TensorType)
            else element_type(array.dtype)
        )
        Rewriter.replace_value_with_new_type(arg, TensorType(element, list(array.shape)))
    for index in bound:
        arg = block.args[index]
        constant = ConstantOp.from_numpy(arrays[index].astype(_dtype_of(arg)))
        Rewriter.insert_op(constant, InsertPoint.at_start(block))
        arg.replace_all_uses_with(constant.output)
    update_signature(main)
    main.function_type = func.FunctionType.from_lists(
        [a.type for a in block.args], list(main.function_type.outputs)
    )
    return module


def _dtype_of(arg: SSAValue) -> np.dtype:
    return numpy_dtype(arg.type.get_element_type())

"""What the dense constant ops of two dialects (core.Constant, tpu.constant) share: a dense
`value` attribute, one tensor result of its type, the textual form and `from_numpy`."""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, TensorType
from xdsl.irdl import attr_def, result_def

from mlconv.dense import to_dense_attr


class DenseConstant:
    """Mixed into an IRDL op class before its operation base:
    `class ConstantOp(DenseConstant, IRDLOperation)`."""

    value = attr_def(DenseIntOrFPElementsAttr)
    output = result_def(TensorType)
    assembly_format = "attr-dict `:` type($output)"

    @classmethod
    def from_numpy(cls, array: np.ndarray) -> Any:
        attr = to_dense_attr(np.asarray(array))
        return cls.create(attributes={"value": attr}, result_types=[attr.type])

"""numpy arrays <-> builtin dense attributes and tensor types, always through bytes.

Weights are never turned into Python lists: a 25M-parameter model would take minutes to build
and print that way. `to_dense_attr` wraps `array.tobytes()`, `to_numpy` is `np.frombuffer`.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    BFloat16Type,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    Signedness,
    TensorType,
)
from xdsl.ir import Attribute

from mlconv.errors import MlconvError

_DTYPE_TO_TYPE: dict[np.dtype, Attribute] = {
    np.dtype(np.bool_): IntegerType(1),
    np.dtype(np.int8): IntegerType(8),
    np.dtype(np.int16): IntegerType(16),
    np.dtype(np.int32): IntegerType(32),
    np.dtype(np.int64): IntegerType(64),
    np.dtype(np.uint8): IntegerType(8, Signedness.UNSIGNED),
    np.dtype(np.uint16): IntegerType(16, Signedness.UNSIGNED),
    np.dtype(np.uint32): IntegerType(32, Signedness.UNSIGNED),
    np.dtype(np.uint64): IntegerType(64, Signedness.UNSIGNED),
    np.dtype(np.float16): Float16Type(),
    np.dtype(ml_dtypes.bfloat16): BFloat16Type(),
    np.dtype(np.float32): Float32Type(),
    np.dtype(np.float64): Float64Type(),
}
_TYPE_TO_DTYPE: dict[Attribute, np.dtype] = {t: d for d, t in _DTYPE_TO_TYPE.items()}
# Signless integers (MLIR's default `i32`) read as signed.
_TYPE_TO_DTYPE.update(
    {IntegerType(w, Signedness.SIGNED): np.dtype(f"int{w}") for w in (8, 16, 32, 64)}
)


def element_type(dtype: np.dtype | type) -> Attribute:
    """The builtin element type of a numpy dtype (bool -> i1, uint8 -> ui8, bfloat16 -> bf16)."""
    try:
        return _DTYPE_TO_TYPE[np.dtype(dtype)]
    except KeyError:
        raise MlconvError(f"element type {np.dtype(dtype)} is not supported") from None


def numpy_dtype(element: Attribute) -> np.dtype:
    """The numpy dtype of a builtin element type."""
    try:
        return _TYPE_TO_DTYPE[element]
    except KeyError:
        raise MlconvError(f"element type {element} has no numpy equivalent") from None


def tensor_type(shape: tuple[int | None, ...] | list[int], dtype: np.dtype | type) -> TensorType:
    """A ranked tensor type; `None` or a negative entry is a dynamic dimension (`?`)."""
    dims = [DYNAMIC_INDEX if d is None or d < 0 else int(d) for d in shape]
    return TensorType(element_type(dtype), dims)


def to_dense_attr(array: np.ndarray) -> DenseIntOrFPElementsAttr:
    """A dense attribute over the array's bytes (bool stored as one byte per element)."""
    array = np.asarray(array)  # not ascontiguousarray: it turns 0-d arrays into 1-d
    data = array.astype(np.int8) if array.dtype == np.bool_ else array
    return DenseIntOrFPElementsAttr(
        tensor_type(array.shape, array.dtype), BytesAttr(data.tobytes(order="C"))
    )


def to_numpy(attr: DenseIntOrFPElementsAttr) -> np.ndarray:
    """The attribute's values as a numpy array of its shape (splats are broadcast)."""
    dtype = numpy_dtype(attr.get_element_type())
    storage = np.int8 if dtype == np.bool_ else dtype
    flat = np.frombuffer(attr.data.data, dtype=storage)
    if dtype == np.bool_:
        flat = flat != 0
    shape = attr.get_shape()
    size = int(np.prod(shape, dtype=np.int64))
    if flat.size == 1 and size != 1:
        return np.broadcast_to(flat, shape).copy()
    return flat.reshape(shape)


def static_shape(tensor: Attribute) -> tuple[int, ...] | None:
    """The shape of a ranked tensor type with no dynamic dimension, else None."""
    if not isinstance(tensor, TensorType):
        return None
    shape = tuple(tensor.get_shape())
    return None if any(d < 0 for d in shape) else shape

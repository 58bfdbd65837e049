"""numpy arrays <-> builtin dense attributes and tensor types, always through bytes.

Weights are never turned into Python lists: a 25M-parameter model would take minutes to build
and print that way. `to_dense_attr` wraps `array.tobytes()`, `to_numpy` is `np.frombuffer`.

Low-precision element types (ml_dtypes <-> builtin): float8_e4m3fn/e5m2/e4m3fnuz/e5m2fnuz/
e8m0fnu (`f8E4M3FN`, `f8E5M2`, `f8E4M3FNUZ`, `f8E5M2FNUZ`, `f8E8M0FNU`), float4_e2m1fn (`f4E2M1FN`), int4/uint4/
int2/uint2 (`i4`, `ui4`, `i2`, `ui2`). Their dense attributes hold one element per byte, never
packed: floats as ml_dtypes stores them (the code in the low bits), unsigned integers as their
value, and signed `i4`/`i2` *sign-extended* to a full int8 byte. That is the form xDSL's
printer and parser agree on: it prints and reads each byte as the element's integer value, so
ml_dtypes' own int4 bytes (-4 stored as 0x0C) would print as `12` and parse back as 0xFC.
One limitation remains in xDSL's text form: a float8 NaN or infinity in a constant of 100
elements or fewer (printed in decimal, not hex) is printed as its bit pattern (`0x7f`) and read
back as that integer value, so such constants do not survive printing; in memory they are exact.
"""

from __future__ import annotations

from functools import lru_cache

import ml_dtypes
import numpy as np
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    BFloat16Type,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    Float4E2M1FNType,
    Float8E4M3FNType,
    Float8E4M3FNUZType,
    Float8E5M2FNUZType,
    Float8E5M2Type,
    Float8E8M0FNUType,
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
    np.dtype(ml_dtypes.float8_e4m3fn): Float8E4M3FNType(),
    np.dtype(ml_dtypes.float8_e5m2): Float8E5M2Type(),
    np.dtype(ml_dtypes.float8_e4m3fnuz): Float8E4M3FNUZType(),
    np.dtype(ml_dtypes.float8_e5m2fnuz): Float8E5M2FNUZType(),
    np.dtype(ml_dtypes.float8_e8m0fnu): Float8E8M0FNUType(),
    np.dtype(ml_dtypes.float4_e2m1fn): Float4E2M1FNType(),
    np.dtype(ml_dtypes.int4): IntegerType(4),
    np.dtype(ml_dtypes.uint4): IntegerType(4, Signedness.UNSIGNED),
    np.dtype(ml_dtypes.int2): IntegerType(2),
    np.dtype(ml_dtypes.uint2): IntegerType(2, Signedness.UNSIGNED),
}
# Signed sub-byte integers are stored sign-extended, one int8 per element (module docstring).
_SUB_BYTE_SIGNED = (np.dtype(ml_dtypes.int4), np.dtype(ml_dtypes.int2))
_TYPE_TO_DTYPE: dict[Attribute, np.dtype] = {t: d for d, t in _DTYPE_TO_TYPE.items()}
# Signless integers (MLIR's default `i32`) read as signed.
_TYPE_TO_DTYPE.update(
    {IntegerType(w, Signedness.SIGNED): np.dtype(f"int{w}") for w in (8, 16, 32, 64)}
)
_TYPE_TO_DTYPE.update(
    {
        IntegerType(4, Signedness.SIGNED): np.dtype(ml_dtypes.int4),
        IntegerType(2, Signedness.SIGNED): np.dtype(ml_dtypes.int2),
    }
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
    dims = tuple(DYNAMIC_INDEX if d is None or d < 0 else int(d) for d in shape)
    return shared_tensor_type(element_type(dtype), dims)


@lru_cache(maxsize=1 << 14)
def shared_tensor_type(element: Attribute, dims: tuple[int, ...]) -> TensorType:
    """One TensorType per element type and shape, shared: types are immutable values, a model
    repeats a few thousand of a few hundred distinct ones, and building one (verification
    included) costs more than many of the rewrites that ask for it."""
    return TensorType(element, list(dims))


def clear_type_cache() -> None:
    """Forget the shared tensor types (for cold-start timings)."""
    shared_tensor_type.cache_clear()


def to_dense_attr(array: np.ndarray) -> DenseIntOrFPElementsAttr:
    """A dense attribute over the array's bytes (bool, int4 and int2 stored as one int8 per
    element)."""
    array = np.asarray(array)  # not ascontiguousarray: it turns 0-d arrays into 1-d
    data = (
        array.astype(np.int8)
        if array.dtype == np.bool_ or array.dtype in _SUB_BYTE_SIGNED
        else array
    )
    return DenseIntOrFPElementsAttr(
        tensor_type(array.shape, array.dtype), BytesAttr(data.tobytes(order="C"))
    )


def to_numpy(attr: DenseIntOrFPElementsAttr) -> np.ndarray:
    """The attribute's values as a numpy array of its shape (splats are broadcast)."""
    dtype = numpy_dtype(attr.get_element_type())
    by_int8 = dtype == np.bool_ or dtype in _SUB_BYTE_SIGNED
    flat = np.frombuffer(attr.data.data, dtype=np.int8 if by_int8 else dtype)
    if dtype == np.bool_:
        flat = flat != 0
    elif by_int8:
        flat = flat.astype(dtype)
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


def _print_without_type(self: DenseIntOrFPElementsAttr, printer) -> None:
    """xDSL 0.74 unpacks every element of a dense attribute into Python numbers before it
    prints one, only to test for a splat (0.8 s per million floats). Large constants are
    tested on their bytes and printed as hex directly; the text is the same as xDSL's."""
    length = len(self)
    raw = self.data.data
    size = len(raw) // max(length, 1)
    splat = raw == raw[:size] * length
    if _non_finite_floats(self, raw[:size] if splat else raw):
        # xDSL prints inf/nan as a bare hex integer (`dense<0xFF800000>`), which its parser
        # reads back as the integer's value (4.29e9): print the bytes as a hex string instead.
        printer.print_string("dense")
        with printer.in_angle_brackets():
            printer.print_string(f'"0x{(raw[:size] if splat else raw).hex().upper()}"')
        return
    if length <= 100:
        return _xdsl_print_without_type(self, printer)
    printer.print_string("dense")
    with printer.in_angle_brackets():
        if splat:
            first = DenseIntOrFPElementsAttr(
                TensorType(self.get_element_type(), [1]), BytesAttr(raw[:size])
            )
            self._print_one_elem(first.get_values()[0], printer)
        else:
            printer.print_string(f'"0x{raw.hex().upper()}"')


def _non_finite_floats(attr: DenseIntOrFPElementsAttr, raw: bytes) -> bool:
    """Whether the float values in `raw` (elements of `attr`'s type) include an inf or a nan."""
    try:
        dtype = numpy_dtype(attr.get_element_type())
    except MlconvError:
        return False
    if not (dtype.kind == "f" or dtype.kind == "V" or "float" in dtype.name):
        return False
    try:
        values = np.frombuffer(raw, dtype=dtype).astype(np.float32)
    except (TypeError, ValueError):
        return False
    return not bool(np.isfinite(values).all())


_xdsl_print_without_type = DenseIntOrFPElementsAttr.print_without_type
DenseIntOrFPElementsAttr.print_without_type = _print_without_type

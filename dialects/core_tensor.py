"""Data-movement and shape core ops: Constant, ShapeOf, Reshape, Transpose, Concat, Gather,
Squeeze/Unsqueeze, Broadcast, Convert, reductions, Select.

Shape-like operands (target shapes, axes, permutations) are `STATIC_OPERANDS`: constants when
the op is folded or lowered, where they arrive in `semantics` as numpy arrays.
"""

from __future__ import annotations

from typing import ClassVar

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
from xdsl.irdl import irdl_op_definition
from xdsl.utils.exceptions import VerifyException

from mlconv.dense import to_numpy
from mlconv.dialects.core_base import BOOL, INT, STR, TYPE, CoreOp, core_op
from mlconv.dialects.dense_constant import DenseConstant


@irdl_op_definition
class ConstantOp(DenseConstant, CoreOp):
    """A tensor constant; its value is a dense attribute over raw bytes (OpenVINO Constant).

    %w = core.Constant {value = dense<"0x0000803F..."> : tensor<64x3x7x7xf32>}
           : tensor<64x3x7x7xf32>
    """

    name = "core.Constant"
    VERSION: ClassVar[int] = 1

    def numpy(self) -> np.ndarray:
        return to_numpy(self.value)

    def verify_(self) -> None:
        if self.value.type != self.output.type:
            raise VerifyException("value type must equal the result type")


@core_op(operands=("arg",), attributes={"output_type": (TYPE, np.dtype(np.int64))})
class ShapeOfOp(CoreOp):
    """The shape of a tensor as a 1-D integer tensor (OpenVINO opset3 ShapeOf).

    Subgraphs that start here are not folded by `core-fold-constants` unless `static-shape`.

        %s = "core.ShapeOf"(%x) : (tensor<?x3x224x224xf32>) -> tensor<4xi64>
    """

    name = "core.ShapeOf"
    VERSION = 3

    @staticmethod
    def semantics(arg, *, output_type):
        return jnp.asarray(np.array(arg.shape, dtype=output_type))


def reshape_target(
    shape_in: tuple[int, ...], pattern: np.ndarray, special_zero: bool
) -> tuple[int, ...]:
    """OpenVINO Reshape's output shape: 0 copies the input dim when `special_zero`, -1 infers."""
    dims = [int(d) for d in np.asarray(pattern).reshape(-1)]
    out = [shape_in[i] if d == 0 and special_zero else d for i, d in enumerate(dims)]
    if -1 in out:
        known = int(np.prod([d for d in out if d != -1], dtype=np.int64))
        total = int(np.prod(shape_in, dtype=np.int64))
        out[out.index(-1)] = total // known if known else 0
    return tuple(out)


@core_op(
    operands=("data", "shape"),
    attributes={"special_zero": (BOOL, False)},
    static_operands=("shape",),
)
class ReshapeOp(CoreOp):
    """Reshape to a target shape; -1 infers one dim, 0 copies the input dim if `special_zero`
    (OpenVINO opset1 Reshape).

        %y = "core.Reshape"(%x, %s) {special_zero = true}
               : (tensor<1x2048x1x1xf32>, tensor<2xi64>) -> tensor<1x2048xf32>
    """

    name = "core.Reshape"
    VERSION = 1

    @staticmethod
    def semantics(data, shape, *, special_zero):
        return jnp.reshape(data, reshape_target(data.shape, shape, special_zero))


@core_op(operands=("arg", "input_order"), static_operands=("input_order",))
class TransposeOp(CoreOp):
    """Permute dims; output dim i is input dim input_order[i]; an empty order reverses
    (OpenVINO opset1 Transpose).

        %y = "core.Transpose"(%x, %p) : (tensor<1x224x224x3xf32>, tensor<4xi64>)
               -> tensor<1x3x224x224xf32>
    """

    name = "core.Transpose"
    VERSION = 1

    @staticmethod
    def semantics(arg, input_order):
        order = [int(a) for a in np.asarray(input_order).reshape(-1)]
        return jnp.transpose(arg, order or None)


@core_op(operands=("*args",), attributes={"axis": INT})
class ConcatOp(CoreOp):
    """Join tensors along `axis` (negative counts from the end) (OpenVINO opset1 Concat).

    %y = "core.Concat"(%a, %b) {axis = 1 : i64}
           : (tensor<1x64x28x28xf32>, tensor<1x32x28x28xf32>) -> tensor<1x96x28x28xf32>
    """

    name = "core.Concat"
    VERSION = 1

    @staticmethod
    def semantics(*args, axis):
        dtype = args[0].dtype
        return jnp.concatenate([a.astype(dtype) for a in args], axis=axis)


@core_op(
    operands=("data", "indices", "axis"),
    attributes={"batch_dims": (INT, 0)},
    static_operands=("axis",),
)
class GatherOp(CoreOp):
    """Take slices of `data` along `axis` at `indices`; negative indices count from the end
    (OpenVINO opset8 Gather).

        %y = "core.Gather"(%x, %i, %axis) : (tensor<5x4xf32>, tensor<2xi64>, tensor<i64>)
               -> tensor<2x4xf32>
    """

    name = "core.Gather"
    VERSION = 8

    @staticmethod
    def semantics(data, indices, axis, *, batch_dims):
        axis = int(np.asarray(axis).reshape(-1)[0]) % data.ndim
        indices = jnp.where(indices < 0, indices + data.shape[axis], indices)
        if batch_dims == 0:
            return jnp.take(data, indices, axis=axis, mode="clip")
        batch_dims %= indices.ndim
        gather = jnp.take
        for _ in range(batch_dims):
            gather = _vmap_take(gather)
        return gather(data, indices, axis=axis - batch_dims, mode="clip")


def _vmap_take(fn):
    def batched(data, indices, axis, mode):
        return jax.vmap(lambda d, i: fn(d, i, axis=axis, mode=mode))(data, indices)

    return batched


def _normalized_axes(axes: np.ndarray | None, rank: int) -> list[int]:
    return sorted({int(a) % rank for a in np.asarray(axes).reshape(-1)}) if axes is not None else []


@core_op(operands=("data", "?axes"), static_operands=("axes",))
class SqueezeOp(CoreOp):
    """Remove dims of size 1: those in `axes`, or all of them without `axes` (OpenVINO opset1).

    %y = "core.Squeeze"(%x, %axes) : (tensor<1x1000x1x1xf32>, tensor<2xi64>) -> tensor<1x1000xf32>
    """

    name = "core.Squeeze"
    VERSION = 1

    @staticmethod
    def semantics(data, axes=None):
        if axes is None:
            return jnp.squeeze(data)
        dims = [a for a in _normalized_axes(axes, max(data.ndim, 1)) if data.shape[a] == 1]
        return jnp.squeeze(data, axis=tuple(dims))


@core_op(operands=("data", "axes"), static_operands=("axes",))
class UnsqueezeOp(CoreOp):
    """Insert dims of size 1 at `axes` of the output (OpenVINO opset1 Unsqueeze).

    %y = "core.Unsqueeze"(%x, %axes) : (tensor<64xf32>, tensor<2xi64>) -> tensor<64x1x1xf32>
    """

    name = "core.Unsqueeze"
    VERSION = 1

    @staticmethod
    def semantics(data, axes):
        rank = data.ndim + np.asarray(axes).size
        return jnp.expand_dims(data, tuple(_normalized_axes(axes, rank)))


@core_op(
    operands=("data", "target_shape", "?axes_mapping"),
    attributes={"mode": (STR, "numpy")},
    static_operands=("target_shape", "axes_mapping"),
)
class BroadcastOp(CoreOp):
    """Broadcast to `target_shape`: numpy rules (`numpy`), numpy rules on both shapes
    (`bidirectional`) or dims placed by `axes_mapping` (`explicit`) (OpenVINO opset3).

        %y = "core.Broadcast"(%x, %s) : (tensor<1xf32>, tensor<2xi64>) -> tensor<64x3xf32>
    """

    name = "core.Broadcast"
    VERSION = 3

    @staticmethod
    def semantics(data, target_shape, axes_mapping=None, *, mode):
        target = tuple(int(d) for d in np.asarray(target_shape).reshape(-1))
        if mode == "bidirectional":
            target = np.broadcast_shapes(data.shape, target)
        if mode == "explicit":
            mapping = [int(a) for a in np.asarray(axes_mapping).reshape(-1)]
            shape = [1] * len(target)
            for source, axis in enumerate(mapping):
                shape[axis] = data.shape[source]
            data = jnp.reshape(data, shape)
        return jnp.broadcast_to(data, target)


@core_op(operands=("arg",), attributes={"destination_type": TYPE})
class ConvertOp(CoreOp):
    """Cast elements to `destination_type`; float to integer truncates toward zero
    (OpenVINO opset1 Convert).

    Float to float rounds to nearest even and does not saturate: a value beyond the target's
    range becomes inf, or NaN for the float8 types without inf (f8E4M3FN, the FNUZ types);
    f4E2M1FN has neither and clamps. Float to i4/ui4/i2/ui2 truncates, then wraps
    modulo 2^bits as integer narrowing does (XLA alone would saturate; ONNX wraps). Example:

        %y = "core.Convert"(%x) {destination_type = i64} : (tensor<4xf32>) -> tensor<4xi64>
    """

    name = "core.Convert"
    VERSION = 1

    @staticmethod
    def semantics(arg, *, destination_type):
        if destination_type == np.bool_:
            return arg != 0
        if np.dtype(destination_type) in _SUB_BYTE_INTEGERS and jnp.issubdtype(
            arg.dtype, jnp.floating
        ):
            arg = arg.astype(np.int64)
        return arg.astype(destination_type)


_SUB_BYTE_INTEGERS = tuple(
    np.dtype(t) for t in (ml_dtypes.int4, ml_dtypes.uint4, ml_dtypes.int2, ml_dtypes.uint2)
)


@core_op(operands=("cond", "then", "else_"), attributes={"auto_broadcast": (STR, "numpy")})
class SelectOp(CoreOp):
    """Elementwise `cond ? then : else`, numpy broadcasting (OpenVINO opset1 Select).

    %y = "core.Select"(%c, %a, %b) : (tensor<4xi1>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
    """

    name = "core.Select"
    VERSION = 1

    @staticmethod
    def semantics(cond, then, else_, *, auto_broadcast):
        return jnp.where(cond, then, else_.astype(then.dtype))


def _reduction(op_name: str, fn, doc: str) -> type[CoreOp]:
    def semantics(data, axes, *, keep_dims):
        dims = tuple(_normalized_axes(axes, max(data.ndim, 1))) if data.ndim else ()
        return fn(data, axis=dims, keepdims=keep_dims).astype(
            data.dtype if op_name not in ("ReduceLogicalAnd", "ReduceLogicalOr") else np.bool_
        )

    spec = type(
        f"{op_name}Op",
        (CoreOp,),
        {
            "__doc__": f"""{doc} over `axes` (OpenVINO opset1 {op_name}).

    `keep_dims` keeps the reduced dims with size 1. Example:

        %y = "core.{op_name}"(%x, %axes) {{keep_dims = true}}
               : (tensor<1x64x7x7xf32>, tensor<2xi64>) -> tensor<1x64x1x1xf32>
    """,
            "name": f"core.{op_name}",
            "VERSION": 1,
            "semantics": staticmethod(semantics),
            "__module__": __name__,
        },
    )
    return core_op(
        operands=("data", "axes"),
        attributes={"keep_dims": (BOOL, False)},
        static_operands=("axes",),
    )(spec)


def _lowest(dtype: np.dtype):
    if dtype == np.bool_:
        return False
    return -np.inf if jnp.issubdtype(dtype, jnp.floating) else np.iinfo(dtype).min


def _highest(dtype: np.dtype):
    if dtype == np.bool_:
        return True
    return np.inf if jnp.issubdtype(dtype, jnp.floating) else np.iinfo(dtype).max


def _reduced_size(x, axis) -> int:
    return int(np.prod([x.shape[a] for a in axis], dtype=np.int64))


def _max(x, axis, keepdims):
    # Over an empty set the maximum is the identity, the lowest value (ONNX's empty-set rule).
    initial = _lowest(x.dtype) if _reduced_size(x, axis) == 0 else None
    return jnp.max(x, axis=axis, keepdims=keepdims, initial=initial)


def _min(x, axis, keepdims):
    initial = _highest(x.dtype) if _reduced_size(x, axis) == 0 else None
    return jnp.min(x, axis=axis, keepdims=keepdims, initial=initial)


def _l1(x, axis, keepdims):
    return jnp.sum(jnp.abs(x), axis=axis, keepdims=keepdims)


def _l2(x, axis, keepdims):
    return jnp.sqrt(jnp.sum(x * x, axis=axis, keepdims=keepdims))


REDUCTIONS = [
    _reduction("ReduceSum", jnp.sum, "Sum"),
    _reduction("ReduceMean", jnp.mean, "Arithmetic mean"),
    _reduction("ReduceMax", _max, "Maximum"),
    _reduction("ReduceMin", _min, "Minimum"),
    _reduction("ReduceProd", jnp.prod, "Product"),
    _reduction("ReduceL1", _l1, "Sum of absolute values"),
    _reduction("ReduceL2", _l2, "Euclidean norm"),
    _reduction("ReduceLogicalAnd", jnp.all, "Boolean and"),
    _reduction("ReduceLogicalOr", jnp.any, "Boolean or"),
]
globals().update({cls.__name__: cls for cls in REDUCTIONS})

OPS: list[type[CoreOp]] = [
    ConstantOp,
    ShapeOfOp,
    ReshapeOp,
    TransposeOp,
    ConcatOp,
    GatherOp,
    SqueezeOp,
    UnsqueezeOp,
    BroadcastOp,
    ConvertOp,
    SelectOp,
    *REDUCTIONS,
]

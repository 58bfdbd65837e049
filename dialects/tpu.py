"""The `tpu` dialect: XLA-level ops, one per `jax.lax` primitive, with static shapes.

`tpu.add`, `tpu.conv_general_dilated`, `tpu.reduce_window_max`, ... carry the primitive's
parameters as attributes (tuples of ints as `array<i64: ...>`, dtypes as types, named tuples
such as ConvDimensionNumbers as dictionaries with a `__class__` entry, enums as dictionaries
with an `__enum__` entry, None as a unit attribute). The op set is generated from the
primitives of the installed JAX, as the onnx dialect is generated from the ONNX schemas, so
the JAX backend binds each op's primitive directly.

Structural ops: `tpu.region` holds what runs on the accelerator (compiled as one XLA program),
`tpu.yield` ends it, `tpu.constant` holds a dense constant.

    %r = tpu.region(%x) ({
    ^bb0(%a: tensor<2x3xf32>):
      %c = tpu.constant {value = dense<1.0> : tensor<2x3xf32>} : tensor<2x3xf32>
      %s = "tpu.add"(%a, %c) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
      tpu.yield %s : tensor<2x3xf32>
    }) {device = "tpu"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
"""

from __future__ import annotations

import enum
from functools import cache, lru_cache
from typing import Any, ClassVar

import jax.extend.core.primitives as primitives
import numpy as np
from jax import lax
from jax.extend.core import Primitive
from xdsl.dialects.builtin import (
    ArrayAttr,
    BoolAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    UnitAttr,
    f64,
    i64,
)
from xdsl.ir import Attribute, Dialect, TypeAttribute
from xdsl.irdl import (
    IRDLOperation,
    attr_def,
    irdl_op_definition,
    opt_attr_def,
    region_def,
    traits_def,
    var_operand_def,
    var_region_def,
    var_result_def,
)
from xdsl.traits import IsTerminator
from xdsl.utils.exceptions import VerifyException

from mlconv.dense import element_type, numpy_dtype, to_dense_attr, to_numpy
from mlconv.dialects.dense_constant import DenseConstant

# --- parameter encoding -------------------------------------------------------------------------


def _named_tuples() -> dict[str, type]:
    return {
        cls.__name__: cls
        for cls in (
            lax.ConvDimensionNumbers,
            lax.GatherDimensionNumbers,
            lax.ScatterDimensionNumbers,
        )
    }


def _enums() -> dict[str, type]:
    return {cls.__name__: cls for cls in (lax.GatherScatterMode, lax.RoundingMethod, lax.Precision)}


def encode_param(value: Any) -> Attribute:
    """A primitive parameter as an attribute; `decode_param` inverts it exactly."""
    if value is None:
        return UnitAttr()
    if isinstance(value, bool | np.bool_):
        return BoolAttr.from_bool(bool(value))
    if isinstance(value, enum.Enum):
        return DictionaryAttr(
            {"__enum__": StringAttr(type(value).__name__), "name": StringAttr(value.name)}
        )
    if isinstance(value, int | np.integer):
        return _int_attr(int(value))
    if isinstance(value, float | np.floating):
        return FloatAttr(float(value), f64)
    if isinstance(value, str):
        return StringAttr(value)
    if isinstance(value, bytes):  # a blob (a custom op's option): stored as bytes
        return DictionaryAttr({"__bytes__": to_dense_attr(np.frombuffer(value, np.uint8))})
    if isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic)):
        return element_type(np.dtype(value))
    if hasattr(value, "dtype") and hasattr(type(value), "__module__") and hasattr(value, "shape"):
        return to_dense_attr(np.asarray(value))
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        entries = {"__class__": StringAttr(type(value).__name__)}
        entries.update({field: encode_param(getattr(value, field)) for field in value._fields})
        return DictionaryAttr(entries)
    if isinstance(value, tuple | list):
        if all(isinstance(v, int | np.integer) and not isinstance(v, bool) for v in value):
            return _int_array(tuple(int(v) for v in value))
        return ArrayAttr([encode_param(v) for v in value])
    raise TypeError(f"cannot encode primitive parameter {value!r} of type {type(value).__name__}")


# Attributes are immutable values, so equal parameters share one. The tpu passes make and read
# many ops with few distinct index tuples (slice bounds, permutations, window sizes), and
# building an attribute, verification included, or reading its values back cost more than
# the rewrites themselves (light ShuffleNet's tpu-hoist-slices: 0.43 of 1.13 s in
# encode_param).
@lru_cache(maxsize=1 << 14)
def _int_array(values: tuple[int, ...]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, list(values))


@lru_cache(maxsize=1 << 14)
def _int_tuple(attr: DenseArrayBase) -> tuple[int, ...]:
    return tuple(int(v) for v in attr.get_values())


@lru_cache(maxsize=1 << 12)
def _int_attr(value: int) -> IntegerAttr:
    return IntegerAttr(value, i64)


def clear_param_caches() -> None:
    """Forget the shared parameter attributes and values (for cold-start timings)."""
    for cached in (_int_array, _int_tuple, _int_attr):
        cached.cache_clear()


def decode_param(attr: Attribute) -> Any:
    if isinstance(attr, UnitAttr):
        return None
    if isinstance(attr, IntegerAttr):
        value = attr.value.data
        return bool(value) if attr.type == IntegerType(1) else value
    if isinstance(attr, FloatAttr):
        return attr.value.data
    if isinstance(attr, StringAttr):
        return attr.data
    if isinstance(attr, DenseArrayBase):
        return _int_tuple(attr)
    if isinstance(attr, ArrayAttr):
        return tuple(decode_param(a) for a in attr.data)
    if isinstance(attr, DenseIntOrFPElementsAttr):
        return to_numpy(attr)
    if isinstance(attr, DictionaryAttr):
        entries = attr.data
        if "__bytes__" in entries:
            return to_numpy(entries["__bytes__"]).tobytes()
        if "__enum__" in entries:
            return getattr(_enums()[entries["__enum__"].data], entries["name"].data)
        cls = _named_tuples()[entries["__class__"].data]
        return cls(**{k: decode_param(v) for k, v in entries.items() if k != "__class__"})
    if isinstance(attr, TypeAttribute):
        return numpy_dtype(attr)
    raise TypeError(f"cannot decode primitive parameter {attr}")


# --- structural ops -----------------------------------------------------------------------------


@irdl_op_definition
class ConstantOp(DenseConstant, IRDLOperation):
    """A dense constant in a TPU region; the JAX backend passes large ones as arguments of the
    compiled program rather than baking them into it.

        %c = tpu.constant {value = dense<1.0> : tensor<64xf32>} : tensor<64xf32>
    """

    name = "tpu.constant"


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Returns the values of a `tpu.region` (or of a control-flow body).

    tpu.yield %a, %b : tensor<1x1000xf32>, tensor<1xi64>
    """

    name = "tpu.yield"
    values = var_operand_def()
    traits = traits_def(IsTerminator())
    assembly_format = "attr-dict ($values^ `:` type($values))?"


HOST = "host"
"""A tpu.region's `device` when it is placed on the host."""


@irdl_op_definition
class RegionOp(IRDLOperation):
    """Code placed on the accelerator: the backend compiles the body into one XLA program.

    The block arguments receive the operands; `tpu.yield` gives the results. `device` names
    the placement: `tpu` (the JAX backend runs it on the device the caller picks) or `host`
    (on the CPU the target passes move small tails and input transposes there; the JAX backend
    runs it in numpy, everything else as any region). Example in the module docstring.
    """

    name = "tpu.region"
    inputs = var_operand_def()
    outputs = var_result_def()
    body = region_def("single_block")
    device = opt_attr_def(StringAttr)

    def on_host(self) -> bool:
        """Whether the region is placed on the host (`device = "host"`, tpu-outline-host-tail
        and -head): the JAX backend runs it op by op in numpy instead of compiling it."""
        return self.device is not None and self.device.data == HOST

    def verify_(self) -> None:
        block = self.body.block
        if len(block.args) != len(self.inputs):
            raise VerifyException("region must have one block argument per operand")
        for arg, operand in zip(block.args, self.inputs, strict=True):
            if arg.type != operand.type:
                raise VerifyException("block argument types must match the operand types")
        terminator = block.last_op
        if not isinstance(terminator, YieldOp):
            raise VerifyException("region must end with tpu.yield")
        if [v.type for v in terminator.values] != [r.type for r in self.outputs]:
            raise VerifyException("tpu.yield operand types must match the region result types")


# --- batching -----------------------------------------------------------------------------------
# The seed's four shape requirements of the batch op (BatchFunction), in its words; the tpu-batch
# pass and BatchOp's verifier check them on types, the batcher (converter/batcher.py) on requests.
NEEDS_A_DIMENSION = "Batching input tensors must have at least one dimension"
DIMENSIONS_MUST_MATCH = "Dimensions of inputs should match"
EQUAL_0TH_DIMENSION = (
    "Batching input tensors supplied in a given op invocation must have equal 0th-dimension size"
)
OUTPUT_0TH_DIMENSION = (
    "Batched output tensor's 0th dimension does not equal the sum of the 0th dimension sizes of "
    "the input tensors"
)
BATCH_COMPONENTS = ("default", "function_alias", "concrete_function_name", "signature_name")


def batch_shape_problem(inputs: list[Attribute], outputs: list[Attribute]) -> str | None:
    """The first shape requirement the batched computation's types break (a one-line message
    starting with the seed's words), or None."""
    shapes = [tuple(t.get_shape()) if isinstance(t, TensorType) else () for t in inputs]
    for index, shape in enumerate(shapes):
        if not shape:
            return f"{NEEDS_A_DIMENSION} (input {index} is a scalar)"
    rows = {shape[0] for shape in shapes}
    if len(rows) > 1:
        sizes = ", ".join(str(shape[0]) for shape in shapes)
        return f"{EQUAL_0TH_DIMENSION} (the inputs' 0th dimensions are {sizes})"
    total = shapes[0][0] if shapes else None
    for index, t in enumerate(outputs):
        shape = tuple(t.get_shape()) if isinstance(t, TensorType) else ()
        if total is not None and (not shape or shape[0] != total):
            got = "a scalar" if not shape else f"0th dimension {shape[0]}"
            return f"{OUTPUT_0TH_DIMENSION} (output {index} has {got}, the inputs {total})"
    return None


@irdl_op_definition
class BatchOp(IRDLOperation):
    """In-graph batching (seed 003's BatchOptions, TensorFlow's BatchFunction) around the
    computation in its body. The body is written for the operands' 0th dimension (the rows of
    one call, normally 1); at run time the batcher concatenates the rows of concurrent calls
    along dimension 0, pads them up to the next of `allowed_batch_sizes`, runs the body once per
    batch (each row independently, as by `jax.vmap`) and gives each caller its own rows.
    `component` says what is batched: `default` (a TPU function), `function_alias` /
    `concrete_function_name` (the function `component_name`) or `signature_name` (the whole
    signature). The operands and results obey the seed's four shape requirements.

        %y = "tpu.batch"(%x) ({
        ^bb0(%a: tensor<1x10xf32>):
          %r = "tpu.region"(%a) ({ ... }) {device = "tpu"} : (tensor<1x10xf32>) -> tensor<1x4xf32>
          tpu.yield %r : tensor<1x4xf32>
        }) {num_batch_threads = 2 : i64, max_batch_size = 8 : i64, batch_timeout_micros = 5000 : i64,
            allowed_batch_sizes = array<i64: 2, 4, 8>, max_enqueued_batches = 10 : i64,
            disable_large_batch_splitting = false, component = "default"}
            : (tensor<1x10xf32>) -> tensor<1x4xf32>
    """

    name = "tpu.batch"
    inputs = var_operand_def()
    outputs = var_result_def()
    body = region_def("single_block")
    num_batch_threads = attr_def(IntegerAttr)
    max_batch_size = attr_def(IntegerAttr)
    batch_timeout_micros = attr_def(IntegerAttr)
    allowed_batch_sizes = attr_def(DenseArrayBase)
    max_enqueued_batches = attr_def(IntegerAttr)
    disable_large_batch_splitting = attr_def(IntegerAttr)
    component = attr_def(StringAttr)
    component_name = opt_attr_def(StringAttr)

    def options(self) -> dict[str, Any]:
        """The BatchOptions as plain values (the artifact's manifest records them)."""
        return {
            "num_batch_threads": self.num_batch_threads.value.data,
            "max_batch_size": self.max_batch_size.value.data,
            "batch_timeout_micros": self.batch_timeout_micros.value.data,
            "allowed_batch_sizes": [int(v) for v in self.allowed_batch_sizes.get_values()],
            "max_enqueued_batches": self.max_enqueued_batches.value.data,
            "disable_large_batch_splitting": bool(self.disable_large_batch_splitting.value.data),
        }

    def verify_(self) -> None:
        _check_body(self, self.body, "body", [v.type for v in self.inputs])
        if [v.type for v in self.body.block.last_op.values] != [r.type for r in self.outputs]:
            raise VerifyException("tpu.yield operand types must match the batch op's result types")
        if self.component.data not in BATCH_COMPONENTS:
            raise VerifyException(
                f"component must be one of {', '.join(BATCH_COMPONENTS)}, got {self.component.data!r}"
            )
        options = self.options()
        if options["max_batch_size"] <= 0:
            raise VerifyException(
                f"max_batch_size must be positive, got {options['max_batch_size']}"
            )
        sizes = options["allowed_batch_sizes"]
        if sizes and (sizes[0] <= 0 or any(b <= a for a, b in zip(sizes, sizes[1:], strict=False))):
            raise VerifyException(
                f"allowed_batch_sizes: entries must increase monotonically (got {sizes})"
            )
        if sizes and sizes[-1] != options["max_batch_size"]:
            raise VerifyException(
                f"allowed_batch_sizes: the last entry ({sizes[-1]}) must equal max_batch_size "
                f"({options['max_batch_size']})"
            )
        problem = batch_shape_problem([v.type for v in self.inputs], [r.type for r in self.outputs])
        if problem:
            raise VerifyException(problem)


# --- control flow -------------------------------------------------------------------------------
# The jax control-flow primitives, with their jaxpr parameters as regions. Each body is a
# closed function of its block arguments (jax passes what a body uses as operands) and ends in
# `tpu.yield`; the JAX backend runs them as lax.switch / lax.while_loop / lax.scan.


def _check_body(op: IRDLOperation, region: Any, what: str, arg_types: list[Attribute]) -> None:
    block = region.block
    if [a.type for a in block.args] != arg_types:
        raise VerifyException(f"{what} block argument types must match {op.name}'s operands")
    if not isinstance(block.last_op, YieldOp):
        raise VerifyException(f"{what} must end with tpu.yield")


@irdl_op_definition
class CondOp(IRDLOperation):
    """`lax.switch`: runs branch `index` (clamped, an i32 scalar) on the other operands; every
    branch takes all of them as block arguments and yields the results (jax `cond`).

        %r = "tpu.cond"(%i, %x) ({
        ^bb0(%a: tensor<2xf32>):
          tpu.yield %a : tensor<2xf32>
        }, {
        ^bb0(%a: tensor<2xf32>):
          %n = "tpu.neg"(%a) : (tensor<2xf32>) -> tensor<2xf32>
          tpu.yield %n : tensor<2xf32>
        }) : (tensor<i32>, tensor<2xf32>) -> tensor<2xf32>
    """

    name = "tpu.cond"
    inputs = var_operand_def()
    outputs = var_result_def()
    branches = var_region_def("single_block")

    def verify_(self) -> None:
        operand_types = [v.type for v in self.inputs[1:]]
        for index, region in enumerate(self.branches):
            _check_body(self, region, f"branch {index}", operand_types)


@irdl_op_definition
class WhileOp(IRDLOperation):
    """`lax.while_loop` (jax `while`): operands are the condition's constants
    (`cond_nconsts`), the body's constants (`body_nconsts`), then the initial carry. The
    `cond` region takes (cond constants, carry) and yields an i1 scalar; the `body` region
    takes (body constants, carry) and yields the next carry. Results: the final carry.

        %n = "tpu.while"(%limit, %zero) ({
        ^bb0(%l: tensor<i64>, %c: tensor<i64>):
          %p = "tpu.lt"(%c, %l) : (tensor<i64>, tensor<i64>) -> tensor<i1>
          tpu.yield %p : tensor<i1>
        }, {
        ^bb0(%c: tensor<i64>):
          %one = tpu.constant {value = dense<1> : tensor<i64>} : tensor<i64>
          %s = "tpu.add"(%c, %one) : (tensor<i64>, tensor<i64>) -> tensor<i64>
          tpu.yield %s : tensor<i64>
        }) {cond_nconsts = 1 : i64, body_nconsts = 0 : i64} : (tensor<i64>, tensor<i64>) -> tensor<i64>
    """

    name = "tpu.while"
    inputs = var_operand_def()
    outputs = var_result_def()
    cond = region_def("single_block")
    body = region_def("single_block")
    cond_nconsts = attr_def(IntegerAttr)
    body_nconsts = attr_def(IntegerAttr)

    def verify_(self) -> None:
        types = [v.type for v in self.inputs]
        cond_n, body_n = self.cond_nconsts.value.data, self.body_nconsts.value.data
        carry = types[cond_n + body_n :]
        _check_body(self, self.cond, "cond", types[:cond_n] + carry)
        _check_body(self, self.body, "body", types[cond_n : cond_n + body_n] + carry)


@irdl_op_definition
class ScanOp(IRDLOperation):
    """`lax.scan` (jax `scan`): operands are `num_consts` constants, `num_carry` initial
    carry values, then the scanned arrays (sliced along axis 0, `length` steps, last to first
    if `reverse`). The body takes (constants, carry, slices) and yields (carry, slices of the
    stacked outputs). Results: the final carry, then the stacked outputs.

        %s, %ys = "tpu.scan"(%s0, %xs) ({
        ^bb0(%c: tensor<2xf32>, %x: tensor<2xf32>):
          %n = "tpu.add"(%c, %x) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
          tpu.yield %n, %n : tensor<2xf32>, tensor<2xf32>
        }) {length = 3 : i64, num_consts = 0 : i64, num_carry = 1 : i64, reverse = false}
            : (tensor<2xf32>, tensor<3x2xf32>) -> (tensor<2xf32>, tensor<3x2xf32>)
    """

    name = "tpu.scan"
    inputs = var_operand_def()
    outputs = var_result_def()
    body = region_def("single_block")
    length = attr_def(IntegerAttr)
    num_consts = attr_def(IntegerAttr)
    num_carry = attr_def(IntegerAttr)
    reverse = attr_def(IntegerAttr)

    def verify_(self) -> None:
        types = [v.type for v in self.inputs]
        fixed = self.num_consts.value.data + self.num_carry.value.data
        slices = [TensorType(t.get_element_type(), t.get_shape()[1:]) for t in types[fixed:]]
        _check_body(self, self.body, "body", types[:fixed] + slices)


CONTROL_OPS = {"cond": CondOp, "while": WhileOp, "scan": ScanOp}
"""jax control-flow primitive -> its structural tpu op."""


# --- primitive ops ------------------------------------------------------------------------------

# Primitives that never appear as tpu ops: calls are inlined, identities dropped, control flow
# has structural ops of its own, and collectives/randomness/tokens have no place in inference.
INLINED = frozenset(
    {
        "jit",
        "pjit",
        "closed_call",
        "core_call",
        "call",
        "custom_jvp_call",
        "custom_vjp_call",
        "remat2",
        "checkpoint",
    }
)
IDENTITIES = frozenset({"device_put", "sharding_constraint", "stop_gradient", "copy"})
EXCLUDED = (
    INLINED
    | IDENTITIES
    | frozenset(
        {
            "cond",
            "while",
            "scan",
            "after_all",
            "create_token",
            "all_gather",
            "all_to_all",
            "axis_index",
            "pmax",
            "pmin",
            "ppermute",
            "psum",
            "ragged_all_to_all",
            "random_bits",
            "random_fold_in",
            "random_gamma",
            "random_seed",
            "random_split",
            "threefry2x32",
            "rng_bit_generator",
            "rng_uniform",
            "name",
            "empty2",
            "get",
            "swap",
            "custom_lin",
            "custom_linear_solve",
            "add_any",
        }
    )
)


class PrimitiveOp(IRDLOperation):
    """Base of the generated primitive ops; `PRIMITIVE` names the jax.lax primitive."""

    PRIMITIVE: ClassVar[str] = ""
    MULTIPLE_RESULTS: ClassVar[bool] = False

    def params(self) -> dict[str, Any]:
        """The primitive's parameters, decoded from the op's attributes."""
        return {name: decode_param(attr) for name, attr in self.attributes.items()}

    def bind(self, *inputs: Any) -> list[Any]:
        """The primitive bound to `inputs` with the decoded parameters, as a list of results:
        traced under a trace (the JAX backend), computed at once outside one (the tpu-level
        interpreter, `mlconv.interpreters.tpu`)."""
        out = primitive(self.PRIMITIVE).bind(*inputs, **self.params())
        return list(out) if self.MULTIPLE_RESULTS else [out]

    def verify_(self) -> None:
        for result in self.results:
            if not isinstance(result.type, TensorType) or any(
                d < 0 for d in result.type.get_shape()
            ):
                raise VerifyException("tpu ops need static shapes")


def _class_name(primitive: str) -> str:
    return "".join(part.capitalize() for part in primitive.replace("-", "_").split("_")) + "Op"


@cache
def _primitives() -> dict[str, Any]:
    found = {
        v.name: v
        for module in (primitives, lax)
        for v in vars(module).values()
        if isinstance(v, Primitive)
    }
    return {name: prim for name, prim in sorted(found.items()) if name not in EXCLUDED}


def primitive(name: str) -> Any:
    """The jax primitive object named `name`."""
    if name == CustomCallOp.PRIMITIVE:
        # lazy: loads 1 more module (custom_ops)
        from mlconv.custom_ops import custom_call_p

        return custom_call_p
    if name == FakeQuantizeOp.PRIMITIVE:
        # lazy: loads 1 more module (fake_quant)
        from mlconv.fake_quant import fake_quantize_p

        return fake_quantize_p
    return _primitives()[name]


def _make_primitive_op(name: str, prim: Any) -> type[PrimitiveOp]:
    op_name = "tpu." + name.replace("-", "_")
    namespace = {
        "__doc__": f"""The jax.lax `{name}` primitive with static shapes.

    Its parameters are the op's attributes (see the module docstring). Example:

        %y = "{op_name}"(%x) {{...}} : (tensor<...>) -> tensor<...>
    """,
        "__module__": __name__,
        "__annotations__": {"PRIMITIVE": "ClassVar", "MULTIPLE_RESULTS": "ClassVar"},
        "name": op_name,
        "PRIMITIVE": name,
        "MULTIPLE_RESULTS": bool(prim.multiple_results),
        "inputs": var_operand_def(),
        "outputs": var_result_def(),
    }
    return irdl_op_definition(type(_class_name(name), (PrimitiveOp,), namespace))


PRIMITIVE_OPS: dict[str, type[PrimitiveOp]] = {
    name: _make_primitive_op(name, prim) for name, prim in _primitives().items()
}
globals().update({cls.__name__: cls for cls in PRIMITIVE_OPS.values()})


@irdl_op_definition
class CustomCallOp(PrimitiveOp):
    """A custom op run on the host (core.Custom lowered): binds `mlconv.custom_ops`'s primitive,
    which calls the Python implementation registered for (`domain`, `op_type`) with `attrs`
    (`jax.pure_callback` under jit). The result shapes and dtypes are parameters too.

        %y = "tpu.custom_call"(%x) {domain = "com.example", op_type = "SoftClip",
               attrs = [["alpha", 2.0 : f64]], result_shapes = [array<i64: 2, 3>],
               result_dtypes = [f32]} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    """

    name = "tpu.custom_call"
    PRIMITIVE: ClassVar[str] = "mlconv_custom_call"
    MULTIPLE_RESULTS: ClassVar[bool] = True
    inputs = var_operand_def()
    outputs = var_result_def()


PRIMITIVE_OPS[CustomCallOp.PRIMITIVE] = CustomCallOp


@irdl_op_definition
class FakeQuantizeOp(PrimitiveOp):
    """core.FakeQuantize lowered (`mlconv.fake_quant`'s primitive): OpenVINO's FakeQuantize on
    `x` with operands input_low, input_high, output_low, output_high and the `levels`
    parameter; `tpu-quantize` lowers it, with the dot or convolution it feeds, to integers.

        %y = "tpu.fake_quantize"(%x, %il, %ih, %ol, %oh) {levels = 256 : i64}
               : (tensor<1x8xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>)
               -> tensor<1x8xf32>
    """

    name = "tpu.fake_quantize"
    PRIMITIVE: ClassVar[str] = "mlconv_fake_quantize"
    inputs = var_operand_def()
    outputs = var_result_def()


PRIMITIVE_OPS[FakeQuantizeOp.PRIMITIVE] = FakeQuantizeOp

TPU = Dialect(
    "tpu",
    [ConstantOp, YieldOp, RegionOp, BatchOp, *CONTROL_OPS.values(), *PRIMITIVE_OPS.values()],
    [],
)

__all__ = [
    "BatchOp",
    "CONTROL_OPS",
    "PRIMITIVE_OPS",
    "CondOp",
    "CustomCallOp",
    "FakeQuantizeOp",
    "ScanOp",
    "WhileOp",
    "TPU",
    "ConstantOp",
    "PrimitiveOp",
    "RegionOp",
    "YieldOp",
    "decode_param",
    "encode_param",
    "primitive",
]

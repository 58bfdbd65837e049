"""tpu-bf16: compute the float32 parts of TPU regions in bfloat16 (seed 003's bfloat16 optimization).

Input: tpu dialect. Output: inside each `tpu.region`, every float32 value becomes bfloat16:
float32 constants are rounded to bfloat16, float32 region inputs are converted on entry and the
float32 results converted back before `tpu.yield`, so the region (and the model) keeps its
float32 signature. A primitive parameter naming float32 (`convert_element_type`'s `new_dtype`,
`iota`'s `dtype`, ...) names bfloat16 instead. Accumulation stays float32, as a TPU computes:
a dot or convolution multiplies bfloat16 operands with `preferred_element_type` float32 (the
matrix unit's float32 accumulators) and rounds its result to bfloat16; a sum-like reduction
(reduce_sum, reduce_window_sum, cumsum, ...) converts its bfloat16 operand to float32, reduces
and rounds once.

Options (ConverterOptions.bfloat16_optimization_options):
- `filterlist=a,b`: ops that stay float32, named by their tpu op (`exp` or `tpu.exp`) or by the
  source node their location names; their bfloat16 inputs are converted to float32 and their
  float32 results back to bfloat16, as the seed describes. Control flow (`tpu.cond`,
  `tpu.while`, `tpu.scan`) is always run this way: its bodies stay float32.
- `skip-safety-checks=true`: a region that already holds bfloat16 values is otherwise refused,
  since pre-existing bfloat16 ops can make the conversion wrong.
- `products=float32|bfloat16`: where a dot's or convolution's result is rounded. `float32`
  (the default, the TPU's form above): the product yields its float32 accumulator and an
  elementwise epilogue reading it alone (bias, BatchNorm scale and shift, activation) is
  computed on it in float32 and rounded once, as XLA:TPU fuses it. `bfloat16`: the product
  names `preferred_element_type` bfloat16, so it still accumulates in float32 inside the
  kernel (cuDNN and cuBLAS do for bfloat16 operands) but writes bfloat16, and its epilogue runs
  in bfloat16: the form XLA:GPU fuses into its library calls. On an H200 the float32 form left
  ResNet50's bfloat16 throughput at the float32 one (21,539 against 21,746 images/s, batch
  256), the bfloat16 form is bench/gpu.py's `mlconv bfloat16 gpu` row.
- `scope=tpu|all`: the seed's scope, recorded on the pass. The pass converts every
  `tpu.region` of the module it is given; the scope decides which modules get it:
  mlconv-convert runs it on the TPU functions always and, under `all`, on the host stages of
  a SavedModel's signatures too (converter/host_part_split.py, converter/host_part.py).

    %y = "tpu.exp"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  becomes
    %xb = "tpu.convert_element_type"(%x) {new_dtype = bf16, ...} : (tensor<4xf32>) -> tensor<4xbf16>
    %yb = "tpu.exp"(%xb) : (tensor<4xbf16>) -> tensor<4xbf16>
    %y = "tpu.convert_element_type"(%yb) {new_dtype = f32, ...} : (tensor<4xbf16>) -> tensor<4xf32>

    %d = "tpu.dot_general"(%a, %b) {preferred_element_type = f32, ...} : (...) -> tensor<2x3xf32>
  becomes (the operands bfloat16)
    %p = "tpu.dot_general"(%ab, %bb) {preferred_element_type = f32, ...} : (tensor<2x4xbf16>, tensor<4x3xbf16>) -> tensor<2x3xf32>
    %d = "tpu.convert_element_type"(%p) {new_dtype = bf16, ...} : (tensor<2x3xf32>) -> tensor<2x3xbf16>
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import ml_dtypes
import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import BFloat16Type, Float32Type, ModuleOp, TensorType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from mlconv.dense import numpy_dtype, to_numpy
from mlconv.dialects import tpu
from mlconv.errors import OptionError, PassFailure, describe_location
from mlconv.passes.jaxpr_to_tpu import JaxprEmitter

BF16 = np.dtype(ml_dtypes.bfloat16)
F32 = np.dtype(np.float32)
SCOPES = ("tpu", "all")
PRODUCT_FORMS = ("float32", "bfloat16")


def _is_f32(value: SSAValue) -> bool:
    return isinstance(value.type, TensorType) and isinstance(
        value.type.get_element_type(), Float32Type
    )


def _holds_bf16(op: Operation) -> bool:
    values = [*op.results, *(a for r in op.regions for b in r.blocks for a in b.args)]
    return any(
        isinstance(v.type, TensorType) and isinstance(v.type.get_element_type(), BFloat16Type)
        for v in values
    )


def _struct(value: SSAValue) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(
        tuple(value.type.get_shape()), numpy_dtype(value.type.get_element_type())
    )


def _to_bf16_param(value: Any) -> Any:
    if isinstance(value, np.dtype) and value == F32:
        return BF16
    if isinstance(value, type) and issubclass(value, np.generic) and np.dtype(value) == F32:
        return BF16
    return value


PRODUCTS = frozenset({"dot_general", "conv_general_dilated"})
"""Multiply bfloat16 operands and accumulate in float32, as a TPU's matrix unit does."""
F32_ACCUMULATORS = frozenset(
    {"reduce_sum", "reduce_prod", "reduce_window_sum", "cumsum", "cumprod", "cumlogsumexp"}
)
"""Reductions that XLA keeps a float32 accumulator for (max and min are exact in bfloat16)."""


FUSED = frozenset(
    """abs add clamp div exp logistic max min mul neg rsqrt select_n sqrt square sub tanh""".split()
)
"""Elementwise ops XLA fuses into a product's epilogue in its float32 accumulator."""


def _single_use(value: SSAValue) -> bool:
    uses = iter(value.uses)
    return next(uses, None) is not None and next(uses, None) is None


def _f32_accumulation(op: Operation) -> str | None:
    """ "products" for a float32 dot or convolution, "reduction" for a float32 sum-like
    reduction, None otherwise."""
    if not op.operands or not all(_is_f32(v) for v in op.operands):
        return None
    if op.PRIMITIVE in PRODUCTS:
        return "products"
    if op.PRIMITIVE in F32_ACCUMULATORS and len(op.results) == 1:
        return "reduction"
    return None


class RegionConverter:
    """Rebuilds one region body with float32 computed as bfloat16."""

    def __init__(self, filterlist: frozenset[str], products: str = "float32"):
        self.filterlist = filterlist
        self.products = products
        # Float32 originals where they exist (region inputs, results of ops kept float32,
        # float32 constants), so an op kept float32 or the yield reads them instead of a
        # bfloat16 rounding; per region.
        self.exact: dict[SSAValue, SSAValue] = {}

    def emit(
        self, block: Block, location: Any, fn: Callable[..., Any], inputs: Sequence[SSAValue]
    ) -> list[SSAValue]:
        closed = jax.make_jaxpr(fn)(*[_struct(v) for v in inputs])
        return JaxprEmitter(block.add_op, location).emit(closed, list(inputs))

    def cast(self, block: Block, location: Any, value: SSAValue, dtype: np.dtype) -> SSAValue:
        if numpy_dtype(value.type.get_element_type()) == dtype:
            return value
        return self.emit(
            block, location, lambda x: jax.lax.convert_element_type(x, dtype), [value]
        )[0]

    def filtered(self, op: Operation) -> bool:
        if not self.filterlist:
            return False
        short = op.name.removeprefix("tpu.")
        return bool({op.name, short, describe_location(op.location) or ""} & self.filterlist)

    def convert(self, region_op: tpu.RegionOp) -> None:
        old = region_op.body.block
        new = Block(arg_types=[a.type for a in old.args])
        env: dict[SSAValue, SSAValue] = {}
        self.exact = {}
        self.excess: set[SSAValue] = set()
        for old_arg, arg in zip(old.args, new.args, strict=True):
            env[old_arg] = self.cast(new, region_op.location, arg, BF16) if _is_f32(arg) else arg
            if _is_f32(arg):
                self.exact[old_arg] = arg
        for op in old.ops:
            if isinstance(op, tpu.YieldOp):
                values = [self.float32(new, op.location, v, env) for v in op.values]
                new.add_op(tpu.YieldOp.create(operands=values))
            elif isinstance(op, tpu.ConstantOp):
                array = to_numpy(op.value)
                if array.dtype == F32:
                    self.exact[op.output] = self.constant(new, op, array)
                    array = array.astype(BF16)
                env[op.output] = self.constant(new, op, array)
            elif isinstance(op, tpu.PrimitiveOp) and not op.regions and not self.filtered(op):
                if self.fused_epilogue(new, op, env):
                    continue
                params = {k: _to_bf16_param(v) for k, v in op.params().items()}
                primitive = tpu.primitive(op.PRIMITIVE)
                multiple = op.MULTIPLE_RESULTS
                accumulate = _f32_accumulation(op)
                if accumulate == "products" and self.products == "bfloat16":
                    accumulate = None  # written in bfloat16 (accumulated in float32 inside)
                    params["preferred_element_type"] = BF16
                elif accumulate == "products":  # bf16 operands, float32 accumulation, rounded
                    params["preferred_element_type"] = F32
                elif accumulate == "reduction":  # a float32 accumulator, rounded once
                    params = op.params()

                def bind(
                    *xs, primitive=primitive, params=params, multiple=multiple, how=accumulate
                ):
                    if how == "reduction":
                        xs = [jax.lax.convert_element_type(x, F32) for x in xs]
                    out = primitive.bind(*xs, **params)
                    outputs = list(out) if multiple else [out]
                    if how:
                        outputs = [jax.lax.convert_element_type(o, BF16) for o in outputs]
                    return outputs

                outputs = self.emit(new, op.location, bind, [env[v] for v in op.operands])
                env.update(zip(op.results, outputs, strict=True))
                if accumulate and len(op.results) == 1:  # its float32 accumulator, for a
                    # fused epilogue (the convert above is dropped if nobody reads it)
                    (result,) = outputs
                    accumulator = result.owner.operands[0]
                    self.exact[op.results[0]] = accumulator
                    self.excess.add(op.results[0])
            else:
                self.keep_float32(new, op, env)
        # Conversions and constants nobody reads (float32 originals not needed after all).
        for op in reversed(list(new.ops)):
            if op.name in ("tpu.convert_element_type", "tpu.constant") and not op.results[0].uses:
                new.erase_op(op)
        region_op.body.detach_block(old)
        region_op.body.add_block(new)

    def fused_epilogue(self, block: Block, op: Operation, env: dict[SSAValue, SSAValue]) -> bool:
        """An elementwise float32 op reading the float32 accumulator of a dot, convolution or
        sum (or of such an op) that nothing else reads, computed in float32 and rounded once
        where it is read as bfloat16: XLA fuses such an epilogue (bias, BatchNorm scale and
        shift, activation) into the product and keeps the excess precision inside the fusion
        (xla_allow_excess_precision); a value read twice is materialized, in bfloat16."""
        if op.PRIMITIVE not in FUSED or len(op.results) != 1 or not _is_f32(op.results[0]):
            return False
        if not any(v in self.excess and _single_use(v) for v in op.operands):
            return False
        inputs = [
            self.exact[v]
            if v in self.excess and _single_use(v)
            else self.float32(block, op.location, v, env)
            for v in op.operands
        ]
        params = op.params()
        primitive = tpu.primitive(op.PRIMITIVE)
        (result,) = self.emit(
            block, op.location, lambda *xs: [primitive.bind(*xs, **params)], inputs
        )
        self.exact[op.results[0]] = result
        self.excess.add(op.results[0])
        env[op.results[0]] = self.cast(block, op.location, result, BF16)
        return True

    @staticmethod
    def constant(block: Block, op: Operation, array: np.ndarray) -> SSAValue:
        constant = tpu.ConstantOp.from_numpy(array)
        constant.location = op.location
        block.add_op(constant)
        return constant.output

    def keep_float32(self, block: Block, op: Operation, env: dict[SSAValue, SSAValue]) -> None:
        """`op` as it was, in float32: bfloat16 inputs converted to float32, float32 results to
        bfloat16."""
        inputs = [self.float32(block, op.location, v, env) for v in op.operands]
        clone = op.clone()
        for index, value in enumerate(inputs):
            clone.operands[index] = value
        block.add_op(clone)
        for old_result, result in zip(op.results, clone.results, strict=True):
            env[old_result] = (
                self.cast(block, op.location, result, BF16) if _is_f32(result) else result
            )
            if _is_f32(result):
                self.exact[old_result] = result

    def float32(
        self, block: Block, location: Any, old: SSAValue, env: dict[SSAValue, SSAValue]
    ) -> SSAValue:
        """The new value standing for `old`, as float32 when `old` was float32."""
        if not _is_f32(old):
            return env[old]
        if old in self.exact:
            return self.exact[old]
        return self.cast(block, location, env[old], F32)


@dataclass(frozen=True)
class TpuBf16Pass(ModulePass):
    """tpu-bf16: float32 computation in TPU regions as bfloat16, float32 signature kept."""

    name = "tpu-bf16"
    filterlist: tuple[str, ...] = ()
    skip_safety_checks: bool = False
    scope: str = "tpu"
    products: str = "float32"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.scope.lower() not in SCOPES:
            raise OptionError(f"tpu-bf16: scope '{self.scope}' is not one of {', '.join(SCOPES)}")
        if self.products not in PRODUCT_FORMS:
            raise OptionError(
                f"tpu-bf16: products '{self.products}' is not one of {', '.join(PRODUCT_FORMS)}"
            )
        regions = [r for r in op.walk() if isinstance(r, tpu.RegionOp)]
        if not self.skip_safety_checks:
            for region in regions:
                for inner in region.body.walk():
                    if inner is not region and _holds_bf16(inner):
                        raise PassFailure.at(
                            inner,
                            "already computes in bfloat16; the bfloat16 optimization refuses such "
                            "models (set skip_safety_checks to convert anyway)",
                        )
        converter = RegionConverter(frozenset(self.filterlist), self.products)
        for region in regions:
            converter.convert(region)


def check_filterlist(module: ModuleOp, filterlist: Sequence[str]) -> None:
    """A filterlist entry that names no op of the TPU regions (by tpu op, with or without
    `tpu.`, or by source node name) is a one-line OptionError: it would keep nothing float32,
    silently (mlconv-convert's check; scope ALL's entries may name host ops instead)."""
    names: set[str] = set()
    for region in (r for r in module.walk() if isinstance(r, tpu.RegionOp)):
        for op in region.body.walk():
            names |= {op.name, op.name.removeprefix("tpu."), describe_location(op.location) or ""}
    unmatched = [entry for entry in filterlist if entry not in names]
    if unmatched:
        raise OptionError(
            "bfloat16_optimization_options.filterlist: "
            + ", ".join(repr(e) for e in unmatched)
            + " names no op of the TPU functions (name a tpu op such as 'exp', or a source "
            "node's name)"
        )


__all__ = ["TpuBf16Pass", "check_filterlist"]

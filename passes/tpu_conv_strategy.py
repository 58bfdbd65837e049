"""tpu-conv-strategy: pick, per 2-D convolution, the form XLA runs fastest on the target device.

Input/output: tpu dialect. Option `device` = cpu | gpu | tpu. Convolutions arrive from
core-to-tpu in the source layout (NCHW data, OIHW filters). On `cpu` each one becomes

    transpose(NCHW -> NHWC) ; <form> ; transpose(NHWC -> NCHW)

(`tpu-sink-transposes` then cancels the pairs between consecutive layers), where the form is
chosen per op (measured with bench/conv_forms.py on XLA:CPU, see the module constants):

- depthwise (one input channel per group, multiplier 1): shifted multiply-adds, one strided
  slice of the padded input times one filter tap per kernel position;
- 1x1 without padding or groups: `conv_general_dilated` in NHWC / HWIO, like any dense
  convolution (see `choose`; `pointwise_dot`, a `dot_general` over the channel axis, remains
  the core of the block-diagonal grouped form);
- grouped 1x1 (1 < groups < channels): with few channels one dense `dot_general` with a
  block-diagonal filter, otherwise one dot per group on its channel slice, concatenated (light
  ShuffleNet in one process, ms: 9.1 against 10.2 with one dot batched over the groups, the
  form before, which compiles 0.8 s faster);
- other grouped convolutions: one convolution per group on a channel slice, concatenated;
- a kernel larger than its input map (3x3 on 2x2): one dot of the patches (`patches_dot`);
- otherwise: `conv_general_dilated` in NHWC / HWIO.

On `gpu` every ungrouped convolution becomes `conv_general_dilated` in NHWC data / OHWI
filters, the layout XLA:GPU hands cuDNN (`dim_labels=b01f_o01i->b01f` on an H100): left in
NCHW / OIHW, XLA transposes every filter into OHWI on every call, a kernel per convolution
(bench/gpu.py, batch 1, mlconv / naive JAX in one run: light ResNet50 0.69 against 0.79 left
alone, VGG-19 0.89 against 1.00). Grouped ones stay as they are: in NHWC / OHWI light
ShuffleNet ran 0.85 against 0.78.

Constant filters are transposed (and split per tap or group) here, at compile time. On `tpu`
XLA assigns convolution layouts itself (the TPU's native tiling), so the pass leaves
convolutions as they are there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np
from jax import lax
from jax.extend.core import ClosedJaxpr, Literal
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from mlconv.dense import numpy_dtype
from mlconv.dialects import tpu
from mlconv.errors import OptionError
from mlconv.passes.jaxpr_to_tpu import replace_with_jaxpr
from mlconv.passes.tpu_fold_constants import NUMPY, constant_value

DEVICES = ("cpu", "gpu", "tpu")
NCHW = ((0, 1, 2, 3), (0, 1, 2, 3), (0, 1, 2, 3))
TO_NHWC, TO_NCHW = (0, 2, 3, 1), (0, 3, 1, 2)


def check_device(pass_name: str, device: str) -> None:
    """The `device` option of a target pass: one of DEVICES, else a one-line OptionError."""
    if device not in DEVICES:
        raise OptionError(f"{pass_name}: unknown device '{device}' (expected cpu, gpu or tpu)")


@dataclass(frozen=True)
class CpuRewritePass(ModulePass):
    """A tpu pass that rewrites for XLA:CPU only: `device` is checked (`check_device`), and on
    cpu `rewrite` runs; gpu and tpu, whose XLA fuses by cost models of its own, keep the
    module as it is."""

    device: str = "cpu"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        check_device(self.name, self.device)
        if self.device == "cpu":
            self.rewrite(op)

    def rewrite(self, op: ModuleOp) -> None:
        raise NotImplementedError


@dataclass(frozen=True)
class Conv:
    """A 2-D NCHW convolution's parameters."""

    strides: tuple[int, int]
    padding: tuple[tuple[int, int], tuple[int, int]]
    rhs_dilation: tuple[int, int]
    groups: int
    in_channels: int
    out_channels: int
    kernel: tuple[int, int]
    precision: Any
    preferred: Any

    @property
    def depthwise(self) -> bool:
        return self.groups > 1 and self.groups == self.in_channels == self.out_channels

    @property
    def pointwise(self) -> bool:
        return self.kernel == (1, 1) and self.groups == 1 and all(p == (0, 0) for p in self.padding)


def read_conv(op: tpu.PrimitiveOp) -> Conv | None:
    """The op's parameters when it is a 2-D NCHW/OIHW convolution this pass can rewrite."""
    params = op.params()
    numbers = params["dimension_numbers"]
    if (tuple(numbers.lhs_spec), tuple(numbers.rhs_spec), tuple(numbers.out_spec)) != NCHW:
        return None
    if params["batch_group_count"] != 1 or any(d != 1 for d in params["lhs_dilation"]):
        return None
    padding = tuple(tuple(p) for p in params["padding"])
    if any(lo < 0 or hi < 0 for lo, hi in padding):
        return None
    x_shape = op.operands[0].type.get_shape()
    w_shape = op.operands[1].type.get_shape()
    return Conv(
        strides=tuple(params["window_strides"]),
        padding=padding,
        rhs_dilation=tuple(params["rhs_dilation"]),
        groups=params["feature_group_count"],
        in_channels=x_shape[1],
        out_channels=w_shape[0],
        kernel=(w_shape[2], w_shape[3]),
        precision=params["precision"],
        preferred=params["preferred_element_type"],
    )


# --- the forms, as jax functions of NHWC data and HWIO filters ----------------------------------


def conv_nhwc(x: Any, w: Any, c: Conv, filters: str = "HWIO") -> Any:
    return lax.conv_general_dilated(
        x, w, c.strides, c.padding, rhs_dilation=c.rhs_dilation,
        dimension_numbers=("NHWC", filters, "NHWC"), feature_group_count=c.groups,
        precision=c.precision, preferred_element_type=c.preferred,
    )  # fmt: skip


def conv_nhwc_ohwi(x: Any, w: Any, c: Conv) -> Any:
    """NHWC data and OHWI filters (`w` given HWIO: constant filters are transposed at compile
    time), cuDNN's layout on XLA:GPU."""

    return conv_nhwc(x, lax.transpose(w, (3, 0, 1, 2)), c, filters="OHWI")


def strided_taps(
    x: Any, window: Sequence[int], strides: Sequence[int], dilation: Sequence[int]
) -> Iterator[Any]:
    """One strided slice of `x` (already padded) per window position, in row-major order of
    the window: the inputs a window op (a convolution tap, a pooling element) reads at each
    output element. Lazily, so each slice is traced next to the op that consumes it."""

    out = [
        (size - d * (k - 1) - 1) // s + 1
        for size, k, s, d in zip(x.shape, window, strides, dilation, strict=True)
    ]
    for tap in np.ndindex(*window):
        start = [t * d for t, d in zip(tap, dilation, strict=True)]
        limit = [b + (n - 1) * s + 1 for b, n, s in zip(start, out, strides, strict=True)]
        yield lax.slice(x, start, limit, strides)


def conv_taps(x: Any, c: Conv) -> Iterator[Any]:
    """The NHWC input zero-padded as `c` pads it, one strided slice per kernel tap (i, j)."""

    (pt, pb), (pl, pr) = c.padding
    xp = lax.pad(x, np.zeros((), x.dtype), ((0, 0, 0), (pt, pb, 0), (pl, pr, 0), (0, 0, 0)))
    (sh, sw), (dh, dw) = c.strides, c.rhs_dilation
    return strided_taps(xp, (1, *c.kernel, 1), (1, sh, sw, 1), (1, dh, dw, 1))


def kernel_exceeds_input(c: Conv, x_shape: tuple[int, ...]) -> bool:
    """Whether the (dilated) kernel is larger than the NHWC input's map, as in a 3x3
    convolution of a 2x2 map (ResNet's last stage at 64x64): XLA:CPU's convolution kernel runs
    that shape at 8.5 ms where `patches_dot` takes 0.47 (512->512 channels; at 4x4 the two are
    equal, bench/conv_forms.py)."""
    (kh, kw), (dh, dw) = c.kernel, c.rhs_dilation
    return x_shape[1] < dh * (kh - 1) + 1 or x_shape[2] < dw * (kw - 1) + 1


def patches_dot(x: Any, w: Any, c: Conv) -> Any:
    """An ungrouped convolution as one `dot_general` of its patches (one strided slice of the
    padded input per tap, concatenated along the channels) with the filter as a
    [taps * in, out] matrix."""

    taps = list(conv_taps(x, c))
    kh, kw = c.kernel
    ch = x.shape[3]
    rows = (kh * kw * ch, c.out_channels)  # HWIO flattened: rows in tap order, as the patches
    matrix = w.reshape(rows) if isinstance(w, np.ndarray) else lax.reshape(w, rows)
    return lax.dot_general(
        lax.concatenate(taps, 3),
        matrix,
        (((3,), (0,)), ((), ())),
        precision=c.precision,
        preferred_element_type=c.preferred,
    )


def depthwise_taps(x: Any, w: Any, c: Conv) -> Any:
    """sum over taps (i, j) of slice(pad(x), i, j) * w[i, j, 0, :]."""
    total = None
    for tap, (i, j) in zip(conv_taps(x, c), np.ndindex(*c.kernel), strict=True):
        term = tap * w[i, j, 0, :]
        total = term if total is None else total + term
    return total.astype(c.preferred) if c.preferred is not None else total


def pointwise_dot(x: Any, w: Any, c: Conv) -> Any:
    """A 1x1 convolution as a dot_general over the channel axis."""

    sh, sw = c.strides
    if (sh, sw) != (1, 1):
        n, h, wd, ch = x.shape
        x = lax.slice(x, (0, 0, 0, 0), (n, h, wd, ch), (1, sh, sw, 1))
    return lax.dot_general(
        x,
        w[0, 0],
        (((3,), (0,)), ((), ())),
        precision=c.precision,
        preferred_element_type=c.preferred,
    )


def grouped_split(x: Any, w: Any, c: Conv) -> Any:
    """One ungrouped convolution per group on its channel slice, concatenated."""

    cin, cout = c.in_channels // c.groups, c.out_channels // c.groups
    single = Conv(**{**c.__dict__, "groups": 1, "in_channels": cin, "out_channels": cout})
    n, h, wd, _ = x.shape
    parts = []
    for g in range(c.groups):
        xg = lax.slice(x, (0, 0, 0, g * cin), (n, h, wd, (g + 1) * cin))
        wg = w[:, :, :, g * cout : (g + 1) * cout]
        parts.append(
            pointwise_dot(xg, wg, single) if single.pointwise else conv_nhwc(xg, wg, single)
        )
    return lax.concatenate(parts, 3)


BLOCK_DIAGONAL_CHANNELS = 160
"""Grouped 1x1 convolutions with at most this many input channels run as one dense dot with a
block-diagonal filter (see `grouped_block_diagonal`); wider ones one dot per group."""


def grouped_block_diagonal(x: Any, w: Any, c: Conv) -> Any:
    """A grouped 1x1 convolution as one dense `dot_general` whose [in, out] filter is zero
    outside the groups' diagonal blocks: `groups` times the multiply-adds, but one library
    call and no slicing or concatenation of the data's channels. Pays where the channels are few
    (ShuffleNet, 4 groups, NHWC, ms per op: 56x56 24->112 0.42 against 0.44 split and 0.77
    batched, 28x28 136->136 0.33 / 0.34 / 0.42); at 272 channels a dot per group is faster
    (0.15 against 0.27). The block-diagonal filter is built from the filter by slices, pads
    and a concatenation, which constant filters run at compile time (`_bind_filters`)."""

    g = c.groups
    cout = c.out_channels // g
    zero = np.zeros((), np.dtype(w.dtype))
    cin = w.shape[2]
    if isinstance(w, np.ndarray):  # a constant filter (the closure form) is built here
        dense = np.zeros((1, 1, c.in_channels, c.out_channels), w.dtype)
        for k in range(g):
            dense[..., k * cin : (k + 1) * cin, k * cout : (k + 1) * cout] = w[
                ..., k * cout : (k + 1) * cout
            ]
    else:  # group k's filter [1, 1, in/g, out/g] placed at its output columns
        rows = []
        for k in range(g):
            block = lax.slice(w, (0, 0, 0, k * cout), (1, 1, cin, (k + 1) * cout))
            edges = (k * cout, (g - 1 - k) * cout, 0)
            rows.append(lax.pad(block, zero, ((0, 0, 0), (0, 0, 0), (0, 0, 0), edges)))
        dense = lax.concatenate(rows, 2)  # [1, 1, in, out]
    single = Conv(**{**c.__dict__, "groups": 1})
    return pointwise_dot(x, dense, single)


Form = Callable[[Any, Any, Conv], Any]


def choose(c: Conv, device: str, x_shape: tuple[int, ...] = ()) -> Form | None:
    """The form for `c` (its NCHW input of shape `x_shape`) on `device`, or None to leave the
    op as it is."""
    if device == "gpu":
        return conv_nhwc_ohwi if c.groups == 1 else None
    if device != "cpu":
        return None
    if c.depthwise:
        return depthwise_taps
    # A 1x1 convolution stays a convolution: XLA:CPU rewrites it to a dot itself, after its
    # fusion decisions. As our dot_general, its bitcast to a matrix was fused into the
    # producer, which XLA then compiled twice when a 3x3 convolution read the same value
    # (SqueezeNet's squeeze, Inception's reduce), and each epilogue differed from a 3x3's.
    # Light models, distinct XLA loop kernels dot -> conv: squeezenet 30 -> 22, resnet50 41 ->
    # 34, inception_v1 69 -> 58, inception_v2 52 -> 46; compile + first call (s) and ms per
    # call, 5-6 interleaved cold rounds: squeezenet 0.42 -> 0.37 and 6.1 -> 5.7, resnet50 0.65
    # -> 0.58 and 48.3 -> 46.5, inception_v2 0.90 -> 0.82 and 23.5 -> 22.7, densenet121 41.0
    # against 45.6 ms; inception_v1 compiles 0.15 s faster but runs 21 -> 22 ms. Alone, a dot
    # wins on small maps with many channels (bench/conv_forms.py: 2048->512 @7 0.76 against
    # 1.13 ms), but keeping those as dots (a size rule: maps under 28x28) brought the twice
    # compiled producers back and lost most of the gain on every model.
    if c.groups > 1 and c.kernel == (1, 1) and all(p == (0, 0) for p in c.padding):
        if c.in_channels <= BLOCK_DIAGONAL_CHANNELS:
            return grouped_block_diagonal
        return grouped_split
    if c.groups > 1:
        return grouped_split
    nhwc = (x_shape[0], x_shape[2], x_shape[3], x_shape[1]) if len(x_shape) == 4 else ()
    if nhwc and kernel_exceeds_input(c, nhwc):
        return patches_dot
    return conv_nhwc


def _traced(form: Form, c: Conv, x_struct: Any, w_struct: Any, traces: dict) -> Any:
    """transpose ; form ; transpose as a jaxpr of (NCHW data, HWIO filters), traced once per
    distinct (form, convolution, shapes) in `traces`: a model repeats a few signatures (light
    ResNet50: 53 convolutions, 24 signatures)."""

    # lazy: loads 5 more modules (dialects, semantics)
    from mlconv.semantics.tracing import trace_function

    key = (form, c, x_struct.shape, x_struct.dtype, w_struct.shape, w_struct.dtype)
    if key not in traces:

        def fn(x, w):
            return lax.transpose(form(lax.transpose(x, TO_NHWC), w, c), TO_NCHW)

        traces[key] = trace_function(fn, x_struct, w_struct)
    return traces[key]


def _bind_filters(closed: Any, filters: np.ndarray) -> Any | None:
    """`closed` (a jaxpr of data and filters) with the filters given: the equations that
    depend on the filters alone (slices per tap or group, squeezes, reshapes) run here in
    numpy, and what the rest reads of them becomes the jaxpr's constants, in order of first
    use. None when such an equation has no numpy form."""

    jaxpr = closed.jaxpr
    x_var, w_var = jaxpr.invars
    known: dict[Any, np.ndarray] = dict(zip(jaxpr.constvars, closed.consts, strict=True))
    known[w_var] = filters
    kept = []
    for eqn in jaxpr.eqns:
        inputs = [v.val if isinstance(v, Literal) else known.get(v) for v in eqn.invars]
        if any(v is None for v in inputs):
            kept.append(eqn)
            continue
        if len(eqn.outvars) != 1:
            return None
        (out,) = eqn.outvars
        larger = np.prod(out.aval.shape, dtype=np.int64) > sum(np.size(v) for v in inputs)
        if larger and eqn.primitive.name == "broadcast_in_dim":
            kept.append(eqn)  # a tap broadcast over the data stays an op, not a big constant
            continue
        evaluate = NUMPY.get(eqn.primitive.name)
        if evaluate is None:
            return None
        known[out] = evaluate(*inputs, **eqn.params)
    constvars: list[Any] = []
    for var in [v for eqn in kept for v in eqn.invars] + list(jaxpr.outvars):
        if not isinstance(var, Literal) and var in known and var not in constvars:
            constvars.append(var)
    bound = jaxpr.replace(constvars=constvars, invars=[x_var], eqns=kept)
    return ClosedJaxpr(bound, [known[v] for v in constvars])


def rewrite(op: tpu.PrimitiveOp, form: Form, c: Conv, traces: dict | None = None) -> None:
    """Replace `op` by transpose ; form ; transpose, traced to tpu ops before it. Constant
    filters are transposed to HWIO and prepared for the form (per tap, per group) in numpy."""

    # lazy: loads 5 more modules (dialects, semantics)
    from mlconv.semantics.tracing import trace_function

    traces = {} if traces is None else traces
    x_value, w_value = op.operands
    x_type = x_value.type
    x_struct = jax.ShapeDtypeStruct(tuple(x_type.get_shape()), _dtype(x_type))
    weights = constant_value(w_value)
    if weights is not None:
        w_hwio = np.transpose(weights, (2, 3, 1, 0))  # a view: the constant's bytes copy it
        w_struct = jax.ShapeDtypeStruct(w_hwio.shape, w_hwio.dtype)
        traced = _bind_filters(_traced(form, c, x_struct, w_struct, traces), w_hwio)
        if traced is None:

            def fn(x):
                return lax.transpose(form(lax.transpose(x, TO_NHWC), w_hwio, c), TO_NCHW)

            traced = trace_function(fn, x_struct)
        operands = [x_value]
    else:
        w_type = w_value.type
        w_struct = jax.ShapeDtypeStruct(tuple(w_type.get_shape()), _dtype(w_type))

        def fn(x, w):
            return lax.transpose(
                form(lax.transpose(x, TO_NHWC), lax.transpose(w, (2, 3, 1, 0)), c), TO_NCHW
            )

        traced, operands = trace_function(fn, x_struct, w_struct), [x_value, w_value]
    replace_with_jaxpr(op, traced, operands)


def _dtype(tensor_type: Any) -> np.dtype:
    return numpy_dtype(tensor_type.get_element_type())


def convolutions(module: ModuleOp) -> list[tpu.PrimitiveOp]:
    conv_class = tpu.PRIMITIVE_OPS["conv_general_dilated"]
    return [
        op
        for op in module.walk()
        if isinstance(op, conv_class) and len(op.operands[0].type.get_shape()) == 4
    ]


@dataclass(frozen=True)
class TpuConvStrategyPass(ModulePass):
    """tpu-conv-strategy: per convolution, the fastest form for XLA on `device` (cpu: NHWC,
    depthwise as shifted multiply-adds, grouped split per group or block-diagonal dots; gpu:
    NHWC / OHWI for ungrouped ones)."""

    name = "tpu-conv-strategy"
    device: str = "cpu"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        check_device(self.name, self.device)
        traces: dict = {}
        for conv in convolutions(op):
            c = read_conv(conv)
            x_shape = tuple(conv.operands[0].type.get_shape())
            form = choose(c, self.device, x_shape) if c is not None else None
            if form is not None:
                rewrite(conv, form, c, traces)


__all__ = [
    "Conv",
    "TpuConvStrategyPass",
    "choose",
    "conv_nhwc",
    "conv_nhwc_ohwi",
    "grouped_block_diagonal",
    "depthwise_taps",
    "grouped_split",
    "kernel_exceeds_input",
    "patches_dot",
    "pointwise_dot",
    "read_conv",
]

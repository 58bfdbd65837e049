"""Compile a module of tpu ops into one `jax.jit` program per `tpu.region`.

Each tpu op binds its jax primitive with the parameters decoded from its attributes. Weights
become arguments of the jitted function, placed on the device once, not literals inside it, so
XLA does not spend its compile time folding them and a 100 MB model is not copied into the
executable. Constants of at most `LITERAL_BYTES` (scalars, biases, BatchNorm scales) are
literals: XLA sees ReLU's zero and a bias as constants it can fuse.

On the CPU the program is compiled with `XLA_CPU_OPTIONS`: XLA:CPU calls YNNPACK for each
dot and keeps convolutions and elementwise loops its own (measured fastest, see there); a
region without column or very long reductions also skips XLA's tree reduction rewriter
(`needs_tree_reductions`), and a small one is compiled by XLA's legacy loop emitters
(`small_program_options`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

import jax
import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerType, ModuleOp
from xdsl.ir import Block, Operation, SSAValue

from mlconv.backends import compile_cache
from mlconv.backends.symbolic import export_symbolic, has_dynamic_inputs
from mlconv.dense import numpy_dtype, to_numpy
from mlconv.dialects import tpu
from mlconv.errors import BackendError
from mlconv.fileio import write_output
from mlconv.passes.tpu_sink_transposes import LIBRARY_CALLS
from mlconv.passes.tpu_sink_transposes import REDUCTIONS as SHARED_REDUCTIONS
from mlconv.semantics.tpu_blocks import interpret_block
from mlconv.signature.inputs import InputSpec, bind_inputs
from mlconv.signature.module_io import find_main, value_names

DEVICES = ("cpu", "gpu", "tpu")


def pick_device(device: str | None) -> Any:
    """The jax device for `cpu`/`gpu`/`tpu`, or jax's default one for None."""
    if device is None:
        return jax.devices()[0]
    if device not in DEVICES:
        raise BackendError(f"unknown device '{device}' (expected one of {', '.join(DEVICES)})")
    try:
        return jax.devices(device)[0]
    except RuntimeError:
        raise BackendError(f"no {device} device is available to JAX on this machine") from None


LITERAL_BYTES = 16384
"""tpu.constants of at most this many bytes are HLO literals; larger ones (weights) are jit
arguments. resnet50 (light, XLA:CPU): 158 arguments -> 53, 26 fusions -> 15, XLA compile CPU
0.61 -> 0.41 s; all literal instead costs 0.3 s more tracing and compiles no faster."""

XLA_CPU_OPTIONS = {
    "xla_cpu_experimental_ynn_fusion_type": "LIBRARY_FUSION_TYPE_INDIVIDUAL_DOT",
    "xla_backend_optimization_level": 2,
}
"""XLA:CPU compile options (jaxlib 0.10): each dot is a YNNPACK library call of its own;
convolutions stay with XLA's Eigen kernels and elementwise ops in XLA's loop fusions. XLA's
default also hands convolutions to YNNPACK, and the wider library fusions (DOT, ELTWISE,
REDUCE) take elementwise neighbours too, which materializes every strided slice feeding them
(pooling and depthwise taps) and broadcast ReLU zeros. Measured per light model, ms per call
(bench/xla_cpu_options.py, one process, idle), default / DOT+ELTWISE+REDUCE+CONV / this:
squeezenet 6.5 / 6.9 / 5.6, shufflenet 12.4 / 18.7 / 9.8, inception_v1 21.5 / 24.8 / 20.4,
inception_v2 26.4 / 27.8 / 22.9, resnet50 50.9 / 50.2 / 48.5.

LLVM at -O2 rather than XLA's default -O3: what XLA:CPU compiles itself is elementwise loop
fusions (dots and convolutions are library calls), where O3's extra loop passes buy nothing.
XLA compile seconds O3 / O2, and ms per call O3 / O2, 6 interleaved cold rounds, one process:
squeezenet 0.43 / 0.40 and 6.2 / 6.1, resnet50 0.56 / 0.52 and 49.4 / 49.5, inception_v2
0.83 / 0.74 and 23.1 / 23.3, shufflenet 1.65 / 1.53 and 7.7 / 7.6, densenet121 1.52 / 1.36 and
46.6 / 46.3, bvlc_alexnet 0.32 / 0.30 and 17.6 / 16.7. O1 compiles no faster than O2; O0 halves
the compile but doubles squeezenet's latency. XLA's older LLVM IR loop emitters
(`xla_cpu_use_fusion_emitters` false) compile small programs faster and large ones slower:
`region_compiler_options` picks them per region (`small_program_options`)."""


REDUCTIONS = frozenset(SHARED_REDUCTIONS) | {"reduce_and", "reduce_or", "reduce_xor"}

TREE_REDUCTION_ELEMENTS = 65536
"""A reduction over the trailing dims of more elements per result than this keeps XLA:CPU's
tree reduction rewriter on (see `needs_tree_reductions`)."""


def needs_tree_reductions(region: tpu.RegionOp) -> bool:
    """Whether XLA:CPU's tree reduction rewriter earns its compile time on `region`: a
    reduction over a leading dim longer than 32 (a column sum) with kept dims behind it, or
    over more than `TREE_REDUCTION_ELEMENTS` trailing elements.

    The rewriter splits every reduced dim longer than 32 into a reduce-window and a reduce, two
    kernels where there was one. A column reduction needs it (sum over axis 0 of 4096x512: 0.80
    ms with it, 6.9 without), a very long row too (1M elements: 0.12 / 0.19 ms), but the rows
    of a softmax, a LayerNorm or a classifier's max only pay for it: softmax over 1000 classes
    0.051 / 0.033 ms and 69 / 55 ms to compile, over 8x12x128x128 2.6 / 1.7 ms, LayerNorm
    128x768 0.22 / 0.20 ms (jaxlib 0.10.2, this 2-core machine, same outputs to 2e-7). Light
    SqueezeNet and ResNet50 compile 5 kernels fewer without it (29 -> 24, 62 -> 57)."""
    for op in region.body.walk():
        if not isinstance(op, tpu.PrimitiveOp) or op.PRIMITIVE not in REDUCTIONS:
            continue
        shape = op.operands[0].type.get_shape()
        axes = sorted(a % len(shape) for a in op.params()["axes"])
        if not axes:
            continue
        kept_behind = any(shape[d] != 1 and d not in axes for d in range(axes[0], len(shape)))
        if kept_behind and any(shape[a] > 32 for a in axes):
            return True
        if math.prod(shape[a] for a in axes) > TREE_REDUCTION_ELEMENTS:
            return True
    return False


LEGACY_EMITTER_LIBRARY_CALLS = 40
"""Regions with at most this many convolutions and dots compile with XLA:CPU's legacy loop
emitters (see `small_program_options`)."""


def small_program_options() -> dict[str, Any]:
    """XLA:CPU options for a small program: its older LLVM IR loop emitters, the program one
    LLVM module compiled in one part per core, instead of the MLIR fusion emitters.

    The fusion emitters pay a fixed cost per distinct kernel (an MLIR pipeline and an LLVM
    module each, ~15 ms of CPU even for a bias add here) and compile a repeated kernel once; the
    legacy emitters compile everything at once, cheaper per kernel but growing with the
    program (32 parts by default; one per core is cheapest here: SqueezeNet 2 / 4 / 8 parts
    0.21 / 0.21 / 0.25 s). XLA compile seconds, fusion emitters -> these options, and ms per
    call (jaxlib 0.10.2, this 2-core machine, 4 interleaved rounds): light SqueezeNet (26
    convolutions) 0.30 -> 0.18 and 7.15 / 7.21, AlexNet (8) 0.38 -> 0.24 and 18.1 / 18.1,
    ZFNet-512 (8) 0.25 -> 0.15 and 40.3 / 40.1, VGG19 (19) 0.25 -> 0.19 and 241 / 243; but
    ResNet50 (53) 0.51 -> 0.49, Inception v1 (57) 0.73 -> 0.71, Inception v2 (69) 0.69 -> 0.80,
    DenseNet-121 (120) 1.65 -> 1.65, ShuffleNet 1.75 -> 2.13: past a few dozen library calls
    the fusion emitters win, hence `LEGACY_EMITTER_LIBRARY_CALLS`."""
    return {
        "xla_cpu_use_fusion_emitters": False,
        "xla_cpu_parallel_codegen_split_count": max(_cores(), 2),
    }


def _cores() -> int:
    """The cores this process may run on (its affinity, which a container may narrow)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # no sched_getaffinity on this OS
        return os.cpu_count() or 1


def region_compiler_options(region: tpu.RegionOp, platform: str) -> dict[str, Any] | None:
    """`compiler_options` for `region`: on the CPU without the tree reduction rewriter where
    `needs_tree_reductions` says the region does not need it, and with
    `small_program_options` for a region of at most `LEGACY_EMITTER_LIBRARY_CALLS`
    convolutions and dots."""
    options = compiler_options(platform)
    if options is None:
        return None
    if not needs_tree_reductions(region):
        options = {**options, "xla_disable_hlo_passes": "tree_reduction_rewriter"}
    library_calls = sum(
        1
        for op in region.body.walk()
        if isinstance(op, tpu.PrimitiveOp) and op.PRIMITIVE in LIBRARY_CALLS
    )
    legacy = small_program_options()
    if (
        library_calls <= LEGACY_EMITTER_LIBRARY_CALLS
        and not _has_narrow_types(region)
        and _accepted(legacy)
    ):
        options = {**options, **legacy}
    return options


NARROW_BITS = 8
"""Floats of at most this many bits (float8, float4) and integers narrower than it (int4,
int2): types the legacy emitters convert wrongly (ONNX's float8 FNUZ casts gave a number for
NaN) or that the fusion emitters alone were checked with."""


def _has_narrow_types(region: tpu.RegionOp) -> bool:
    """Whether a value of the region has a float of at most 8 bits or an integer of fewer."""
    for op in region.body.walk():
        for value in (*op.results, *op.operands):
            element = getattr(value.type, "element_type", None)
            if element is None:
                continue
            bits = getattr(element, "bitwidth", None)
            if isinstance(element, IntegerType) and bits is not None and 1 < bits < NARROW_BITS:
                return True
            if not isinstance(element, IntegerType) and bits is not None and bits <= NARROW_BITS:
                return True
    return False


def _accepted(options: dict[str, Any]) -> bool:
    """Whether this jaxlib's XLA:CPU knows every option (probed once per option set)."""
    return _probe(tuple(sorted(options.items())))


@cache
def _probe(items: tuple[tuple[str, Any], ...]) -> bool:
    try:
        jax.jit(lambda x: x + 1, compiler_options=dict(items)).lower(np.float32(0)).compile()
    except Exception:  # an XLA without these options
        return False
    return True


def compiler_options(platform: str) -> dict[str, Any] | None:
    """`XLA_CPU_OPTIONS` on the CPU where this jaxlib knows them (probed once), else None."""
    if platform != "cpu" or not _accepted(XLA_CPU_OPTIONS):
        return None
    return XLA_CPU_OPTIONS


class CompiledRegion:
    """One tpu.region as a jitted function of its inputs (and of its weights, `constants`)."""

    def __init__(self, region: tpu.RegionOp, device: Any):
        block = region.body.block
        self.region, self.device = region, device
        # Constants of nested control-flow bodies are jit arguments (or literals) too.
        values = {
            op: to_numpy(op.value) for op in region.body.walk() if isinstance(op, tpu.ConstantOp)
        }
        literals = {op: v for op, v in values.items() if v.nbytes <= LITERAL_BYTES}
        weight_ops = [op for op in values if op not in literals]
        self.constants = [jax.device_put(values[op], device) for op in weight_ops]
        self.input_dtypes = [numpy_dtype(a.type.get_element_type()) for a in block.args]
        self.input_shapes = [tuple(a.type.get_shape()) for a in block.args]
        options = region_compiler_options(region, device.platform)
        # jit places the inputs itself (in its C++ dispatch; an array already on the device is
        # taken as it is): a jax.device_put per input costs more than a small model's run.
        self.sharding = jax.sharding.SingleDeviceSharding(device)
        self.options = options
        self._jitted = jax.jit(
            lambda constants, *args: interpret_block(
                block, {**literals, **dict(zip(weight_ops, constants, strict=True))}, args
            ),
            in_shardings=self.sharding,
            out_shardings=self.sharding,
            compiler_options=options,
        )

    def __call__(self, *args: Any) -> list[Any]:
        return self._jitted(self.constants, *map(self._input, args, self.input_dtypes))

    @property
    def function(self) -> Any:
        """The jitted function of (constants, *inputs), for jax.export
        (backends/program_cache.py)."""
        return self._jitted

    def _input(self, value: Any, dtype: np.dtype) -> Any:
        if type(value) is np.ndarray and value.dtype == dtype:  # the common case, first
            return value
        if isinstance(value, jax.Array):  # on another device: jit would refuse it
            return (
                value if value.sharding == self.sharding else jax.device_put(value, self.sharding)
            )
        return value if getattr(value, "dtype", None) == dtype else np.asarray(value, dtype=dtype)


class HostRegion:
    """A `tpu.region {device = "host"}` (tpu-outline-host-tail and -head): its ops run one by
    one in numpy on the host (`semantics/host_numpy.py`), nothing compiled."""

    def __init__(self, region: tpu.RegionOp):
        # lazy: loads 1 more module (semantics)
        from mlconv.semantics.host_numpy import host_function

        self.region = region
        block = region.body.block
        self._args = list(block.args)
        self._constants = {
            op.output: to_numpy(op.value) for op in block.ops if isinstance(op, tpu.ConstantOp)
        }
        self._steps: list[tuple[Callable[..., list[np.ndarray]], list[SSAValue], list]] = []
        self._returned: list[SSAValue] = []
        for op in block.ops:
            if isinstance(op, tpu.PrimitiveOp):
                self._steps.append((host_function(op), list(op.operands), list(op.results)))
            elif isinstance(op, tpu.YieldOp):
                self._returned = list(op.values)
            elif not isinstance(op, tpu.ConstantOp):
                raise BackendError.at(op, "cannot run in a host region")

    def __call__(self, *args: Any) -> list[np.ndarray]:
        env: dict[SSAValue, Any] = dict(self._constants)
        env.update(zip(self._args, map(np.asarray, args), strict=True))
        for fn, operands, results in self._steps:
            env.update(zip(results, fn(*[env[v] for v in operands]), strict=True))
        return [_own_array(env[v]) for v in self._returned]


def _own_array(value: np.ndarray) -> np.ndarray:
    """`value` as a compiled region's output is: a writable C-ordered array of its own (a
    numpy result often is already; a view, a broadcast or an input passed through is copied)."""
    flags = value.flags
    if flags.writeable and flags.c_contiguous and flags.owndata:
        return value
    return np.array(value)


class CompiledModule:
    """A compiled `@main`: call with numpy arrays (positionally or by input name); returns a
    list of numpy arrays, one per model output."""

    def __init__(self, module: ModuleOp, device: str | None = None):
        self.device = pick_device(device)
        compile_cache.ensure(self.device.platform)  # before anything compiles
        main = find_main(module)
        self.input_names = value_names(main.arg_attrs, len(main.body.block.args), "input")
        self.output_names = value_names(main.res_attrs, len(main.function_type.outputs), "output")
        self.input_specs = InputSpec.from_main(main)
        _check_custom_calls(module)
        self.regions: list[CompiledRegion] = []
        self._program = _compile_body(main.body.block, self.device, self.regions)

    def __call__(self, *args: Any, **named: Any) -> list[np.ndarray]:
        arrays = bind_inputs(self.input_specs, args, named)  # InputError: contradicts the model
        return [np.asarray(r) for r in self._program(*arrays)]

    def run_bound(self, arrays: Sequence[Any]) -> list[Any]:
        """The outputs (JAX or numpy arrays, unfinished) of inputs `bind_inputs` already
        checked against `input_specs`: a wrapper's call without checking them twice."""
        return self._program(*arrays)

    def single_region(self) -> CompiledRegion | None:
        """The region, where @main is one region taking @main's arguments and returning its
        results (nothing on the host); else None."""
        return self._program if isinstance(self._program, CompiledRegion) else None

    def on_device(self, *args: Any, **named: Any) -> list[jax.Array]:
        """The call with the outputs left on the device as JAX arrays, unfinished (JAX
        dispatches asynchronously), and JAX array inputs taken where they are: on a GPU or TPU
        this chains calls without copies through the host, and times the compiled program
        alone (`jax.block_until_ready` on the outputs)."""
        arrays = bind_inputs(self.input_specs, args, named)  # InputError: contradicts the model
        # A host region's outputs (tpu-outline-host-tail) are numpy arrays: placed as well.
        return [
            jax.device_put(r, self.device) if isinstance(r, np.ndarray) else r
            for r in self._program(*arrays)
        ]


def _check_custom_calls(module: ModuleOp) -> None:
    """Refuse, before anything compiles, a custom op whose host implementation nobody has
    registered: otherwise the first call would fail inside jax.pure_callback, with no location."""
    # lazy: loads 1 more module (custom_ops)
    from mlconv import custom_ops

    for op in module.walk():
        if isinstance(op, tpu.CustomCallOp):
            params = op.params()
            problem = custom_ops.missing_implementation(params.get("domain", ""), params["op_type"])
            if problem:
                raise BackendError.at(op, problem)


HOST_PRIMITIVES = frozenset({"reshape"})
"""Primitives @main may run on the host between tpu.regions (the boundary reshapes)."""


def _compile_body(
    block: Block, device: Any, regions: list[CompiledRegion]
) -> Callable[..., list[Any]]:
    """`@main`'s body: tpu.regions run jitted (each appended to `regions`); nothing else may
    sit outside them yet."""
    steps: list[tuple[Operation, Callable[..., list[Any]]]] = []
    returned: list[SSAValue] = []
    for op in block.ops:
        if isinstance(op, tpu.RegionOp) and op.on_host():
            steps.append((op, HostRegion(op)))
        elif isinstance(op, tpu.RegionOp):
            regions.append(CompiledRegion(op, device))
            steps.append((op, regions[-1]))
        elif isinstance(op, tpu.PrimitiveOp) and op.PRIMITIVE in HOST_PRIMITIVES:
            steps.append((op, op.bind))  # on the host, beside the regions (tpu-io-shapes)
        elif isinstance(op, tpu.BatchOp):  # one call is one run of its body (the batcher:
            steps.append(
                (op, _compile_body(op.body.block, device, regions))
            )  # converter/batcher.py)
        elif isinstance(op, func.ReturnOp | tpu.YieldOp):
            returned = list(op.operands)
        else:
            raise BackendError.at(op, "is outside a tpu.region; run the core-to-tpu pass first")

    if (
        len(steps) == 1
        and isinstance(steps[0][1], CompiledRegion)
        and list(steps[0][0].operands) == list(block.args)
        and returned == list(steps[0][0].results)
    ):
        return steps[0][1]  # @main is one region, its arguments and results: no bookkeeping

    def run(*args: Any) -> list[Any]:
        env: dict[SSAValue, Any] = dict(zip(block.args, args, strict=True))
        for op, compiled in steps:
            outputs = compiled(*[env[v] for v in op.operands])
            env.update(zip(op.results, outputs, strict=True))
        return [env[v] for v in returned]

    return run


def compile_module(module: ModuleOp, device: str | None = None) -> CompiledModule:
    """The module's `@main` (tpu dialect) as a callable on `device` (cpu, gpu, tpu)."""
    return CompiledModule(module, device)


def export_stablehlo(module: ModuleOp, out_path: str) -> None:
    """Write `@main` as StableHLO text (`jax.jit(...).lower(...).as_text()`), weights included,
    for XLA tools and runtimes outside Python. Lowers a copy of the module to tpu ops first
    when it is still at a framework or core level; inputs with dynamic dims are exported with
    symbolic dims (backends/symbolic.py, the path mlconv-convert takes), one module for every
    size."""
    # lazy: loads 14 more modules (dialects, passes, semantics)
    from mlconv.passes.pipelines import lower_to_tpu

    if any(not op.name.startswith(("tpu.", "func.", "builtin.")) for op in module.walk()):
        if has_dynamic_inputs(module):  # symbolic dims, as mlconv-convert exports them
            write_output(out_path, export_symbolic(module, lower_to_tpu).mlir_module())
            return
        module = lower_to_tpu(module.clone())
    main = find_main(module)
    regions = [op for op in main.body.block.ops if isinstance(op, tpu.RegionOp)]
    if len(regions) != 1:
        raise BackendError("StableHLO export needs @main to be exactly one tpu.region")
    block = regions[0].body.block
    constants = {
        op: to_numpy(op.value) for op in regions[0].body.walk() if isinstance(op, tpu.ConstantOp)
    }
    specs = [
        jax.ShapeDtypeStruct(tuple(a.type.get_shape()), numpy_dtype(a.type.get_element_type()))
        for a in block.args
    ]
    text = jax.jit(lambda *args: interpret_block(block, constants, args)).lower(*specs).as_text()
    write_output(out_path, text)

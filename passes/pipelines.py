"""Named pipelines, registered like passes: `mlconv-opt -p onnx-to-tpu{input-shapes=x:1,3,224,224}`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import jax
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from mlconv.dialects import make_context
from mlconv.errors import OptionError
from mlconv.passes import get_pass
from mlconv.passes.core_fold_constants import CoreFoldConstantsPass
from mlconv.passes.core_fuse import CoreFusePass
from mlconv.passes.core_infer_shapes import CoreInferShapesPass
from mlconv.passes.core_op_versions import CoreOpVersionsPass
from mlconv.passes.core_to_tpu import CoreToTpuPass
from mlconv.passes.tpu_conv_strategy import TpuConvStrategyPass
from mlconv.passes.tpu_fold_constants import TpuFoldConstantsPass
from mlconv.passes.tpu_sink_transposes import TpuSinkTransposesPass


def target_device(device: str | None) -> str:
    """`device` (cpu, gpu, tpu), or the kind of JAX's default device when None."""
    if device:
        return device

    backend = jax.default_backend()
    return "gpu" if backend in ("cuda", "rocm", "gpu") else backend


def target_passes(device: str) -> list[ModulePass]:
    """The tpu-level passes that shape the program for XLA on `device` (cpu, gpu, tpu)."""
    # lazy: loads 9 more modules (passes, semantics)
    from mlconv.passes.tpu_fold_channel_shuffle import TpuFoldChannelShufflePass
    from mlconv.passes.tpu_hoist_slices import TpuHoistSlicesPass
    from mlconv.passes.tpu_materialize_activations import TpuMaterializeActivationsPass
    from mlconv.passes.tpu_merge_epilogues import TpuMergeEpiloguesPass
    from mlconv.passes.tpu_outline_host_head import TpuOutlineHostHeadPass
    from mlconv.passes.tpu_outline_host_tail import TpuOutlineHostTailPass
    from mlconv.passes.tpu_pad_concats import TpuPadConcatsPass
    from mlconv.passes.tpu_window_strategy import TpuWindowStrategyPass

    return [
        TpuFoldConstantsPass(),
        TpuConvStrategyPass(device=device),
        TpuSinkTransposesPass(),
        TpuMergeEpiloguesPass(),
        TpuFoldChannelShufflePass(),
        TpuWindowStrategyPass(device=device),
        TpuHoistSlicesPass(),
        TpuPadConcatsPass(device=device),
        TpuFoldConstantsPass(),
        TpuMaterializeActivationsPass(device=device),
        TpuOutlineHostTailPass(device=device),
        TpuOutlineHostHeadPass(device=device),
    ]


@dataclass(frozen=True)
class CoreToTpuPipeline(ModulePass):
    """Partial inference with every shape made static, fusion, then placement on the TPU:
    core-infer-shapes{input-shapes}, core-fold-constants{static-shape=true}, core-fuse,
    core-to-tpu; with `device` (cpu, gpu, tpu) also the target passes for it: tpu-fold-constants,
    tpu-conv-strategy{device}, tpu-sink-transposes, tpu-merge-epilogues, tpu-fold-channel-shuffle,
    tpu-window-strategy{device}, tpu-hoist-slices, tpu-pad-concats{device}, tpu-fold-constants,
    tpu-materialize-activations{device}, tpu-outline-host-tail{device},
    tpu-outline-host-head{device}."""

    name = "core-to-tpu-pipeline"
    input_shapes: str = ""
    device: str = ""

    def passes(self) -> list[ModulePass]:
        return [CoreInferShapesPass(input_shapes=self.input_shapes), *self.after_inference()]

    def after_inference(self) -> list[ModulePass]:
        """The stages after core-infer-shapes, for callers that ran it themselves (to decide
        whether the module needs specializing) so it runs once."""
        stages: list[ModulePass] = [
            CoreFoldConstantsPass(static_shape=True),
            CoreFusePass(),
            CoreToTpuPass(),
        ]
        if self.device:
            stages += target_passes(self.device)
        return stages

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for stage in self.passes():
            stage.apply(ctx, op)


# Framework dialect -> its front phase, its lowering to core, and the core passes right after
# it (NHWC sources fold their weights' transposes and sink the layout transposes).
FRONTENDS: dict[str, tuple[tuple[str, ...], str, tuple[str, ...]]] = {
    "onnx": (("onnx-normalize", "onnx-decompose"), "onnx-to-core", ()),
    "tf": ((), "tf-to-core", ("core-fold-constants", "core-layout-nchw")),
    "tflite": ((), "tflite-to-core", ()),
}


def to_core_passes(dialect: str, allow_custom: bool = False) -> list[ModulePass]:
    """The passes taking framework `dialect` to core (`allow_custom`: ops nobody lowers
    become core.Custom)."""

    front, lowering, after = FRONTENDS[dialect]
    to_core = get_pass(lowering)
    if to_core is None:
        raise OptionError(f"no {lowering} lowering is available")
    return [
        *(get_pass(name)() for name in front),
        to_core(allow_custom=True) if allow_custom else to_core(),
        *(get_pass(name)() for name in after),
    ]


def run_passes(passes: list[ModulePass], module: ModuleOp, ctx: Context | None = None) -> None:
    ctx = ctx or make_context()
    for stage in passes:
        stage.apply(ctx, module)


@dataclass(frozen=True)
class _FrameworkToTpu(ModulePass):
    DIALECT: ClassVar[str] = ""
    input_shapes: str = ""

    def passes(self) -> list[ModulePass]:
        """The stages, for tools that run them one by one (--timing, --check-numerics)."""
        return [
            *to_core_passes(self.DIALECT),
            *CoreToTpuPipeline(input_shapes=self.input_shapes).passes(),
        ]

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        run_passes(self.passes(), op, ctx)


@dataclass(frozen=True)
class OnnxToTpuPipeline(_FrameworkToTpu):
    """An ONNX model all the way to tpu ops: the front phase (onnx-normalize, onnx-decompose),
    onnx-to-core, then core-to-tpu-pipeline."""

    name = "onnx-to-tpu"
    DIALECT: ClassVar[str] = "onnx"


@dataclass(frozen=True)
class TfToTpuPipeline(_FrameworkToTpu):
    """A TF SavedModel's graph all the way to tpu ops: tf-to-core, core-fold-constants,
    core-layout-nchw, then core-to-tpu-pipeline."""

    name = "tf-to-tpu"
    DIALECT: ClassVar[str] = "tf"


@dataclass(frozen=True)
class TfliteToTpuPipeline(_FrameworkToTpu):
    """A .tflite model all the way to tpu ops: tflite-to-core, then core-to-tpu-pipeline."""

    name = "tflite-to-tpu"
    DIALECT: ClassVar[str] = "tflite"


@dataclass(frozen=True)
class CoreToTflitePipeline(ModulePass):
    """Core ops to TFLite builtins at the versions they need: core-infer-shapes,
    core-fold-constants, core-to-tflite, tflite-op-versions (what `export_tflite` runs)."""

    name = "core-to-tflite-pipeline"

    def passes(self) -> list[ModulePass]:
        # lazy: loads 11 more modules (dialects, passes)
        from mlconv.passes.core_to_tflite import CoreToTflitePass
        from mlconv.passes.tflite_op_versions import TfliteOpVersionsPass

        return [
            CoreInferShapesPass(),
            CoreFoldConstantsPass(),
            CoreToTflitePass(),
            TfliteOpVersionsPass(),
        ]

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        run_passes(self.passes(), op, ctx)


@dataclass(frozen=True)
class CoreToOpenvinoPipeline(ModulePass):
    """Core ops ready for the OpenVINO IR writer: core-infer-shapes, core-fold-constants,
    core-fuse, core-op-versions{target-opset} (what `export_openvino` runs before writing)."""

    name = "core-to-openvino"
    target_opset: int = 0

    def passes(self) -> list[ModulePass]:

        # As ovc runs its own: types everywhere, constant subgraphs folded (a bias's Unsqueeze),
        # OpenVINO's fused ops (Swish, Gelu, MVN, ...), each op at the lowest opset it needs.
        return [
            CoreInferShapesPass(),
            CoreFoldConstantsPass(),
            CoreFusePass(),
            CoreOpVersionsPass(target_opset=self.target_opset),
        ]

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        run_passes(self.passes(), op, ctx)


def framework_dialects(module: ModuleOp) -> list[str]:
    found = {op.name.split(".", 1)[0] for op in module.walk()}
    return [dialect for dialect in FRONTENDS if dialect in found]


def lower_to_core(module: ModuleOp, allow_custom: bool = False) -> ModuleOp:
    """Lower every framework dialect of the module to core, in place, by the passes
    `passes.pipelines.to_core_passes` names for it (`allow_custom`: an op without a lowering
    becomes core.Custom, run by its registered host implementation)."""
    for dialect in framework_dialects(module):
        run_passes(to_core_passes(dialect, allow_custom), module)
    return module


def lower_to_tpu(module: ModuleOp, input_shapes: str = "") -> ModuleOp:
    """Lower a module of any framework dialect (or core) to tpu ops, in place."""

    lower_to_core(module)
    CoreToTpuPipeline(input_shapes=input_shapes).apply(make_context(), module)
    return module

"""Named pipelines, registered like passes: `mlconv-opt -p onnx-to-tpu{input-shapes=x:1,3,224,224}`."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from mlconv.passes.core_fold_constants import CoreFoldConstantsPass
from mlconv.passes.core_fuse import CoreFusePass
from mlconv.passes.core_infer_shapes import CoreInferShapesPass
from mlconv.passes.core_to_tpu import CoreToTpuPass


def target_device(device: str | None) -> str:
    """`device` (cpu, gpu, tpu), or the kind of JAX's default device when None."""
    if device:
        return device
    import jax

    backend = jax.default_backend()
    return "gpu" if backend in ("cuda", "rocm", "gpu") else backend


def target_passes(device: str) -> list[ModulePass]:
    """The tpu-level passes that shape the program for XLA on `device` (cpu, gpu, tpu)."""
    from mlconv.passes.tpu_conv_strategy import TpuConvStrategyPass
    from mlconv.passes.tpu_fold_constants import TpuFoldConstantsPass
    from mlconv.passes.tpu_sink_transposes import TpuSinkTransposesPass

    return [
        TpuFoldConstantsPass(),
        TpuConvStrategyPass(device=device),
        TpuSinkTransposesPass(),
        TpuFoldConstantsPass(),
    ]


@dataclass(frozen=True)
class CoreToTpuPipeline(ModulePass):
    """Partial inference with every shape made static, fusion, then placement on the TPU:
    core-infer-shapes{input-shapes}, core-fold-constants{static-shape=true}, core-fuse,
    core-to-tpu; with `device` (cpu, gpu, tpu) also the target passes for it: tpu-fold-constants,
    tpu-conv-strategy{device}, tpu-sink-transposes, tpu-fold-constants."""

    name = "core-to-tpu-pipeline"
    input_shapes: str = ""
    device: str = ""

    def passes(self) -> list[ModulePass]:
        stages: list[ModulePass] = [
            CoreInferShapesPass(input_shapes=self.input_shapes),
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


@dataclass(frozen=True)
class OnnxToTpuPipeline(ModulePass):
    """An ONNX model all the way to tpu ops: the front phase (onnx-normalize, onnx-decompose),
    onnx-to-core, then core-to-tpu-pipeline."""

    name = "onnx-to-tpu"
    input_shapes: str = ""

    def passes(self) -> list[ModulePass]:
        """The stages, for tools that run them one by one (--timing, --check-numerics)."""
        from mlconv.passes.onnx_decompose import OnnxDecomposePass
        from mlconv.passes.onnx_normalize import OnnxNormalizePass
        from mlconv.passes.onnx_to_core import OnnxToCorePass

        return [
            OnnxNormalizePass(),
            OnnxDecomposePass(),
            OnnxToCorePass(),
            *CoreToTpuPipeline(input_shapes=self.input_shapes).passes(),
        ]

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for stage in self.passes():
            stage.apply(ctx, op)

"""Pass and pipeline registry: name -> lazy factory returning the pass class.

Named pipelines are passes too (`onnx-to-tpu`), so `--pass-pipeline='builtin.module(onnx-to-tpu)'`
works like any pass.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from xdsl.passes import ModulePass

import mlconv.semantics  # noqa: F401 - passes run semantics and jax on int64 (jax_enable_x64)


def _lazy(module: str, attribute: str) -> Callable[[], type[ModulePass]]:
    return lambda: getattr(importlib.import_module(module), attribute)


def _ours(module: str, attribute: str) -> Callable[[], type[ModulePass]]:
    return _lazy(f"mlconv.passes.{module}", attribute)


PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    # upstream xDSL
    "canonicalize": _lazy("xdsl.transforms.canonicalize", "CanonicalizePass"),
    "cse": _lazy(
        "xdsl.transforms.common_subexpression_elimination", "CommonSubexpressionElimination"
    ),
    "dce": _lazy("xdsl.transforms.dead_code_elimination", "DeadCodeElimination"),
    # onnx
    "onnx-to-core": _ours("onnx_to_core", "OnnxToCorePass"),
    "onnx-normalize": _ours("onnx_normalize", "OnnxNormalizePass"),
    "onnx-decompose": _ours("onnx_decompose", "OnnxDecomposePass"),
    # core
    "core-infer-shapes": _ours("core_infer_shapes", "CoreInferShapesPass"),
    "core-fold-constants": _ours("core_fold_constants", "CoreFoldConstantsPass"),
    "core-to-tpu": _ours("core_to_tpu", "CoreToTpuPass"),
    "core-fuse": _ours("core_fuse", "CoreFusePass"),
    "core-quantize": _ours("core_quantize", "CoreQuantizePass"),
    "core-smooth-activations": _ours("core_smooth_activations", "CoreSmoothActivationsPass"),
    "core-op-versions": _ours("core_op_versions", "CoreOpVersionsPass"),
    "tpu-bf16": _ours("tpu_bf16", "TpuBf16Pass"),
    # tpu
    "tpu-fold-constants": _ours("tpu_fold_constants", "TpuFoldConstantsPass"),
    "tpu-conv-strategy": _ours("tpu_conv_strategy", "TpuConvStrategyPass"),
    "tpu-sink-transposes": _ours("tpu_sink_transposes", "TpuSinkTransposesPass"),
    "tpu-merge-epilogues": _ours("tpu_merge_epilogues", "TpuMergeEpiloguesPass"),
    "tpu-fold-channel-shuffle": _ours("tpu_fold_channel_shuffle", "TpuFoldChannelShufflePass"),
    "tpu-hoist-slices": _ours("tpu_hoist_slices", "TpuHoistSlicesPass"),
    "tpu-window-strategy": _ours("tpu_window_strategy", "TpuWindowStrategyPass"),
    "tpu-pad-concats": _ours("tpu_pad_concats", "TpuPadConcatsPass"),
    "tpu-materialize-activations": _ours(
        "tpu_materialize_activations", "TpuMaterializeActivationsPass"
    ),
    "tpu-outline-host-tail": _ours("tpu_outline_host_tail", "TpuOutlineHostTailPass"),
    "tpu-outline-host-head": _ours("tpu_outline_host_head", "TpuOutlineHostHeadPass"),
    "tpu-batch": _ours("tpu_batch", "TpuBatchPass"),
    "tpu-quantize": _ours("tpu_quantize", "TpuQuantizePass"),
    "tpu-io-shapes": _ours("tpu_io_shapes", "TpuIoShapesPass"),
    "tpu-report": _ours("tpu_report", "TpuReportPass"),
    # tf
    "tf-to-core": _ours("tf_to_core", "TfToCorePass"),
    "core-layout-nchw": _ours("core_layout_nchw", "CoreLayoutNchwPass"),
    # tflite
    "tflite-op-versions": _ours("tflite_op_versions", "TfliteOpVersionsPass"),
    "tflite-check-runtime": _ours("tflite_check_runtime", "TfliteCheckRuntimePass"),
    "tflite-to-core": _ours("tflite_to_core", "TfliteToCorePass"),
    "core-to-tflite": _ours("core_to_tflite", "CoreToTflitePass"),
}

PIPELINES: dict[str, Callable[[], type[ModulePass]]] = {
    "onnx-to-tpu": _ours("pipelines", "OnnxToTpuPipeline"),
    "tf-to-tpu": _ours("pipelines", "TfToTpuPipeline"),
    "tflite-to-tpu": _ours("pipelines", "TfliteToTpuPipeline"),
    "core-to-tpu-pipeline": _ours("pipelines", "CoreToTpuPipeline"),
    "core-to-tflite-pipeline": _ours("pipelines", "CoreToTflitePipeline"),
    "core-to-openvino": _ours("pipelines", "CoreToOpenvinoPipeline"),
}


def get_pass(name: str) -> type[ModulePass] | None:
    """The pass or pipeline `name`, built-in or added by a plugin (`mlconv.plugins`)."""
    # the plugin registry imports this package back (the one documented cycle)
    from mlconv import plugins

    plugins.load()
    factory = PASSES.get(name) or PIPELINES.get(name)
    return factory() if factory else None

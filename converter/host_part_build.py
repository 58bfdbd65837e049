"""mlconv-convert's host part: each signature of a SavedModel source converted for the host.

`convert_host_part(model, placement, arity, bf16, phases)` splits each signature into host
stages around its TPU calls (converter/host_part_split.py) and lowers them to tpu ops for the
host's CPU (tf-to-core, core-to-tpu{cpu}; with `bf16`, bfloat16 scope ALL, tpu-bf16 as well);
a signature holding ops mlconv cannot lower keeps its host part in TensorFlow
(converter/host_part_graph.py). The result is the manifest's `signatures` and the stages that
converter/artifact.save_artifact writes to OUTDIR/host (converter/host_part.py runs them).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np


def signature_specs(model: Path, signature: str) -> tuple[list[dict], list[str]]:
    """A signature's inputs (name, dtype, shape; strings: dtype None) and output names, from
    its SignatureDef, both sorted by name as TensorFlow flattens them."""
    # TensorFlow: optional (mlconv[tf]) and seconds to load; only this path needs it
    import tensorflow as tf

    # lazy: loads xDSL, which this module does not
    from mlconv.frontends.tf_importer import read_saved_model

    definition = read_saved_model(model).meta_graphs[0].signature_def[signature]
    inputs = []
    for name in sorted(definition.inputs):
        info = definition.inputs[name]
        dtype = tf.dtypes.as_dtype(info.dtype)
        shape = info.tensor_shape
        inputs.append(
            {
                "name": name,
                "dtype": None if dtype == tf.string else np.dtype(dtype.as_numpy_dtype).name,
                "shape": None if shape.unknown_rank else [d.size for d in shape.dim],
            }
        )
    return inputs, sorted(definition.outputs)


def convert_host_part(
    model: Path,
    placement: dict[str, str],
    arity: dict[str, tuple[int, int]],
    bf16: Any,
    phases: Any,
) -> tuple[dict[str, Any], list[tuple[str, Any]]]:
    """The host part of each signature of a SavedModel (converter/host_part_split.py): its host
    stages lowered to tpu ops for the host's CPU (with `bf16`, a TpuBf16Pass for bfloat16 scope
    ALL, in bfloat16), or, when an op has no lowering, the signature kept for TensorFlow with
    the reason and its host part as a frozen GraphDef around the TPU calls (else the whole
    signature from OUTDIR/saved_model); returns the manifest's `signatures` and the stages
    (converter/host_part.py)."""
    # lazy: loads JAX, xDSL and turns on jax_enable_x64, which this module does not
    from mlconv.converter.host_part_graph import host_graph, host_only_ops
    from mlconv.converter.host_part_split import signatures, split_signature
    from mlconv.dialects import make_context
    from mlconv.passes.core_infer_shapes import CoreInferShapesPass
    from mlconv.passes.pipelines import CoreToTpuPipeline, lower_to_core, run_passes

    entries: dict[str, Any] = {}
    stages: list[tuple[str, Any]] = []
    for signature in signatures(model):
        inputs, outputs = signature_specs(model, signature)

        def lower(signature: str = signature) -> tuple[Any, list[tuple[str, Any]]]:
            plan = split_signature(model, signature, placement, arity)
            lowered = []
            for stage in plan.stages:
                lower_to_core(stage.module)
                CoreInferShapesPass().apply(make_context(), stage.module)
                run_passes(CoreToTpuPipeline(device="cpu").after_inference(), stage.module)
                if bf16 is not None:
                    bf16.apply(make_context(), stage.module)
                lowered.append((stage.name, stage.module))
            return plan, lowered

        try:
            plan, lowered = phases.run(f"host part {signature} (tf-to-core, core-to-tpu)", lower)
        except Exception as error:  # noqa: BLE001 - any op mlconv cannot run stays TensorFlow
            reason = str(error).splitlines()[0] if str(error) else type(error).__name__
            host_only = host_only_ops(model, signature, placement)
            if host_only:
                reason = f"host-only ops {', '.join(host_only)}: {reason}"
            entries[signature] = {
                "runtime": "tensorflow",
                "saved_model": "saved_model",
                "reason": reason,
                "inputs": inputs,
                "outputs": [{"name": name} for name in outputs],
            }
            try:  # the host part as a frozen GraphDef around the TPU calls
                graph, recipe = host_graph(model, signature, placement, arity)
            except Exception as graph_error:  # noqa: BLE001 - then the whole signature
                entries[signature]["graph_error"] = str(graph_error).splitlines()[0]
                continue
            name = f"{signature}.host"
            entries[signature].update(graph=f"{name}.pb", **recipe)
            stages.append((name, graph))
            continue
        by_name = {entry["name"]: entry for entry in inputs}
        entries[signature] = {
            "runtime": "jax",
            "bfloat16": bf16 is not None,
            "inputs": [
                by_name.get(n, {"name": n, "dtype": None, "shape": None}) for n in plan.input_names
            ],
            "outputs": plan.outputs,
            "steps": plan.steps,
        }
        stages += lowered
    return entries, stages

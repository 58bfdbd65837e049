"""The host part of an artifact: each signature of a SavedModel source, run whole.

    loaded = mlconv.load("OUTDIR")
    loaded.signatures["serving_default"](x=x)      # {"y": array, ...}, as TensorFlow's

The manifest's `signatures` maps each signature name to how it runs:

- `"runtime": "jax"`: its host stages (converter/host_part_split.py: what the signature computes
  around its TPU calls, converted with tf-to-core and core-to-tpu) are serialized
  `jax.export` modules in OUTDIR/host/<stage>.jaxexport, run on the host's CPU; `steps` lists
  the host stages and the TPU calls in order (a TPU call runs the artifact's function on the
  artifact's device). No TensorFlow is imported.
- `"runtime": "tensorflow"`: the host part holds ops only TensorFlow runs (`reason` says which).
  It is kept as the signature's frozen GraphDef without the TPU functions' bodies
  (OUTDIR/host/<signature>.host.pb, frontends/tf_host_graph.host_graph): TensorFlow computes
  each TPU call's inputs, the call runs the artifact's function (its StableHLO, through
  jax), and its results are fed back as the Placeholders that replaced the call's outputs.
  Where even that split fails (`graph_error`), the signature runs whole from
  OUTDIR/saved_model, its TPU functions there the same StableHLO as XlaCallModule ops.
  Either way TensorFlow executes a graph the artifact holds, so such a signature runs only
  when the caller allows it (`mlconv.load(OUTDIR, allow_tensorflow=True)`,
  `mlconv-run OUTDIR --allow-tensorflow`), and only from the artifact's own files, each
  checked against its SHA-256 (the manifest cannot name another SavedModel or GraphDef).

An artifact without `signatures` (ONNX, TFLite: placed whole) has one, `serving_default`,
running the whole model. `"bfloat16": true` on a signature (bfloat16 scope ALL) records that
its host stages compute float32 as bfloat16, float32 kept at their boundaries.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import numpy as np

from mlconv.backends.export_check import deserialize_checked, export_function
from mlconv.backends.symbolic import Symbols, symbolic_scope
from mlconv.converter.artifact_manifest import ArtifactFiles
from mlconv.dense import numpy_dtype, to_numpy
from mlconv.errors import BackendError
from mlconv.signature.inputs import InputSpec, bind_inputs

SERVING = "serving_default"


def export_main(module: Any) -> Any:
    """A tpu-level module's `@main` (tpu.regions and func.return) as a `jax.export.Exported`
    with its constants inside, lowered for every platform the artifact serves."""
    from xdsl.dialects import func

    # lazy: loads 8 more modules (dialects, semantics, signature)
    from mlconv.dialects import tpu
    from mlconv.semantics.tpu_blocks import interpret_block
    from mlconv.signature.module_io import find_main

    main = find_main(module)
    block = main.body.block
    constants = {op: to_numpy(op.value) for op in main.walk() if isinstance(op, tpu.ConstantOp)}
    shapes = [tuple(a.type.get_shape()) for a in block.args]
    if any(d < 0 for shape in shapes for d in shape):  # a stage that passes values through
        symbols = Symbols.of(shapes, [])
        dims = symbolic_scope(symbols)
        shapes = [
            tuple(dims[s] if s is not None else d for s, d in zip(row, shape, strict=True))
            for row, shape in zip(symbols.inputs, shapes, strict=True)
        ]
    specs = [
        jax.ShapeDtypeStruct(shape, numpy_dtype(a.type.get_element_type()))
        for shape, a in zip(shapes, block.args, strict=True)
    ]

    def body(*args: Any) -> tuple[Any, ...]:
        env = dict(zip(block.args, args, strict=True))
        for op in block.ops:
            if isinstance(op, tpu.RegionOp):
                outputs = interpret_block(op.body.block, constants, [env[v] for v in op.inputs])
                env.update(zip(op.results, outputs, strict=True))
            elif isinstance(op, func.ReturnOp):
                return tuple(env[v] for v in op.operands)
            else:
                raise BackendError.at(op, "is outside a tpu.region in a host stage")
        raise BackendError("host stage without func.return")

    return export_function(body, specs)


def _specs(entries: Sequence[Mapping[str, Any]]) -> list[InputSpec]:
    return [
        InputSpec(
            e["name"],
            None if e["dtype"] is None else np.dtype(e["dtype"]),
            None if e["shape"] is None else tuple(e["shape"]),
        )
        for e in entries
    ]


class Signature:
    """One signature of the artifact as a callable: inputs by name (or positionally, in
    `input_names` order), a dict of outputs by name, as TensorFlow's signatures."""

    def __init__(
        self,
        artifact: Any,
        files: ArtifactFiles,
        name: str,
        entry: Mapping[str, Any],
        allow_tensorflow: bool = False,
    ):
        self.artifact = artifact
        self.files = files
        self.folder = files.folder
        self.allow_tensorflow = allow_tensorflow
        self.name = name
        self.entry = entry
        self.runtime = entry["runtime"]
        self.input_names = [e["name"] for e in entry["inputs"]]
        self.output_names = [e["name"] for e in entry["outputs"]]
        self.input_specs = _specs(entry["inputs"])
        self._stages: dict[str, Any] = {}
        self._tf_function: Any = None
        if self.runtime == "jax":
            for step in entry["steps"]:
                if "host" in step:
                    relative = f"host/{step['host']}.jaxexport"
                    self._stages[step["host"]] = deserialize_checked(
                        files.read(relative), str(self.folder / relative)
                    )
        elif self.runtime != "tensorflow":
            raise BackendError(
                f"{self.folder}: signature '{name}': unknown runtime {self.runtime!r}"
            )

    def __call__(self, *args: Any, **named: Any) -> dict[str, np.ndarray]:
        arrays = bind_inputs(self.input_specs, args, named)
        if self.runtime == "tensorflow":
            return self._run_tensorflow(arrays)

        host = jax.devices("cpu")[0]
        results: list[Sequence[Any]] = []

        def fetch(ref: Mapping[str, int]) -> Any:
            if "input" in ref:
                return arrays[ref["input"]]
            return results[ref["step"]][ref["output"]]

        for step in self.entry["steps"]:
            inputs = [fetch(ref) for ref in step["inputs"]]
            if "host" in step:
                with jax.default_device(host):
                    results.append(self._stages[step["host"]].call(*inputs))
            else:
                results.append(self.artifact.call_function(step["call"], inputs))
        return {out["name"]: np.asarray(fetch(out["value"])) for out in self.entry["outputs"]}

    def _run_tensorflow(self, arrays: list[np.ndarray]) -> dict[str, np.ndarray]:
        """The signature's host part in TensorFlow: from its frozen GraphDef, each TPU call's
        inputs computed by TensorFlow, the call run by mlconv's TPU function (StableHLO), its
        results fed back; else (no GraphDef) the whole signature from OUTDIR/saved_model."""
        if not self.allow_tensorflow:
            raise BackendError(
                f"{self.folder}: signature '{self.name}' runs its host part in TensorFlow "
                f"({self.entry.get('reason', 'host-only ops')}), which executes the artifact's "
                "own TensorFlow graph: allow it with mlconv.load(..., allow_tensorflow=True) "
                "or mlconv-run --allow-tensorflow"
            )
        if "graph" not in self.entry:
            if self._tf_function is None:
                folder = self.files.check_tree("saved_model")  # the artifact's own, unchanged
                tf = self._tensorflow()
                loaded = tf.saved_model.load(str(folder))
                self._tf_function = (loaded, loaded.signatures[self.name])
            outputs = self._tf_function[1](
                **{n: tf.constant(a) for n, a in zip(self.input_names, arrays, strict=True)}
            )
            return {name: outputs[name].numpy() for name in self.output_names}
        recipe = self.entry
        tf = self._tensorflow()
        if self._tf_function is None:
            graph_def = tf.compat.v1.GraphDef()
            graph_def.ParseFromString(self.files.read(f"host/{recipe['graph']}"))
            wrapped = tf.compat.v1.wrap_function(
                lambda: tf.graph_util.import_graph_def(graph_def, name=""), []
            )
            tensor = wrapped.graph.get_tensor_by_name
            feeds = [recipe["input_tensors"][n] for n in self.input_names]
            pruned = []
            for call in recipe["calls"]:  # each call's inputs from what is known before it
                pruned.append(
                    wrapped.prune([tensor(t) for t in feeds], [tensor(t) for t in call["inputs"]])
                )
                feeds = feeds + call["outputs"]
            fetches = [tensor(recipe["output_tensors"][n]) for n in self.output_names]
            pruned.append(wrapped.prune([tensor(t) for t in feeds], fetches))
            self._tf_function = (wrapped, pruned)
        pruned = self._tf_function[1]
        known = [tf.constant(a) for a in arrays]
        for call, function in zip(recipe["calls"], pruned, strict=False):
            inputs = [np.asarray(v) for v in function(*known)]
            results = self.artifact.call_function(call["call"], inputs)
            known += [tf.constant(np.asarray(r)) for r in results]
        outputs = pruned[-1](*known)
        return {n: np.asarray(v) for n, v in zip(self.output_names, outputs, strict=True)}

    def _tensorflow(self) -> Any:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        try:
            # TensorFlow: optional (mlconv[tf]) and seconds to load; only this path needs it
            import tensorflow as tf
        except ImportError:
            raise BackendError(
                f"{self.folder}: signature '{self.name}' runs with TensorFlow "
                f"({self.entry.get('reason', 'host-only ops')}); TensorFlow is not installed"
            ) from None
        return tf


def whole_model_signature(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """An ONNX or TFLite artifact's one signature: the whole model, one TPU call."""
    count = len(manifest["inputs"])
    return {
        "runtime": "jax",
        "inputs": manifest["inputs"],
        "outputs": [
            {"name": out["name"], "value": {"step": 0, "output": k}}
            for k, out in enumerate(manifest["outputs"])
        ],
        "steps": [{"call": None, "inputs": [{"input": i} for i in range(count)]}],
    }


class BatchedCalls:
    """A batching artifact's TPU calls: a single function runs through the batching model
    (any number of rows, as its SavedModel signature takes them); several, one by one."""

    def __init__(self, model: Any, loaded: Any):
        self.model = model
        self.loaded = loaded
        self.manifest = loaded.manifest

    def call_function(self, name: str | None, args: Sequence[Any]) -> list[np.ndarray]:
        if name is None or len(self.manifest["functions"]) == 1:
            return self.model(*args)
        return self.loaded.call_function(name, args)


def load_signatures(
    artifact: Any, files: ArtifactFiles, allow_tensorflow: bool = False
) -> dict[str, Signature]:
    """Each signature of the artifact; `artifact` runs the TPU calls (`call_function`)."""
    recorded = artifact.manifest.get("signatures") or {
        SERVING: whole_model_signature(artifact.manifest)
    }
    return {
        name: Signature(artifact, files, name, entry, allow_tensorflow)
        for name, entry in recorded.items()
    }

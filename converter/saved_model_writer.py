"""The converted model as a TensorFlow SavedModel (`OUTDIR/saved_model`), as seed 003's converter
writes it: the TPU functions embedded as StableHLO through `jax2tf` native serialization (one
`XlaCallModule` op each, lowered for cpu, cuda and tpu), so that the seed's serving code runs it:

    model = tf.saved_model.load("OUTDIR/saved_model")
    results = model.signatures["serving_default"](**inputs)

From a SavedModel source, the output is the source with the body of every placed concrete
function replaced, in the FunctionDef library of `saved_model.pb`, by its XlaCallModule: the
function keeps its name, its arguments (captured variables stay as unused arguments), its
outputs, its callers, the signatures, signature names and function aliases. What the
signatures compute around the TPU functions (the host part) stays TensorFlow ops and runs on
the host; the variables and assets are copied. A placed function that batch_options batch
(tpu-batch: the default batching, or the function its `experimental` block names) becomes
TensorFlow's own `BatchFunction` op with the options' sizes, timeout, allowed batch sizes and
queue bound around the XlaCallModule of its body exported for any number of rows; its
function library entries are added to the SavedModel's, so concurrent callers of any
signature that reaches the function are batched together. From an ONNX or TFLite model (placed whole),
the output is a new SavedModel whose `serving_default` signature takes the model's inputs by
name and returns its outputs by name.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mlconv.backends.export_check import PLATFORMS
from mlconv.errors import BackendError

SERVING = "serving_default"


def _tensorflow():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    # TensorFlow: optional (mlconv[tf]) and seconds to load; only this path needs it
    import tensorflow as tf

    return tf


def _as_tf(exported: Any, name: str):
    """A concrete tf.function computing `exported` through one XlaCallModule op."""
    tf = _tensorflow()
    from jax.experimental import jax2tf  # loads TensorFlow: only when writing

    # A function batched over any number of rows (tpu-batch) has a symbolic 0th dimension.
    polymorphic = [f"({', '.join(str(d) for d in a.shape)},)" for a in exported.in_avals]
    convert = jax2tf.convert(
        exported.call,
        polymorphic_shapes=polymorphic,
        native_serialization_platforms=PLATFORMS,
        with_gradient=False,
    )
    specs = [
        tf.TensorSpec(
            [d if isinstance(d, int) else None for d in a.shape],
            tf.dtypes.as_dtype(a.dtype),
            name=f"arg{i}",
        )
        for i, a in enumerate(exported.in_avals)
    ]
    function = tf.function(lambda *args: convert(*args), input_signature=specs, autograph=False)
    return function.get_concrete_function()


def _as_batched_tf(batch: Mapping[str, Any], exported: Any):
    """A concrete tf.function holding one BatchFunction op (converter/batcher.py) with the batch
    op's options around the XlaCallModule of `exported` (the body for any number of rows)."""
    # lazy: loads numpy, xDSL, which this module does not
    from mlconv.converter.batcher import tf_batch_function

    tf = _tensorflow()
    batched = tf_batch_function(dict(batch), exported)
    specs = [
        tf.TensorSpec([None, *a.shape[1:]], tf.dtypes.as_dtype(a.dtype), name=f"arg{i}")
        for i, a in enumerate(exported.in_avals)
    ]
    function = tf.function(lambda *args: batched(*args), input_signature=specs, autograph=False)
    return function.get_concrete_function()


def _replace_body(
    function_def: Any,
    concrete: Any,
    manifest: Mapping[str, Any],
    name: str,
    batch: Mapping[str, Any] | None = None,
    library: Any = None,
    bound: int = 0,
) -> None:
    """Make `function_def` compute `concrete`'s XlaCallModule on its arguments but the `bound`
    last (the captures the SavedModel binds: variables, a tf.Module's tf.constant, which the
    importer froze) and any resource,
    with the host-side reshapes the manifest's references record (tpu-io-shapes) around it;
    with `batch` (its manifest entry), `concrete`'s BatchFunction instead, the functions it
    calls added to `library` (the SavedModel's FunctionDefLibrary)."""
    # TensorFlow: optional (mlconv[tf]) and seconds to load; only this path needs it
    from tensorflow.core.framework import node_def_pb2, types_pb2

    kind = "XlaCallModule" if batch is None else "BatchFunction"
    graph = concrete.graph.as_graph_def()
    call = next((n for n in graph.node if n.op == kind), None)
    if call is None:
        raise BackendError(f"jax2tf gave no {kind} for {function_def.signature.name}")
    if batch is not None:
        if call.attr["Tcaptured"].list.type:
            raise BackendError(f"{function_def.signature.name}: the batched body captures tensors")
        present = {f.signature.name: f for f in library.function}
        for added in graph.library.function:
            if added.signature.name not in present:
                library.function.append(added)
            elif present[added.signature.name] != added:
                raise BackendError(
                    f"{function_def.signature.name}: the batched body's function "
                    f"{added.signature.name} has the name of another function of the SavedModel"
                )
    signature = function_def.signature
    called = signature.input_arg[: len(signature.input_arg) - bound]
    arguments = [a.name for a in called if a.type != types_pb2.DT_RESOURCE]
    # Several functions share @main's inputs and outputs, each named `<function>.<name>`.
    entry = next(e for e in manifest["functions"] if e["name"] == name)
    prefix = f"{name}." if len(manifest["functions"]) > 1 else ""
    mine = [i for i, e in enumerate(manifest["inputs"]) if e["name"].startswith(prefix)]
    local = {index: position for position, index in enumerate(mine)}
    outputs = [o for o in manifest["outputs"] if o["name"].startswith(prefix)]
    if len(arguments) != len(mine) or len(signature.output_arg) != len(outputs):
        raise BackendError(
            f"{signature.name}: {len(arguments)} inputs and {len(signature.output_arg)} outputs "
            f"in the SavedModel, {len(mine)} and {len(outputs)} in the converted function"
        )
    nodes = []

    def reshape(tensor: str, shape: Sequence[int], dtype: Any) -> str:
        index = len(nodes)
        const = node_def_pb2.NodeDef(name=f"io_shape_{index}", op="Const")
        const.attr["dtype"].type = types_pb2.DT_INT64
        const.attr["value"].tensor.dtype = types_pb2.DT_INT64
        const.attr["value"].tensor.tensor_shape.dim.add().size = len(shape)
        const.attr["value"].tensor.int64_val.extend(shape)
        node = node_def_pb2.NodeDef(
            name=f"io_reshape_{index}", op="Reshape", input=[tensor, f"{const.name}:output:0"]
        )
        node.attr["T"].type = dtype
        node.attr["Tshape"].type = types_pb2.DT_INT64
        nodes.extend([const, node])
        return f"{node.name}:output:0"

    def tensor(ref: Mapping[str, Any], dtype: Any) -> str:
        if "input" in ref:
            return arguments[local[ref["input"]]]
        if "reshape" in ref:
            return reshape(tensor(ref["reshape"], dtype), ref["shape"], dtype)
        return f"tpu_call:output:{ref['output']}"

    node = type(call)()
    node.CopyFrom(call)
    node.name = "tpu_call"
    del node.input[:]
    node.input.extend(
        tensor(ref, dtype)
        for ref, dtype in zip((batch or entry)["inputs"], call.attr["Tin"].list.type, strict=True)
    )
    if batch is not None:  # one batch queue per function, whatever calls it
        node.attr["shared_name"].s = f"mlconv_{batch['name']}_{name}".encode()
        rows = {ref["output"]: j for j, ref in enumerate(batch["outputs"]) if "function" in ref}
        returned_name = {
            f"tpu_call:output:{i}": f"tpu_call:out_tensors:{j}" for i, j in rows.items()
        }
    returned = [
        tensor(output["value"], arg.type)
        for output, arg in zip(outputs, signature.output_arg, strict=True)
    ]
    if batch is not None:
        returned = [returned_name.get(value, value) for value in returned]
    del function_def.node_def[:]
    function_def.node_def.extend([*nodes, node])
    function_def.ret.clear()
    for output, value in zip(signature.output_arg, returned, strict=True):
        function_def.ret[output.name] = value
    function_def.control_ret.clear()
    del signature.control_output[:]
    signature.is_stateful = batch is not None  # BatchFunction holds the shared batch queue


def write_from_saved_model(
    source: str | os.PathLike,
    target: Path,
    exported: Mapping[str, Any],
    placement: Mapping[str, str],
    manifest: Mapping[str, Any],
    batched: Mapping[str, Any] | None = None,
) -> None:
    """`source`'s SavedModel with each placed concrete function (`placement`: artifact
    function name -> concrete function name in saved_model.pb) computed by its XlaCallModule;
    one that a batch op batches alone (`batched`: batch name -> its body for any number of
    rows) by a BatchFunction around it."""
    source = Path(source)
    # lazy: loads xDSL, which this module does not
    from mlconv.converter.placement import bound_inputs
    from mlconv.frontends.tf_importer import read_saved_model

    proto = read_saved_model(source)
    functions = proto.meta_graphs[0].graph_def.library
    library = {f.signature.name: f for f in functions.function}
    alone = {
        b["functions"][0]: b
        for b in manifest.get("batches", [])
        if len(b["functions"]) == 1 and b["name"] in (batched or {})
    }
    for artifact_name, function_name in placement.items():
        if function_name not in library:
            raise BackendError(f"{source}: no function '{function_name}' in saved_model.pb")
        batch = alone.get(artifact_name)
        _replace_body(
            library[function_name],
            _as_tf(exported[artifact_name], artifact_name)
            if batch is None
            else _as_batched_tf(batch, batched[batch["name"]]),
            manifest,
            artifact_name,
            batch,
            functions,
            bound_inputs(proto.meta_graphs[0], function_name),
        )
    target.mkdir()
    for entry in source.iterdir():
        if entry.name in ("saved_model.pb", "fingerprint.pb"):
            continue
        copy = shutil.copytree if entry.is_dir() else shutil.copy2
        copy(entry, target / entry.name)
    (target / "saved_model.pb").write_bytes(proto.SerializeToString())


def tf_name(name: str) -> str:
    """A TensorFlow-acceptable argument name for a model input or output name."""
    cleaned = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return cleaned if cleaned[:1].isalpha() else f"x_{cleaned}"


def write_new_saved_model(
    target: Path,
    exported: Mapping[str, Any],
    manifest: Mapping[str, Any],
    batched: Mapping[str, Any] | None = None,
) -> None:
    """A SavedModel whose `serving_default` runs the artifact's functions as `manifest` wires
    them (model inputs by name in, model outputs by name out); a batch op is TensorFlow's
    BatchFunction with the same options (converter/batcher.py), its inputs' 0th dimension None."""
    # lazy: loads numpy, xDSL, which this module does not
    from mlconv.converter.batcher import tf_batch_function

    tf = _tensorflow()
    batches = {b["name"]: b for b in manifest.get("batches", [])}
    group = {f: b for b in batches.values() for f in b["functions"]}
    grouped = {name: tf_batch_function(b, (batched or {})[name]) for name, b in batches.items()}
    rows = {ref["input"] for b in batches.values() for ref in b["inputs"] if "input" in ref}
    calls = {name: _as_tf(exp, name) for name, exp in exported.items() if name not in group}
    inputs = [tf_name(entry["name"]) for entry in manifest["inputs"]]
    outputs = [tf_name(entry["name"]) for entry in manifest["outputs"]]
    if len(set(inputs)) != len(inputs) or len(set(outputs)) != len(outputs):
        raise BackendError("model input or output names collide once made TensorFlow names")
    specs = [
        tf.TensorSpec(
            [None, *entry["shape"][1:]]
            if index in rows
            else [None if d < 0 else d for d in entry["shape"]],  # -1: a symbolic dim
            entry["dtype"],
            name=name,
        )
        for index, (entry, name) in enumerate(zip(manifest["inputs"], inputs, strict=True))
    ]

    def serve(*args: Any) -> dict[str, Any]:
        results: dict[str, Sequence[Any]] = {}

        def fetch(ref: Mapping[str, Any]) -> Any:
            if "input" in ref:
                return args[ref["input"]]
            if "reshape" in ref:  # tpu-io-shapes' boundary reshape, on the host
                return tf.reshape(fetch(ref["reshape"]), ref["shape"])
            return results[ref["function"]][ref["output"]]

        for entry in manifest["functions"]:
            batch = group.get(entry["name"])
            if batch is not None:  # the batch op's functions run once, inside BatchFunction
                if entry["name"] == batch["functions"][0]:
                    out = grouped[batch["name"]](*[fetch(ref) for ref in batch["inputs"]])
                    for ref, value in zip(batch["outputs"], out, strict=True):
                        if "function" in ref:
                            results.setdefault(ref["function"], {})[ref["output"]] = value
                continue
            out = calls[entry["name"]](*[fetch(ref) for ref in entry["inputs"]])
            results[entry["name"]] = out if isinstance(out, list | tuple) else [out]
        return {
            name: tf.identity(fetch(entry["value"]), name=name)
            for name, entry in zip(outputs, manifest["outputs"], strict=True)
        }

    module = tf.Module()
    module.serve = tf.function(serve, input_signature=specs, autograph=False)
    tf.saved_model.save(module, str(target), signatures={SERVING: module.serve})


def write_saved_model(
    target: Path,
    exported: Mapping[str, Any],
    manifest: Mapping[str, Any],
    source: str | os.PathLike | None = None,
    placement: Mapping[str, str] | None = None,
    batched: Mapping[str, Any] | None = None,
) -> None:
    """OUTDIR/saved_model: from a SavedModel source with `placement`, the source rewritten;
    otherwise a new SavedModel serving the whole converted model, its batch ops (`batched`:
    the manifest's batch name -> the body exported for any number of rows) as BatchFunction."""
    if source is not None and placement:
        write_from_saved_model(source, target, exported, placement, manifest, batched)
    else:
        write_new_saved_model(target, exported, manifest, batched or {})

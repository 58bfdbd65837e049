"""The converted artifact: a folder that runs without the source model, on CPU, GPU or TPU.

    OUTDIR/manifest.json           format version, inputs/outputs, functions and how @main wires
                                   them, the converter options, per-phase times, the report
    OUTDIR/tpu/<function>.jaxexport  each TPU function as a serialized `jax.export.Exported`
                                   (StableHLO with its weights, lowered for cpu, cuda and tpu)
    OUTDIR/tpu/<function>.mlir     the same function as StableHLO text, for XLA tools
    OUTDIR/tpu/<function>.weights  with xla_sharding_options: the function's weights as raw
                                   bytes, arguments placed split over the mesh at load
                                   (converter/sharding.py)
    OUTDIR/host/<signature>.host_<i>.jaxexport  a SavedModel source's host part: what each
                                   signature computes around its TPU calls, for the host's CPU
                                   (converter/host_part.py; the manifest's `signatures`)
    OUTDIR/saved_model/            the converted model as a TensorFlow SavedModel, the TPU
                                   functions as XlaCallModule ops (converter/saved_model_writer.py);
                                   written when TensorFlow is installed

`save_artifact(module, outdir, ...)` takes a module at the tpu level (every op of `@main` in a
`tpu.region`, but for the boundary reshapes of tpu-io-shapes, which a value's reference in the
manifest records as `{"reshape": ref, "shape": [...]}` and the loader does on the host);
`load_artifact(outdir, device)` returns a callable like `mlconv.compile`'s: numpy
arrays in (positionally or by input name, checked against the recorded signature), a list of
numpy arrays out; its `signatures` run a SavedModel source's signatures whole, host part
included (`loaded.signatures["serving_default"](x=x)` -> dict). Loading needs jax only: no xDSL
parsing, no source model, and no TensorFlow unless a signature's host part holds ops only
TensorFlow runs.

The folder is written under a temporary name beside OUTDIR and renamed into place when
complete, so a failed conversion leaves nothing half-written. The manifest's `files` records
the SHA-256 of every file written.

Loading treats the folder as data (docs/artifact.md): the manifest is validated against a
schema, every file is read from inside OUTDIR and checked against its recorded SHA-256
(converter/artifact_manifest.py), every export's custom-call targets are checked before it
compiles (backends/export_check.py), and a host part kept in TensorFlow runs only from the
artifact's own files and only with `allow_tensorflow=True`.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np

from mlconv.backends.export_check import (
    PLATFORMS,
    deserialize_checked,
    export_function,
    region_specs,
)
from mlconv.backends.symbolic import PerShape, export_region
from mlconv.converter.artifact_manifest import (
    FORMAT,
    FORMAT_VERSION,
    MANIFEST,
    ArtifactFiles,
    read_manifest,
    record_files,
)
from mlconv.converter.batcher import (
    BatchingModel,
    describe_batch,
    export_batched,
    flatten_batch_ops,
)
from mlconv.converter.host_part import BatchedCalls, export_main, load_signatures
from mlconv.converter.sharding import MeshSpec, WeightBoundCall, export_sharded, read_weights
from mlconv.dense import to_numpy
from mlconv.errors import BackendError
from mlconv.fileio import resolve_output
from mlconv.signature.inputs import InputSpec, bind_inputs

"""Every exported function is lowered for all three, so one artifact serves any of them."""


# --------------------------------------------------------------------------- writing


def save_artifact(
    module: Any,
    outdir: str | os.PathLike,
    *,
    options_text: str = "",
    source: str = "",
    extra: dict[str, Any] | None = None,
    function_names: Sequence[str] = (),
    saved_model: bool = True,
    placement: dict[str, str] | None = None,
    sharding: Any = None,
    host: tuple[dict[str, Any], Sequence[tuple[str, Any]]] | None = None,
    texts: dict[str, str] | None = None,
    symbolic: Any = None,
) -> dict[str, Any]:
    """Write the tpu-level `module` as an artifact folder; returns the manifest. The TPU
    functions are named by `function_names` in order (e.g. the SavedModel's function alias),
    `tpu_function_<i>` past its end. With `saved_model` (and TensorFlow installed) the folder
    also holds OUTDIR/saved_model: `source` rewritten when it is a SavedModel and `placement`
    maps the artifact's function names to its concrete function names, else a new one. With
    `sharding` (a backends.sharding.MeshSpec) each function is exported for that device mesh
    (XLA SPMD); the SavedModel form holds the functions for one device. `host` is the host
    part of a SavedModel source: the manifest's `signatures` and the host stages (name,
    tpu-level module, exported for the host; or the bytes of a GraphDef TensorFlow runs),
    see converter/host_part.py. `symbolic` (backends/symbolic.Generalized) exports the module,
    lowered at probe sizes of its dynamic dims, with symbolic dims: the manifest's
    `symbolic_dims` names them, its inputs have -1 there. `texts` are text files (reports) by
    name, written in OUTDIR with the rest, their SHA-256s recorded too."""
    # lazy: loads 14 more modules (backends, dialects, passes, semantics, signature)
    from mlconv.backends.jax_backend import HOST_PRIMITIVES
    from mlconv.dialects import tpu
    from mlconv.signature.module_io import find_main, value_names

    main = find_main(module)
    block = main.body.block
    values: dict[Any, dict[str, Any]] = {
        arg: {"input": index} for index, arg in enumerate(block.args)
    }
    functions = []
    exported = []
    weights: dict[str, Any] = {}
    # tpu.batch ops (tpu-batch) are seen through; each is also exported whole (converter/batcher.py)
    ops, aliases, batch_ops = flatten_batch_ops(block)
    regions: dict[Any, str] = {}
    for op in ops:
        if isinstance(op, tpu.RegionOp):
            name = function_name(function_names, len(functions))
            regions[op] = name
            inputs = [_reference(values, aliases.get(v, v), op) for v in op.inputs]
            for index, result in enumerate(op.results):
                values[result] = {"function": name, "output": index}
            functions.append({"name": name, "inputs": inputs, "outputs": len(op.results)})
            if sharding is None:
                exported.append((name, _export_region(op, symbolic)))
            else:  # weights split over the mesh, as arguments (converter/sharding.py)
                weights[name] = export_sharded(op, sharding, PLATFORMS)
                functions[-1]["weights"] = weights[name].manifest()
                exported.append((name, weights[name].exported))
        elif isinstance(op, tpu.PrimitiveOp) and op.PRIMITIVE in HOST_PRIMITIVES:
            # a boundary reshape (tpu-io-shapes), done on the host: recorded in the reference
            origin = _reference(values, aliases.get(op.operands[0], op.operands[0]), op)
            values[op.results[0]] = {
                "reshape": origin,
                "shape": list(op.results[0].type.get_shape())
                if symbolic is None
                else symbolic.host_shape(op.results[0]),
            }
        elif op.name == "func.return":
            outputs = [_reference(values, aliases.get(v, v), op) for v in op.operands]
        else:
            raise BackendError.at(
                op, "is outside a tpu.region; the artifact holds TPU functions only"
            )
    batches = [
        describe_batch(
            batch,
            f"batch_{index}",
            lambda v, batch=batch: _reference(values, aliases.get(v, v), batch),
            [regions[r] for r in batch.body.ops if r in regions],
        )
        for index, batch in enumerate(batch_ops)
    ]
    batched = [
        (entry["name"], export_batched(b, symbolic))
        for entry, b in zip(batches, batch_ops, strict=True)
    ]
    specs = InputSpec.from_main(main)
    if symbolic is not None:  # -1 where a dim is symbolic
        specs = [
            InputSpec(
                spec.name,
                spec.dtype,
                tuple(
                    -1 if axis is not None else d for axis, d in zip(row, spec.dims, strict=True)
                ),
            )
            for spec, row in zip(specs, symbolic.symbols.inputs, strict=True)
        ]
    manifest = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "source": source,
        "inputs": [_spec_json(spec) for spec in specs],
        "outputs": [
            {"name": name, "value": ref}
            for name, ref in zip(
                value_names(main.res_attrs, len(outputs), "output"), outputs, strict=True
            )
        ],
        "functions": functions,
        "platforms": list(PLATFORMS),
        "converter_options": options_text,
        **(extra or {}),
        "sharding": sharding.to_json() if sharding is not None else None,
    }
    if symbolic is not None:
        manifest["symbolic_dims"] = symbolic.symbols.manifest()
    if batches:
        manifest["batches"] = batches
    host_stages = []
    if host is not None:
        manifest["signatures"] = host[0]
        host_stages = [
            (name, stage if isinstance(stage, bytes) else export_main(stage))
            for name, stage in host[1]
        ]
    import importlib.util

    write_tf = saved_model and importlib.util.find_spec("tensorflow") is not None
    manifest["saved_model"] = "saved_model" if write_tf else None
    # A symbolic link to a folder is written through: its target is replaced, the link stays.
    where, in_place = resolve_output(outdir)
    target = Path(where)
    if in_place or (target.exists() and not target.is_dir()):
        raise BackendError(f"{target}: exists and is not a folder")
    parent = target.resolve().parent
    parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=parent))
    try:
        (staging / "tpu").mkdir()
        for name, exp in exported:
            (staging / "tpu" / f"{name}.jaxexport").write_bytes(exp.serialize())
            (staging / "tpu" / f"{name}.mlir").write_text(exp.mlir_module())
        for name, sharded in weights.items():
            (staging / "tpu" / f"{name}.weights").write_bytes(sharded.payload())
        for name, exp in batched:
            (staging / "tpu" / f"{name}.batched.jaxexport").write_bytes(exp.serialize())
        if host_stages:
            (staging / "host").mkdir()
        for name, exp in host_stages:
            if isinstance(exp, bytes):  # a host part kept in TensorFlow: a frozen GraphDef
                (staging / "host" / f"{name}.pb").write_bytes(exp)
                continue
            (staging / "host" / f"{name}.jaxexport").write_bytes(exp.serialize())
            (staging / "host" / f"{name}.mlir").write_text(exp.mlir_module())
        if write_tf:
            # lazy: loads 1 more module (converter)
            from mlconv.converter.saved_model_writer import write_saved_model

            one_device = dict(exported)
            if sharding is not None:  # the SavedModel form runs on one device
                one_device = {name: _export_region(op) for op, name in regions.items()}
            for entry, (_, exp) in zip(batches, batched, strict=True):
                if len(entry["functions"]) == 1:  # a batched function takes any number of rows
                    one_device[entry["functions"][0]] = exp
            write_saved_model(
                staging / "saved_model",
                one_device,
                manifest,
                source=source if placement else None,
                placement={function_name([k], 0): v for k, v in (placement or {}).items()},
                batched=dict(batched),
            )
        for name, text in (texts or {}).items():  # reports: plain names in OUTDIR
            (staging / Path(name).name).write_text(text)
        manifest["files"] = record_files(staging)
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
        os.chmod(staging, 0o755)
        if target.exists():
            shutil.rmtree(target)
        os.replace(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return manifest


def function_name(names: Sequence[str], index: int) -> str:
    name = names[index] if index < len(names) and names[index] else f"tpu_function_{index}"
    name = "".join(c if c.isascii() and (c.isalnum() or c in "_-.") else "_" for c in name)
    return "_" + name[:199] if name.startswith(".") else name[:200]  # a plain file name


def _reference(values: dict[Any, dict[str, Any]], value: Any, user: Any) -> dict[str, Any]:
    if value not in values:
        raise BackendError.at(user, "uses a value computed outside the TPU functions")
    return values[value]


def _spec_json(spec: InputSpec) -> dict[str, Any]:
    return {
        "name": spec.name,
        "dtype": None if spec.dtype is None else np.dtype(spec.dtype).name,
        "shape": None if spec.dims is None else list(spec.dims),
    }


def _export_region(region: Any, symbolic: Any = None) -> Any:
    """The region as a `jax.export.Exported` with its constants inside (static shapes; with
    `symbolic`, a backends.symbolic.Generalized, symbolic where its inputs are)."""
    if symbolic is not None:
        return export_region(region, symbolic, PLATFORMS)

    # lazy: loads 4 more modules (dialects, semantics)
    from mlconv.dialects import tpu
    from mlconv.semantics.tpu_blocks import interpret_block

    block = region.body.block
    constants = {
        op: to_numpy(op.value) for op in region.body.walk() if isinstance(op, tpu.ConstantOp)
    }
    body = lambda *args: tuple(interpret_block(block, constants, args))  # noqa: E731
    return export_function(body, region_specs(region))


# --------------------------------------------------------------------------- loading


class LoadedArtifact:
    """An artifact folder as a callable; `manifest` is what it records."""

    def __init__(
        self,
        outdir: str | os.PathLike,
        device: str | None = None,
        *,
        allow_tensorflow: bool = False,
    ):
        # lazy: loads 14 more modules (backends, dialects, passes, semantics, signature)
        from mlconv.backends.jax_backend import pick_device

        folder = Path(outdir)
        manifest = read_manifest(folder)
        self.manifest = manifest
        self.folder = folder
        self.files = ArtifactFiles(folder, manifest)
        self.allow_tensorflow = allow_tensorflow
        self.device = pick_device(device)
        self.input_names = [entry["name"] for entry in manifest["inputs"]]
        self.output_names = [entry["name"] for entry in manifest["outputs"]]
        self.input_specs = [
            InputSpec(
                entry["name"],
                None if entry["dtype"] is None else np.dtype(entry["dtype"]),
                None if entry["shape"] is None else tuple(entry["shape"]),
            )
            for entry in manifest["inputs"]
        ]
        self._functions = {}
        self._calls = {}  # the functions as called: sharded ones jitted over the mesh
        mesh_spec = MeshSpec.from_json(manifest.get("sharding"))
        mesh = mesh_spec.mesh() if mesh_spec is not None else None
        for entry in manifest["functions"]:
            relative = f"tpu/{entry['name']}.jaxexport"
            exp = deserialize_checked(self.files.read(relative), str(folder / relative))
            self._functions[entry["name"]] = exp
            self._calls[entry["name"]] = _callable(exp, mesh)
            if entry.get("weights"):  # placed on the mesh once, passed on every call
                relative = f"tpu/{entry['name']}.weights"
                weights = read_weights(
                    folder / relative, entry["weights"], self.files.read(relative)
                )
                self._calls[entry["name"]] = WeightBoundCall(
                    self._calls[entry["name"]], exp, mesh, weights
                )

    @functools.cached_property
    def signatures(self) -> dict[str, Any]:
        """Each signature run whole, host part included (converter/host_part.py)."""

        return load_signatures(self, self.files, self.allow_tensorflow)

    def __call__(self, *args: Any, **named: Any) -> list[np.ndarray]:
        arrays = bind_inputs(self.input_specs, args, named)
        return self._evaluate(arrays, self.manifest["functions"], self.manifest["outputs"])

    def call_function(self, name: str | None, args: Sequence[Any]) -> list[np.ndarray]:
        """One TPU function (None: the whole model) on its own inputs, in its own order; several
        functions share @main's inputs and outputs as `<function>.<name>`."""
        if name is None:
            return self._evaluate(list(args), self.manifest["functions"], self.manifest["outputs"])
        prefix = f"{name}." if len(self.manifest["functions"]) > 1 else ""
        mine = [i for i, e in enumerate(self.manifest["inputs"]) if e["name"].startswith(prefix)]
        arrays: list[Any] = [None] * len(self.manifest["inputs"])
        for index, value in zip(mine, args, strict=True):
            arrays[index] = value
        entries = [e for e in self.manifest["functions"] if e["name"] == name]
        outputs = [o for o in self.manifest["outputs"] if o["name"].startswith(prefix)]
        return self._evaluate(arrays, entries, outputs)

    def _evaluate(
        self, arrays: list[Any], entries: Sequence[dict[str, Any]], outputs: Sequence[dict]
    ) -> list[np.ndarray]:
        results: dict[str, Sequence[Any]] = {}

        def fetch(ref: dict[str, Any]) -> Any:
            if "input" in ref:
                return arrays[ref["input"]]
            if "reshape" in ref:  # on the host: a view, no copy
                return np.reshape(np.asarray(fetch(ref["reshape"])), ref["shape"])
            return results[ref["function"]][ref["output"]]

        with jax.default_device(self.device):
            for entry in entries:
                inputs = [fetch(ref) for ref in entry["inputs"]]
                results[entry["name"]] = self._calls[entry["name"]](*inputs)
        return [np.asarray(fetch(output["value"])) for output in outputs]


def _callable(exp: Any, mesh: Any) -> Any:
    """`exp` as a function; a sharded one jitted over `mesh` with its recorded shardings."""
    if mesh is None or exp.nr_devices == 1:
        if any(not isinstance(d, int) for a in exp.in_avals for d in a.shape):
            return PerShape(exp)  # compiled once per concrete shape, a bounded cache
        return exp.call

    return jax.jit(
        exp.call, in_shardings=exp.in_shardings_jax(mesh), out_shardings=exp.out_shardings_jax(mesh)
    )


def is_artifact(path: str | os.PathLike) -> bool:
    """A folder holding a manifest.json: loaded as an artifact, so that a broken manifest is
    reported as such (never as a SavedModel folder it is not)."""
    with contextlib.suppress(OSError, ValueError):
        return (Path(path) / MANIFEST).exists()
    return False


def load_artifact(
    outdir: str | os.PathLike, device: str | None = None, *, allow_tensorflow: bool = False
) -> LoadedArtifact:
    """`mlconv.load(OUTDIR)`: the artifact's model as a callable on `device`. A signature
    whose host part runs in TensorFlow runs only with `allow_tensorflow` (it executes the
    artifact's own TensorFlow graph)."""
    loaded = LoadedArtifact(outdir, device, allow_tensorflow=allow_tensorflow)
    if loaded.manifest.get("batches"):
        model = BatchingModel(loaded, loaded.files)
        model.signatures = load_signatures(
            BatchedCalls(model, loaded), loaded.files, allow_tensorflow
        )
        return model
    return loaded

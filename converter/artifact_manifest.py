"""An artifact folder read as data (docs/artifact.md, "Trust"): its manifest validated against a
JSON schema, every file it names resolved inside the folder and checked against the SHA-256 the
converter recorded.

    manifest = read_manifest(folder)            # one-line BackendError naming the bad field
    files = ArtifactFiles(folder, manifest)
    data = files.read("tpu/f.jaxexport")        # inside the folder, listed, hash checked
    files.check_tree("saved_model")             # every file under it listed and unchanged

The schema admits what `save_artifact` writes and nothing else that the loader would act on:
file names are plain names (no `/`, no `..`, no absolute path), references are small
non-negative integers, batch options are within converter/batcher.py's bounds. The manifest's
`files` maps each file's path (relative, `/`-separated) to its SHA-256; a file the loader
reads that is not listed, or whose hash differs, is refused.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mlconv.converter.batcher import (
    MAX_BATCH_SIZE,
    MAX_BATCH_THREADS,
    MAX_BATCH_TIMEOUT_MICROS,
    MAX_ENQUEUED_BATCHES,
)
from mlconv.errors import BackendError

FORMAT = "mlconv-artifact"
FORMAT_VERSION = 2
"""2: the manifest records a SHA-256 per file (`files`); version 1 artifacts are refused
(convert again)."""

MANIFEST = "manifest.json"
MAX_MANIFEST_BYTES = 64 << 20

NAME = r"^(?!\.)[A-Za-z0-9_.-]{1,200}$"
"""A TPU function or batch name: it becomes a file name, so no `/` and no leading `.`."""
FILE = r"^(?!\.\.?$)[^/\\\x00]{1,255}$"
"""A host stage, graph or signature name used as a file name: one path component."""

_INDEX = {"type": "integer", "minimum": 0, "maximum": 1 << 20}
_DIM = {"type": "integer", "minimum": 0, "maximum": 1 << 40}
_SHAPE = {"type": "array", "items": _DIM, "maxItems": 64}
_DTYPE = {"type": "string", "pattern": r"^[a-z0-9_]{1,32}$"}
_SPEC_DIM = {"anyOf": [{"type": "null"}, {"type": "integer", "minimum": -1, "maximum": 1 << 40}]}
"""An input's dim: -1 or null where it is dynamic."""
_SPEC = {
    "type": "object",
    "required": ["name", "dtype", "shape"],
    "properties": {
        "name": {"type": "string", "maxLength": 1000},
        "dtype": {"anyOf": [{"type": "null"}, _DTYPE]},
        "shape": {
            "anyOf": [{"type": "null"}, {"type": "array", "items": _SPEC_DIM, "maxItems": 64}]
        },
    },
}


def _only(required: list[str], properties: dict[str, Any]) -> dict[str, Any]:
    """A JSON object with `required` keys and no keys beyond `properties`."""
    return {
        "type": "object",
        "required": required,
        "additionalProperties": False,
        "properties": properties,
    }


SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["format", "version", "inputs", "outputs", "functions", "files"],
    "$defs": {
        # a value: @main's input, a TPU function's output, or one of them reshaped on the host
        "ref": {
            "oneOf": [
                _only(["input"], {"input": _INDEX}),
                _only(
                    ["function", "output"],
                    {
                        "function": {"type": "string", "pattern": NAME},
                        "output": _INDEX,
                    },
                ),
                _only(
                    ["reshape", "shape"],
                    {
                        "reshape": {"$ref": "#/$defs/ref"},
                        # -1: a symbolic dim (issue 27), inferred by the reshape
                        "shape": {
                            "type": "array",
                            "maxItems": 64,
                            "items": {"type": "integer", "minimum": -1, "maximum": 1 << 40},
                        },
                    },
                ),
            ]
        },
        "step_ref": {
            "oneOf": [
                _only(["input"], {"input": _INDEX}),
                _only(["step", "output"], {"step": _INDEX, "output": _INDEX}),
            ]
        },
        "signature": {
            "type": "object",
            "required": ["runtime", "inputs", "outputs"],
            "properties": {
                "runtime": {"enum": ["jax", "tensorflow"]},
                "inputs": {"type": "array", "items": _SPEC},
                "outputs": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["name"],
                        "properties": {
                            "name": {"type": "string"},
                            "value": {"$ref": "#/$defs/step_ref"},
                        },
                    },
                },
                "steps": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["inputs"],
                        "oneOf": [{"required": ["host"]}, {"required": ["call"]}],
                        "properties": {
                            "host": {"type": "string", "pattern": FILE},
                            "call": {
                                "anyOf": [{"type": "null"}, {"type": "string", "pattern": NAME}]
                            },
                            "inputs": {"type": "array", "items": {"$ref": "#/$defs/step_ref"}},
                        },
                    },
                },
                # the artifact's own SavedModel: no other folder can be named
                "saved_model": {"const": "saved_model"},
                "graph": {"type": "string", "pattern": FILE},
                "input_tensors": {"type": "object", "additionalProperties": {"type": "string"}},
                "output_tensors": {"type": "object", "additionalProperties": {"type": "string"}},
                "calls": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["call", "inputs", "outputs"],
                        "properties": {
                            "call": {"type": "string", "pattern": NAME},
                            "inputs": {"type": "array", "items": {"type": "string"}},
                            "outputs": {"type": "array", "items": {"type": "string"}},
                        },
                    },
                },
                "bfloat16": {"type": "boolean"},
                "reason": {"type": "string"},
            },
            "allOf": [
                {
                    "if": {"properties": {"runtime": {"const": "jax"}}},
                    "then": {"required": ["steps"]},
                },
                {
                    "if": {
                        "properties": {"runtime": {"const": "tensorflow"}},
                        "not": {"required": ["graph"]},
                    },
                    "then": {"required": ["saved_model"]},
                },
                {
                    "if": {"required": ["graph"]},
                    "then": {"required": ["input_tensors", "output_tensors", "calls"]},
                },
            ],
        },
    },
    "properties": {
        "format": {"const": FORMAT},
        "version": {"const": FORMAT_VERSION},
        "source": {"type": "string"},
        "inputs": {"type": "array", "items": _SPEC, "maxItems": 100000},
        "outputs": {
            "type": "array",
            "maxItems": 100000,
            "items": {
                "type": "object",
                "required": ["name", "value"],
                "properties": {"name": {"type": "string"}, "value": {"$ref": "#/$defs/ref"}},
            },
        },
        "functions": {
            "type": "array",
            "maxItems": 100000,
            "items": {
                "type": "object",
                "required": ["name", "inputs", "outputs"],
                "properties": {
                    "name": {"type": "string", "pattern": NAME},
                    "inputs": {"type": "array", "items": {"$ref": "#/$defs/ref"}},
                    "outputs": _INDEX,
                    "weights": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["dtype", "shape", "offset", "bytes"],
                            "properties": {
                                "dtype": _DTYPE,
                                "shape": _SHAPE,
                                "dim": {"anyOf": [{"type": "null"}, {"type": "integer"}]},
                                "offset": _DIM,
                                "bytes": _DIM,
                            },
                        },
                    },
                },
            },
        },
        "platforms": {"type": "array", "items": {"type": "string"}},
        "converter_options": {"type": "string"},
        "sharding": {
            "anyOf": [
                {"type": "null"},
                {
                    "type": "object",
                    "required": ["axes", "shape", "devices"],
                    "properties": {
                        "axes": {"type": "array", "items": {"type": "string"}, "maxItems": 16},
                        "shape": {
                            "type": "array",
                            "items": {"type": "integer", "minimum": 1, "maximum": 65536},
                            "maxItems": 16,
                        },
                        "devices": {
                            "type": "array",
                            "items": {"type": "integer", "minimum": 0, "maximum": 65535},
                            "maxItems": 65536,
                        },
                    },
                },
            ]
        },
        "batches": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name", "options", "functions", "inputs", "outputs"],
                "properties": {
                    "name": {"type": "string", "pattern": NAME},
                    "component": {"type": "string"},
                    "component_name": {"type": "string"},
                    "functions": {"type": "array", "items": {"type": "string", "pattern": NAME}},
                    "inputs": {"type": "array", "items": {"$ref": "#/$defs/ref"}},
                    "outputs": {"type": "array", "items": {"$ref": "#/$defs/ref"}},
                    "options": {
                        "type": "object",
                        "required": ["max_batch_size"],
                        "properties": {
                            "max_batch_size": {
                                "type": "integer",
                                "minimum": 1,
                                "maximum": MAX_BATCH_SIZE,
                            },
                            "num_batch_threads": {
                                "type": "integer",
                                "minimum": 0,
                                "maximum": MAX_BATCH_THREADS,
                            },
                            "batch_timeout_micros": {
                                "type": "integer",
                                "minimum": 0,
                                "maximum": MAX_BATCH_TIMEOUT_MICROS,
                            },
                            "allowed_batch_sizes": {
                                "type": "array",
                                "maxItems": 1024,
                                "items": {
                                    "type": "integer",
                                    "minimum": 1,
                                    "maximum": MAX_BATCH_SIZE,
                                },
                            },
                            "max_enqueued_batches": {
                                "type": "integer",
                                "minimum": 0,
                                "maximum": MAX_ENQUEUED_BATCHES,
                            },
                            "disable_large_batch_splitting": {"type": "boolean"},
                        },
                    },
                },
            },
        },
        "signatures": {
            "type": "object",
            "propertyNames": {"pattern": FILE},
            "additionalProperties": {"$ref": "#/$defs/signature"},
        },
        "saved_model": {"anyOf": [{"type": "null"}, {"const": "saved_model"}]},
        "files": {
            "type": "object",
            "propertyNames": {"pattern": r"^(?!/)[^\\\x00]{1,1000}$"},
            "additionalProperties": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
        },
    },
}


def _validator() -> Any:
    import jsonschema

    return jsonschema.Draft202012Validator(SCHEMA)


def _field(path: Any) -> str:
    """A jsonschema error path as `functions[0].name`."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top level)"


def validate_manifest(manifest: Any, where: str = MANIFEST) -> dict[str, Any]:
    """`manifest` checked against SCHEMA and for consistency (references point at functions,
    inputs and steps that exist); a one-line BackendError naming the field otherwise."""
    if not isinstance(manifest, dict):
        raise BackendError(f"{where}: the manifest must be a JSON object")
    if manifest.get("format") != FORMAT or manifest.get("version") != FORMAT_VERSION:
        raise BackendError(
            f"{where}: artifact format {str(manifest.get('format'))[:80]!r} version "
            f"{str(manifest.get('version'))[:20]} is not {FORMAT!r} version {FORMAT_VERSION}"
            " (convert the model again)"
        )
    try:
        error = _deepest(_validator().iter_errors(manifest))
    except RecursionError:
        raise BackendError(f"{where}: the manifest is nested too deeply") from None
    if error is not None:
        detail = error.message.splitlines()[0] if error.message else "invalid"
        if len(detail) > 200:
            detail = detail[:200] + "..."
        raise BackendError(f"{where}: field '{_field(error.absolute_path)}': {detail}")
    _check_dtypes(manifest, where)
    _check_references(manifest, where)
    return manifest


def _deepest(errors: Any) -> Any:
    """The error that names the deepest field: an anyOf/oneOf's own message says only "not
    valid under any of the given schemas", its alternatives' errors say why."""
    best = None
    for error in errors:
        while error.context:
            error = max(error.context, key=lambda e: len(e.absolute_path))
        if best is None or len(error.absolute_path) > len(best.absolute_path):
            best = error
    return best


def _check_dtypes(manifest: Mapping[str, Any], where: str) -> None:
    import numpy as np

    specs = [(f"inputs[{i}]", e) for i, e in enumerate(manifest["inputs"])]
    for name, signature in (manifest.get("signatures") or {}).items():
        specs += [(f"signatures.{name}.inputs[{i}]", e) for i, e in enumerate(signature["inputs"])]
    for i, function in enumerate(manifest["functions"]):
        specs += [
            (f"functions[{i}].weights[{k}]", e) for k, e in enumerate(function.get("weights", []))
        ]
    for field, entry in specs:
        if entry["dtype"] is None:
            continue
        try:
            dtype = np.dtype(entry["dtype"])
        except TypeError:
            dtype = None
        if dtype is None or dtype.kind in "OVSUMm":
            raise BackendError(f"{where}: field '{field}.dtype': unknown dtype {entry['dtype']!r}")


def _check_references(manifest: Mapping[str, Any], where: str) -> None:
    inputs = len(manifest["inputs"])
    functions = {f["name"]: f["outputs"] for f in manifest["functions"]}
    if len(functions) != len(manifest["functions"]):
        raise BackendError(f"{where}: field 'functions': two functions share a name")

    def check(ref: Mapping[str, Any], field: str, before: set[str] | None) -> None:
        while "reshape" in ref:
            if ref["shape"].count(-1) > 1:
                raise BackendError(f"{where}: field '{field}.shape': more than one -1")
            ref = ref["reshape"]
        if "input" in ref and ref["input"] >= inputs:
            raise BackendError(f"{where}: field '{field}': input {ref['input']} does not exist")
        if "function" in ref:
            name = ref["function"]
            if name not in functions or ref["output"] >= functions[name]:
                raise BackendError(
                    f"{where}: field '{field}': function '{name}' output {ref['output']} "
                    "does not exist"
                )
            if before is not None and name not in before:
                raise BackendError(
                    f"{where}: field '{field}': function '{name}' has not run before it"
                )

    done: set[str] = set()
    for i, entry in enumerate(manifest["functions"]):
        for k, ref in enumerate(entry["inputs"]):
            check(ref, f"functions[{i}].inputs[{k}]", done)
        done.add(entry["name"])
    for i, entry in enumerate(manifest["outputs"]):
        check(entry["value"], f"outputs[{i}].value", None)
    for i, batch in enumerate(manifest.get("batches", [])):
        for k, name in enumerate(batch["functions"]):
            if name not in functions:
                raise BackendError(
                    f"{where}: field 'batches[{i}].functions[{k}]': no function '{name}'"
                )
        for k, ref in enumerate(batch["inputs"]):
            check(ref, f"batches[{i}].inputs[{k}]", None)
    for name, signature in (manifest.get("signatures") or {}).items():
        count = len(signature["inputs"])
        steps = signature.get("steps", [])
        for s, step in enumerate(steps):
            if step.get("call") is not None and step["call"] not in functions:
                raise BackendError(
                    f"{where}: field 'signatures.{name}.steps[{s}].call': "
                    f"no function '{step['call']}'"
                )
            for k, ref in enumerate(step["inputs"]):
                _check_step_ref(ref, count, s, f"signatures.{name}.steps[{s}].inputs[{k}]", where)
        for k, out in enumerate(signature["outputs"]):
            if "value" in out:
                _check_step_ref(
                    out["value"], count, len(steps), f"signatures.{name}.outputs[{k}]", where
                )
        for k, call in enumerate(signature.get("calls", [])):
            if call["call"] not in functions:
                raise BackendError(
                    f"{where}: field 'signatures.{name}.calls[{k}].call': "
                    f"no function '{call['call']}'"
                )


def _check_step_ref(ref: Mapping[str, Any], inputs: int, steps: int, field: str, where: str):
    if "input" in ref and ref["input"] >= inputs:
        raise BackendError(f"{where}: field '{field}': input {ref['input']} does not exist")
    if "step" in ref and ref["step"] >= steps:
        raise BackendError(f"{where}: field '{field}': step {ref['step']} has not run before it")


def read_manifest(folder: str | os.PathLike) -> dict[str, Any]:
    """OUTDIR/manifest.json, bounded, parsed and validated (one-line BackendError)."""
    path = Path(folder) / MANIFEST
    try:
        if path.is_symlink():
            raise BackendError(f"{path}: is a symbolic link; the manifest must be a plain file")
        with open(path, "rb") as f:
            data = f.read(MAX_MANIFEST_BYTES + 1)
    except FileNotFoundError:
        raise BackendError(f"{folder}: not an mlconv artifact (no {MANIFEST})") from None
    except OSError as error:
        raise BackendError(f"{path}: cannot read: {error.strerror}") from None
    if len(data) > MAX_MANIFEST_BYTES:
        raise BackendError(f"{path}: larger than {MAX_MANIFEST_BYTES >> 20} MiB")
    try:
        manifest = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise BackendError(
            f"{path}: not UTF-8 text ({error.reason} at byte {error.start})"
        ) from None
    except json.JSONDecodeError as error:
        raise BackendError(f"{path}: not JSON: {error}") from None
    except RecursionError:
        raise BackendError(f"{path}: the manifest is nested too deeply") from None
    return validate_manifest(manifest, str(path))


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def record_files(folder: Path) -> dict[str, str]:
    """The SHA-256 of every file under `folder` (the manifest's `files`), by relative path."""
    files = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path != folder / MANIFEST:
            files[path.relative_to(folder).as_posix()] = sha256(path.read_bytes())
    return files


class ArtifactFiles:
    """The files of an artifact folder, each read only if inside it, listed and unchanged."""

    def __init__(self, folder: str | os.PathLike, manifest: Mapping[str, Any]):
        self.folder = Path(folder)
        self.root = self.folder.resolve()
        self.hashes: Mapping[str, str] = manifest["files"]

    def path(self, relative: str) -> Path:
        """`relative` resolved inside the folder (symbolic links followed, then checked)."""
        candidate = self.folder / relative
        if Path(relative).is_absolute() or not candidate.resolve().is_relative_to(self.root):
            raise BackendError(f"{candidate}: outside the artifact folder {self.folder}")
        return candidate

    def read(self, relative: str) -> bytes:
        """The bytes of a listed file whose SHA-256 is the recorded one."""
        path = self.path(relative)
        expected = self.hashes.get(relative)
        if expected is None:
            raise BackendError(f"{path}: not listed in the manifest's files")
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as error:
            raise BackendError(f"{path}: cannot read: {error.strerror}") from None
        if sha256(data) != expected:
            raise BackendError(
                f"{path}: SHA-256 differs from the manifest's (the file was changed or is corrupt)"
            )
        return data

    def check_tree(self, relative: str) -> Path:
        """Every file under the folder `relative` listed and unchanged, every listed file
        there present; returns its path."""
        top = self.path(relative)
        prefix = relative.rstrip("/") + "/"
        found = set()
        for path in top.rglob("*"):
            if path.is_symlink():
                raise BackendError(f"{path}: a symbolic link inside the artifact")
            if path.is_file():
                name = path.relative_to(self.folder).as_posix()
                found.add(name)
                self.read(name)
        missing = sorted(n for n in self.hashes if n.startswith(prefix) and n not in found)
        if missing:
            raise BackendError(f"{self.folder / missing[0]}: listed in the manifest but missing")
        return top

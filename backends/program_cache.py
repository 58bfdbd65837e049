"""Lowered programs kept across processes: a warm process skips the ONNX import and the passes.

`mlconv.compile(path)` of a model with dynamic dims (specialize.py) imports it, lowers it to
core, and then runs the core-to-tpu passes once per input shape it is called at. XLA's
executables persist on disk (compile_cache.py), but a fresh process used to redo everything
above XLA: ~3.5 s of import and lowering and ~1-2 s of passes per shape for the tiny decoders
of bench/generate.py. `ProgramStore` keeps, beside XLA's executables, the model's signature and
each shape's lowered program as a serialized `jax.export` (StableHLO) with its weights. A later
process compiling the same model bytes with the same options, mlconv sources and jax versions
(`store_for`) serves the stored shapes from it (`StoredModule`) without loading xDSL, the
frontends or the passes; the first shape it has not stored loads the model then (as a cold
process does) and stores that shape's program too.

Layout, in the compilation cache's folder for this jaxlib, platform and CPU:

    programs/<key>/module.json          the signature: inputs, outputs, the model's external
                                        data files with their SHA-256
    programs/<key>/<shapes>.json        {"export": SHA-256, "weights": [SHA-256, ...],
                                         "options": XLA compile options}
    programs/<key>/<shapes>.jaxexport   jax.export's serialization (a flatbuffer of StableHLO)
    programs/<key>/weights/<sha>.npy    one file per distinct weight

The folder is mlconv's own (created 0700), and its files are still read as data: JSON checked
field by field, each file's SHA-256 checked against its entry, .npy read with
`allow_pickle=False`, the export's custom-call targets checked against export_check's
allow-list and its argument types against the entry, the compile options against
`ALLOWED_OPTIONS`. An entry failing a check is ignored with a warning and written afresh;
nothing in the folder is imported, unpickled or executed but the checked StableHLO. The folder
is bounded as XLA's cache is (`max_bytes`): storing a program removes the least recently used
models' folders past it (`prune`). Off with the compilation cache (`compilation_cache=False`,
`MLCONV_COMPILATION_CACHE=0`).
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import os
import shutil
import time
import warnings
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jax
import jaxlib
import numpy as np
from jax import export as jax_export

from mlconv.backends import compile_cache
from mlconv.backends.export_check import deserialize_checked
from mlconv.errors import BackendError, OptionError
from mlconv.signature.inputs import InputSpec, bind_inputs
from mlconv.version import __version__

DEFAULT_CACHE_SIZE = 8
"""Compiled programs a SpecializingModule or StoredModule keeps (least recently used dropped
first)."""

FORMAT = 1
"""The layout's version, in every JSON file (another is ignored)."""

ALLOWED_OPTIONS = frozenset(
    {
        "xla_cpu_experimental_ynn_fusion_type",
        "xla_backend_optimization_level",
        "xla_disable_hlo_passes",
        "xla_cpu_use_fusion_emitters",
        "xla_cpu_parallel_codegen_split_count",
    }
)
"""XLA compile options a stored program may carry: those jax_backend.region_compiler_options
sets (a program compiled with any other is not stored)."""

MAX_JSON_BYTES = 1 << 20
"""A JSON file of the cache larger than this is not read."""


def max_bytes() -> int:
    """How many bytes the programs may take on disk: as XLA's executables beside them
    ($MLCONV_COMPILATION_CACHE_MAX_BYTES, else compile_cache.DEFAULT_MAX_BYTES)."""
    text = os.environ.get("MLCONV_COMPILATION_CACHE_MAX_BYTES", "")
    return int(text) if text.strip().isdigit() else compile_cache.DEFAULT_MAX_BYTES


def prune(root: Path, limit: int) -> list[Path]:
    """Remove the least recently used models' folders under `root` (programs/) until the rest
    take at most `limit` bytes; only folders named as `store_for` names them. Returns the
    removed folders."""
    folders = []
    try:
        for folder in root.iterdir():
            if not (folder.is_dir() and len(folder.name) == 40 and _is_hex(folder.name)):
                continue
            size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
            marker = folder / "module.json"
            used = (marker if marker.is_file() else folder).stat().st_mtime
            folders.append((used, size, folder))
    except OSError:
        return []
    total = sum(size for _, size, _ in folders)
    removed = []
    for _, size, folder in sorted(folders):
        if total <= limit:
            break
        shutil.rmtree(folder, ignore_errors=True)
        total -= size
        removed.append(folder)
    return removed


def _is_hex(text: str) -> bool:
    return all(c in "0123456789abcdef" for c in text)


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@functools.cache
def sources_digest() -> str:
    """A digest of mlconv's own sources (each .py file's path, size and modification time, in
    the package and its subpackages: folders with an __init__.py, so a checkout's tests,
    benchmarks or virtual environment are not walked): a changed mlconv never reuses the
    programs an older one lowered, version number or not."""
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256(__version__.encode())
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = sorted(
            d
            for d in subfolders
            if d not in ("test", "bench") and os.path.isfile(os.path.join(folder, d, "__init__.py"))
        )
        for name in sorted(files):
            if name.endswith(".py"):
                stat = os.stat(os.path.join(folder, name))
                relative = os.path.relpath(os.path.join(folder, name), root)
                digest.update(f"{relative}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def platform_of(device: str | None) -> str | None:
    """The JAX platform `device` ("cpu", "gpu", "tpu"; None: JAX's default) runs on, or None
    where JAX has no such device (the compile path reports that)."""
    try:
        return (jax.devices(device) if device else jax.devices())[0].platform
    except RuntimeError:
        return None


def store_for(model: Any, device: str | None, options: dict[str, Any]) -> ProgramStore | None:
    """The store of `model`'s programs compiled with `options` for `device`: an ONNX file only
    (None for another source, or with the compilation cache off)."""
    if not isinstance(model, str | os.PathLike) or not str(model).lower().endswith(".onnx"):
        return None
    path = Path(model)
    platform = platform_of(device) if path.is_file() else None
    directory = compile_cache.directory(platform) if platform else None
    if directory is None:
        return None
    try:
        model_digest = _sha256_file(path)
    except OSError:
        return None
    key = {
        "model": model_digest,
        "options": repr(sorted(options.items())),
        "device": device,
        "mlconv": sources_digest(),
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
    }
    name = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:40]
    return ProgramStore(directory / "programs" / name, path)


def external_data_files(model: Any) -> list[str]:
    """The external data files an ONNX file's tensors name (relative to its folder)."""
    if not isinstance(model, str | os.PathLike) or not str(model).lower().endswith(".onnx"):
        return []
    # Here, not at the top: only the cold path, which has loaded onnx anyway, asks.
    import onnx
    from onnx.external_data_helper import ExternalDataInfo, uses_external_data

    proto = onnx.load(str(model), load_external_data=False)
    found: list[str] = []

    def visit(graph: Any) -> None:
        tensors = list(graph.initializer)
        for node in graph.node:
            for attribute in node.attribute:
                tensors += (
                    [attribute.t, *attribute.tensors]
                    if attribute.HasField("t")
                    else [*attribute.tensors]
                )
                for sub in (
                    [attribute.g, *attribute.graphs]
                    if attribute.HasField("g")
                    else [*attribute.graphs]
                ):
                    visit(sub)
        for tensor in tensors:
            if uses_external_data(tensor):
                location = ExternalDataInfo(tensor).location
                if location not in found:
                    found.append(location)

    visit(proto.graph)
    return found


def shapes_name(arrays: Sequence[Any]) -> str:
    """The file name of the program for inputs of these shapes and dtypes."""
    text = repr([(list(a.shape), np.dtype(a.dtype).str) for a in arrays])
    return hashlib.sha256(text.encode()).hexdigest()[:40]


class CorruptEntry(Exception):
    """A cache entry that fails a check (the message says which)."""


def _ignore(path: Path, reason: str) -> None:
    warnings.warn(
        f"mlconv: ignoring the program cache entry {path}: {reason}; compiling instead",
        stacklevel=3,
    )


def _read_json(path: Path) -> dict[str, Any]:
    if path.stat().st_size > MAX_JSON_BYTES:
        raise CorruptEntry("too large")
    try:
        data = json.loads(path.read_bytes())
    except ValueError as error:
        raise CorruptEntry(f"not JSON ({error})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise CorruptEntry("not an entry of this format")
    return data


def _write_atomic(path: Path, data: bytes) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_bytes(data)
    os.replace(temporary, path)


def _is_sha(text: Any) -> bool:
    return isinstance(text, str) and len(text) == 64 and _is_hex(text)


class ProgramStore:
    """One model's folder of stored programs (see the module docstring)."""

    def __init__(self, folder: Path, model_path: Path):
        self.folder, self.model_path = folder, model_path
        # The digest of the model's external data files as read_module/write_module found
        # them: a program entry records it, and one of other external weights is not used.
        self.external_id: str | None = None

    # -- the model's signature ------------------------------------------------------------

    def read_module(self) -> dict[str, Any] | None:
        """The stored signature, checked ({"inputs": [InputSpec], "outputs": [names]}), or None
        (not stored, or ignored with a warning)."""
        path = self.folder / "module.json"
        if not path.is_file():
            return None
        try:
            data = _read_json(path)
            inputs = [_input_spec(entry) for entry in _list(data, "inputs")]
            outputs = _list(data, "outputs")
            if not all(isinstance(name, str) for name in outputs):
                raise CorruptEntry("bad output names")
            external = _list(data, "external")
            for entry in external:
                if not (isinstance(entry, list) and len(entry) == 2 and _is_sha(entry[1])):
                    raise CorruptEntry("bad external data entry")
                if self._external_digest(entry[0]) != entry[1]:
                    return None  # the model's external data changed: a different model
            self.external_id = _digest_of(external)
            now = time.time()
            os.utime(path, (now, now))  # used: the last folder `prune` removes
        except (OSError, CorruptEntry) as error:
            _ignore(path, str(error))
            return None
        return {"inputs": inputs, "outputs": outputs}

    def _external_digest(self, location: Any) -> str | None:
        base = self.model_path.resolve().parent
        if not isinstance(location, str):
            raise CorruptEntry("bad external data location")
        target = (base / location).resolve()
        if not target.is_relative_to(base):
            raise CorruptEntry("external data outside the model's folder")
        try:
            return _sha256_file(target)
        except OSError:
            return None

    def write_module(
        self, specs: Sequence[InputSpec], output_names: Sequence[str], external: Sequence[str]
    ) -> None:
        """Store the signature (`external`: the model's external data files, relative)."""
        data = {
            "format": FORMAT,
            "inputs": [
                [s.name, None if s.dtype is None else s.dtype.str, _dims(s.dims)] for s in specs
            ],
            "outputs": list(output_names),
            "external": [[location, self._external_digest(location)] for location in external],
        }
        if any(digest is None for _, digest in data["external"]):
            return
        self.external_id = _digest_of(data["external"])
        try:
            self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            _write_atomic(self.folder / "module.json", json.dumps(data).encode())
        except OSError:
            pass  # an unwritable cache: lower again next time

    # -- one program per input shapes ------------------------------------------------------

    def load(self, arrays: Sequence[Any], device: str | None) -> StoredProgram | None:
        """The stored program for inputs of these shapes, checked, or None."""
        name = shapes_name(arrays)
        path = self.folder / f"{name}.json"
        if not path.is_file():
            return None
        try:
            data = _read_json(path)
            if self.external_id is None or data.get("external") != self.external_id:
                return None  # stored for other external weights of the same graph
            export_sha, weight_shas = data.get("export"), _list(data, "weights")
            options = data.get("options")
            if not _is_sha(export_sha) or not all(_is_sha(s) for s in weight_shas):
                raise CorruptEntry("bad digests")
            if not isinstance(options, dict) or not set(options) <= ALLOWED_OPTIONS:
                raise CorruptEntry("compile options mlconv does not set")
            if not all(isinstance(v, str | int | float | bool) for v in options.values()):
                raise CorruptEntry("bad compile option values")
            blob = (self.folder / f"{name}.jaxexport").read_bytes()
            if hashlib.sha256(blob).hexdigest() != export_sha:
                raise CorruptEntry("the export's SHA-256 differs")
            weights = [self._read_weight(sha) for sha in weight_shas]
            try:
                exported = deserialize_checked(blob, str(path.with_suffix(".jaxexport")))
            except BackendError as error:
                raise CorruptEntry(error.message) from None
            expected = [(w.shape, w.dtype) for w in weights]
            expected += [(tuple(a.shape), np.dtype(a.dtype)) for a in arrays]
            got = [(tuple(a.shape), np.dtype(a.dtype)) for a in exported.in_avals]
            if got != expected:
                raise CorruptEntry("the export's arguments differ from the entry's")
            return StoredProgram(exported, weights, options, device)
        except (OSError, CorruptEntry) as error:
            _ignore(path, str(error))
            return None

    def _read_weight(self, sha: str) -> np.ndarray:
        data = (self.folder / "weights" / f"{sha}.npy").read_bytes()
        if hashlib.sha256(data).hexdigest() != sha:
            raise CorruptEntry(f"weight {sha[:12]}'s SHA-256 differs")
        try:
            return np.load(io.BytesIO(data), allow_pickle=False)
        except ValueError as error:
            raise CorruptEntry(f"weight {sha[:12]} is not a plain .npy ({error})") from None

    def save(self, arrays: Sequence[Any], compiled: Any) -> StoredProgram | None:
        """Store `compiled` (a CompiledModule whose @main is one region) as the program for
        inputs of these shapes; returns the stored program to run in its place (its XLA
        executable is the one a later process finds in XLA's cache), or None where the program
        cannot be stored (several regions, a host part, a callback, other compile options)."""
        region = compiled.single_region()
        if region is None or self.external_id is None:
            return None
        options = region.options or {}
        if not set(options) <= ALLOWED_OPTIONS:
            return None
        weights = [np.asarray(c) for c in region.constants]
        specs = [jax.ShapeDtypeStruct(w.shape, w.dtype) for w in weights]
        specs += [jax.ShapeDtypeStruct(tuple(a.shape), np.dtype(a.dtype)) for a in arrays]
        try:
            exported = jax_export.export(region.function, platforms=(region.device.platform,))(
                specs[: len(weights)], *specs[len(weights) :]
            )
            blob = bytes(exported.serialize())
        except Exception:  # noqa: BLE001 - what jax.export cannot serialize: not stored
            return None
        name = shapes_name(arrays)
        shas = []
        try:
            (self.folder / "weights").mkdir(parents=True, exist_ok=True, mode=0o700)
            for weight in weights:
                buffer = io.BytesIO()
                np.save(buffer, np.ascontiguousarray(weight), allow_pickle=False)
                data = buffer.getvalue()
                sha = hashlib.sha256(data).hexdigest()
                target = self.folder / "weights" / f"{sha}.npy"
                if not target.is_file():
                    _write_atomic(target, data)
                shas.append(sha)
            _write_atomic(self.folder / f"{name}.jaxexport", blob)
            entry = {
                "format": FORMAT,
                "export": hashlib.sha256(blob).hexdigest(),
                "weights": shas,
                "options": options,
                "external": self.external_id,
            }
            _write_atomic(self.folder / f"{name}.json", json.dumps(entry).encode())
        except OSError:
            return None
        prune(self.folder.parent, max_bytes())
        return StoredProgram(
            jax_export.deserialize(bytearray(blob)),
            weights,
            options,
            None,
            region.device,
        )


def _digest_of(value: Any) -> str:
    return hashlib.sha256(json.dumps(value).encode()).hexdigest()


def _list(data: dict[str, Any], field: str) -> list[Any]:
    value = data.get(field)
    if not isinstance(value, list):
        raise CorruptEntry(f"no list '{field}'")
    return value


def _dims(dims: tuple[int, ...] | None) -> list[int] | None:
    return None if dims is None else [-1 if d < 0 else int(d) for d in dims]  # -1: dynamic


def _input_spec(entry: Any) -> InputSpec:
    if not (isinstance(entry, list) and len(entry) == 3 and isinstance(entry[0], str)):
        raise CorruptEntry("bad input entry")
    name, dtype, dims = entry
    try:
        dtype = None if dtype is None else np.dtype(str(dtype))
    except TypeError:
        raise CorruptEntry("bad input dtype") from None
    if dtype is not None and dtype.hasobject:
        raise CorruptEntry("bad input dtype")
    if dims is not None and not (
        isinstance(dims, list) and all(isinstance(d, int) and d >= -1 for d in dims)
    ):
        raise CorruptEntry("bad input dims")
    return InputSpec(name, dtype, None if dims is None else tuple(dims))


class StoredProgram:
    """A stored program, callable as CompiledModule.run_bound is: jitted `Exported.call` of
    the weights (placed on the device once) and the inputs."""

    def __init__(
        self,
        exported: Any,
        weights: list[np.ndarray],
        options: dict[str, Any],
        device: str | None,
        jax_device: Any = None,
    ):
        self.device = jax_device or (jax.devices(device) if device else jax.devices())[0]
        self.weights = [jax.device_put(w, self.device) for w in weights]
        self._jitted = jax.jit(exported.call, compiler_options=options or None)

    def run_bound(self, arrays: Sequence[Any]) -> list[Any]:
        return self._jitted(self.weights, *arrays)

    def runner(self) -> Callable[[Sequence[Any]], list[Any]]:
        """`run_bound`, the weights bound (padding.py's plans call it per token)."""
        jitted, weights = self._jitted, self.weights
        return lambda arrays: jitted(weights, *arrays)


class StoredModule:
    """Callable like SpecializingModule, from a ProgramStore: each input shape's program is
    loaded from the store; a shape it lacks goes to the SpecializingModule `build()` makes
    (the model imported and lowered only then), which compiles it and stores it.
    `compilations` counts both; `stored` the programs loaded from the store."""

    def __init__(
        self,
        store: ProgramStore,
        signature: dict[str, Any],
        device: str | None,
        cache_size: int,
        build: Callable[[], Any],
    ):
        if not isinstance(cache_size, int) or cache_size < 1:
            raise OptionError(f"cache_size must be a positive integer, got {cache_size!r}")
        self.store, self.device, self.cache_size, self._build = store, device, cache_size, build
        self.input_specs: list[InputSpec] = signature["inputs"]
        self.input_names = [spec.name for spec in self.input_specs]
        self.output_names: list[str] = signature["outputs"]
        self.stored = 0
        self._full: Any = None
        self._programs: OrderedDict[Any, StoredProgram] = OrderedDict()
        self._missing: set[Any] = set()  # shapes the store does not hold

    @property
    def lowered(self) -> bool:
        """Whether this process imported and lowered the model (a shape the store lacked)."""
        return self._full is not None

    def _specializing(self) -> Any:
        if self._full is None:
            self._full = self._build()
        return self._full

    @property
    def module(self) -> Any:
        """The core-level module (the model imported and lowered on first use)."""
        return self._specializing().module

    @property
    def compilations(self) -> int:
        return self.stored + (self._full.compilations if self._full is not None else 0)

    @property
    def cached(self) -> int:
        return len(self._programs) + (self._full.cached if self._full is not None else 0)

    def __call__(self, *args: Any, **named: Any) -> list[np.ndarray]:
        return [np.asarray(r) for r in self.on_device(*args, **named)]

    def on_device(self, *args: Any, **named: Any) -> list[Any]:
        return self.run_bound(bind_inputs(self.input_specs, args, named))

    def runner(self, arrays: list[Any]) -> Any:
        """As SpecializingModule.runner, for a program this module ran already."""
        program = self._programs.get(tuple((a.shape, a.dtype) for a in arrays))
        if program is not None:
            return program.runner()
        return self._full.runner(arrays) if self._full is not None else None

    def run_bound(self, arrays: list[Any]) -> list[Any]:
        key = tuple((a.shape, a.dtype) for a in arrays)
        program = self._programs.get(key)
        if program is None and key not in self._missing:
            program = self.store.load(arrays, self.device)
            if program is None:
                self._missing.add(key)
            else:
                self.stored += 1
                self._programs[key] = program
                while len(self._programs) > self.cache_size:
                    self._programs.popitem(last=False)
        if program is None:
            return self._specializing().run_bound(arrays)
        if len(self._programs) > 1:
            self._programs.move_to_end(key)
        return program.run_bound(arrays)

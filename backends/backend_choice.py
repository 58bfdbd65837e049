"""The faster of mlconv's two CPU back ends, per model: XLA:CPU or OpenVINO.

    run = compile_chosen(module, "cpu", stages, "auto", source=..., options=...)
    run.backend              # "xla" or "openvino": the one that runs
    run.backend_choice       # BackendChoice: why, the milliseconds measured, the compile cost

`module` is the core module after shape inference; `stages` are the core-to-tpu passes that
turn it into tpu ops for XLA. With `backend="auto"` on the CPU both back ends are compiled: the
module is written as OpenVINO IR (`openvino_ir.to_openvino_ir`) and OpenVINO compiles it in a
thread (in f32, `openvino_backend.PRECISE`) while the passes and XLA run; both then run seeded
sample inputs, the outputs are compared (max |ov - xla| <= RTOL * max |xla| + ATOL per output),
and a few interleaved calls each are timed. OpenVINO runs when it is faster by more than
`MARGIN`; otherwise, and whenever OpenVINO is not installed, the IR writer cannot express the
model, OpenVINO refuses it or the outputs differ, XLA runs (with a one-line `note`).

The choice is kept in the user's cache folder (`cache_dir()`: $MLCONV_CACHE_DIR, else
$XDG_CACHE_HOME/mlconv, else ~/.cache/mlconv), one JSON file per key: the SHA-256 of the model's
source (the file, a SavedModel folder's files, an onnx.ModelProto's bytes), the input shapes and
options, and the versions of mlconv, JAX and OpenVINO and the CPU. A later compile of the same
model compiles the chosen back end only; a choice measured on a busy machine (a load average
above BUSY per core) is measured again once the load is below half that. A module given as IR
has no source to key on and is measured every time.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jax
import numpy as np

from mlconv.backends import compile_cache
from mlconv.backends.compile_cache import cpu_description
from mlconv.errors import MlconvError, OptionError
from mlconv.version import __version__

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

BACKENDS = ("auto", "xla", "openvino")
ALIASES = {"jax": "xla"}
# OpenVINO replaces XLA only where the numbers stay those of the source: f32 kernels that differ
# in summation order agree to ~1e-6 of the largest output on the light models, so 1e-4 leaves
# room for order and none for a different computation.
RTOL, ATOL = 1e-4, 1e-5
MARGIN = 0.95
"""OpenVINO runs when its time per call is below MARGIN x XLA's (a tie keeps XLA, the path
that also serves GPUs and TPUs)."""
TIMING_BUDGET_S = 1.0
"""Time spent in the timed calls, both back ends together, after the first MIN_ROUNDS rounds."""
MIN_ROUNDS, MAX_ROUNDS = 2, 5
BUSY = 1.0
"""Load average per core above which a measurement is remeasured once the machine is quiet."""
SOURCE_LIMIT = 1 << 34
"""Bytes of a SavedModel folder hashed for the key at most (beyond: no cache)."""


@dataclass
class BackendChoice:
    """Which back end runs a compiled model, and why."""

    backend: str  # "xla" | "openvino"
    reason: str  # "named" (the user's), "measured", "cached", "fallback", "not cpu", "dynamic"
    xla_ms: float | None = None  # fastest timed call of each back end, when measured
    openvino_ms: float | None = None
    max_rel: float | None = None  # max |ov - xla| / max |xla| over the outputs
    measure_s: float | None = None  # compile-time cost of choosing (OpenVINO's compile,
    #                                 the sample calls, the timing)
    note: str | None = None  # why XLA runs when OpenVINO was not usable
    load: float | None = None  # the 1-minute load average per core when measured

    def line(self) -> str:
        """One line for the progress output."""
        text = f"backend {self.backend} ({self.reason}"
        if self.xla_ms is not None and self.openvino_ms is not None:
            text += f": xla {self.xla_ms:.2f} ms, openvino {self.openvino_ms:.2f} ms per call"
        if self.measure_s is not None:
            text += f"; choosing took {self.measure_s:.2f} s"
        text += ")"
        return text + (f"; {self.note}" if self.note else "")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def resolve_backend(backend: str | None, device: str | None) -> str:
    """ "xla", "openvino" or "auto" from the user's `backend` (None: $MLCONV_BACKEND, else
    "auto"); "auto" on a device other than the CPU is "xla"."""
    if backend is None:
        backend = os.environ.get("MLCONV_BACKEND") or "auto"
    backend = ALIASES.get(backend, backend)
    if backend not in BACKENDS:
        raise OptionError(f"unknown backend '{backend}' (auto, xla, openvino)")
    if backend == "auto" and not on_cpu(device):
        return "xla"
    return backend


def on_cpu(device: str | None) -> bool:
    if device is not None:
        return device == "cpu"

    return jax.default_backend() == "cpu"


def mark(run: Any, choice: BackendChoice, progress: Any = None) -> Any:
    """`run` with its `backend` and `backend_choice` set; the choice's line on stderr where
    progress shows (a terminal, not quiet)."""
    run.backend = choice.backend
    run.backend_choice = choice
    if progress is not None and getattr(progress, "enabled", False):
        print(f"mlconv.compile: {choice.line()}", file=sys.stderr, flush=True)
    return run


def compile_chosen(
    module: ModuleOp,
    device: str | None,
    stages: Sequence[Any],
    backend: str,
    *,
    source: Any = None,
    options: dict[str, Any] | None = None,
    progress: Any = None,
) -> Any:
    """The callable of a static core `module` on the back end `backend` ("xla", "openvino" or
    "auto", as `resolve_backend` gives it), marked with the choice (`mark`)."""
    # lazy: loads xDSL, which this module does not
    from mlconv.backends import openvino_backend

    if backend == "openvino":
        return mark(
            openvino_backend.compile_module(module, device),
            BackendChoice("openvino", "named"),
            progress,
        )
    if backend == "xla":
        return mark(
            _compile_xla(module, device, stages, progress), BackendChoice("xla", "named"), progress
        )
    if not on_cpu(device):
        return mark(
            _compile_xla(module, device, stages, progress),
            BackendChoice("xla", "not cpu"),
            progress,
        )
    try:
        import openvino  # noqa: F401
    except ImportError:
        choice = BackendChoice(
            "xla", "fallback", note="OpenVINO is not installed (mlconv[oracles])"
        )
        return mark(_compile_xla(module, device, stages, progress), choice, progress)
    key = choice_key(source, options)
    cached = read_choice(key)
    if cached is not None and stale(cached):
        cached = None
    if cached is not None:
        cached.reason = "cached"
        cached.measure_s = None
        if cached.backend == "openvino":
            try:
                return mark(openvino_backend.compile_module(module, device), cached, progress)
            except MlconvError:
                pass  # measured again below
        else:
            return mark(_compile_xla(module, device, stages, progress), cached, progress)
    run, choice = _measure(module, device, stages, progress)
    write_choice(key, choice)
    return mark(run, choice, progress)


def _compile_xla(module: ModuleOp, device: str | None, stages: Sequence[Any], progress: Any):
    # lazy: loads xDSL, which this module does not
    from mlconv.backends.jax_backend import compile_module
    from mlconv.dialects import make_context

    for stage in stages:
        if progress is not None:
            with progress.step(stage.name):
                stage.apply(make_context(), module)
        else:
            stage.apply(make_context(), module)
    return compile_module(module, device)


class _Compiling(threading.Thread):
    """OpenVINO's compile of IR bytes, in the background (it releases the GIL)."""

    def __init__(self, xml: bytes, weights: bytes, device: str | None):
        super().__init__(daemon=True, name="mlconv-openvino-compile")
        self.args_ = (xml, weights, device)
        self.compiled: Any = None
        self.error: str | None = None

    def run(self) -> None:
        # lazy: loads xDSL, which this module does not
        from mlconv.backends.openvino_backend import compile_ir

        try:
            self.compiled = compile_ir(*self.args_)
        except MlconvError as error:
            self.error = _first_line(error)
        except Exception as error:  # noqa: BLE001 - any refusal of OpenVINO's means: run XLA
            self.error = f"OpenVINO cannot compile the model: {_first_line(error)}"


def _measure(module: ModuleOp, device: str | None, stages: Sequence[Any], progress: Any):
    """(callable, BackendChoice): both back ends compiled, compared and timed."""
    # lazy: loads xDSL, which this module does not
    from mlconv.backends.openvino_backend import OpenVinoModule
    from mlconv.backends.openvino_ir import to_openvino_ir
    from mlconv.signature.module_io import find_main

    start = time.perf_counter()
    main = find_main(module)
    try:
        xml, weights = to_openvino_ir(module)
    except MlconvError as error:
        note = f"OpenVINO IR cannot express the model: {_first_line(error)}"
        xla = _compile_xla(module, device, stages, progress)
        return xla, BackendChoice("xla", "fallback", note=note)
    ov_main = main.clone()  # the signature (names, types) before the tpu stages change @main
    compiling = _Compiling(xml, weights, device)
    compiling.start()
    ir_s = time.perf_counter() - start
    xla = _compile_xla(module, device, stages, progress)
    inputs = sample_inputs(xla.input_specs)
    xla_outputs = xla(*inputs)  # XLA compiles on the first call
    wait_start = time.perf_counter()
    compiling.join()
    cost = ir_s + time.perf_counter() - wait_start
    if compiling.error is not None:
        return xla, BackendChoice("xla", "fallback", measure_s=cost, note=compiling.error)
    ov = OpenVinoModule(compiling.compiled, ov_main)
    step_start = time.perf_counter()
    try:
        ov_outputs = ov(*inputs)
    except Exception as error:  # noqa: BLE001 - OpenVINO failing to run it means: run XLA
        cost += time.perf_counter() - step_start
        note = f"OpenVINO cannot run the model: {_first_line(error)}"
        return xla, BackendChoice("xla", "fallback", measure_s=cost, note=note)
    max_rel = divergence(ov_outputs, xla_outputs)
    if max_rel is None or max_rel > RTOL:
        cost += time.perf_counter() - step_start
        what = "shapes or types" if max_rel is None else f"values by {max_rel:.2g} (relative)"
        note = f"OpenVINO's outputs differ from XLA's in {what}"
        return xla, BackendChoice("xla", "fallback", max_rel=max_rel, measure_s=cost, note=note)
    times = interleaved_times({"xla": lambda: xla(*inputs), "openvino": lambda: ov(*inputs)})
    xla_ms, ov_ms = (min(times[k]) * 1e3 for k in ("xla", "openvino"))
    cost += time.perf_counter() - step_start
    backend = "openvino" if ov_ms < MARGIN * xla_ms else "xla"
    choice = BackendChoice(backend, "measured", xla_ms, ov_ms, max_rel, cost, load=load_per_core())
    return (ov if backend == "openvino" else xla), choice


def load_per_core() -> float | None:
    """The 1-minute load average per core this process may run on (None where unknown)."""
    try:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
        return os.getloadavg()[0] / (cores or os.cpu_count() or 1)
    except OSError:
        return None


def stale(choice: BackendChoice) -> bool:
    """Whether a cached measurement was taken on a busy machine (more runnable threads than
    cores: OpenVINO's thread pool loses more than XLA there) that is now quiet: measured again."""
    now = load_per_core()
    return choice.load is not None and now is not None and choice.load > BUSY and now < BUSY / 2


def interleaved_times(runners: dict[str, Any]) -> dict[str, list[float]]:
    """Seconds per call of each runner, in interleaved rounds (one call each per round, the
    order alternating): MIN_ROUNDS rounds, more while TIMING_BUDGET_S lasts, MAX_ROUNDS at
    most; one round where it alone took 3 x TIMING_BUDGET_S (light VGG19: ~1.5 s a call, a
    second round added ~6 s to a loaded compile). The first calls have run already."""
    times: dict[str, list[float]] = {k: [] for k in runners}
    order = list(runners)
    spent = 0.0
    for index in range(MAX_ROUNDS):
        if index >= MIN_ROUNDS and spent > TIMING_BUDGET_S:
            break
        if index >= 1 and spent > 3 * TIMING_BUDGET_S:
            break
        for key in order if index % 2 == 0 else order[::-1]:
            start = time.perf_counter()
            runners[key]()
            elapsed = time.perf_counter() - start
            times[key].append(elapsed)
            spent += elapsed
    return times


def divergence(got: Sequence[Any], want: Sequence[Any]) -> float | None:
    """max over outputs of max |got - want| / max |want| (the part above ATOL); None where the
    shapes or dtypes differ. NaN and infinities count as equal where both have them."""
    if len(got) != len(want):
        return None
    worst = 0.0
    for a, b in zip(got, want, strict=True):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape or a.dtype != b.dtype:
            return None
        if a.dtype == np.bool_ or np.issubdtype(a.dtype, np.integer):
            if not np.array_equal(a, b):
                return float("inf")
            continue
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        same = (a64 == b64) | (np.isnan(a64) & np.isnan(b64))
        diff = np.where(same, 0.0, np.abs(a64 - b64))
        scale = float(np.abs(np.where(np.isfinite(b64), b64, 0)).max(initial=0)) or 1.0
        worst = max(worst, max(float(diff.max(initial=0)) - ATOL, 0.0) / scale)
    return worst


def sample_inputs(specs: Sequence[Any], seed: int = 0) -> list[np.ndarray]:
    """Seeded inputs of the given static InputSpecs: floats standard normal, integers in
    [0, 4) (small enough to index, e.g. token ids), booleans at random."""
    rng = np.random.default_rng(seed)
    arrays = []
    for spec in specs:
        shape = list(spec.dims)
        dtype = np.dtype(spec.dtype if spec.dtype is not None else np.float32)
        if dtype == np.bool_:
            arrays.append(rng.random(shape) < 0.5)
        elif np.issubdtype(dtype, np.integer):
            arrays.append(rng.integers(0, 4, shape).astype(dtype))
        else:
            arrays.append(rng.standard_normal(shape).astype(dtype))
    return arrays


def _first_line(error: Exception) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__


# --- the cache ---------------------------------------------------------------------------------


def cache_dir() -> Path:
    """mlconv's cache folder, the one the XLA programs share (compile_cache.cache_root)."""
    return compile_cache.cache_root()


def source_digest(source: Any) -> str | None:
    """SHA-256 of the model's source: a file's bytes (with the external-data files beside it
    whose names start with its name, `model.onnx.data`), a folder's files (names and bytes), an
    onnx.ModelProto's serialization; None for anything else (an IR module) or an unreadable or
    oversized source. A file's digest is remembered by its path, size, mtime and inode
    (`file_digest`), so an unchanged model is not read again."""
    digest = hashlib.sha256()
    try:
        if isinstance(source, str | os.PathLike):
            path = Path(source)
            if path.is_dir():
                files = sorted(p for p in path.rglob("*") if p.is_file())
            else:
                files = [path] + sorted(
                    p
                    for p in path.parent.iterdir()
                    if p.name.startswith(path.name) and p != path and p.is_file()
                )
            if sum(p.stat().st_size for p in files) > SOURCE_LIMIT:
                return None
            for file in files:
                digest.update(str(file.relative_to(path) if path.is_dir() else file.name).encode())
                digest.update(file_digest(file).encode())
            return digest.hexdigest()
        serialize = getattr(source, "SerializeToString", None)
        if serialize is not None:
            digest.update(serialize())
            return digest.hexdigest()
    except (OSError, ValueError):
        return None
    return None


def file_digest(file: Path) -> str:
    """The SHA-256 of a file's bytes, remembered in the cache folder under its real path with
    its size, mtime and inode (as ccache's direct mode), and computed again when one changed."""
    real = os.path.realpath(file)
    stat = os.stat(real)
    identity = [stat.st_size, stat.st_mtime_ns, stat.st_ino]
    memo = cache_dir() / "sources" / f"{hashlib.sha256(real.encode()).hexdigest()}.json"
    try:
        with open(memo, encoding="utf-8") as f:
            known = json.loads(f.read(4096))
        if known.get("identity") == identity and isinstance(known.get("sha256"), str):
            return known["sha256"]
    except (OSError, ValueError, AttributeError):
        pass
    with open(real, "rb") as f:
        value = hashlib.file_digest(f, "sha256").hexdigest()
    if time.time_ns() - stat.st_mtime_ns > 2_000_000_000:  # a file written in the last 2 s
        # may change again within the mtime's granularity: not remembered (ccache's rule)
        _write_json(memo, {"path": real, "identity": identity, "sha256": value})
    return value


def choice_key(source: Any, options: dict[str, Any] | None) -> str | None:
    """The cache key of a compile: its source's digest, options, versions and CPU."""
    digest = source_digest(source)
    if digest is None:
        return None
    # OpenVINO: optional (mlconv[openvino]); only this path needs it
    import openvino

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    parts = {
        "source": digest,
        "options": {k: repr(v) for k, v in sorted((options or {}).items())},
        "versions": [__version__, jax.__version__, openvino.__version__],
        "cpu": [cpu_description(), cores],
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def _choice_path(key: str) -> Path:
    return cache_dir() / "backend-choice" / f"{key}.json"


def read_choice(key: str | None) -> BackendChoice | None:
    """The cached choice of `key`, or None (none, unreadable or malformed)."""
    if key is None:
        return None
    try:
        with open(_choice_path(key), encoding="utf-8") as f:
            data = json.loads(f.read(1 << 16))
        choice = BackendChoice(**data)
    except (OSError, ValueError, TypeError):
        return None
    return choice if choice.backend in ("xla", "openvino") else None


def write_choice(key: str | None, choice: BackendChoice) -> None:
    """Keep `choice` under `key` (a folder that cannot be written is skipped)."""
    if key is not None:
        _write_json(_choice_path(key), choice.as_dict())


def _write_json(path: Path, data: Any) -> None:
    """Write `data` to `path` atomically (a temporary file renamed); OSError ignored."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        temporary.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        os.replace(temporary, path)
    except OSError:
        pass

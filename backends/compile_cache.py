"""The persistent compilation cache: XLA executables kept on disk across processes.

JAX's own cache (`jax_compilation_cache_dir`) keys an executable by its HLO, its compile
options, the backend and the jaxlib version. XLA:CPU compiles for the host's instruction set,
and the key does not say which, so a cache copied to (or shared with) another CPU could hand it
code it cannot run: mlconv keeps one subdirectory per (jaxlib version, platform, CPU) where the
CPU is a hash of its model name and feature flags (`host_key`).

On by default, in `cache_root()/xla` (`~/.cache/mlconv/xla`; the root is `$MLCONV_CACHE_DIR`,
else `$XDG_CACHE_HOME/mlconv`), bounded to
`DEFAULT_MAX_BYTES` (JAX's LRU eviction by access time). The environment decides first:
`MLCONV_COMPILATION_CACHE=0` turns it off, `MLCONV_COMPILATION_CACHE_DIR` moves it,
`MLCONV_COMPILATION_CACHE_MAX_BYTES` bounds it; `mlconv.compile(..., compilation_cache=False
| "DIR")` does the same from the API. A user who set `jax_compilation_cache_dir` themselves
keeps their setting. The cache is a trusted directory (JAX loads executables from it): it is
created private to the user (mode 0700).
"""

from __future__ import annotations

import hashlib
import os
import platform
from pathlib import Path

import jax
import jaxlib
from jax._src import compilation_cache

DEFAULT_MAX_BYTES = 1 << 30
"""Bytes the cache may hold before the least recently used executables are evicted."""

_OFF = {"0", "false", "no", "off"}

_configured: Path | None = None  # the directory mlconv set, once it set one
_decided = False  # whether configure() ran in this process


def cache_root() -> Path:
    """mlconv's one cache folder: $MLCONV_CACHE_DIR, else $XDG_CACHE_HOME/mlconv, else
    ~/.cache/mlconv. The XLA programs live in its `xla/`, the back-end choices in
    `backend-choice/` (backends/backend_choice.py)."""
    if folder := os.environ.get("MLCONV_CACHE_DIR"):
        return Path(folder)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "mlconv"


def default_directory() -> Path:
    """`cache_root()/xla` ($MLCONV_COMPILATION_CACHE_DIR names another folder for it)."""
    return cache_root() / "xla"


def cpu_description() -> str:
    """The host CPU's model name and feature flags (Linux's /proc/cpuinfo; elsewhere what
    `platform` reports)."""
    model = flags = ""
    try:
        with open("/proc/cpuinfo") as stream:
            for line in stream:
                key, _, value = line.partition(":")
                key = key.strip()
                if key in ("model name", "Processor", "cpu model") and not model:
                    model = value.strip()
                elif key in ("flags", "Features") and not flags:
                    flags = " ".join(sorted(value.split()))
                if model and flags:
                    break
    except OSError:
        pass
    return f"{model or platform.processor()}|{flags}|{platform.machine()}"


def host_key(platform_name: str = "cpu") -> str:
    """The subdirectory for this jaxlib, platform and CPU:
    `jaxlib-<version>-<platform>-<hash of cpu_description>`."""

    digest = hashlib.sha256(cpu_description().encode()).hexdigest()[:16]
    return f"jaxlib-{jaxlib.__version__}-{platform_name}-{digest}"


def configure(setting: bool | str | os.PathLike | None = None, platform_name: str = "cpu"):
    """Turn the persistent cache on (or off) before a compilation: `setting` None follows the
    environment (on by default), False turns it off, True on in the default directory, a path
    puts it there. Returns the directory in use (None: off). Process-wide, as JAX's setting is."""
    global _configured, _decided

    _decided = True
    if setting is None:
        setting = os.environ.get("MLCONV_COMPILATION_CACHE", "1").strip().lower() not in _OFF
        if setting and os.environ.get("MLCONV_COMPILATION_CACHE_DIR"):
            setting = os.environ["MLCONV_COMPILATION_CACHE_DIR"]
    current = jax.config.jax_compilation_cache_dir
    if current and (_configured is None or Path(current) != _configured):
        return Path(current)  # the user's own setting
    if setting is False:
        if current:
            jax.config.update("jax_compilation_cache_dir", None)
            compilation_cache.reset_cache()
            _configured = None
        return None
    root = default_directory() if setting is True else Path(setting)
    directory = root / host_key(platform_name)
    if current and Path(current) == directory:
        return directory
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError:
        return None  # an unwritable cache directory: compile without the cache
    max_bytes = int(os.environ.get("MLCONV_COMPILATION_CACHE_MAX_BYTES", DEFAULT_MAX_BYTES))
    jax.config.update("jax_compilation_cache_dir", str(directory))
    jax.config.update("jax_compilation_cache_max_size", max_bytes)
    # mlconv's regions compile in 0.05-1 s: keep them all, however quick.
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    compilation_cache.reset_cache()  # JAX reads the directory once, at its first compile
    _configured = directory
    return directory


def ensure(platform_name: str = "cpu") -> None:
    """`configure()` from the environment, unless this process configured the cache already."""
    if not _decided:
        configure(None, platform_name)


def directory(platform_name: str = "cpu") -> Path | None:
    """The cache directory compilations use now (after `ensure`); None when the cache is off."""

    ensure(platform_name)
    current = jax.config.jax_compilation_cache_dir
    return Path(current) if current else None


def entries(directory: str | os.PathLike) -> int:
    """How many executables the cache directory holds."""
    return sum(1 for path in Path(directory).glob("*-cache") if path.is_file())

"""The lowering table: one registry of patterns for every source dialect and target.

A pattern is keyed by (source dialect, op name, since-version) inside one table per conversion
target: "core" for onnx/tf/tflite -> core, "tflite" for core -> TFLite builtins, "openvino" for
core -> OpenVINO IR layers. Frameworks without op versions (TF, TFLite, core) register with no
version, which is the key `None`: a pattern for every version of the op. Op names are keyed
without their dialect prefix (`"core.Add"` and `"Add"` name the same entry).

    @lowering("onnx", "Relu", 1, 6, 13, 14)
    def relu(op, b):
        return [b(core.ReluOp, b.input(op, "X"))]

The built-in patterns of a (dialect, target) live in a package listed in `SOURCES` (its
`FAMILIES` modules are imported on first use); a plugin calls `register` or `add_source`.
Registering a key twice is an error, wherever the second registration comes from.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Any

Pattern = Callable[..., Any]
Key = tuple[str, str, int | None]

# target -> (dialect, op name, since-version) -> pattern
TABLES: dict[str, dict[Key, Pattern]] = {}

# (dialect, target) -> modules holding its patterns (a module's FAMILIES are imported too).
SOURCES: dict[tuple[str, str], list[str]] = {
    ("onnx", "core"): ["mlconv.passes.onnx_patterns"],
    ("tf", "core"): ["mlconv.passes.tf_patterns"],
    ("tflite", "core"): ["mlconv.passes.tflite_patterns"],
    ("core", "tflite"): ["mlconv.passes.core_to_tflite"],
}

_loaded: set[str] = set()


def register(
    dialect: str, op_name: str, version: int | None, pattern: Pattern, target: str = "core"
) -> Pattern:
    """Register `pattern` for `dialect.op_name` at since-version `version` (None: every
    version). A key registered twice is a ValueError."""
    table = TABLES.setdefault(target, {})
    op_name = _bare(dialect, op_name)
    key = (dialect, op_name, version)
    if key in table:
        label = f"{dialect}.{op_name}" + (f"-{version}" if version is not None else "")
        raise ValueError(f"two lowerings to {target} for {label}")
    table[key] = pattern
    return pattern


def lowering(
    dialect: str, op_name: str | Sequence[str], *versions: int, target: str = "core"
) -> Callable[[Pattern], Pattern]:
    """Decorator: register the pattern for `op_name` (or each of several names) at each of
    `versions` (none given: every version)."""
    names = [op_name] if isinstance(op_name, str) else list(op_name)

    def decorate(pattern: Pattern) -> Pattern:
        for name in names:
            for version in versions or (None,):
                register(dialect, name, version, pattern, target)
        return pattern

    return decorate


def add_source(dialect: str, target: str, module: str) -> None:
    """Make `module` (and its FAMILIES) load with the patterns of (dialect, target)."""
    modules = SOURCES.setdefault((dialect, target), [])
    if module not in modules:
        modules.append(module)


def load(dialect: str, target: str = "core") -> None:
    """Import the modules that register the patterns of (dialect, target)."""
    for name in SOURCES.get((dialect, target), ()):
        if name in _loaded:
            continue
        _loaded.add(name)
        module = importlib.import_module(name)
        for family in getattr(module, "FAMILIES", ()):
            importlib.import_module(f"{name}.{family}")


def lookup(dialect: str, op_name: str, version: int | None, target: str = "core") -> Pattern | None:
    """The pattern for `dialect.op_name` at since-version `version`, or None. A pattern
    registered without a version serves every version."""
    load(dialect, target)
    table = TABLES.get(target, {})
    op_name = _bare(dialect, op_name)
    found = table.get((dialect, op_name, version))
    if found is None and version is not None:
        found = table.get((dialect, op_name, None))
    return found


def patterns(dialect: str, target: str = "core") -> dict[tuple[str, int | None], Pattern]:
    """(op name, since-version) -> pattern, for every pattern of (dialect, target)."""
    load(dialect, target)
    return {
        (name, version): pattern
        for (d, name, version), pattern in TABLES.get(target, {}).items()
        if d == dialect
    }


def unregister(dialect: str, op_name: str, version: int | None, target: str = "core") -> None:
    """Remove one entry (tests and plugin unloading)."""
    TABLES.get(target, {}).pop((dialect, _bare(dialect, op_name), version), None)


def _bare(dialect: str, op_name: str) -> str:
    """Op names are keyed without their dialect: `core.Add` and `Add` are one key."""
    return op_name.removeprefix(f"{dialect}.")

"""Plugins: packages that add ops, importers, lowerings, passes and pipelines to mlconv.

A plugin is a Python entry point of the group `mlconv.plugins`, declared in its own package:

    [project.entry-points."mlconv.plugins"]
    example = "mlconv_example_plugin:register"

The function receives a `Registration` and adds to the same registries the built-ins use:

    def register(r):
        r.dialect(Example)                                   # a dialect (its ops parse and print)
        r.onnx_importer("com.example", "SoftClip", fn)       # fn(onnx.Custom op) -> op or None
        r.lowering("onnx", "com.example.SoftClip", 1, pattern)   # mlconv.passes.lowering.register
        r.lowering("custom", "com.example.SoftClip", None, p2)   # core.Custom (allow-custom)
        r.custom_op("com.example", "SoftClip", numpy_fn)     # host implementation (core.Custom)
        r.add_pass(MyPass)                                   # passes.PASSES[MyPass.name]
        r.pipeline(MyPipeline)                               # passes.PIPELINES[MyPipeline.name]

`load()` runs every installed plugin once per process; `make_context()` (every tool, and
`mlconv.compile`), the ONNX importer and `mlconv-opt --list-passes` call it. A plugin that fails
to load, or registers a name that is taken, is one `PluginError` line naming it. Setting
`MLCONV_PLUGINS=0` in the environment turns plugins off. `mlconv-opt --list-plugins` prints what
each plugin added (`describe()`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

from xdsl.ir import Dialect, Operation

from mlconv.errors import FrontendError, MlconvError

GROUP = "mlconv.plugins"


class PluginError(MlconvError):
    """A plugin could not be loaded or registered something it may not."""


@dataclass
class Plugin:
    """One loaded plugin: its entry point and what it added (`kind: name` lines)."""

    name: str
    value: str
    added: list[str] = field(default_factory=list)


PLUGINS: list[Plugin] = []
"""Every plugin loaded in this process, in load order."""

ONNX_IMPORTERS: dict[tuple[str, str], Callable[[Operation], Operation | None]] = {}
"""(domain, op type) -> importer of an ONNX node of a custom domain (see `Registration`)."""

_loaded = False


class Registration:
    """What a plugin's entry point receives: each method adds to one registry and records it."""

    def __init__(self, plugin: Plugin):
        self.plugin = plugin

    def _record(self, text: str) -> None:
        self.plugin.added.append(text)

    def _taken(self, what: str) -> PluginError:
        return PluginError(f"plugin '{self.plugin.name}': {what} is registered already")

    def dialect(self, dialect: Dialect) -> None:
        """A new dialect: its ops parse, print and verify in every tool."""
        # lazy: loads numpy, which this module does not
        from mlconv.dialects import DIALECTS

        if dialect.name in DIALECTS:
            raise self._taken(f"dialect '{dialect.name}'")
        DIALECTS[dialect.name] = lambda: dialect
        ops = ", ".join(sorted(op.name for op in dialect.operations))
        self._record(f"dialect {dialect.name}: {ops}")

    def onnx_importer(
        self, domain: str, op_type: str, importer: Callable[[Operation], Operation | None]
    ) -> None:
        """How ONNX nodes of (`domain`, `op_type`) import. `importer` receives the generic
        `onnx.Custom` op (operands, attributes, result types from ONNX shape inference) and
        returns the op to insert instead (with as many results), or None to keep it; it may
        raise `FrontendError` for a bad node."""
        key = (domain, op_type)
        if key in ONNX_IMPORTERS:
            raise self._taken(f"ONNX importer for {domain}.{op_type}")
        ONNX_IMPORTERS[key] = importer
        self._record(f"onnx importer: {domain}.{op_type}")

    def lowering(
        self,
        dialect: str,
        op_name: str,
        version: int | None,
        pattern: Callable[..., Any],
        target: str = "core",
    ) -> None:
        """A lowering pattern keyed by (dialect, op, since-version) into `target`'s table
        (`mlconv.passes.lowering.register`; an ONNX custom-domain op is `<domain>.<op_type>`
        at its domain's opset version)."""
        # lazy: loads JAX and turns on jax_enable_x64, which this module does not
        from mlconv.passes.lowering import load, register

        # The built-in patterns of (dialect, target) load lazily, on their first lookup: load
        # them now, so that a key a built-in has is refused here, naming this plugin, instead
        # of breaking every later import of that dialect.
        load(dialect, target)
        try:
            register(dialect, op_name, version, pattern, target)
        except ValueError as error:
            raise PluginError(f"plugin '{self.plugin.name}': {error}") from None
        label = f"{dialect}.{op_name}" + (f"-{version}" if version is not None else "")
        self._record(f"lowering to {target}: {label}")

    def custom_op(
        self,
        domain: str,
        op_type: str,
        function: Callable[..., Any],
        shapes: Callable[..., Any] | None = None,
    ) -> None:
        """The host implementation of core.Custom (`domain`, `op_type`); see mlconv.custom_ops."""
        # lazy: loads JAX, numpy, which this module does not
        from mlconv import custom_ops

        try:
            custom_ops.register(domain, op_type, function, shapes, origin=self.plugin.name)
        except ValueError as error:
            raise PluginError(f"plugin '{self.plugin.name}': {error}") from None
        self._record(f"custom op: {custom_ops.label(domain, op_type)}")

    def add_pass(self, pass_class: type) -> None:
        """A pass (a ModulePass subclass with a `name`), usable in every pipeline."""
        self._add_to("pass", pass_class)

    def pipeline(self, pipeline_class: type) -> None:
        """A named pipeline (a ModulePass that runs others), usable like a pass."""
        self._add_to("pipeline", pipeline_class)

    def _add_to(self, kind: str, cls: type) -> None:
        # lazy: loads JAX and turns on jax_enable_x64, which this module does not
        from mlconv.passes import PASSES, PIPELINES

        name = getattr(cls, "name", None)
        if not isinstance(name, str) or not name:
            raise PluginError(f"plugin '{self.plugin.name}': {kind} {cls.__name__} has no name")
        if name in PASSES or name in PIPELINES:
            raise self._taken(f"{kind} '{name}'")
        (PIPELINES if kind == "pipeline" else PASSES)[name] = lambda: cls
        self._record(f"{kind}: {name}")


def _one_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__


def load_entry_points(entry_points: Iterable[metadata.EntryPoint]) -> list[Plugin]:
    """Load the given entry points as plugins, in order; the first failure is a PluginError."""
    loaded = []
    for entry in entry_points:
        if any(p.name == entry.name for p in PLUGINS):
            continue
        plugin = Plugin(entry.name, entry.value)
        try:
            function = entry.load()
            function(Registration(plugin))
        except PluginError:
            raise
        except Exception as error:
            raise PluginError(
                f"plugin '{entry.name}' ({entry.value}) failed to load: {_one_line(error)}"
            ) from None
        PLUGINS.append(plugin)
        loaded.append(plugin)
    return loaded


def load() -> list[Plugin]:
    """Load every installed plugin, once per process; the plugins loaded so far."""
    global _loaded
    if _loaded:
        return PLUGINS
    _loaded = True
    if os.environ.get("MLCONV_PLUGINS", "1") == "0":
        return PLUGINS
    entries = sorted(metadata.entry_points(group=GROUP), key=lambda e: e.name)
    load_entry_points(entries)
    return PLUGINS


def describe() -> str:
    """What each plugin added, for `mlconv-opt --list-plugins`."""
    plugins = load()
    if not plugins:
        return f"No plugins installed (entry point group '{GROUP}').\n"
    lines = []
    for plugin in plugins:
        lines.append(f"{plugin.name} ({plugin.value})")
        lines.extend(f"  {text}" for text in plugin.added or ["(nothing)"])
    return "\n".join(lines) + "\n"


def onnx_importer(domain: str, op_type: str) -> Callable[[Operation], Operation | None] | None:
    """The plugin importer of ONNX (`domain`, `op_type`) nodes, or None."""
    load()
    return ONNX_IMPORTERS.get((domain, op_type))


def run_importer(
    importer: Callable[[Operation], Operation | None], op: Operation, where: str
) -> Operation:
    """Run a plugin importer on the generic op; errors become one FrontendError line at the node."""
    label = f"{op.domain.data}.{op.op_type.data}"  # type: ignore[attr-defined]
    try:
        made = importer(op)
    except FrontendError as error:
        error.location = error.location or where
        raise
    except Exception as error:
        raise FrontendError(
            f"the plugin importer of {label} failed: {_one_line(error)}", where
        ) from None
    if made is None:
        return op
    if len(made.results) != len(op.results):
        raise FrontendError(
            f"the plugin importer of {label} made {len(made.results)} results, the node has "
            f"{len(op.results)}",
            where,
        )
    if made is not op:
        op.drop_all_references()
    return made


__all__ = [
    "GROUP",
    "ONNX_IMPORTERS",
    "PLUGINS",
    "Plugin",
    "PluginError",
    "Registration",
    "describe",
    "load",
    "load_entry_points",
    "onnx_importer",
    "run_importer",
]

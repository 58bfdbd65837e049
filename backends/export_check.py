"""A serialized `jax.export` from an artifact, deserialized and checked before it can run.

    exported = deserialize_checked(data, "OUTDIR/tpu/f.jaxexport")

A `.jaxexport` is StableHLO; XLA runs whatever its `stablehlo.custom_call` ops name, and some
targets take a pointer or an index from the program itself (`xla_ffi_python_cpu_callback`
indexes a table of Python callbacks: a forged index crashed the process with SIGSEGV). So
the module's text (`Exported.mlir_module()`) is walked for every custom-call target before
anything compiles it, and only the targets mlconv's own exports hold are let through
(`ALLOWED_TARGETS`: found by converting the test models, the sharded and the batched ones,
and listing their targets). jax.export itself refuses to serialize host callbacks, so mlconv
never writes one and no manifest can ask for one: every callback target is refused.
A file that does not deserialize is a one-line error too.

The writing side lives here as well, so that every writer exports the same way:
`export_function(body, region_specs(region))` lowers a tpu.region's body for `PLATFORMS`.
"""

from __future__ import annotations

import re
from typing import Any

import jax
from jax import export

from mlconv.errors import BackendError

PLATFORMS = ("cpu", "cuda", "tpu")
"""The platforms every jax.export of mlconv (the artifact, the SavedModel form) is lowered for."""


def export_function(body: Any, specs: Any, platforms: Any = PLATFORMS, **jit_options: Any) -> Any:
    """`jax.export` of `jax.jit(body, **jit_options)` traced at `specs` (ShapeDtypeStructs),
    lowered for `platforms`: the one way mlconv writes an export."""

    return export.export(jax.jit(body, **jit_options), platforms=tuple(platforms))(*specs)


ALLOWED_TARGETS = frozenset(
    {
        # sharding annotations of the sharded exports (converter/sharding.py)
        "Sharding",
        "SPMDFullToShardShape",
        "SPMDShardToFullShape",
        # the checks jax.export writes for symbolic dimensions (the batched exports)
        "shape_assertion",
        "annotate_device_placement",
    }
)
"""Custom-call targets an mlconv artifact may hold: each side-effect free and taking no
pointer or index from the program."""

_TARGET_PATTERNS = (
    re.compile(r"custom_call\s*@([\w.$\-]+)"),
    re.compile(r'custom_call\s*@"([^"]*)"'),
    re.compile(r'call_target_name\s*=\s*"([^"]*)"'),
)


def custom_call_targets(text: str) -> set[str]:
    """Every custom-call target in StableHLO/MHLO text, pretty or generic form."""
    targets: set[str] = set()
    for pattern in _TARGET_PATTERNS:
        targets.update(pattern.findall(text))
    if "custom_call" in text and not targets:
        targets.add("<unnamed>")  # a form the patterns do not know: refused, not ignored
    return targets


def check_exported(exported: Any, where: str) -> None:
    """Refuse an export whose module calls a custom-call target outside ALLOWED_TARGETS."""
    try:
        text = exported.mlir_module()
    except Exception as error:  # noqa: BLE001 - MLIR bytecode errors of a bad file
        raise BackendError(f"{where}: cannot read the exported module: {_line(error)}") from None
    refused = sorted(custom_call_targets(text) - ALLOWED_TARGETS)
    if refused:
        raise BackendError(
            f"{where}: calls custom-call target(s) {', '.join(refused)} that mlconv does not "
            "write; refused before compiling"
        )


def deserialize_checked(data: bytes, where: str) -> Any:
    """`jax.export.deserialize(data)`, its custom calls checked (one-line BackendError)."""

    try:
        exported = export.deserialize(bytearray(data))
    except Exception as error:  # noqa: BLE001 - flatbuffer/struct errors of a bad file
        raise BackendError(f"{where}: not a serialized jax.export: {_line(error)}") from None
    check_exported(exported, where)
    return exported


def _line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    text = lines[0] if lines else ""
    return f"{type(error).__name__}: {text[:200]}" if text else type(error).__name__


def region_specs(region: Any) -> list[Any]:
    """The region's inputs as `jax.ShapeDtypeStruct`s; a dynamic shape is a one-line error."""
    # Here, not at the top: the warm path's check of a stored export (program_cache.py) runs
    # without xDSL, which mlconv.dense loads.
    from mlconv.dense import numpy_dtype

    specs = []
    for arg in region.body.block.args:
        shape = tuple(arg.type.get_shape())
        if any(d < 0 for d in shape):
            raise BackendError.at(
                region, f"has an input of dynamic shape {list(shape)}: give static input shapes"
            )
        specs.append(jax.ShapeDtypeStruct(shape, numpy_dtype(arg.type.get_element_type())))
    return specs

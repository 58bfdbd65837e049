"""The lowering driver: one for every framework.

`lower_ops` looks every op up in the registry first and, when some have no pattern (and no
`fallback` takes them), refuses the whole module before rewriting anything, with one report in
one format for every framework:

    no lowering to core for 2 onnx op type(s) at opset 20: onnx.Bernoulli-15 (2 nodes: coin_a, coin_b); onnx.RandomUniformLike-1 (1 node: noise)

With `allow_partial` such ops stay. Then each op is lowered in order: its pattern (or the
fallback) builds the new ops through the builder (at the op's location) and returns one value
per result (None for an optional result nothing uses); a used result left without a value is an
error at the op; each value replaces its result (through `finish`, by default the builder's
`refine`) and the op is erased.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from xdsl.ir import Operation, SSAValue
from xdsl.rewriter import Rewriter

from mlconv.errors import PassFailure, describe_location
from mlconv.passes.lowering.registry import Pattern, lookup

Fallback = Callable[[Operation, Any], Sequence[SSAValue | None]]
Missing = dict[tuple[str, int | None], list[str]]


def op_name(op: Operation) -> str:
    """The op's name without its dialect: `onnx.Conv` -> `Conv`."""
    return op.name.split(".", 1)[1]


def no_version(op: Operation) -> int | None:
    return None


def unsupported(
    ops: Iterable[Operation],
    dialect: str,
    *,
    target: str = "core",
    version: Callable[[Operation], int | None] = no_version,
    name: Callable[[Operation], str] = op_name,
) -> Missing:
    """(op name, since-version) -> node names, for every op without a pattern."""
    missing: Missing = defaultdict(list)
    for op in ops:
        key = (name(op), version(op))
        if lookup(dialect, key[0], key[1], target) is None:
            missing[key].append(describe_location(op.location) or "?")
    return dict(missing)


def describe(missing: Missing, dialect: str) -> list[str]:
    """One line per missing (op, version): `onnx.Bernoulli-15 (2 nodes: a, b)`."""
    lines = []
    for (name, version), nodes in sorted(missing.items(), key=lambda kv: (kv[0][0], kv[0][1] or 0)):
        label = f"{dialect}.{name}" + (f"-{version}" if version is not None else "")
        shown = ", ".join(nodes[:3]) + (", ..." if len(nodes) > 3 else "")
        plural = "node" if len(nodes) == 1 else "nodes"
        lines.append(f"{label} ({len(nodes)} {plural}: {shown})")
    return lines


HINT = (
    " (a plugin can add their lowerings, docs/extending.md; allow-custom keeps them as core.Custom,"
    " run by a host implementation registered in mlconv.custom_ops)"
)
"""What the report of framework ops without a lowering to core ends with: the two ways on."""


def report(missing: Missing, dialect: str, target: str = "core", context: str = "") -> str:
    """The one-line unsupported report, the same for every framework and target (to core: with
    `HINT`)."""
    lines = describe(missing, dialect)
    where = f" {context}" if context else ""
    hint = HINT if target == "core" else ""
    return (
        f"no lowering to {target} for {len(lines)} {dialect} op type(s){where}: "
        + "; ".join(lines)
        + hint
    )


def check(
    ops: Iterable[Operation], dialect: str, *, target: str = "core", context: str = "", **keys: Any
) -> None:
    """Raise the unsupported report when any op of `ops` has no pattern (`keys`: the
    `version` and `name` functions of `unsupported`)."""
    missing = unsupported(ops, dialect, target=target, **keys)
    if missing:
        raise PassFailure(report(missing, dialect, target, context))


def custom_options(allow_custom: bool) -> dict[str, Any]:
    """The driver options of a pass's `allow-custom` flag: ops nobody lowers become
    core.Custom (`lowering.custom.custom_fallback`)."""
    if not allow_custom:
        return {}
    # lazy: loads numpy, which this module does not
    from mlconv.passes.lowering.custom import custom_fallback

    return {"fallback": custom_fallback}


def lower_ops(
    ops: Sequence[Operation],
    dialect: str,
    builder: Callable[[Operation], Any],
    *,
    target: str = "core",
    version: Callable[[Operation], int | None] = no_version,
    name: Callable[[Operation], str] = op_name,
    allow_partial: bool = False,
    fallback: Fallback | None = None,
    context: str = "",
    finish: Callable[[Any, SSAValue, SSAValue], SSAValue] | None = None,
    keep_going: Callable[[Operation, BaseException], None] | None = None,
) -> None:
    """Lower `ops` (producers before users) with the patterns of (dialect, target).

    `builder(op)` makes the builder a pattern gets; `version(op)` is the op's since-version
    (None for unversioned frameworks); `fallback(op, builder)` lowers an op without a pattern
    (allow-custom); `finish(builder, result, value)` turns a pattern's value into the one that
    replaces `result` (default: `builder.refine(value, result.type)`). With `keep_going`
    (the dry run), an op without a pattern or whose pattern fails is handed to it with the
    error and left in place, and the lowering goes on."""
    found: list[tuple[Operation, Pattern | None]] = []
    missing: Missing = defaultdict(list)
    for op in ops:
        key = (name(op), version(op))
        pattern = lookup(dialect, key[0], key[1], target)
        if pattern is None and fallback is None and keep_going is None:
            missing[key].append(describe_location(op.location) or "?")
            if allow_partial:
                continue
        found.append((op, pattern))
    if missing and not allow_partial:
        raise PassFailure(report(dict(missing), dialect, target, context))
    for op, pattern in found:
        if pattern is None and fallback is None and keep_going is not None:
            label = describe({(name(op), version(op)): []}, dialect)[0].split(" (")[0]
            where = f" {context}" if context else ""
            keep_going(op, PassFailure.at(op, f"has no lowering to {target} ({label}{where})"))
            continue
        try:
            b = builder(op)
            produced = pattern(op, b) if pattern is not None else fallback(op, b)  # type: ignore[misc]
            replace_results(op, b, list(produced), finish)
        except Exception as error:
            if keep_going is None:
                raise
            keep_going(op, error)


def replace_results(
    op: Operation,
    b: Any,
    values: list[SSAValue | None],
    finish: Callable[[Any, SSAValue, SSAValue], SSAValue] | None = None,
) -> None:
    """Replace each result of `op` by its value and erase `op` (the result-count check)."""
    # Patterns may list optional outputs the op omits; missing trailing values are None.
    values = (values + [None] * len(op.results))[: len(op.results)]
    for result, value in zip(op.results, values, strict=True):
        if value is None:
            if result.uses:
                raise b.fail(f"output #{result.index} is used but the lowering does not produce it")
            continue
        value = finish(b, result, value) if finish is not None else b.refine(value, result.type)
        result.replace_all_uses_with(value)
    Rewriter.erase_op(op)

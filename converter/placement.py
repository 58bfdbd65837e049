"""Which concrete functions of a SavedModel go on the TPU (seed 003's `tpu_functions`), and the
checks the seed's converter makes on that choice, read from `saved_model.pb` before any import:

    placed = place_tpu_functions("saved_model/", options.tpu_functions)

Each `TpuFunction` entry selects concrete functions of the FunctionDef library: by
`function_alias` (SaveOptions.function_aliases), `concrete_function_name`, `signature_name`
(the signature's function) or `jit_compile_functions` (every function traced with
`@tf.function(jit_compile=True)`, i.e. with the `_XlaMustCompile` attribute). Refused, each as
one line:
- one function selected twice (by two entries, e.g. an alias and its concrete name);
- one placed function that indirectly calls another placed one (the seed's message: a direct
  call is fine, a call through a third function is not);
- ops the TPU cannot run (string tensors, sparse tensors, host-only ops) anywhere inside a
  placed function or the functions it calls: `'tf.StringToNumber' op isn't compilable for TPU
  device.`, for every such op at once. Outside the placed functions they stay on the host.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from mlconv.errors import OptionError, PassFailure
from mlconv.frontends.tf_importer import callees, reachable, read_saved_model

HOST_ONLY_PREFIXES = (
    "String",
    "Regex",
    "StaticRegex",
    "Sparse",
    "Decode",
    "Encode",
    "Lookup",
    "HashTable",
    "MutableHashTable",
    "InitializeTable",
    "PyFunc",
    "EagerPyFunc",
    "Print",
    "ReadFile",
    "WriteFile",
)
"""Op types that run on the host only (TensorFlow's TPU kernels have none of them)."""
HOST_ONLY_OPS = frozenset({"AsString", "Substr", "UnicodeDecode", "UnicodeEncode", "ParseExample"})
_STRING_TYPES = frozenset({7})  # tensorflow.DataType DT_STRING
_TYPE_ATTRS = ("T", "dtype", "DstT", "SrcT", "out_type", "Tout", "Tin", "Tidx", "output_types")


@dataclass(frozen=True)
class Placed:
    """One function placed on the TPU: its concrete name in saved_model.pb, and how the user
    named it (`label`, e.g. the alias) with the kind of name (function_alias, ...)."""

    concrete_name: str
    label: str
    kind: str
    entry: int


def _names(items: Iterable[str]) -> str:
    items = sorted(items)
    return ", ".join(items) if items else "(none)"


def signature_library(
    saved_model: str | os.PathLike, signature: str
) -> tuple[Any, dict, str | None]:
    """saved_model.pb's meta graph, its function library by name, and the concrete function
    `signature` runs (None when the object graph has no such signature)."""
    meta = read_saved_model(saved_model).meta_graphs[0]
    library = {f.signature.name: f for f in meta.graph_def.library.function}
    return meta, library, signature_function(meta, signature)


def bound_inputs(meta: Any, concrete: str) -> int:
    """How many of concrete function `concrete`'s last arguments the SavedModel binds to its
    captures (variables, a tf.Module's tf.constant), which the caller does not pass."""
    functions = meta.object_graph_def.concrete_functions
    return len(functions[concrete].bound_inputs) if concrete in functions else 0


def signature_function(meta: Any, signature: str) -> str | None:
    """The concrete function a signature of the object graph runs."""
    graph = meta.object_graph_def
    holder = next(
        (c.node_id for c in graph.nodes[0].children if c.local_name == "signatures"), None
    )
    if holder is None:
        return None
    for child in graph.nodes[holder].children:
        if child.local_name != signature:
            continue
        node = graph.nodes[child.node_id]
        if node.WhichOneof("kind") == "bare_concrete_function":
            return node.bare_concrete_function.concrete_function_name
        if node.WhichOneof("kind") == "function" and len(node.function.concrete_functions) == 1:
            return node.function.concrete_functions[0]
    return None


def _select(meta: Any, library: dict[str, Any], entry: Any, index: int) -> list[Placed]:
    kind = entry.WhichOneof("name")
    value = getattr(entry, kind)
    where = f"tpu_functions[{index}].{kind}"
    restorable = [n for n in meta.object_graph_def.concrete_functions if "_traced_" not in n]
    if kind == "function_alias":
        names = [
            f
            for f, a in meta.meta_info_def.function_aliases.items()
            if a == value and f in library  # traces that created variables are not saved
        ]
        if not names:
            aliases = set(meta.meta_info_def.function_aliases.values())
            raise OptionError(
                f"{where}: the model has no function alias '{value}'; aliases: {_names(aliases)}"
            )
        return [Placed(n, value, kind, index) for n in sorted(names)]
    if kind == "concrete_function_name":
        if value not in library:
            raise OptionError(
                f"{where}: the model has no concrete function '{value}'; functions: {_names(restorable)}"
            )
        return [Placed(value, value, kind, index)]
    if kind == "signature_name":
        name = signature_function(meta, value)
        if name is None:
            signatures = [k for k in meta.signature_def if not k.startswith("__")]
            raise OptionError(
                f"{where}: the model has no signature '{value}'; signatures: {_names(signatures)}"
            )
        return [Placed(name, value, kind, index)]
    must_compile = [n for n in restorable if n in library and library[n].attr["_XlaMustCompile"].b]
    if not must_compile:
        raise OptionError(f"{where}: the model has no function traced with jit_compile=True")
    return [Placed(n, n, kind, index) for n in sorted(must_compile)]


def host_only(node: Any) -> bool:
    if node.op in HOST_ONLY_OPS or node.op.startswith(HOST_ONLY_PREFIXES):
        return True
    for key in _TYPE_ATTRS:
        value = node.attr.get(key)
        if value is None:
            continue
        if value.type in _STRING_TYPES or any(t in _STRING_TYPES for t in value.list.type):
            return True
    return False


def check_placement(library: dict[str, Any], placed: Sequence[Placed]) -> None:
    """The seed's refusals: duplicates, indirect calls between TPU functions, host-only ops."""
    first: dict[str, Placed] = {}
    for item in placed:
        earlier = first.setdefault(item.concrete_name, item)
        if earlier is not item:
            raise OptionError(
                f"tpu_functions[{item.entry}].{item.kind}: '{item.label}' selects the function "
                f"{item.concrete_name}, already selected by tpu_functions[{earlier.entry}]"
                f".{earlier.kind} '{earlier.label}'; provide a given function only once"
            )
    for a in placed:
        for b in placed:
            if a is b:
                continue
            through = callees(library[a.concrete_name]) - {b.concrete_name}
            if b.concrete_name in reachable(library, through):
                raise OptionError(
                    f'Unable to place both "{a.label}" and "{b.label}" on the TPU because '
                    f'"{a.label}" indirectly calls "{b.label}". This behavior is unsupported '
                    "because it can cause invalid graphs to be generated."
                )
    problems = []
    for item in placed:
        for name in sorted(reachable(library, [item.concrete_name])):
            for node in library[name].node_def:
                if host_only(node):
                    problems.append((f"{item.label}/{node.name}", node.op))
    if problems:
        located = [f"'tf.{op}' op isn't compilable for TPU device." for _, op in problems]
        where = "; ".join(
            f"{text} (node {loc})" for text, (loc, _) in zip(located, problems, strict=True)
        )
        raise PassFailure(where if len(problems) > 1 else located[0], problems[0][0])


def place_tpu_functions(
    saved_model: str | os.PathLike, tpu_functions: Sequence[Any]
) -> list[Placed]:
    """The concrete functions `tpu_functions` selects (none given: the `serving_default`
    signature), checked as the seed's converter checks them."""
    meta = read_saved_model(saved_model).meta_graphs[0]
    library = {f.signature.name: f for f in meta.graph_def.library.function}
    if not tpu_functions:
        name = signature_function(meta, "serving_default")
        if name is None:
            raise OptionError(
                f"'{saved_model}' has no serving_default signature: name the TPU function with tpu_functions"
            )
        placed = [Placed(name, "serving_default", "signature_name", -1)]
    else:
        placed = [
            p
            for index, entry in enumerate(tpu_functions)
            for p in _select(meta, library, entry, index)
        ]
    check_placement(library, placed)
    return placed


FREE_OPS = frozenset(
    {
        "Placeholder",
        "Identity",
        "IdentityN",
        "NoOp",
        "Const",
        "PartitionedCall",
        "StatefulPartitionedCall",
        "ReadVariableOp",
        "Reshape",
    }
)
"""Host ops the cost model counts as free: data movement, calls (their callee is counted)."""


def host_cost(saved_model: str | os.PathLike, placed: Sequence[Placed]) -> int:
    """The host's work in the signatures, outside the placed functions: one unit per output
    element of each computing op (shapes from TensorFlow's own shape inference on each
    FunctionDef), the unit of XLA's FLOP count for the TPU functions."""
    # TensorFlow: optional (mlconv[tf]) and seconds to load; only this path needs it
    from tensorflow.python.framework.function_def_to_graph import function_def_to_graph

    meta = read_saved_model(saved_model).meta_graphs[0]
    library = {f.signature.name: f for f in meta.graph_def.library.function}
    stop = {p.concrete_name for p in placed}
    todo = [signature_function(meta, k) for k in meta.signature_def if not k.startswith("__")]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name is None or name in seen or name in stop or name not in library:
            continue
        seen.add(name)
        todo.extend(callees(library[name]))
    # TensorFlow: optional (mlconv[tf]) and seconds to load; only this path needs it
    import tensorflow as tf
    from tensorflow.core.framework import graph_pb2

    holder = graph_pb2.GraphDef()
    holder.library.CopyFrom(meta.graph_def.library)
    cost = 0
    with tf.Graph().as_default():
        tf.graph_util.import_graph_def(holder, name="")  # the library, so calls resolve
        for name in sorted(seen):
            cost += _function_cost(function_def_to_graph, library[name])
    return cost


def _function_cost(function_def_to_graph: Any, function_def: Any) -> int:
    try:
        graph = function_def_to_graph(function_def)
    except Exception:  # a function TensorFlow cannot rebuild: one unit per computing op
        return sum(n.op not in FREE_OPS for n in function_def.node_def)
    cost = 0
    for op in graph.get_operations():
        if op.type in FREE_OPS:
            continue
        for output in op.outputs:
            shape = output.shape
            known = shape.rank is not None and None not in shape.as_list()
            cost += shape.num_elements() if known else 1
    return cost

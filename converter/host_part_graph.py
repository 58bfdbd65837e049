"""The host part of a SavedModel signature that mlconv cannot convert, kept in TensorFlow:

    graph, recipe = host_graph("saved_model/", "strings", {"tpu_func": "__inference_tpu_func_81"}, arity)

`host_graph` freezes the signature (as frontends/tf_importer.py does), takes out the inlined
bodies of its calls into placed functions (found by their call path, as in
converter/host_part_split.py) and turns each call's outputs (`Func/<path>/output/_N`) into
Placeholders; converter/host_part.py prunes the GraphDef per TPU call with TensorFlow and runs
the calls as the artifact's StableHLO in between. `host_only_ops` names the op types that made
the signature stay in TensorFlow (strings, sparse, ...: tf_placement's list).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mlconv.converter.host_part_split import CALLS, DT_RESOURCE, HostPartError, call_paths


def host_only_ops(
    saved_model: str | os.PathLike, signature: str, placed: Mapping[str, str]
) -> list[str]:
    """The op types of the signature's host part that only TensorFlow runs (strings, sparse,
    ...: tf_placement's list), outside the placed functions, as `tf.<Op>`."""
    # lazy: loads 3 more modules (converter, frontends)
    from mlconv.converter.placement import FREE_OPS, host_only, signature_library

    _, library, start = signature_library(saved_model, signature)
    stop = set(placed.values())
    seen: set[str] = set()
    todo = [start] if start in library else []
    while todo:
        name = todo.pop()
        if name in seen or name in stop:
            continue
        seen.add(name)
        todo.extend(
            n.attr["f"].func.name
            for n in library[name].node_def
            if n.op in CALLS and n.attr["f"].func.name in library
        )
    found = {
        n.op
        for name in seen
        for n in library[name].node_def
        if n.op not in FREE_OPS and host_only(n)  # not what merely passes strings on
    }
    return [f"tf.{op}" for op in sorted(found)]


def _tensor(name: str) -> str:
    return name if ":" in name else f"{name}:0"


def host_graph(
    saved_model: str | os.PathLike,
    signature: str,
    placed: Mapping[str, str],
    arity: Mapping[str, tuple[int, int]],
) -> tuple[bytes, dict[str, Any]]:
    """The host part of a signature mlconv cannot convert, kept as TensorFlow: the signature's
    frozen graph without the bodies of its TPU calls, each call's outputs a Placeholder the
    loader feeds with the TPU function's results (converter/host_part.py). Returns the
    GraphDef's bytes and how to run it: input and output tensors by name, and the TPU calls
    in an order where each one's inputs depend on earlier calls only."""
    # TensorFlow: optional (mlconv[tf]) and seconds to load; only this path needs it
    from tensorflow.core.framework import graph_pb2

    # lazy: loads 3 more modules (converter, frontends)
    from mlconv.converter.placement import signature_library
    from mlconv.frontends.tf_importer import io_names, pick, quiet_tensorflow

    tf = quiet_tensorflow()
    # TensorFlow: optional (mlconv[tf]) and seconds to load; only this path needs it
    from tensorflow.python.framework.convert_to_constants import (
        convert_variables_to_constants_v2,
    )

    _, library, start = signature_library(saved_model, signature)
    if start is None or start not in library:
        raise HostPartError(f"signature '{signature}': its function is not in saved_model.pb")
    by_concrete = {concrete: name for name, concrete in placed.items()}
    if start in by_concrete:
        raise HostPartError(f"signature '{signature}' is placed whole: it has no host part")
    paths = call_paths(library, start, by_concrete)
    fn, _, _loaded = pick(Path(saved_model), tf, signature, None, None)
    in_names, out_names = io_names(fn, True)
    frozen = convert_variables_to_constants_v2(fn, lower_control_flow=False)
    graph = frozen.graph.as_graph_def()
    nodes = {node.name: node for node in graph.node}
    removed: set[str] = set()
    calls = []
    for path, name in sorted(paths.items()):
        args = library[placed[name]].signature.input_arg
        inputs = sorted(
            (int(m.group(1)), n)
            for n in nodes
            if (m := re.fullmatch(rf"Func/{re.escape(path)}/input/_(\d+)", n))
        )
        outputs = sorted(
            (int(m.group(1)), n)
            for n in nodes
            if (m := re.fullmatch(rf"Func/{re.escape(path)}/output/_(\d+)", n))
        )
        if len(inputs) != len(args):
            raise HostPartError(
                f"signature '{signature}': the call {path} of {name} was not inlined by "
                "TensorFlow's function inliner"
            )
        feeds = [
            _tensor(n) for (_, n), a in zip(inputs, args, strict=True) if a.type != DT_RESOURCE
        ]
        fetched = [_tensor(n) for _, n in outputs]
        if (len(feeds), len(fetched)) != tuple(arity[name]):
            raise HostPartError(
                f"signature '{signature}': the call {path} of {name} does not match the "
                f"converted function ({arity[name]} inputs and outputs)"
            )
        for _, n in outputs:  # fed by the loader with the TPU function's results
            node = nodes[n]
            dtype = node.attr["T"].type
            node.op = "Placeholder"
            del node.input[:]
            node.attr.clear()
            node.attr["dtype"].type = dtype
        removed.update(n for n in nodes if n.startswith(path + "/"))
        calls.append({"call": name, "path": path, "inputs": feeds, "outputs": fetched})
    kept = graph_pb2.GraphDef()
    kept.versions.CopyFrom(graph.versions)
    kept.library.CopyFrom(graph.library)
    for node in graph.node:
        if node.name in removed:
            continue
        data = [i for i in node.input if not i.startswith("^")]
        if any(i.split(":")[0] in removed for i in data):
            continue  # only a TPU body reads it; it is pruned below
        controls = [i for i in node.input if i.startswith("^") and i[1:] not in removed]
        copy = kept.node.add()
        copy.CopyFrom(node)
        del copy.input[:]
        copy.input.extend([*data, *controls])
    fetches = [t.name for t in frozen.outputs] + [t for c in calls for t in c["inputs"]]
    kept = tf.compat.v1.graph_util.extract_sub_graph(
        kept, sorted({t.split(":")[0] for t in fetches})
    )
    calls = _call_order(kept, calls)
    entry = {
        "input_tensors": dict(zip(in_names, [_tensor(t.name) for t in frozen.inputs], strict=True)),
        "output_tensors": dict(zip(out_names, [t.name for t in frozen.outputs], strict=True)),
        "calls": calls,
    }
    return kept.SerializeToString(), entry


def _call_order(graph: Any, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The calls ordered so that each one's inputs depend on earlier calls' outputs only."""
    inputs = {n.name: [i.lstrip("^").split(":")[0] for i in n.input] for n in graph.node}

    def upstream(tensors: list[str]) -> set[str]:
        seen: set[str] = set()
        todo = [t.split(":")[0] for t in tensors]
        while todo:
            name = todo.pop()
            if name not in seen and name in inputs:
                seen.add(name)
                todo.extend(inputs[name])
        return seen

    needs = {
        c["path"]: {
            d["path"]
            for d in calls
            if d is not c and upstream(c["inputs"]) & {t.split(":")[0] for t in d["outputs"]}
        }
        for c in calls
    }
    ordered: list[dict[str, Any]] = []
    while len(ordered) < len(calls):
        ready = [
            c
            for c in calls
            if c not in ordered and needs[c["path"]] <= {d["path"] for d in ordered}
        ]
        if not ready:
            raise HostPartError("the TPU calls of the signature depend on each other in a cycle")
        ordered.append(ready[0])
    return ordered

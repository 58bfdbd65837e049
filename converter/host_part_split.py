"""The host part of a SavedModel's signatures: what each signature computes around its calls
into the placed TPU functions, split into host stages that mlconv can convert on their own.

    plan = split_signature("saved_model/", "serving_default", {"tpu_func": "__inference_tpu_func_81"})
    plan.stages        # [HostStage(name, module, inputs)]: tf-dialect modules, one per stage
    plan.steps         # the order: host stages and TPU calls, with where each input comes from

The signature is imported whole (frontends/tf_importer.py: variables frozen, calls inlined by
TensorFlow's function inliner, which names a callee's boundary `Func/<call path>/input/_N` and
`Func/<call path>/output/_N`). Each call of a placed function is found by its call path in
saved_model.pb (the chain of PartitionedCall node names from the signature's function down to
it); its inlined body is left out and its outputs become the TPU call's. The remaining ops are
grouped by how many TPU calls they come after: stage 0 runs before any TPU call (e.g.
preprocessing), stage 1 after the calls it feeds, and so on. Constants are copied into each
stage that reads them. A reference is `{"input": i}` (the signature's i-th input) or
`{"step": j, "output": k}` (the k-th output of the j-th step).

Anything this cannot follow (a call TensorFlow did not inline, a callee whose inputs do not
match the converted TPU function, an op the importer refuses such as a string input) is a
`HostPartError` or the importer's error; the converter then keeps the host part in
TensorFlow (converter/host_part_graph.py).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue

from mlconv.errors import MlconvError, describe_location
from mlconv.signature.main_function import main_function

CALLS = ("PartitionedCall", "StatefulPartitionedCall")
DT_RESOURCE = 20


class HostPartError(MlconvError):
    """The host part of a signature cannot be split out for mlconv (TensorFlow runs it)."""


@dataclass
class HostStage:
    """One host stage: a tf-dialect module (`@main`) and where each of its inputs comes from."""

    name: str
    module: ModuleOp
    inputs: list[dict[str, int]]


@dataclass
class SignaturePlan:
    """A signature as steps: `{"host": stage name, "inputs": refs}` or `{"call": TPU function
    name, "inputs": refs}`, in the order they run; `outputs` are the signature's, by name."""

    signature: str
    input_names: list[str]
    steps: list[dict[str, Any]] = field(default_factory=list)
    stages: list[HostStage] = field(default_factory=list)
    outputs: list[dict[str, Any]] = field(default_factory=list)


def signatures(saved_model: str | os.PathLike) -> list[str]:
    # lazy: loads 2 more modules (frontends)
    from mlconv.frontends.tf_importer import read_saved_model

    meta = read_saved_model(saved_model).meta_graphs[0]
    return sorted(k for k in meta.signature_def if not k.startswith("__"))


def call_paths(library: Mapping[str, Any], start: str, placed: Mapping[str, str]) -> dict[str, str]:
    """Call path (`a/b`) -> artifact function name, for each call of a placed concrete function
    (`placed`: concrete name -> artifact name) reachable from the function `start`."""
    found: dict[str, str] = {}

    def walk(name: str, prefix: str, depth: int) -> None:
        if depth > 32:
            raise HostPartError(f"calls nest deeper than 32 levels below {start}")
        for node in library[name].node_def:
            if node.op not in CALLS:
                continue
            callee = node.attr["f"].func.name
            path = f"{prefix}{node.name}"
            if callee in placed:
                found[path] = placed[callee]
            elif callee in library:
                walk(callee, path + "/", depth + 1)

    walk(start, "", 0)
    return found


def _boundary(op: Operation, path: str, kind: str) -> int | None:
    match = re.fullmatch(
        rf"Func/{re.escape(path)}/{kind}/_(\d+)", describe_location(op.location) or ""
    )
    return int(match.group(1)) if match else None


def split_signature(
    saved_model: str | os.PathLike,
    signature: str,
    placed: Mapping[str, str],
    arity: Mapping[str, tuple[int, int]],
) -> SignaturePlan:
    """The signature as host stages and TPU calls (`placed`: artifact function name -> concrete
    function name; `arity`: artifact function name -> its numbers of inputs and outputs)."""
    # lazy: loads 3 more modules (converter, frontends)
    from mlconv.converter.placement import bound_inputs, signature_library
    from mlconv.frontends.tf_importer import import_tf, reachable

    meta, library, start = signature_library(saved_model, signature)
    if start is None or start not in library:
        raise HostPartError(f"signature '{signature}': its function is not in saved_model.pb")
    by_concrete = {concrete: name for name, concrete in placed.items()}
    module = import_tf(saved_model, signature=signature)
    main = next(op for op in module.ops if isinstance(op, func.FuncOp))
    block = main.body.block
    if start in by_concrete:  # the signature's function is placed itself: no host part
        return _whole(signature, main, by_concrete[start])
    paths = call_paths(library, start, by_concrete)
    hidden = reachable(library, [start]) & by_concrete.keys() - {placed[n] for n in paths.values()}
    if hidden:  # e.g. called from a branch of tf.cond: not split out here
        names = ", ".join(sorted(by_concrete[c] for c in hidden))
        raise HostPartError(
            f"signature '{signature}': calls {names} other than through PartitionedCall"
        )
    body_ops: set[Operation] = set()
    calls = []  # (artifact name, input values, output values)
    for path, name in sorted(paths.items()):
        concrete = placed[name]
        args = library[concrete].signature.input_arg
        inputs = sorted(
            (n, op) for op in block.ops if (n := _boundary(op, path, "input")) is not None
        )
        outputs = sorted(
            (n, op) for op in block.ops if (n := _boundary(op, path, "output")) is not None
        )
        if len(inputs) != len(args):
            raise HostPartError(
                f"signature '{signature}': the call {path} of {name} was not inlined by "
                "TensorFlow's function inliner"
            )
        called = len(args) - bound_inputs(meta, concrete)  # the captures are frozen
        values = [
            op.results[0]
            for (_, op), arg in zip(inputs[:called], args[:called], strict=True)
            if arg.type != DT_RESOURCE
        ]
        results = [op.results[0] for _, op in outputs]
        if (len(values), len(results)) != tuple(arity[name]):
            raise HostPartError(
                f"signature '{signature}': the call {path} of {name} has {len(values)} inputs "
                f"and {len(results)} outputs, the converted function {arity[name]}"
            )
        body_ops.update(
            op for op in block.ops if (describe_location(op.location) or "").startswith(path + "/")
        )
        body_ops.update(op for _, op in outputs)
        calls.append((name, values, results))
    return _plan(signature, main, body_ops, calls)


def _whole(signature: str, main: func.FuncOp, name: str) -> SignaturePlan:
    # lazy: loads JAX, numpy, which this module does not
    from mlconv.signature.module_io import value_names

    block = main.body.block
    count = len(block.last_op.operands)
    plan = SignaturePlan(signature, value_names(main.arg_attrs, len(block.args), "input"))
    plan.steps = [{"call": name, "inputs": [{"input": i} for i in range(len(block.args))]}]
    names = value_names(main.res_attrs, count, "output")
    plan.outputs = [{"name": n, "value": {"step": 0, "output": k}} for k, n in enumerate(names)]
    return plan


def _plan(
    signature: str, main: func.FuncOp, body_ops: set[Operation], calls: list
) -> SignaturePlan:
    # lazy: loads JAX, numpy, which this module does not
    from mlconv.signature.module_io import value_names

    block = main.body.block
    returned = list(block.last_op.operands)
    produced_by_call = {
        v: (c, k) for c, (_, _, outs) in enumerate(calls) for k, v in enumerate(outs)
    }
    host_ops = [op for op in block.ops if op not in body_ops and op is not block.last_op]
    # Live host ops: backwards from what is returned and what the TPU calls read.
    live: set[Operation] = set()
    todo = [*returned, *(v for _, ins, _ in calls for v in ins)]
    while todo:
        value = todo.pop()
        owner = value.owner
        if not isinstance(owner, Operation) or owner in live or value in produced_by_call:
            continue
        if owner in body_ops:
            raise HostPartError(f"signature '{signature}': a host op reads inside a TPU function")
        live.add(owner)
        todo.extend(owner.operands)
    # Levels: inputs 0; a host op the highest of its operands; a call's outputs one past its inputs.
    level: dict[SSAValue, int] = {arg: 0 for arg in block.args}
    call_level: list[int] = [-1] * len(calls)
    pending = [op for op in host_ops if op in live]
    constants = {op for op in pending if not op.operands and not op.regions}

    def of(value: SSAValue) -> int | None:
        if isinstance(value.owner, Operation) and value.owner in constants:
            return 0
        return level.get(value)

    progress = True
    while progress:
        progress = False
        for c, (_, ins, outs) in enumerate(calls):
            if call_level[c] < 0 and all(of(v) is not None for v in ins):
                call_level[c] = max((of(v) for v in ins), default=0)
                level.update({v: call_level[c] + 1 for v in outs})
                progress = True
        for op in pending:
            if op.results and op.results[0] in level:
                continue
            known = [of(v) for v in op.operands]
            if all(k is not None for k in known):
                level.update({r: max(known, default=0) for r in op.results})
                progress = True
    plan = SignaturePlan(signature, value_names(main.arg_attrs, len(block.args), "input"))
    refs: dict[SSAValue, dict[str, int]] = {arg: {"input": i} for i, arg in enumerate(block.args)}
    top = max([0, *(lvl + 1 for lvl in call_level)])
    for stage_level in range(top + 1):
        ops = [
            op for op in pending if op not in constants and level.get(op.results[0]) == stage_level
        ]
        if ops:
            _add_stage(plan, signature, ops, constants, refs, returned, calls, pending)
        for c, (name, ins, outs) in enumerate(calls):
            if call_level[c] == stage_level:
                for v in ins:
                    _ensure_ref(plan, signature, v, constants, refs)
                plan.steps.append({"call": name, "inputs": [refs[v] for v in ins]})
                refs.update(
                    {v: {"step": len(plan.steps) - 1, "output": k} for k, v in enumerate(outs)}
                )
    for value in returned:
        _ensure_ref(plan, signature, value, constants, refs)
    names = value_names(main.res_attrs, len(returned), "output")
    plan.outputs = [{"name": n, "value": refs[v]} for n, v in zip(names, returned, strict=True)]
    return plan


def _ensure_ref(plan, signature, value, constants, refs) -> None:
    """A constant read directly by a call or returned gets a stage of its own."""
    if value not in refs:
        if not (isinstance(value.owner, Operation) and value.owner in constants):
            raise HostPartError(f"signature '{signature}': a value is read before it is computed")
        _add_stage(plan, signature, [], constants, refs, [value], [], [], extra=[value])


def _add_stage(plan, signature, ops, constants, refs, returned, calls, pending, extra=()) -> None:
    """A stage module computing `ops` (cloned, with the constants they read); its outputs are
    the values later stages, calls or the return read."""
    mine = set(ops)
    later_readers = [op for op in pending if op not in mine and op not in constants]
    read_later = {v for op in later_readers for v in op.operands}
    read_later.update(returned)
    read_later.update(v for _, ins, _ in calls for v in ins)
    inputs: list[SSAValue] = []
    for op in ops:
        for v in op.operands:
            if v not in inputs and not (
                isinstance(v.owner, Operation) and v.owner in mine | constants
            ):
                inputs.append(v)
    stage_block = Block(arg_types=[v.type for v in inputs])
    mapping: dict[SSAValue, SSAValue] = dict(zip(inputs, stage_block.args, strict=True))

    def constant(v: SSAValue) -> SSAValue:
        if v not in mapping:
            clone = v.owner.clone()
            stage_block.add_op(clone)
            mapping.update(zip(v.owner.results, clone.results, strict=True))
        return mapping[v]

    for op in ops:
        for v in op.operands:
            if isinstance(v.owner, Operation) and v.owner in constants:
                constant(v)
        clone = op.clone(value_mapper=dict(mapping))
        stage_block.add_op(clone)
        mapping.update(zip(op.results, clone.results, strict=True))
    outputs = [r for op in ops for r in op.results if r in read_later]
    for v in extra:
        constant(v)
        outputs.append(v)
    stage_block.add_op(func.ReturnOp(*[mapping[v] for v in outputs]))
    name = f"{signature}.host_{len(plan.stages)}"
    names = [f"in{i}" for i in range(len(inputs))], [f"out{i}" for i in range(len(outputs))]
    main = main_function(stage_block, *names)
    for v in inputs:
        _ensure_ref(plan, signature, v, constants, refs)
    plan.stages.append(HostStage(name, ModuleOp([main]), [refs[v] for v in inputs]))
    plan.steps.append({"host": name, "inputs": [refs[v] for v in inputs]})
    refs.update({v: {"step": len(plan.steps) - 1, "output": k} for k, v in enumerate(outputs)})

"""The onnx-level interpreter: each onnx-dialect op runs as one ONNX node under
`onnx.reference` (the ONNX project's own numpy implementation of the operator specs).

This is the reference for the IR before and after onnx-normalize and onnx-decompose and for
the IR before onnx-to-core. Why node by node rather than writing the whole module back to one
`ModelProto` for onnxruntime: the front phase leaves IR that is not a valid model at the
module's opset (onnx-normalize turns TopK-1's `k` attribute into the `K` input of TopK-10 and
keeps opset 1), so each op runs at the since-version whose inputs its operands fill: the
module's own since-version when they fit, else the first newer version of the op that has
those inputs, which is what the normalized IR means. onnx.reference shares no code with
mlconv or with onnxruntime (the end-to-end oracle), so a pass cannot be checked against
itself. onnx.reference implements many ops at their newest version only, so each node is
first rewritten to the newest opset by ONNX's own version converter (`_evaluator`).
`onnx.If` runs the selected branch op by op; Loop and Scan bodies are not run.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np
import onnx
import onnx.helper
import onnx.numpy_helper
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    TensorType,
)
from xdsl.interpreter import (
    Interpreter,
    OpImplResult,
    PythonValues,
    impl,
    impl_terminator,
    register_impls,
)

from mlconv import custom_ops
from mlconv.dense import numpy_dtype, to_numpy
from mlconv.dialects import onnx as onnx_dialect
from mlconv.dialects.core_custom import ATTRS
from mlconv.dialects.segments import operand_groups, result_groups
from mlconv.errors import BackendError
from mlconv.interpreters.common import LevelFunctions, checked, yield_operands

_TYPES = {
    "INT": onnx.AttributeProto.INT,
    "FLOAT": onnx.AttributeProto.FLOAT,
    "STRING": onnx.AttributeProto.STRING,
    "INTS": onnx.AttributeProto.INTS,
    "FLOATS": onnx.AttributeProto.FLOATS,
    "STRINGS": onnx.AttributeProto.STRINGS,
    "TENSOR": onnx.AttributeProto.TENSOR,
}


def module_opset(module: ModuleOp | None) -> int:
    """The default-domain opset the module imports (the newest ONNX knows if it says none)."""
    opsets = module.attributes.get("onnx.opset_import") if module is not None else None
    if opsets is not None and "" in opsets.data:
        return int(opsets.data[""].value.data)
    return onnx.defs.onnx_opset_version()


def node_version(op: onnx_dialect.OnnxOp, opset: int) -> int:
    """The since-version `op` runs at: the module's, or the first newer one whose positional
    inputs hold every operand slot the op fills (what onnx-normalize's moves mean)."""
    used = {slot for slot, group in enumerate(operand_groups(op)) if group}
    since = op.since_version(opset)
    candidates = [v for v in sorted(op.INPUT_SLOTS) if since is None or v >= since]
    for version in candidates:
        if used <= set(op.INPUT_SLOTS[version]):
            return version
    raise BackendError.at(op, "has operands that no version of its ONNX op takes")


def _positional(
    slots: tuple[int, ...], kinds: tuple[str, ...], groups: list[list[Any]]
) -> list[Any]:
    """Values of slot groups laid out as the node's positional list (None for an absent
    optional input; a variadic last slot takes the rest)."""
    out: list[Any] = []
    for position, slot in enumerate(slots):
        group = groups[slot]
        if kinds[slot] == "variadic" and position == len(slots) - 1:
            out.extend(group)
        else:
            out.append(group[0] if group else None)
    while out and out[-1] is None:
        out.pop()
    return out


def _attribute(name: str, attr: Any, schema_types: tuple[str, ...]) -> onnx.AttributeProto | None:
    if isinstance(attr, DenseIntOrFPElementsAttr):
        return onnx.helper.make_attribute(name, onnx.numpy_helper.from_array(to_numpy(attr)))
    if isinstance(attr, IntegerAttr | FloatAttr | StringAttr):
        return onnx.helper.make_attribute(name, onnx_dialect.attribute_value(attr))
    if isinstance(attr, ArrayAttr):
        values = onnx_dialect.attribute_value(attr)
        listed = [t for t in schema_types if t.endswith("S") and t in _TYPES]
        kind = _TYPES[listed[0]] if listed else None
        if values and kind is None:
            return onnx.helper.make_attribute(name, values)
        return onnx.helper.make_attribute(name, values, attr_type=kind)
    return None


def node_proto(op: onnx_dialect.OnnxOp, version: int) -> tuple[onnx.NodeProto, list[int]]:
    """One NodeProto for `op` at `version` over inputs named i0.., and, for each positional
    input, the index of the operand it reads (-1: absent)."""
    index = {id(v): i for i, v in enumerate(op.operands)}
    groups = [[index[id(v)] for v in g] for g in operand_groups(op)]
    positions = _positional(op.INPUT_SLOTS[version], op.INPUT_KINDS, groups)
    out_groups = [[str(i) for i in range(len(g))] for g in result_groups(op)]
    count = sum(len(g) for g in out_groups)
    outputs = [f"o{i}" for i in range(count)]
    attributes = []
    for name, attr in op.attributes.items():
        if name in op.ATTRIBUTE_TYPES and name not in op.GRAPH_ATTRIBUTES:
            proto = _attribute(name, attr, op.ATTRIBUTE_TYPES[name])
            if proto is None:
                raise BackendError.at(op, f"attribute '{name}' cannot be written as ONNX")
            attributes.append(proto)
    node = onnx.helper.make_node(
        op.ONNX_OP_TYPE,
        ["" if p is None else f"i{p}" for p in positions],
        outputs,
    )
    node.attribute.extend(attributes)
    return node, [-1 if p is None else p for p in positions]


@lru_cache(maxsize=1024)
def _evaluator(serialized: bytes, version: int) -> Any:
    from onnx.reference import ReferenceEvaluator

    node = onnx.NodeProto()
    node.ParseFromString(serialized)
    # In a model, so that the implementation of `version` is picked (a bare NodeProto gets
    # the newest one whatever `opsets` says: Softmax-1's 2-D coercion was lost that way).
    graph = onnx.helper.make_graph(
        [node],
        "node",
        [onnx.helper.make_empty_tensor_value_info(n) for n in node.input if n],
        [onnx.helper.make_empty_tensor_value_info(n) for n in node.output],
    )
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", version)])
    # onnx.reference implements many ops at their newest version only (its one Softmax is
    # Softmax-13's, without Softmax-1's 2-D coercion): ONNX's own version converter rewrites
    # the node into the newest opset first (Softmax-1 -> Flatten, Softmax-13, Reshape).
    newest = onnx.defs.onnx_opset_version()
    if version < newest:
        from onnx import version_converter

        try:
            model = version_converter.convert_version(model, newest)
        except Exception:  # no adapter for this op: the node runs at its own version
            pass
    return ReferenceEvaluator(model)


def run_onnx_op(
    ft: OnnxFunctions, interpreter: Interpreter, op: onnx_dialect.OnnxOp, values: PythonValues
) -> OpImplResult:
    if op.regions:
        raise BackendError.at(op, "has subgraphs; the onnx-level interpreter runs only If's")
    version = node_version(op, ft.opset)
    node, positions = node_proto(op, version)
    feeds = {f"i{p}": np.asarray(values[p]) for p in positions if p >= 0}
    results = _evaluator(node.SerializeToString(), version).run(None, feeds)
    return OpImplResult(checked(op, results[: len(op.results)]), None)


@register_impls
class OnnxFunctions(LevelFunctions):
    """Implementations of every onnx-dialect op (`run_onnx_op`), onnx.If and onnx.Yield."""

    OPS = list(onnx_dialect.OPS.values())
    RUN_OP = run_onnx_op

    def __init__(self, module: ModuleOp | None = None):
        super().__init__(module)
        self.opset = module_opset(module)

    @impl(onnx_dialect.IfOp)
    def run_if(self, interpreter: Interpreter, op: Any, args: PythonValues):
        condition = np.asarray(args[0])
        region = op.regions[0] if bool(condition.reshape(())) else op.regions[1]
        return checked(op, interpreter.run_ssacfg_region(region, (), "onnx.If"))

    @impl(onnx_dialect.CustomOp)
    def run_custom(self, interpreter: Interpreter, op: Any, args: PythonValues):
        """A node of a custom domain (a plugin's op) by the host implementation registered
        for its (domain, op type) in `mlconv.custom_ops`, as core.Custom runs it."""
        domain, op_type = op.domain.data, op.op_type.data
        problem = custom_ops.missing_implementation(domain, op_type)
        if problem:
            raise BackendError.at(op, problem)
        declared = tuple(
            (tuple(r.type.get_shape()), numpy_dtype(r.type.get_element_type()))
            if isinstance(r.type, TensorType)
            else ((-1,), None)
            for r in op.results
        )
        arrays = [np.asarray(a) for a in args]
        outputs = custom_ops.custom_call(arrays, domain, op_type, ATTRS.decode(op.attrs), declared)
        return checked(op, outputs)

    @impl(onnx_dialect.DropoutOp)
    def run_dropout(self, interpreter: Interpreter, op: Any, args: PythonValues):
        """Inference Dropout is the identity with an all-true mask (onnx.reference's
        Dropout-7 fails: it passes Dropout-12's `seed` to itself). Training mode draws
        random numbers: no reference value exists, so it is refused."""
        groups = operand_groups(op)
        slots = dict(zip(op.INPUTS, groups, strict=True))
        training = slots.get("training_mode") or []
        ratio = slots.get("ratio") or []
        values = dict(zip(op.operands, args, strict=True))
        trains = bool(np.asarray(values[training[0]]).reshape(())) if training else False
        drops = float(np.asarray(values[ratio[0]]).reshape(())) if ratio else 0.5
        if trains and drops > 0:
            raise BackendError.at(op, "in training mode is random: it has no reference value")
        data = np.asarray(args[0])
        outputs = (data, np.ones(data.shape, dtype=bool))[: len(op.results)]
        return checked(op, outputs)

    run_yield = impl_terminator(onnx_dialect.YieldOp)(yield_operands)

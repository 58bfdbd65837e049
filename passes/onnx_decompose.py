"""onnx-decompose: ONNX ops the spec defines as functions become their function bodies.

Input: onnx dialect. Output: every op whose schema at the module's opset has a function body
(`has_function`) or a context-dependent one (`has_context_dependent_function`: the body
depends on the node's attributes and input types) is replaced by the body's onnx ops, expanded
recursively. One mechanism for all of them: the body comes from `onnx.defs`, is bound to the
node's inputs/outputs/attributes, and is imported by the ONNX frontend, so
it has the same shape inference as any model. With the default `all=false` only ops without a
lowering to core are expanded (a native lowering wins); `all=true` expands every function op.

    %y = "onnx.Celu"(%x) {alpha = 2.0 : f32} : (tensor<3xf32>) -> tensor<3xf32>
becomes
    %alpha = "onnx.Constant"() {value_float = 2.0 : f32} : () -> tensor<f32>
    %d = "onnx.Div"(%x, %alpha) ...  %e = "onnx.Elu"(%d) {alpha = 1.0 : f32} ...
    %y = "onnx.Mul"(%alpha, %e) ...
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx
import onnx.defs
import onnx.helper
import onnx.numpy_helper
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from mlconv.dense import numpy_dtype
from mlconv.dialects import onnx as onnx_dialect
from mlconv.dialects.segments import operand_groups, result_groups
from mlconv.errors import FrontendError
from mlconv.passes.lowering import patterns as registered
from mlconv.passes.onnx_to_core import default_opset

_MAX_DEPTH = 8  # bodies that use other function ops (SoftmaxCrossEntropyLoss -> NLLLoss)


def _function_versions(schema: onnx.defs.OpSchema) -> list[tuple[int, bool]]:
    """(opset, context-dependent?) of every function body the schema has."""
    plain = [(v, False) for v in schema.function_opset_versions]
    dependent = [(v, True) for v in schema.context_dependent_function_opset_versions]
    return sorted(plain + dependent)


def function_schema(op_type: str, opset: int) -> onnx.defs.OpSchema | None:
    """The schema of `op_type` at `opset` when it defines a function body there."""
    try:
        schema = onnx.defs.get_schema(op_type, opset)
    except onnx.defs.SchemaError:
        return None
    return schema if _function_versions(schema) else None


def _type_proto(value: SSAValue) -> onnx.TypeProto:
    element = onnx.helper.np_dtype_to_tensor_dtype(numpy_dtype(value.type.get_element_type()))
    if isinstance(value.type, TensorType):
        dims = [d if d >= 0 else None for d in value.type.get_shape()]
        return onnx.helper.make_tensor_type_proto(element, dims)
    return onnx.helper.make_tensor_type_proto(element, None)


def _attribute_proto(name: str, value) -> onnx.AttributeProto:
    if isinstance(value, np.ndarray):
        return onnx.helper.make_attribute(name, onnx.numpy_helper.from_array(value, name))
    return onnx.helper.make_attribute(name, value)


def _node(
    op: onnx_dialect.OnnxOp, schema: onnx.defs.OpSchema, inputs: list[str], outputs: list[str]
):
    """The op as a NodeProto, with the schema defaults spelled out: a body refers to
    attributes by name and would otherwise lose a default the node leaves implicit."""
    attributes = []
    for name, definition in schema.attributes.items():
        if name in op.attributes:
            attributes.append(_attribute_proto(name, op.onnx_attr(name)))
        elif definition.default_value.type != onnx.AttributeProto.UNDEFINED:
            attributes.append(definition.default_value)
    node = onnx.helper.make_node(op.ONNX_OP_TYPE, inputs, outputs)
    node.attribute.extend(attributes)
    return node


def expand_model(
    op: onnx_dialect.OnnxOp, opset: int
) -> tuple[onnx.ModelProto, list[SSAValue], list[int]] | None:
    """A one-node model computing `op` through its function body, inlined, or None when the
    op has no body at `opset`. Returns the model, the operands feeding its inputs and the
    indices of the op results its outputs are."""
    schema = function_schema(op.ONNX_OP_TYPE, opset)
    if schema is None:
        return None
    versions = [(v, dependent) for v, dependent in _function_versions(schema) if v <= opset]
    if not versions:
        return None
    version, dependent = versions[-1]
    since = op.since_version(opset)
    slots = op.INPUT_SLOTS[since]
    groups = operand_groups(op)
    input_names, operands, graph_inputs = [], [], []
    for position, slot in enumerate(slots):
        if position >= len(schema.inputs):
            break
        group = groups[slot]
        if not group:
            input_names.append("")
            continue
        for value in group:
            name = f"in{len(operands)}"
            input_names.append(name)
            operands.append(value)
            graph_inputs.append(onnx.helper.make_value_info(name, _type_proto(value)))
    while input_names and input_names[-1] == "":
        input_names.pop()
    # Absent optional outputs keep their position (an empty name), as in a NodeProto.
    present = result_groups(op)
    output_names, result_indices, graph_outputs = [], [], []
    flat_index = {id(r): i for i, r in enumerate(op.results)}
    for slot in op.OUTPUT_SLOTS[since]:
        for result in present[slot] or [None]:
            if result is None:
                output_names.append("")
                continue
            name = f"out{flat_index[id(result)]}"
            output_names.append(name)
            result_indices.append(flat_index[id(result)])
            graph_outputs.append(onnx.helper.make_value_info(name, onnx.TypeProto()))
    while output_names and output_names[-1] == "":
        output_names.pop()
    node = _node(op, schema, input_names, output_names)
    if dependent:
        input_types = [
            _type_proto(operands[int(n[2:])]).SerializeToString()
            if n
            else onnx.TypeProto().SerializeToString()
            for n in input_names
        ]
        body = schema.get_context_dependent_function_with_opset_version(
            version, node.SerializeToString(), input_types
        )
    else:
        body = schema.get_function_with_opset_version(version)
    function = onnx.FunctionProto()
    function.ParseFromString(body)
    graph = onnx.helper.make_graph(bind(function, node), "decompose", graph_inputs, graph_outputs)
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", opset)])
    return model, operands, result_indices


def bind(function: onnx.FunctionProto, node: onnx.NodeProto) -> list[onnx.NodeProto]:
    """The body's nodes with its formal inputs/outputs renamed to the node's, its internal
    values given a private prefix, and attribute references replaced by the node's values
    (dropped where the node has none, so the inner op's default applies)."""
    renamed = {"": ""}
    renamed.update(zip(function.input, node.input, strict=False))
    renamed.update(zip(function.output, node.output, strict=False))
    given = {a.name: a for a in node.attribute}

    def name(value: str) -> str:
        return renamed.get(value, f"_{node.op_type}_{value}")

    body_names = set(function.input) | {o for n in function.node for o in n.output}

    def bind_attributes(source: onnx.NodeProto, target: onnx.NodeProto, shadowed: set[str]) -> None:
        del target.attribute[:]
        for attribute in source.attribute:
            if attribute.ref_attr_name:
                if attribute.ref_attr_name not in given:
                    continue
                value = onnx.AttributeProto()
                value.CopyFrom(given[attribute.ref_attr_name])
                value.name = attribute.name
                target.attribute.append(value)
                continue
            value = onnx.AttributeProto()
            value.CopyFrom(attribute)
            for graph in ([value.g] if value.HasField("g") else []) + list(value.graphs):
                bind_subgraph(graph, shadowed)
            target.attribute.append(value)

    def bind_subgraph(graph: onnx.GraphProto, shadowed: set[str]) -> None:
        """Rename the body values a subgraph reads from its enclosing scope (If/Loop/Scan
        bodies capture them by name), but not the names it defines itself."""
        local = shadowed | {i.name for i in graph.input} | {t.name for t in graph.initializer}
        local |= {o for n in graph.node for o in n.output}

        def outer(value: str) -> str:
            return name(value) if value in body_names and value not in local else value

        for inner in graph.node:
            inner.input[:] = [outer(v) for v in inner.input]
            source = onnx.NodeProto()
            source.CopyFrom(inner)
            bind_attributes(source, inner, local)
        for output in graph.output:
            output.name = outer(output.name)

    nodes = []
    for inner in function.node:
        bound = onnx.NodeProto()
        bound.CopyFrom(inner)
        bound.input[:] = [name(v) for v in inner.input]
        bound.output[:] = [name(v) for v in inner.output]
        bind_attributes(inner, bound, set())
        nodes.append(bound)
    return nodes


def decompose_op(op: onnx_dialect.OnnxOp, opset: int) -> list[onnx_dialect.OnnxOp] | None:
    """Replace `op` by its function body's ops (returned), or None when it has no body or the
    body cannot be imported (left for onnx-to-core to report)."""
    expanded = expand_model(op, opset)
    if expanded is None:
        return None
    model, operands, result_indices = expanded
    # lazy: loads protobuf, which this module does not
    from mlconv.frontends.onnx_importer import import_onnx

    try:
        body = import_onnx(model)
    except FrontendError:
        return None
    func = next(o for o in body.ops if isinstance(o, FuncOp))
    block = func.body.blocks.first
    mapping: dict[SSAValue, SSAValue] = dict(zip(block.args, operands, strict=True))
    created = []
    returned: list[SSAValue] = []
    for inner in list(block.ops):
        if isinstance(inner, ReturnOp):
            returned = [mapping.get(v, v) for v in inner.operands]
            break
        clone = inner.clone(value_mapper=mapping)
        mapping.update(zip(inner.results, clone.results, strict=True))
        clone.location = op.location
        Rewriter.insert_op(clone, InsertPoint.before(op))
        created.append(clone)
    for index, value in zip(result_indices, returned, strict=True):
        result = op.results[index]
        value = _retyped(value, result.type)
        if result.name_hint:
            value.name_hint = result.name_hint
        result.replace_all_uses_with(value)
    Rewriter.erase_op(op, safe_erase=False)
    return [c for c in created if isinstance(c, onnx_dialect.OnnxOp)]


def _retyped(value: SSAValue, known: Attribute) -> SSAValue:
    """`value`, with the original result's type where the body's inference knows less."""
    if isinstance(known, TensorType) and not isinstance(value.type, TensorType):
        return Rewriter.replace_value_with_new_type(value, known)
    return value


@dataclass(frozen=True)
class OnnxDecomposePass(ModulePass):
    name = "onnx-decompose"
    all: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        patterns = registered("onnx")
        opset = default_opset(op)

        def wanted(onnx_op: onnx_dialect.OnnxOp) -> bool:
            if not self.all and (onnx_op.ONNX_OP_TYPE, onnx_op.since_version(opset)) in patterns:
                return False
            return function_schema(onnx_op.ONNX_OP_TYPE, opset) is not None

        worklist = [(o, 0) for o in op.walk() if isinstance(o, onnx_dialect.OnnxOp) and wanted(o)]
        while worklist:
            onnx_op, depth = worklist.pop()
            created = decompose_op(onnx_op, opset)
            if created is None or depth + 1 >= _MAX_DEPTH:
                continue
            # Only ops with no lowering are expanded further, also under all=true.
            worklist.extend(
                (c, depth + 1)
                for c in created
                if (c.ONNX_OP_TYPE, c.since_version(opset)) not in patterns
                and function_schema(c.ONNX_OP_TYPE, opset) is not None
            )


__all__ = ["OnnxDecomposePass", "decompose_op", "expand_model"]

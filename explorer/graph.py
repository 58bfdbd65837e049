"""mlconv IR -> Model Explorer graphs: one graph per function, one node per op.

Each op becomes a node labelled with its op name (without the dialect prefix), nested by name
scope: the node's namespace is its location (the source node's name, `block1/conv`), so the ops
a source node lowered to share one layer and `block1/...` layers hold `block1`'s nodes. Model
Explorer collapses a layer with a single child, so a source node that stayed one op shows as
that op inside its parent scope. Attributes (summarized: weights show shape, dtype and their
first values, never the whole buffer), the location and the op name go to the side panel;
each result's shape and dtype go to `outputsMetadata` (`tensor_shape`, shown on edges), edges
follow SSA uses. Function arguments are `Input` nodes, `func.return` the `Output` node; ops with
regions (`core.If`, `tpu.while`, ...) link to one subgraph per region, where a `Captured` node
stands for each value the region reads from outside.
"""

from __future__ import annotations

import numpy as np
from model_explorer import graph_builder as gb
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    ModuleOp,
    StringAttr,
    TensorType,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, BlockArgument, Operation, SSAValue

from mlconv.dense import numpy_dtype, to_numpy
from mlconv.dialects.tpu import RegionOp, YieldOp
from mlconv.errors import describe_location

MAX_ATTRIBUTE_CHARS = 240
"""An attribute's text in the side panel is cut to this many characters."""
SHOWN_ELEMENTS = 8
"""A constant shows this many of its first values."""


def module_graphs(module: ModuleOp) -> list[gb.Graph]:
    """The module's functions as Model Explorer graphs (with their region subgraphs), `main` first."""
    functions = [op for op in module.ops if isinstance(op, FuncOp)]
    if not functions:
        raise ValueError("the module has no func.func to show")
    functions.sort(key=lambda f: f.sym_name.data != "main")
    graphs: list[gb.Graph] = []
    for function in functions:
        _GraphBuilder(graphs).build(function.sym_name.data, function.body.blocks[0])
    return graphs


def node_namespace(location: str | None) -> str:
    """`"/block1/conv/"` -> `"block1/conv"`: the location's path, without empty components.
    A TFLite name of fused ops (`a/Relu;a/conv`) is scoped by its first name."""
    if not location:
        return ""
    return "/".join(part for part in location.split(";")[0].split("/") if part)


def type_text(type_: Attribute) -> str:
    """`tensor<1x?x8xf32>` -> `float32[1,?,8]` (Model Explorer's `tensor_shape` form)."""
    if isinstance(type_, TensorType):
        try:
            dtype = str(numpy_dtype(type_.element_type))
        except Exception:  # noqa: BLE001 - element types numpy lacks keep their IR spelling
            dtype = str(type_.element_type)
        dims = ",".join("?" if d < 0 else str(d) for d in type_.get_shape())
        return f"{dtype}[{dims}]"
    return str(type_)


def attribute_text(attribute: Attribute) -> str:
    """A short, readable form of an attribute: constants summarized, long text cut."""
    if isinstance(attribute, DenseIntOrFPElementsAttr):
        array = to_numpy(attribute)
        flat = array.reshape(-1)[:SHOWN_ELEMENTS]
        values = ", ".join(
            np.format_float_positional(v, 6, trim="-") if array.dtype.kind == "f" else str(v)
            for v in flat.tolist()
        )
        more = ", ..." if array.size > SHOWN_ELEMENTS else ""
        return f"{type_text(attribute.get_type())} [{values}{more}]"
    if isinstance(attribute, StringAttr):
        text = attribute.data
    elif isinstance(attribute, DenseArrayBase):
        text = "[" + ", ".join(str(v) for v in attribute.get_values()) + "]"
    elif isinstance(attribute, ArrayAttr | DictionaryAttr):
        text = str(attribute)
    else:
        text = str(attribute)
    if len(text) > MAX_ATTRIBUTE_CHARS:
        text = text[: MAX_ATTRIBUTE_CHARS - 3] + "..."
    return text


class _GraphBuilder:
    """Builds one graph per block, appending region subgraphs to the shared list."""

    def __init__(self, graphs: list[gb.Graph]):
        self.graphs = graphs

    def build(self, graph_id: str, block: Block) -> gb.Graph:
        graph = gb.Graph(id=graph_id)
        self.graphs.append(graph)
        sources: dict[SSAValue, tuple[str, str]] = {}
        for index, argument in enumerate(block.args):
            node = gb.GraphNode(id=f"input{index}", label="Input")
            name = _argument_name(block, index)
            node.attrs.append(gb.KeyValue("name", name))
            node.outputsMetadata.append(_output_metadata("0", argument, name))
            graph.nodes.append(node)
            sources[argument] = (node.id, "0")
        self._add_ops(graph, block, sources, placement=None)
        return graph

    def _add_ops(
        self,
        graph: gb.Graph,
        block: Block,
        sources: dict[SSAValue, tuple[str, str]],
        placement: str | None,
    ) -> None:
        for op in block.ops:
            if isinstance(op, RegionOp):
                # Placement is structure, not computation: its body is shown in line, each
                # node saying where it runs; tpu.yield's values stand for the region's results.
                body = op.body.block
                for argument, operand in zip(body.args, op.inputs, strict=True):
                    if operand in sources:
                        sources[argument] = sources[operand]
                device = op.device.data if op.device is not None else "tpu"
                self._add_ops(graph, body, sources, placement=device)
                terminator = body.last_op
                if isinstance(terminator, YieldOp):
                    for result, value in zip(op.outputs, terminator.values, strict=True):
                        if value in sources:
                            sources[result] = sources[value]
                continue
            if isinstance(op, YieldOp) and placement is not None and op is block.last_op:
                continue
            node = self._op_node(graph, op, sources)
            if placement is not None:
                node.attrs.append(gb.KeyValue("placement", placement))
            graph.nodes.append(node)
            for r, region in enumerate(op.regions):
                if region.blocks:
                    sub_id = f"{graph.id}/{node.label}#{node.id}/region{r}"
                    self.build(sub_id, region.blocks[0])
                    node.subgraphIds.append(sub_id)
            for r, result in enumerate(op.results):
                sources[result] = (node.id, str(r))

    def _captured(
        self, graph: gb.Graph, value: SSAValue, sources: dict[SSAValue, tuple[str, str]]
    ) -> tuple[str, str]:
        node = gb.GraphNode(id=f"captured{len(graph.nodes)}", label="Captured")
        name = value.name_hint or "value"
        node.attrs.append(gb.KeyValue("name", name))
        node.outputsMetadata.append(_output_metadata("0", value, name))
        graph.nodes.append(node)
        sources[value] = (node.id, "0")
        return sources[value]

    def _op_node(
        self, graph: gb.Graph, op: Operation, sources: dict[SSAValue, tuple[str, str]]
    ) -> gb.GraphNode:
        location = describe_location(op.location)
        if isinstance(op, ReturnOp):
            label = "Output"
        else:
            label = op.name.split(".", 1)[-1]
        node_id = str(len(graph.nodes))
        node = gb.GraphNode(id=node_id, label=label, namespace=node_namespace(location))
        node.attrs.append(gb.KeyValue("op", op.name))
        if location:
            node.attrs.append(gb.KeyValue("location", location))
        for name, attribute in sorted({**op.properties, **op.attributes}.items()):
            node.attrs.append(gb.KeyValue(name, attribute_text(attribute)))
        for slot, operand in enumerate(op.operands):
            source = sources.get(operand)
            if source is None:  # a value of an enclosing region: a Captured node stands for it
                source = self._captured(graph, operand, sources)
            node.incomingEdges.append(
                gb.IncomingEdge(
                    sourceNodeId=source[0],
                    sourceNodeOutputId=source[1],
                    targetNodeInputId=str(slot),
                )
            )
        for r, result in enumerate(op.results):
            node.outputsMetadata.append(_output_metadata(str(r), result, result.name_hint))
        return node


def _output_metadata(output_id: str, value: SSAValue, name: str | None) -> gb.MetadataItem:
    attrs = [gb.KeyValue("tensor_shape", type_text(value.type))]
    if name:
        attrs.append(gb.KeyValue("tensor_name", name))
    return gb.MetadataItem(id=output_id, attrs=attrs)


def _argument_name(block: Block, index: int) -> str:
    """The input's `mlconv.name` (its name in the source model), else its SSA name."""
    parent = block.parent_op()
    if isinstance(parent, FuncOp) and parent.arg_attrs is not None:
        entry = parent.arg_attrs.data[index]
        if isinstance(entry, DictionaryAttr) and "mlconv.name" in entry.data:
            name = entry.data["mlconv.name"]
            if isinstance(name, StringAttr):
                return name.data
    argument: BlockArgument = block.args[index]
    return argument.name_hint or f"arg{index}"

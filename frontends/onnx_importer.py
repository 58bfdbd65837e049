"""ONNX model -> `onnx` dialect.

`import_onnx(path | ModelProto)` loads the model with the `onnx` package, runs ONNX shape
inference (non-strict; without it if it fails) on the model without its large weights, and
builds `func.func @main`. Weights are read once: external data (`model.onnx.data`, from the
model's folder only) is read per initializer straight into the dense attribute's bytes, and
in-file initializers above 4 KiB leave the proto during inference (a ModelProto argument is
given back unchanged). So a model over 2 GB of weights imports at about its weight bytes.

- arguments: the graph inputs that are not initializers, `{mlconv.name = "<input>"}`;
- initializers: `onnx.Constant` ops whose `value` is a dense attribute over the numpy bytes;
- one op per node, at `loc("<node name>")` (or `<op_type>_<index>`), result types from shape
  inference (`tensor<?x...>` where only the rank is known, `tensor<*xf32>` where nothing is);
- If/Loop/Scan subgraphs become the op's regions, ending in `onnx.Yield`;
- `func.return` of the graph outputs, `{mlconv.name = "<output>"}`.

The module carries `onnx.opset_import = {"" = 17 : i64, ...}`. A node of another domain (a
custom domain, ai.onnx.ml, ...) becomes the generic `onnx.Custom` (domain, op type, the domain's
opset version, attributes), or what the importer a plugin registered for (domain, op type) makes
of it (`mlconv.plugins`). Anything else the dialect cannot express (unknown default-domain op
types, string tensors, sequence/map values, optionals of anything but a tensor) is a
`FrontendError`, one line. An optional tensor value (`optional(float[4])`) is imported as the
tensor it holds: a caller gives the tensor (an empty optional, None, is refused when the
model is called) and OptionalHasElement on it is true. Element types are those of
`mlconv.dense`: float8 (E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ, E8M0FNU), FLOAT4E2M1 and
INT4/UINT4/INT2/UINT2 included; packed sub-byte initializers are unpacked by
`onnx.numpy_helper.to_array`.
"""

from __future__ import annotations

import mmap
import os
import sys
from collections import ChainMap
from functools import lru_cache
from typing import IO, Any

import numpy as np
import onnx
import onnx.numpy_helper
import onnx.shape_inference
from google.protobuf.message import DecodeError
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    Float32Type,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    NameLoc,
    NoneAttr,
    StringAttr,
    TensorType,
    UnrankedTensorType,
    i1,
    i64,
)
from xdsl.dialects.func import ReturnOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.printer import Printer

from mlconv.dense import element_type, shared_tensor_type, to_dense_attr
from mlconv.dialects import onnx as onnx_dialect
from mlconv.errors import FrontendError, MlconvError
from mlconv.frontends.names import name_hint
from mlconv.signature.main_function import main_function

_DEFAULT_DOMAINS = ("", "ai.onnx")
_UNKNOWN = UnrankedTensorType(Float32Type())


def import_onnx(model: str | os.PathLike | onnx.ModelProto) -> ModuleOp:
    """The `onnx`-dialect module of an ONNX model file or ModelProto."""
    if isinstance(model, onnx.ModelProto):
        path, proto, folder = None, model, ""
    else:
        path = os.fspath(model)
        proto = _load(path)
        folder = os.path.dirname(os.path.abspath(path))
    # Weights stay out of shape inference (which serializes and re-parses the whole model)
    # and are read once, straight into the dense attributes (external data from its file).
    detached = _detach_weights(proto)
    scoped = scope_subgraph_names(proto.graph)
    try:
        try:
            inferred = onnx.shape_inference.infer_shapes(proto, strict_mode=False, data_prop=True)
        except Exception:  # noqa: BLE001 - inference is an aid: import without it
            inferred = proto
        if scoped:
            _rename_values(inferred.graph, scoped)
        return _Importer(inferred, _Weights(detached, folder)).import_model()
    except FrontendError as err:
        if path is not None and not err.message.startswith(path):
            err.message = f"{path}: {err.message}"
            err.args = (err.message,)
        raise
    finally:
        if scoped and inferred is not proto:
            _rename_values(proto.graph, scoped)
        if path is None:  # the caller's ModelProto is given back as it came
            _reattach_weights(proto, detached)


def scope_subgraph_names(graph: onnx.GraphProto) -> dict[str, str]:
    """Give every value defined inside a subgraph (If branches, Loop/Scan bodies) a name of its
    own, in place; returns new name -> original name.

    ONNX shape inference with `data_prop` keeps the values it propagates in one table keyed by
    name for the whole model, so two If branches that both define `v` get each other's types
    (optimum's merged Whisper decoder). Renamed, each branch's values are its own; the
    caller renames them back with `_rename_values` after inference."""
    mapping: dict[str, str] = {}
    for node in graph.node:
        for sub in _subgraphs(node):
            _scope_graph(sub, {}, mapping)
    return mapping


def _subgraphs(node: onnx.NodeProto) -> list[onnx.GraphProto]:
    graphs = []
    for attr in node.attribute:
        if attr.type == onnx.AttributeProto.GRAPH:
            graphs.append(attr.g)
        graphs.extend(attr.graphs)
    return graphs


def _scope_graph(graph: onnx.GraphProto, outer: dict[str, str], mapping: dict[str, str]) -> None:
    env = dict(outer)

    def define(name: str) -> str:
        if not name:
            return name
        new = f"{name}/mlconv.scope{len(mapping)}"
        mapping[new] = name
        env[name] = new
        return new

    for info in graph.input:
        info.name = define(info.name)
    for init in graph.initializer:
        init.name = define(init.name)
    for sparse in graph.sparse_initializer:
        sparse.values.name = define(sparse.values.name)
    for node in graph.node:
        node.output[:] = [define(n) for n in node.output]
    for node in graph.node:
        node.input[:] = [env.get(n, n) for n in node.input]
        for sub in _subgraphs(node):
            _scope_graph(sub, env, mapping)
    for info in (*graph.output, *graph.value_info):
        info.name = env.get(info.name, info.name)


def _rename_values(graph: onnx.GraphProto, mapping: dict[str, str]) -> None:
    """Rename every value of `graph` and its subgraphs that `mapping` names."""
    for info in (*graph.input, *graph.output, *graph.value_info):
        info.name = mapping.get(info.name, info.name)
    for init in graph.initializer:
        init.name = mapping.get(init.name, init.name)
    for sparse in graph.sparse_initializer:
        sparse.values.name = mapping.get(sparse.values.name, sparse.values.name)
    for node in graph.node:
        node.input[:] = [mapping.get(n, n) for n in node.input]
        node.output[:] = [mapping.get(n, n) for n in node.output]
        for sub in _subgraphs(node):
            _rename_values(sub, mapping)


def print_module(module: ModuleOp, stream: IO[str]) -> None:
    """Print `module` with its locations, so node names survive a textual round trip."""
    Printer(stream=stream, print_debuginfo=True).print_op(module)
    stream.write("\n")


def topological_order(nodes) -> list[tuple[int, onnx.NodeProto]]:
    """(original index, node) with every node after the nodes producing its inputs; the
    original order where it already is one (ONNX requires it of graphs, but function bodies
    such as LinearAttention's define a constant after its first use). A cycle is an error."""
    producer = {name: i for i, node in enumerate(nodes) for name in node.output if name}
    needs = [
        {producer[name] for name in node.input if name in producer and producer[name] != i}
        for i, node in enumerate(nodes)
    ]
    emitted: set[int] = set()
    order: list[tuple[int, onnx.NodeProto]] = []
    pending = list(range(len(nodes)))
    while pending:
        waiting = []
        for i in pending:
            if needs[i] <= emitted:
                emitted.add(i)
                order.append((i, nodes[i]))
            else:
                waiting.append(i)
        if len(waiting) == len(pending):
            node = nodes[waiting[0]]
            where = node.name or f"{node.op_type}_{waiting[0]}"
            raise FrontendError(f"the graph has a cycle through node '{where}'")
        pending = waiting
    return order


def _one_line(err: BaseException) -> str:
    text = " ".join(str(err).split()) or type(err).__name__
    return text[:300]


def _load(path: str) -> onnx.ModelProto:
    if not os.path.exists(path):
        raise FrontendError(f"{path}: no such file")
    if os.path.isdir(path):
        raise FrontendError(f"{path}: is a folder, not an ONNX model file")
    try:
        proto = _parse(path)
    except (DecodeError, ValueError, RuntimeError, UnicodeDecodeError) as err:
        raise FrontendError(f"{path}: not a valid ONNX model: {_one_line(err)}") from None
    except OSError as err:
        raise FrontendError(f"{path}: cannot read: {_one_line(err)}") from None
    if proto.ir_version <= 0 or not proto.HasField("graph"):
        raise FrontendError(f"{path}: not a valid ONNX model: no IR version or no graph")
    return proto  # external data is read per initializer by _Weights, once


def _parse(path: str) -> onnx.ModelProto:
    """The ModelProto of a file, external data left out. A binary file is parsed straight from
    its mapped pages: reading it into bytes first (as onnx.load does) copies every weight once
    more (light VGG-19, 548 MB: 0.54 -> 0.25 s); text formats go through onnx.load."""
    extension = os.path.splitext(path)[1]
    if onnx.serialization.registry.get_format_from_file_extension(extension) not in (
        None,
        "protobuf",
    ):
        return onnx.load(path, load_external_data=False)
    proto = onnx.ModelProto()
    with open(path, "rb") as file:
        if os.fstat(file.fileno()).st_size == 0:
            return proto
        with mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            with memoryview(mapped) as view:
                proto.ParseFromString(view)
    return proto


# -- weights: read once, handed to the dense attributes as bytes ------------------------------

_DETACHED = "mlconv:detached"
"""external_data location of an initializer whose bytes `_detach_weights` holds."""
_DETACH_BYTES = 4096
"""Initializers above this size leave the proto during shape inference (shape-like constants,
which data propagation reads, are far smaller)."""
_PACKED = {
    onnx.TensorProto.INT4,
    onnx.TensorProto.UINT4,
    onnx.TensorProto.FLOAT4E2M1,
    onnx.TensorProto.STRING,
    *(getattr(onnx.TensorProto, n) for n in ("INT2", "UINT2") if hasattr(onnx.TensorProto, n)),
}


def _detach_weights(proto: onnx.ModelProto) -> dict[str, bytes]:
    """Move the raw bytes of the main graph's large initializers out of the proto (marked as
    external data at `_DETACHED`); returns name -> bytes."""
    detached: dict[str, bytes] = {}
    for init in proto.graph.initializer:
        if (
            init.data_location != onnx.TensorProto.EXTERNAL
            and len(init.raw_data) > _DETACH_BYTES
            and init.name not in detached
        ):
            detached[init.name] = init.raw_data
            init.ClearField("raw_data")
            init.data_location = onnx.TensorProto.EXTERNAL
            del init.external_data[:]
            init.external_data.add(key="location", value=_DETACHED)
    return detached


def _reattach_weights(proto: onnx.ModelProto, detached: dict[str, bytes]) -> None:
    for init in proto.graph.initializer:
        if _is_detached(init) and init.name in detached:
            del init.external_data[:]
            init.ClearField("data_location")
            init.raw_data = detached[init.name]


def _is_detached(tensor: onnx.TensorProto) -> bool:
    return tensor.data_location == onnx.TensorProto.EXTERNAL and any(
        e.key == "location" and e.value == _DETACHED for e in tensor.external_data
    )


class _Weights:
    """Initializer values as dense attributes: detached or external bytes go into the
    attribute as they are read (no numpy copy) for byte-aligned element types."""

    def __init__(self, detached: dict[str, bytes], folder: str):
        self.detached = detached
        self.folder = folder

    def _external(self, tensor: onnx.TensorProto, what: str) -> bytes:
        info = {e.key: e.value for e in tensor.external_data}
        location = info.get("location", "")
        if not self.folder:
            raise FrontendError(
                f"{what}: cannot load external data '{location}' without the model's path"
            )
        file = os.path.normpath(os.path.join(self.folder, location))
        if os.path.isabs(location) or not file.startswith(os.path.join(self.folder, "")):
            raise FrontendError(
                f"{what}: cannot load external data: '{location}' is outside the model's folder"
            )
        try:
            offset, length = int(info.get("offset", 0)), info.get("length")
            with open(file, "rb") as stream:
                stream.seek(offset)
                data = stream.read(-1 if length is None else int(length))
        except (OSError, ValueError) as err:
            raise FrontendError(f"{what}: cannot load external data: {_one_line(err)}") from None
        if length is not None and len(data) != int(length):
            raise FrontendError(
                f"{what}: cannot load external data: '{location}' holds {len(data)} bytes at offset "
                f"{offset}, not {length}"
            )
        return data

    def dense(self, tensor: onnx.TensorProto, what: str) -> Attribute:
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            return to_dense_attr(_tensor_array(tensor, what))
        element = _element_type(tensor.data_type, what)
        raw = self.detached[tensor.name] if _is_detached(tensor) else self._external(tensor, what)
        if tensor.data_type in _PACKED or tensor.data_type == onnx.TensorProto.BOOL:
            plain = onnx.TensorProto()
            plain.CopyFrom(tensor)
            del plain.external_data[:]
            plain.data_location = onnx.TensorProto.DEFAULT
            plain.raw_data = raw
            return to_dense_attr(_tensor_array(plain, what))
        dtype = onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type)
        dims = list(tensor.dims)
        expected = int(np.prod(dims, dtype=np.int64)) * dtype.itemsize
        if len(raw) != expected:
            raise FrontendError(
                f"{what}: bad tensor data: {len(raw)} bytes for shape {dims} of {dtype.name}"
            )
        if sys.byteorder == "big" and dtype.itemsize > 1:
            raw = np.frombuffer(raw, dtype.newbyteorder("<")).astype(dtype).tobytes()
        return DenseIntOrFPElementsAttr(shared_tensor_type(element, tuple(dims)), BytesAttr(raw))


def _value_name(name: str) -> str | None:
    """An SSA name hint for an ONNX value name (None where nothing usable is left), stable
    through a textual round trip (`frontends.names`)."""
    return name_hint(name)


@lru_cache(maxsize=4096)
def _known_element_type(data_type: int) -> Attribute | None:
    try:
        return element_type(onnx.helper.tensor_dtype_to_np_dtype(data_type))
    except (KeyError, ValueError, TypeError, MlconvError):
        return None


def _element_type(data_type: int, what: str) -> Attribute:
    if data_type == onnx.TensorProto.STRING:
        raise FrontendError(f"{what}: string tensors are not supported")
    element = _known_element_type(data_type)
    if element is None:
        name = onnx.TensorProto.DataType.Name(data_type) if data_type else "UNDEFINED"
        raise FrontendError(f"{what}: element type {name} is not supported")
    return element


def _tensor_array(tensor: onnx.TensorProto, what: str) -> np.ndarray:
    _element_type(tensor.data_type, what)  # reject strings and unsupported types first
    try:
        return onnx.numpy_helper.to_array(tensor)
    except Exception as err:  # noqa: BLE001 - truncated or inconsistent tensor data
        raise FrontendError(f"{what}: bad tensor data: {_one_line(err)}") from None


def _sparse_array(sparse: onnx.SparseTensorProto, what: str) -> np.ndarray:
    values = _tensor_array(sparse.values, what)
    indices = _tensor_array(sparse.indices, what).astype(np.int64)
    dense = np.zeros(tuple(sparse.dims), dtype=values.dtype)
    flat = dense.reshape(-1)
    if indices.ndim == 2:  # [nnz, rank] coordinates
        indices = np.ravel_multi_index(tuple(indices.T), dense.shape)
    flat[indices.reshape(-1)] = values.reshape(-1)
    return dense


def _locate(err: FrontendError, where: str, op_type: str) -> None:
    """Put an error raised while importing node `where` at that node, naming it."""
    if err.location is None:
        err.location = where
        if f"'{where}'" not in err.message:
            err.message = f"node '{where}' ({op_type}): {err.message}"
            err.args = (err.message,)


def _f32(value: float) -> float:
    """A float32 attribute value with its short decimal spelling (1e-05, not 9.99e-06)."""
    return float(str(np.float32(value)))


class _Importer:
    def __init__(self, model: onnx.ModelProto, weights: _Weights | None = None):
        self.model = model
        self.weights = weights or _Weights({}, "")
        self.opsets: dict[str, int] = {}
        for entry in model.opset_import:
            domain = "" if entry.domain in _DEFAULT_DOMAINS else entry.domain
            self.opsets[domain] = entry.version
        self.opset = self.opsets.get("", 1)

    # -- checks -----------------------------------------------------------------------------

    def _check_ops(self, graph: onnx.GraphProto, problems: list[tuple[str, str]]) -> None:
        for index, node in enumerate(graph.node):
            where = node.name or f"{node.op_type}_{index}"
            if node.domain not in _DEFAULT_DOMAINS:
                pass  # imported generically as onnx.Custom
            elif node.op_type not in onnx_dialect.OPS:
                problems.append((f"{node.op_type} (node '{where}')", where))
            elif onnx_dialect.since_version(node.op_type, self.opset) is None:
                problems.append((f"{node.op_type} at opset {self.opset} (node '{where}')", where))
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    self._check_ops(attr.g, problems)
                for sub in attr.graphs:
                    self._check_ops(sub, problems)

    # -- types ------------------------------------------------------------------------------

    def _type(self, tp: onnx.TypeProto, name: str) -> Attribute:
        kind = tp.WhichOneof("value")
        if kind is None:
            return _UNKNOWN
        if kind == "optional_type" and tp.optional_type.elem_type.WhichOneof("value") == (
            "tensor_type"
        ):
            return self._type(tp.optional_type.elem_type, name)  # module docstring
        if kind != "tensor_type":
            label = {
                "sequence_type": "sequence",
                "map_type": "map",
                "optional_type": "optional",
                "sparse_tensor_type": "sparse tensor",
            }.get(kind, kind)
            raise FrontendError(f"value '{name}' has {label} type, which is not supported")
        tensor = tp.tensor_type
        elem = (
            _element_type(tensor.elem_type, f"value '{name}'")
            if tensor.elem_type
            else Float32Type()
        )
        if not tensor.HasField("shape"):
            return UnrankedTensorType(elem)
        dims = [
            d.dim_value if d.HasField("dim_value") and d.dim_value >= 0 else DYNAMIC_INDEX
            for d in tensor.shape.dim
        ]
        return shared_tensor_type(elem, tuple(dims))

    @staticmethod
    def _record_types(graph: onnx.GraphProto, types: ChainMap) -> None:
        for info in (*graph.input, *graph.value_info, *graph.output):
            if info.type.WhichOneof("value") is not None:
                types[info.name] = info.type

    def _lookup_type(self, name: str, types: ChainMap) -> Attribute:
        tp = types.get(name)
        return _UNKNOWN if tp is None else self._type(tp, name)

    # -- the model --------------------------------------------------------------------------

    def import_model(self) -> ModuleOp:
        # the plugin registry imports this package back (the one documented cycle)
        from mlconv import plugins

        plugins.load()  # plugin importers of custom-domain ops
        problems: list[tuple[str, str]] = []
        graph = self.model.graph
        self._check_ops(graph, problems)
        if problems:
            listed = ", ".join(p for p, _ in problems)
            raise FrontendError(f"unsupported ONNX ops: {listed}", problems[0][1])

        types: ChainMap = ChainMap()
        self._record_types(graph, types)
        initialized = {t.name for t in graph.initializer}
        initialized |= {s.values.name for s in graph.sparse_initializer}
        inputs = [i for i in graph.input if i.name not in initialized]
        arg_types = [self._type(i.type, i.name) for i in inputs]
        block = Block(arg_types=arg_types)
        scope: ChainMap = ChainMap()
        for arg, info in zip(block.args, inputs, strict=True):
            arg.name_hint = _value_name(info.name)
            arg.location = NameLoc(StringAttr(info.name), NoneAttr())
            scope[info.name] = arg
        self._import_body(graph, block, scope, types)
        results = [self._use(o.name, scope, "graph output") for o in graph.output]
        block.add_op(ReturnOp(*results))
        names = [i.name for i in inputs], [o.name for o in graph.output]
        module = ModuleOp([main_function(block, *names)])
        module.attributes["onnx.opset_import"] = DictionaryAttr(
            {domain: IntegerAttr(version, i64) for domain, version in self.opsets.items()}
        )
        return module

    def _use(self, name: str, scope: ChainMap, user: str) -> SSAValue:
        value = scope.get(name)
        if value is None:
            raise FrontendError(f"{user} uses value '{name}', which is not defined before it")
        return value

    def _import_body(
        self, graph: onnx.GraphProto, block: Block, scope: ChainMap, types: ChainMap
    ) -> None:
        for init in graph.initializer:
            value = self.weights.dense(init, f"initializer '{init.name}'")
            self._constant(block, scope, init.name, value)
        for sparse in graph.sparse_initializer:
            name = sparse.values.name
            array = _sparse_array(sparse, f"initializer '{name}'")
            self._constant(block, scope, name, to_dense_attr(array))
        for index, node in topological_order(graph.node):
            self._import_node(node, index, block, scope, types)

    def _constant(self, block: Block, scope: ChainMap, name: str, value: Attribute) -> None:
        op = onnx_dialect.ConstantOp.create(result_types=[value.type], attributes={"value": value})
        op.location = NameLoc(StringAttr(name), NoneAttr())
        op.results[0].name_hint = _value_name(name)
        block.add_op(op)
        scope[name] = op.results[0]

    def _import_node(
        self, node: onnx.NodeProto, index: int, block: Block, scope: ChainMap, types: ChainMap
    ) -> None:
        where = node.name or f"{node.op_type}_{index}"
        if node.domain not in _DEFAULT_DOMAINS:
            self._import_custom(node, where, block, scope, types)
            return
        cls = onnx_dialect.OPS[node.op_type]
        since = onnx_dialect.since_version(node.op_type, self.opset)
        assert since is not None  # checked by _check_ops
        try:
            operands = self._slots(
                cls.INPUT_SLOTS[since], cls.INPUT_KINDS, list(node.input), "inputs", where
            )
            operands = [[self._use(n, scope, f"node '{where}'") for n in g] for g in operands]
            outputs = self._slots(
                cls.OUTPUT_SLOTS[since], cls.OUTPUT_KINDS, list(node.output), "outputs", where
            )
            result_types = [[self._lookup_type(n, types) for n in g] for g in outputs]
            attributes: dict[str, Attribute] = {}
            regions: list[Region] = []
            graphs = {}
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    graphs[attr.name] = attr.g
                elif attr.type == onnx.AttributeProto.GRAPHS:
                    raise FrontendError(f"attribute '{attr.name}' (GRAPHS) is not supported")
                elif not attr.ref_attr_name:
                    converted = self._attribute(attr, cls)
                    if converted is not None:
                        attributes[attr.name] = converted
            for graph_attr in cls.GRAPH_ATTRIBUTES:
                if graph_attr in graphs:
                    regions.append(
                        self._region(graphs[graph_attr], node, operands, cls, scope, types)
                    )
            if cls is onnx_dialect.ConstantOp and "sparse_value" in attributes:
                attributes["value"] = attributes.pop("sparse_value")
        except FrontendError as err:
            _locate(err, where, node.op_type)
            raise
        op = cls.from_slots(operands, result_types, attributes, regions)
        op.location = NameLoc(StringAttr(where), NoneAttr())
        block.add_op(op)
        for name, result in zip((n for g in outputs for n in g), op.results, strict=True):
            result.name_hint = _value_name(name)
            scope[name] = result

    def _import_custom(
        self, node: onnx.NodeProto, where: str, block: Block, scope: ChainMap, types: ChainMap
    ) -> None:
        """A node of a domain the dialect has no schema for: `onnx.Custom`, or what the plugin
        importer registered for (domain, op type) returns for it."""
        # the plugin registry imports this package back (the one documented cycle)
        from mlconv import plugins

        try:
            operands = [self._use(n, scope, f"node '{where}'") for n in node.input if n]
            result_types = [self._lookup_type(n, types) for n in node.output if n]
            attributes: dict[str, Attribute] = {}
            for attr in node.attribute:
                if attr.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
                    raise FrontendError(
                        f"subgraph attribute '{attr.name}' of a custom-domain op is not supported"
                    )
                converted = self._attribute(attr, onnx_dialect.CustomOp)
                if converted is not None:
                    attributes[attr.name] = converted
        except FrontendError as err:
            _locate(err, where, f"{node.domain}.{node.op_type}")
            raise
        op: Operation = onnx_dialect.CustomOp.create(
            operands=operands,
            result_types=result_types,
            attributes={
                "domain": StringAttr(node.domain),
                "op_type": StringAttr(node.op_type),
                "version": IntegerAttr(self.opsets.get(node.domain, 1), i64),
                "attrs": DictionaryAttr(attributes),
            },
        )
        op.location = NameLoc(StringAttr(where), NoneAttr())
        importer = plugins.onnx_importer(node.domain, node.op_type)
        if importer is not None:
            op = plugins.run_importer(importer, op, where)
            op.location = NameLoc(StringAttr(where), NoneAttr())
        block.add_op(op)
        names = [n for n in node.output if n]
        for name, result in zip(names, op.results, strict=True):
            result.name_hint = _value_name(name)
            scope[name] = result

    @staticmethod
    def _slots(
        slot_of: tuple[int, ...], kinds: tuple[str, ...], names: list[str], what: str, where: str
    ) -> list[list[str]]:
        """The node's input/output names grouped by the op's slots (empty names dropped)."""
        groups: list[list[str]] = [[] for _ in kinds]
        variadic_tail = bool(slot_of) and kinds[slot_of[-1]] == "variadic"
        for pos, name in enumerate(names):
            if pos < len(slot_of):
                slot = slot_of[pos]
            elif variadic_tail:  # a version's variadic parameter is its last one
                slot = slot_of[-1]
            else:
                raise FrontendError(
                    f"node '{where}' has {len(names)} {what}, more than its schema allows"
                )
            if name:
                groups[slot].append(name)
        return groups

    def _attribute(self, attr: onnx.AttributeProto, cls: type[onnx_dialect.OnnxOp]):
        schema_types = cls.ATTRIBUTE_TYPES.get(attr.name, ())
        what = f"attribute '{attr.name}'"
        t = attr.type
        A = onnx.AttributeProto
        if t == A.INT:
            if "FLOAT" in schema_types and "INT" not in schema_types:
                return FloatAttr(_f32(attr.i), Float32Type())
            return IntegerAttr(attr.i, i64)
        if t == A.FLOAT:
            if "INT" in schema_types and "FLOAT" not in schema_types and attr.f.is_integer():
                return IntegerAttr(int(attr.f), i64)
            return FloatAttr(_f32(attr.f), Float32Type())
        if t == A.STRING:
            return StringAttr(attr.s.decode("utf-8", errors="replace"))
        if t == A.INTS:
            if "FLOATS" in schema_types and "INTS" not in schema_types:
                return ArrayAttr([FloatAttr(_f32(v), Float32Type()) for v in attr.ints])
            return ArrayAttr([IntegerAttr(v, i64) for v in attr.ints])
        if t == A.FLOATS:
            return ArrayAttr([FloatAttr(_f32(v), Float32Type()) for v in attr.floats])
        if t == A.STRINGS:
            return ArrayAttr(
                [StringAttr(s.decode("utf-8", errors="replace")) for s in attr.strings]
            )
        if t == A.TENSOR:
            return to_dense_attr(_tensor_array(attr.t, what))
        if t == A.SPARSE_TENSOR:
            return to_dense_attr(_sparse_array(attr.sparse_tensor, what))
        if t == A.TYPE_PROTO:
            return self._type(attr.tp, what)
        if t == A.UNDEFINED:
            return None
        raise FrontendError(f"{what} of type {A.AttributeType.Name(t)} is not supported")

    def _region(
        self,
        graph: onnx.GraphProto,
        node: onnx.NodeProto,
        operands: list[list[SSAValue]],
        cls: type[onnx_dialect.OnnxOp],
        scope: ChainMap,
        types: ChainMap,
    ) -> Region:
        sub_types = types.new_child()
        self._record_types(graph, sub_types)
        fallback = self._body_input_types(node, operands, cls, len(graph.input))
        arg_types = []
        for i, info in enumerate(graph.input):
            t = self._type(info.type, info.name)
            if t == _UNKNOWN and fallback[i] is not None:
                t = fallback[i]
            arg_types.append(t)
        block = Block(arg_types=arg_types)
        sub_scope = scope.new_child()
        for arg, info in zip(block.args, graph.input, strict=True):
            arg.name_hint = _value_name(info.name)
            arg.location = NameLoc(StringAttr(info.name), NoneAttr())
            sub_scope[info.name] = arg
        self._import_body(graph, block, sub_scope, sub_types)
        results = [self._use(o.name, sub_scope, "subgraph output") for o in graph.output]
        block.add_op(onnx_dialect.YieldOp.create(operands=results))
        return Region(block)

    @staticmethod
    def _body_input_types(
        node: onnx.NodeProto,
        operands: list[list[SSAValue]],
        cls: type[onnx_dialect.OnnxOp],
        count: int,
    ) -> list[Attribute | None]:
        """Types for untyped subgraph inputs where the op defines them (Loop's body)."""
        types: list[Any] = [None] * count
        if cls is onnx_dialect.LoopOp and count >= 2:
            types[0] = TensorType(i64, [])
            types[1] = TensorType(i1, [])
            carried = operands[cls.INPUTS.index("v_initial")]
            for i, value in enumerate(carried[: count - 2]):
                types[2 + i] = value.type
        return types

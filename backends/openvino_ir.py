"""OpenVINO IR (v11 .xml + .bin) from core IR, and back.

    export_openvino(module, "model.xml")                 # mlconv-translate --export-openvino
    export_openvino(module, "model.xml", compress_to_fp16=True)
    module = import_openvino("model.xml")                # mlconv-translate --import-openvino
    xml, weights = to_openvino_ir(module)                 # in memory (the OpenVINO backend)

The writer takes `func.func @main` of a core module (framework dialects are lowered to core
first): Parameters first (ids from 0, in argument order), then the ops in block order (which is
topological), Results last. Each op becomes the layer its entry in the table of
`backends/openvino_layers.py` describes; input ports are numbered first, then output ports,
each with its `precision` and `<dim>`s (-1 for a dynamic dim). A Const layer points into the
.bin by `offset`/`size`; identical constants are stored once (hashed, then compared byte by
byte). `compress_to_fp16` stores f32 constants as f16 followed by a Convert marked with the
`decompression` rt_info, as `ovc --compress_to_fp16` does.

Before writing, every op's result types are checked against the types its semantics infer
(OpenVINO's reader re-infers them silently and would hide a wrong type); every op without a
layer is reported at once. The two files are written to temporary names and renamed: an
error leaves nothing behind.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    IntegerAttr,
    ModuleOp,
    NameLoc,
    NoneAttr,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.ir import Block, SSAValue

from mlconv.backends.openvino_layers import (
    DTYPES,
    ELEMENT_TYPES,
    OV_TYPES,
    RENAMES,
    TARGET,
    UNSUPPORTED,
    Refused,
    parse_value,
)
from mlconv.dense import numpy_dtype, tensor_type, to_numpy
from mlconv.dialects import make_context
from mlconv.dialects.core import OPS_BY_NAME
from mlconv.dialects.core_base import CoreOp
from mlconv.dialects.core_tensor import ConstantOp
from mlconv.errors import BackendError, FrontendError
from mlconv.fileio import staged_output
from mlconv.passes import get_pass
from mlconv.passes.core_op_versions import ATTRIBUTE as OPSET
from mlconv.passes.lowering import lookup
from mlconv.signature.main_function import main_function
from mlconv.signature.module_io import find_main, value_names

IR_VERSION = "11"


def _element(value: SSAValue, where) -> tuple[str, str, list[int]]:
    """(element_type, precision, dims) of a ranked tensor value."""

    t = value.type
    if not isinstance(t, TensorType):
        raise BackendError.at(where, f"has a value of type {t}: OpenVINO IR needs a ranked tensor")
    try:
        dtype = numpy_dtype(t.get_element_type())
        element, precision = ELEMENT_TYPES[np.dtype(dtype)]
    except (KeyError, ValueError, TypeError):
        raise BackendError.at(
            where, f"has element type {t.get_element_type()}, which OpenVINO IR cannot hold"
        ) from None
    return element, precision, [int(d) for d in t.get_shape()]


def _check_types(op: CoreOp) -> None:
    """The op's declared result types against the types its semantics infer."""
    # lazy: loads 6 more modules (dialects, semantics)
    from mlconv.semantics.shapes import infer_result_types

    try:
        inferred = infer_result_types(op)
    except Exception:  # noqa: BLE001 - an op semantics cannot type is caught by OpenVINO later
        return
    for result, expected in zip(op.results, inferred or [], strict=False):
        declared = result.type
        if not isinstance(declared, TensorType) or not isinstance(expected, TensorType):
            continue
        same_rank = len(declared.get_shape()) == len(expected.get_shape())
        clash = not same_rank or any(
            d >= 0 and e >= 0 and d != e
            for d, e in zip(declared.get_shape(), expected.get_shape(), strict=True)
        )
        if clash or declared.get_element_type() != expected.get_element_type():
            raise BackendError.at(
                op, f"declares result type {declared} but its semantics give {expected}"
            )


class _Writer:
    def __init__(self, compress_to_fp16: bool = False):
        self.compress = compress_to_fp16
        self.layers: list[ET.Element] = []
        self.edges: list[tuple[int, int, int, int]] = []
        self.ports: dict[SSAValue, tuple[int, int]] = {}
        self.blobs: dict[int, list[tuple[int, bytes]]] = {}  # size -> [(offset, bytes)]
        self.weights = bytearray()
        self.names: set[str] = set()

    # --- pieces -------------------------------------------------------------------------------
    def _name(self, wanted: str) -> str:
        name, i = wanted, 1
        while name in self.names:
            name, i = f"{wanted}_{i}", i + 1
        self.names.add(name)
        return name

    def _port(self, parent: ET.Element, port_id: int, value: SSAValue, where, names: str = ""):
        _, precision, dims = _element(value, where)
        attrs = {"id": str(port_id), "precision": precision}
        if names:
            attrs["names"] = names
        port = ET.SubElement(parent, "port", attrs)
        for d in dims:
            ET.SubElement(port, "dim").text = str(d if d >= 0 else -1)

    def _layer(self, type_: str, version: str, name: str, data: dict[str, str] | None):
        layer_id = len(self.layers)
        element = ET.Element(
            "layer",
            {"id": str(layer_id), "name": self._name(name), "type": type_, "version": version},
        )
        if data:  # OpenVINO writes no <data> for an op without attributes
            ET.SubElement(element, "data", data)
        self.layers.append(element)
        return layer_id, element

    def store(self, raw: bytes) -> int:
        """The offset of `raw` in the .bin; identical bytes are stored once (compared with the
        blobs of the same size: random weights differ in their first bytes, so this costs less
        than hashing every weight, 0.6 s on light ResNet50)."""
        for offset, seen in self.blobs.get(len(raw), ()):
            if seen == raw:
                return offset
        offset = len(self.weights)
        self.weights += raw
        self.blobs.setdefault(len(raw), []).append((offset, raw))
        return offset

    def connect(self, element: ET.Element, layer_id: int, values, where, first_port=0) -> int:
        if not values:
            return first_port
        inputs = ET.SubElement(element, "input")
        for i, value in enumerate(values):
            source = self.ports.get(value)
            if source is None:
                raise BackendError.at(where, "uses a value defined outside @main's body")
            self._port(inputs, first_port + i, value, where)
            self.edges.append((*source, layer_id, first_port + i))
        return first_port + len(values)

    def outputs(self, element, layer_id, values, where, first_port, names=None) -> None:
        if not values:
            return
        outputs = ET.SubElement(element, "output")
        for i, value in enumerate(values):
            port_names = (names or {}).get(value, "")
            self._port(outputs, first_port + i, value, where, port_names)
            self.ports[value] = (layer_id, first_port + i)

    # --- layers -------------------------------------------------------------------------------
    def parameter(self, arg: SSAValue, name: str, where) -> None:
        element, _, dims = _element(arg, where)
        shape = ",".join(str(d) if d >= 0 else "?" for d in dims)
        layer_id, layer = self._layer(
            "Parameter", "opset1", name, {"shape": shape, "element_type": element}
        )
        self.outputs(layer, layer_id, [arg], where, 0, {arg: name})

    def constant(self, op: CoreOp, names) -> None:
        array = to_numpy(op.value)
        value = op.results[0]
        name = _loc_name(op) or f"Constant_{len(self.layers)}"
        compress = (
            self.compress
            and array.dtype == np.float32
            and array.size > 0
            and np.all(np.abs(array[np.isfinite(array)]) <= np.finfo(np.float16).max)
        )
        stored = array.astype(np.float16) if compress else array
        raw = np.ascontiguousarray(stored).tobytes()

        if stored.dtype not in ELEMENT_TYPES:
            raise BackendError.at(
                op, f"has element type {stored.dtype}, which OpenVINO IR cannot hold"
            )
        element = ELEMENT_TYPES[stored.dtype][0]
        data = {
            "element_type": element,
            "shape": ", ".join(str(d) for d in array.shape),
            "offset": str(self.store(raw)),
            "size": str(len(raw)),
        }
        layer_id, layer = self._layer("Const", "opset1", name, data)
        if not compress:
            self.outputs(layer, layer_id, [value], op, 0, names)
            return
        # f16 storage, then a Convert back to f32 marked for decompression.
        outputs = ET.SubElement(layer, "output")
        port = ET.SubElement(outputs, "port", {"id": "0", "precision": "FP16"})
        for d in array.shape:
            ET.SubElement(port, "dim").text = str(d)
        convert_id, convert = self._layer(
            "Convert", "opset1", f"{name}/decompression", {"destination_type": "f32"}
        )
        rt = ET.SubElement(convert, "rt_info")
        ET.SubElement(rt, "attribute", {"name": "decompression", "version": "0"})
        inputs = ET.SubElement(convert, "input")
        port = ET.SubElement(inputs, "port", {"id": "0", "precision": "FP16"})
        for d in array.shape:
            ET.SubElement(port, "dim").text = str(d)
        self.edges.append((layer_id, 0, convert_id, 0))
        self.outputs(convert, convert_id, [value], op, 1, names)

    def array(self, array: np.ndarray, where) -> SSAValue:
        """A Const layer for an input the emitter computed (a scalar k, sequence lengths)."""

        constant = ConstantOp.from_numpy(array)
        constant.location = NameLoc(StringAttr(f"{_loc_name(where) or 'Const'}/input"), NoneAttr())
        self.constant(constant, {})
        return constant.results[0]

    def op(self, op: CoreOp, names) -> None:

        emitter = lookup("core", op.name, None, target=TARGET)
        spec = emitter(op, self)
        name = _loc_name(op) or f"{spec.type}_{len(self.layers)}"
        layer_id, layer = self._layer(spec.type, spec.version, name, spec.data)
        if spec.rt_info:
            rt = ET.SubElement(layer, "rt_info")
            for key, value in spec.rt_info.items():
                ET.SubElement(rt, "attribute", {"name": key, "version": "0", "value": value})
        inputs = [self.array(v, op) if isinstance(v, np.ndarray) else v for v in spec.inputs]
        port = self.connect(layer, layer_id, inputs, op)
        self.outputs(layer, layer_id, spec.outputs, op, port, names)

    def result(self, value: SSAValue, name: str, where) -> None:
        layer_id, layer = self._layer("Result", "opset1", f"{name}/sink_port_0", None)
        layer.set("output_names", name)
        self.connect(layer, layer_id, [value], where)

    def xml(self, name: str) -> bytes:
        net = ET.Element("net", {"name": name, "version": IR_VERSION})
        layers = ET.SubElement(net, "layers")
        layers.extend(self.layers)
        edges = ET.SubElement(net, "edges")
        for from_layer, from_port, to_layer, to_port in self.edges:
            ET.SubElement(
                edges,
                "edge",
                {
                    "from-layer": str(from_layer),
                    "from-port": str(from_port),
                    "to-layer": str(to_layer),
                    "to-port": str(to_port),
                },
            )
        rt = ET.SubElement(net, "rt_info")
        ET.SubElement(rt, "MO_version", {"value": "mlconv"})
        params = ET.SubElement(rt, "conversion_parameters")
        ET.SubElement(params, "framework", {"value": "mlconv core"})
        ET.SubElement(params, "compress_to_fp16", {"value": str(self.compress)})
        ET.indent(net, "\t")
        return b'<?xml version="1.0"?>\n' + ET.tostring(net, encoding="utf-8") + b"\n"


def _loc_name(op) -> str | None:
    loc = op.location
    return loc.desc.data if isinstance(loc, NameLoc) else None


def _unsupported(body: Block) -> list[BackendError]:

    errors = []
    for op in body.ops:
        if isinstance(op, func.ReturnOp) or op.name == "core.Constant":
            continue
        if not isinstance(op, CoreOp) or lookup("core", op.name, None, target=TARGET) is None:
            reason = UNSUPPORTED.get(
                op.name, "has no OpenVINO layer in backends/openvino_layers.py"
            )
            errors.append(BackendError.at(op, f"cannot be written as OpenVINO IR: {reason}"))
    return errors


def to_openvino_ir(
    module: ModuleOp, *, compress_to_fp16: bool = False, name: str = "mlconv"
) -> tuple[bytes, bytes]:
    """The .xml text and .bin bytes of the core module's @main."""

    function = find_main(module, "write as OpenVINO IR")
    body = function.body.block
    errors = _unsupported(body)
    if errors:
        if len(errors) == 1:
            raise errors[0]
        kinds = sorted({e.message.split("'")[1] for e in errors})
        raise BackendError(
            f"{len(errors)} ops cannot be written as OpenVINO IR ({', '.join(kinds)}); first: "
            f"{errors[0].render()}"
        )
    for op in body.ops:
        if isinstance(op, CoreOp) and op.name != "core.Constant":
            _check_types(op)
    writer = _Writer(compress_to_fp16)
    arg_names = value_names(function.arg_attrs, len(body.args), "input_")
    ret = body.last_op
    res_names = value_names(function.res_attrs, len(ret.operands), "output_")
    port_names: dict[SSAValue, str] = {}
    for value, res_name in zip(ret.operands, res_names, strict=True):
        port_names[value] = ",".join(filter(None, [port_names.get(value), res_name]))
    for arg, arg_name in zip(body.args, arg_names, strict=True):
        writer.parameter(arg, arg_name, function)
    for op in body.ops:
        if op is ret:
            continue
        try:
            if op.name == "core.Constant":
                writer.constant(op, port_names)
            else:
                writer.op(op, port_names)
        except Refused as refusal:
            raise BackendError.at(op, f"cannot be written as OpenVINO IR: {refusal}") from None
    for value, res_name in zip(ret.operands, res_names, strict=True):
        writer.result(value, res_name, ret)
    return writer.xml(name), bytes(writer.weights)


def write_openvino(module: ModuleOp, path: str | os.PathLike, **options) -> tuple[Path, Path]:
    """Write `path` (.xml) and the .bin beside it; nothing is left behind on error."""
    xml_path = Path(path)
    bin_path = xml_path.with_suffix(".bin")
    xml, weights = to_openvino_ir(module, name=xml_path.stem, **options)
    # The .bin first: an .xml in place always finds the weights it was written with.
    with staged_output(xml_path) as staged_xml, staged_output(bin_path) as staged_bin:
        Path(staged_bin).write_bytes(weights)
        Path(staged_xml).write_bytes(xml)
    return xml_path, bin_path


def export_openvino(module: ModuleOp, path: str, compress_to_fp16: bool = False) -> None:
    """mlconv-translate --export-openvino: lower framework dialects to core, run the
    registered `core-to-openvino` pipeline, then write the .xml and .bin."""
    # lazy: loads 17 more modules (dialects, passes, semantics)
    from mlconv.passes.pipelines import framework_dialects, lower_to_core

    if framework_dialects(module):
        lower_to_core(module)
    get_pass("core-to-openvino")().apply(make_context(), module)
    write_openvino(module, path, compress_to_fp16=compress_to_fp16)


# --- reader -----------------------------------------------------------------------------------
def _core_class(type_: str, version: str):

    reverse = {ov: core for core, ov in OV_TYPES.items()} | {"SoftMax": "core.Softmax"}
    return OPS_BY_NAME.get(reverse.get(type_, f"core.{type_}"))


MAX_XML_BYTES = 256 << 20


def _port_type(port: ET.Element | None, where: str):

    if port is None:
        raise FrontendError("a layer lacks its port", where)
    precision = (port.get("precision") or "").lower()
    aliases = {"fp32": "f32", "fp16": "f16", "fp64": "f64", "bool": "boolean"}
    element = aliases.get(precision, precision)
    if element not in DTYPES:
        raise FrontendError(f"port precision '{port.get('precision')}' is not known", where)
    dims = []
    for dim in port.findall("dim"):
        text = (dim.text or "").strip()
        if not (text.isdigit() or text == "-1") or len(text) > 12:
            raise FrontendError(f"port {port.get('id')} has dim '{text[:20]}'", where)
        dims.append(int(text))
    if len(dims) > 64:
        raise FrontendError(f"port {port.get('id')} has {len(dims)} dims", where)
    return tensor_type([d if d >= 0 else None for d in dims], DTYPES[element])


def _assign(specs: tuple[str, ...], values: list[SSAValue]) -> list:
    """Input values to a core op's operand groups (singles, optionals, one variadic)."""
    groups: list = []
    rest = list(values)
    for i, spec in enumerate(specs):
        later = sum(1 for s in specs[i + 1 :] if s[0] not in "*?")
        if spec.startswith("*"):
            take = len(rest) - later
            groups.append(rest[:take])
            rest = rest[take:]
        elif spec.startswith("?"):
            groups.append(rest.pop(0) if len(rest) > later else None)
        else:
            groups.append(rest.pop(0) if rest else None)
    return groups


def _topological(layers: dict[str, ET.Element], sources: dict[str, list[str]]) -> list[str]:
    """The layer ids in an order where every layer follows its inputs, by file position where
    the inputs allow (Kahn's algorithm over a heap, no recursion: a 1500-layer chain listed
    in any order); a cycle is an error."""
    import heapq

    position = {layer_id: i for i, layer_id in enumerate(layers)}
    users: dict[str, list[str]] = {layer_id: [] for layer_id in layers}
    waiting = {layer_id: len(inputs) for layer_id, inputs in sources.items()}
    for layer_id, inputs in sources.items():
        for source in inputs:
            users[source].append(layer_id)
    heap = [(position[i], i) for i in layers if waiting[i] == 0]
    heapq.heapify(heap)
    order = []
    while heap:
        _, layer_id = heapq.heappop(heap)
        order.append(layer_id)
        for user in users[layer_id]:
            waiting[user] -= 1
            if waiting[user] == 0:
                heapq.heappush(heap, (position[user], user))
    if len(order) != len(layers):
        stuck = next(layer_id for layer_id in layers if waiting[layer_id] > 0)
        raise FrontendError("the IR's edges form a cycle", layers[stuck].get("name"))
    return order


def _read_xml(xml_path: Path) -> ET.Element:
    try:
        size = xml_path.stat().st_size
    except OSError as error:
        raise FrontendError(f"cannot read: {error.strerror}") from None
    if size > MAX_XML_BYTES:
        raise FrontendError(f"the .xml is larger than {MAX_XML_BYTES >> 20} MiB")
    try:
        return ET.parse(xml_path).getroot()
    except ET.ParseError as error:
        raise FrontendError(f"not an OpenVINO IR .xml: {error}") from None
    except RecursionError:
        raise FrontendError("not an OpenVINO IR .xml: nested too deeply") from None


def _const(data: dict[str, str], port_type, weights: bytes, name: str):
    """A Const layer's array: element type, shape, offset and size checked against each other,
    the .bin and the output port."""

    element = data.get("element_type", "")
    if element not in DTYPES:
        raise FrontendError(f"Const has element_type '{element[:20]}', which is not known", name)
    dtype = DTYPES[element]
    try:
        offset, size = int(data["offset"]), int(data["size"])
        shape = [int(d) for d in data.get("shape", "").replace(" ", "").split(",") if d]
    except (KeyError, ValueError):
        raise FrontendError("Const needs integer offset, size and shape", name) from None
    if offset < 0 or size < 0 or any(d < 0 for d in shape):
        raise FrontendError(f"Const has a negative offset, size or dim ({offset}, {size})", name)
    if offset + size > len(weights):
        raise FrontendError("Const lies outside the .bin", name)
    if int(np.prod(shape, dtype=object)) * dtype.itemsize != size:
        raise FrontendError(
            f"Const size {size} is not its shape {shape} times {dtype.itemsize} bytes", name
        )
    if numpy_dtype(port_type.get_element_type()) != dtype:
        raise FrontendError(
            f"Const of element_type {element} feeds an output port of "
            f"{port_type.get_element_type()}",
            name,
        )
    declared = port_type.get_shape()
    if list(declared) != shape and not (len(declared) == len(shape) and -1 in declared):
        raise FrontendError(f"Const of shape {shape} declares its port {list(declared)}", name)
    array = np.frombuffer(weights, dtype=dtype, count=int(np.prod(shape)), offset=offset)
    return ConstantOp.from_numpy(array.reshape(shape).copy())


def import_openvino(path: str | os.PathLike) -> ModuleOp:
    """A core module from an OpenVINO IR .xml (and the .bin beside it), read as data: ids,
    edges, ports, Const offsets/sizes/element types and every declared type checked; a bad
    file is a one-line FrontendError (every unknown layer type named at once)."""

    xml_path = Path(path)
    bin_path = xml_path.with_suffix(".bin")
    root = _read_xml(xml_path)
    weights = bin_path.read_bytes() if bin_path.exists() else b""
    layers: dict[str, ET.Element] = {}
    for layer in root.iter("layer"):
        layer_id = layer.get("id")
        if layer_id is None or layer_id in layers:
            raise FrontendError(f"layer id {layer_id!r} is missing or repeated", layer.get("name"))
        layers[layer_id] = layer
    ports = {
        (layer_id, port.get("id"))
        for layer_id, layer in layers.items()
        for port in layer.findall("output/port")
    }
    incoming: dict[tuple[str, str], tuple[str, str]] = {}
    for edge in root.iter("edge"):
        source = (edge.get("from-layer"), edge.get("from-port"))
        target = (edge.get("to-layer"), edge.get("to-port"))
        if source not in ports:
            raise FrontendError(
                f"an edge comes from layer {source[0]!r} port {source[1]!r}, which has no such output port"
            )
        if target[0] not in layers or target in incoming:
            raise FrontendError(
                f"an edge goes to layer {target[0]!r} port {target[1]!r}, which is unknown or fed twice"
            )
        incoming[target] = source
    sources: dict[str, list[str]] = {}
    for layer_id, layer in layers.items():
        sources[layer_id] = []
        for port in layer.findall("input/port"):
            source = incoming.get((layer_id, port.get("id")))
            if source is None:
                raise FrontendError(f"input port {port.get('id')} has no edge", layer.get("name"))
            sources[layer_id].append(source[0])
    for layer in layers.values():  # the two kinds the reader wires itself
        kind = layer.get("type")
        inputs, outputs = len(layer.findall("input/port")), len(layer.findall("output/port"))
        if kind == "Parameter" and (inputs, outputs) != (0, 1):
            raise FrontendError("a Parameter needs one output port and no input", layer.get("name"))
        if kind == "Result" and (inputs, outputs) != (1, 0):
            raise FrontendError("a Result needs one input port and no output", layer.get("name"))
    order = _topological(layers, sources)
    unknown = sorted(
        {
            f"{layer.get('type')}-{layer.get('version')}"
            for layer in layers.values()
            if layer.get("type") not in ("Parameter", "Result", "Const")
            and not hasattr(_core_class(layer.get("type") or "", ""), "ATTRIBUTES")
        }
    )
    if unknown:  # every one of them, before anything is built
        raise FrontendError(f"OpenVINO layers without a core op: {', '.join(unknown)}")

    params = [x for x in layers.values() if x.get("type") == "Parameter"]
    results = [x for x in layers.values() if x.get("type") == "Result"]
    arg_types = [_port_type(p.find("output/port"), p.get("name")) for p in params]
    block = Block(arg_types=arg_types)
    values: dict[tuple[str, str], SSAValue] = {}
    for param, arg in zip(params, block.args, strict=True):
        values[(param.get("id"), param.find("output/port").get("id"))] = arg
    for layer_id in order:
        layer = layers[layer_id]
        type_, name = layer.get("type"), layer.get("name")
        if type_ in ("Parameter", "Result"):
            continue
        inputs = [
            values[incoming[(layer_id, port.get("id"))]] for port in layer.findall("input/port")
        ]
        out_ports = layer.findall("output/port")
        out_types = [_port_type(p, name) for p in out_ports]
        data = layer.find("data")
        data = dict(data.attrib) if data is not None else {}
        if type_ == "Const":
            if len(out_types) != 1 or inputs:
                raise FrontendError("Const needs one output port and no input", name)
            op = _const(data, out_types[0], weights, name)
        else:
            op = _build(layer, type_, name, data, inputs, out_types, RENAMES, parse_value)
        if len(op.results) != len(out_ports):
            raise FrontendError(f"{type_} has {len(out_ports)} output ports", name)
        op.location = NameLoc(StringAttr(name or ""), NoneAttr())
        block.add_op(op)
        for port, result in zip(out_ports, op.results, strict=True):
            values[(layer_id, port.get("id"))] = result
    returned = []
    for r in results:
        port = r.find("input/port")
        if port is None:
            raise FrontendError("a Result has no input port", r.get("name"))
        returned.append(values[incoming[(r.get("id"), port.get("id"))]])
    block.add_op(func.ReturnOp(*returned))
    in_names = [p.get("name") or "" for p in params]
    out_names = [r.get("output_names") or r.get("name") or "" for r in results]
    return ModuleOp([main_function(block, in_names, out_names)])


def _build(layer, type_, name, data, inputs, out_types, renames, parse_value):
    """One layer as its core op; its declared output types checked against its semantics."""
    cls = _core_class(type_, layer.get("version", ""))
    rename = {ov: key for key, ov in renames.get(cls.name, {}).items()}
    attributes = {}
    for key, text in data.items():
        key = rename.get(key, key)
        if key in cls.ATTRIBUTES:
            try:
                attributes[key] = parse_value(cls.ATTRIBUTES[key], text)
            except (ValueError, KeyError, TypeError) as error:
                raise FrontendError(f"attribute {key}='{text[:40]}': {error}", name) from None
    for key, value in list(attributes.items()):
        if cls.DEFAULTS.get(key, object()) == value:
            del attributes[key]
    groups = _assign(cls.OPERANDS, inputs)
    required = [s for s in cls.OPERANDS if s[0] not in "*?"]
    if len(inputs) < len(required) or (
        not any(s.startswith("*") for s in cls.OPERANDS) and len(inputs) > len(cls.OPERANDS)
    ):
        raise FrontendError(f"{type_} has {len(inputs)} inputs", name)
    variadic = bool(cls.RESULTS) and cls.RESULTS[0].startswith("*")
    if not variadic and len(out_types) != len(cls.RESULTS):
        raise FrontendError(f"{type_} has {len(out_types)} output ports", name)
    try:
        op = cls.build_op(groups, out_types, **attributes)
        op.verify()
    except Exception as error:  # noqa: BLE001 - xDSL verifier and builder errors of a bad file
        text = str(error).strip().splitlines()
        raise FrontendError(
            f"{type_}: {text[0][:200] if text else type(error).__name__}", name
        ) from None
    version = layer.get("version", "").removeprefix("opset")
    if version.isdigit() and int(version) != cls.VERSION:
        op.attributes[OPSET] = IntegerAttr(int(version), i64)
    try:
        _check_types(op)
    except BackendError as error:
        raise FrontendError(error.message.replace(f"'{op.name}' op ", ""), name) from None
    return op


__all__ = ["export_openvino", "import_openvino", "to_openvino_ir", "write_openvino"]

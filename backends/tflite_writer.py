"""Write a module of tflite-dialect ops back to a .tflite flatbuffer.

    write_tflite(module, "out.tflite")
    export_tflite(module, "out.tflite")   # core or tflite dialect (mlconv-translate --export-tflite)

`func.func @main` becomes subgraph 0: its arguments and results the model inputs and outputs
(named by `mlconv.name`), each `tflite.CONST` a tensor with its own buffer (the attribute's
bytes), each `tflite.NO_VALUE` operand the index -1, each op an Operator with its options
table and an operator code per (operator, version). The metadata entry `min_runtime_version`
is the newest runtime the ops need (`RUNTIME_VERSIONS`), written as TensorFlow does: a
16-byte zero-padded string buffer. The file is written to a temporary name and renamed, so
an error leaves nothing behind.
"""

from __future__ import annotations

import os

import flatbuffers
import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ModuleOp,
    NameLoc,
    NoneType,
    ShapedType,
)
from xdsl.ir import SSAValue

from mlconv.dialects import make_context, tflite
from mlconv.dialects.quant import UniformQuantizedType
from mlconv.dialects.tflite_versions import min_runtime, runtime_key
from mlconv.errors import BackendError
from mlconv.fileio import write_output
from mlconv.frontends.tflite_importer import tflite_schema
from mlconv.passes.tflite_op_versions import TfliteOpVersionsPass, tflite_type
from mlconv.signature.module_io import find_main, value_names

RUNTIME_METADATA = "min_runtime_version"


def _loc_name(op) -> str | None:
    loc = op.location
    return loc.desc.data if isinstance(loc, NameLoc) else None


class _Writer:
    def __init__(self):
        self.s = tflite_schema()
        self.tensors: list = []
        self.buffers: list = [self.s.BufferT()]
        self.index: dict[SSAValue, int] = {}
        self.codes: dict[tuple[str, int], int] = {}
        self.code_list: list = []
        self.runtime = ""

    def tensor(self, value: SSAValue, name: str, data: bytes | None = None) -> int:
        t = value.type
        if not isinstance(t, ShapedType):
            raise BackendError(f"value '{name}' of type {t} is not a tensor")
        element = t.get_element_type()
        type_name = tflite_type(element)
        if type_name not in tflite.ENUMS["TensorType"]:
            raise BackendError(f"tensor '{name}' has element type {element}, not a TFLite type")
        tensor = self.s.TensorT()
        # dynamic dims (xDSL's DYNAMIC_INDEX, any negative) are 1 in `shape` and -1 in
        # `shape_signature`, as TF's converter writes them
        shape = [int(d) if int(d) >= 0 else -1 for d in t.get_shape()]
        tensor.shape = np.array([max(d, 1) for d in shape], dtype=np.int32)
        if any(d < 0 for d in shape):
            tensor.shapeSignature = np.array(shape, dtype=np.int32)
        tensor.type = tflite.ENUMS["TensorType"][type_name]
        tensor.name = name
        if isinstance(element, UniformQuantizedType):
            q = self.s.QuantizationParametersT()
            q.scale = np.array(element.scale_values(), dtype=np.float32)
            q.zeroPoint = np.array(element.zero_point_values(), dtype=np.int64)
            q.quantizedDimension = max(element.quantized_dimension.data, 0)
            tensor.quantization = q
        tensor.buffer = 0
        if data is not None:
            buffer = self.s.BufferT()
            buffer.data = np.frombuffer(data, dtype=np.uint8)
            self.buffers.append(buffer)
            tensor.buffer = len(self.buffers) - 1
        self.tensors.append(tensor)
        self.index[value] = len(self.tensors) - 1
        return self.index[value]

    def opcode(self, operator: str, version: int, custom_code: str | None = None) -> int:
        key = (operator, version, custom_code)
        if key not in self.codes:
            code = self.s.OperatorCodeT()
            builtin = tflite.OPERATORS[operator]["code"]
            code.builtinCode = builtin
            code.deprecatedBuiltinCode = min(builtin, 127)  # PLACEHOLDER_FOR_GREATER_OP_CODES
            code.version = version
            if custom_code is not None:
                code.customCode = custom_code
            self.codes[key] = len(self.code_list)
            self.code_list.append(code)
            runtime = min_runtime(operator, version)
            if runtime and (not self.runtime or runtime_key(runtime) > runtime_key(self.runtime)):
                self.runtime = runtime
        return self.codes[key]

    def options(self, op: tflite.TFLiteOperation):
        table = tflite.OPERATORS[op.operator]["options"]
        names = {f["name"] for f in tflite.fields_of(op.operator)}
        if table is None or (names and not names & op.attributes.keys()):
            return None, None  # no options attribute: the table is left out, as TF does
        info = tflite.OPTIONS[table]
        options = getattr(self.s, f"{table}T")()
        for field in info["fields"]:
            if field["kind"] == "table":
                continue
            value = tflite.option_value(field, op.attributes.get(field["name"]))
            if field["kind"] == "vector" and value is not None:
                value = list(value)
            setattr(options, field["py"], value)
        return info, options

    def operator(self, op: tflite.TFLiteOperation):
        new = self.s.OperatorT()
        custom = op.key if isinstance(op, tflite.CustomOp) else None
        new.opcodeIndex = self.opcode(op.operator, op.version.value.data, custom)
        if isinstance(op, tflite.CustomOp):
            new.customOptions = np.frombuffer(custom_options_bytes(op), dtype=np.uint8)
        inputs = []
        for operand in op.operands:
            if isinstance(operand.type, NoneType):
                inputs.append(-1)
            elif operand in self.index:
                inputs.append(self.index[operand])
            else:
                raise BackendError.at(op, "uses a value that is not a tensor of the model")
        new.inputs = np.array(inputs, dtype=np.int32)
        name = _loc_name(op) or f"{op.operator.lower()}_{len(self.tensors)}"
        outputs = []
        for i, result in enumerate(op.results):
            outputs.append(self.tensor(result, name if i == 0 else f"{name}:{i}"))
        new.outputs = np.array(outputs, dtype=np.int32)
        info, options = self.options(op)
        if info is not None:
            if info["union"] == "BuiltinOptions":
                new.builtinOptionsType, new.builtinOptions = info["index"], options
            else:
                new.builtinOptions2Type, new.builtinOptions2 = info["index"], options
        return new

    def model(self, module: ModuleOp) -> bytes:
        main = find_main(module, "write as a TFLite model")
        block = main.body.block
        graph = self.s.SubGraphT()
        graph.name = "main"
        inputs = value_names(main.arg_attrs, len(block.args), "input_")
        for arg, name in zip(block.args, inputs, strict=True):
            self.tensor(arg, name)
        returned = block.last_op
        if not isinstance(returned, func.ReturnOp):
            raise BackendError("@main does not end with func.return")
        out_names = dict(
            zip(
                returned.operands,
                value_names(main.res_attrs, len(returned.operands), "output_"),
                strict=True,
            )
        )
        operators = []
        for op in block.ops:
            if isinstance(op, tflite.ConstOp):
                name = out_names.get(op.output) or _loc_name(op) or f"const_{len(self.tensors)}"
                self.tensor(op.output, name, op.value.data.data)
            elif isinstance(op, tflite.NoValueOp | func.ReturnOp):
                continue
            elif isinstance(op, tflite.TFLiteOperation):
                operators.append(self.operator(op))
                for result in op.results:
                    if result in out_names:
                        self.tensors[self.index[result]].name = out_names[result]
            else:
                raise BackendError.at(op, "is not a tflite-dialect op; only those can be written")
        graph.tensors = self.tensors
        graph.inputs = np.array([self.index[a] for a in block.args], dtype=np.int32)
        graph.outputs = np.array([self.index[v] for v in returned.operands], dtype=np.int32)
        graph.operators = operators

        metadata = self.s.MetadataT()
        metadata.name = RUNTIME_METADATA
        runtime = self.s.BufferT()
        runtime.data = np.frombuffer(self.runtime.encode().ljust(16, b"\0")[:16], dtype=np.uint8)
        self.buffers.append(runtime)
        metadata.buffer = len(self.buffers) - 1

        model = self.s.ModelT()
        model.version = 3
        model.description = "mlconv"
        model.operatorCodes = self.code_list
        model.subgraphs = [graph]
        model.buffers = self.buffers
        model.metadata = [metadata]
        builder = flatbuffers.Builder(1024)
        builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
        return bytes(builder.Output())


def custom_options_bytes(op: tflite.CustomOp) -> bytes:
    """A CUSTOM operator's options as the file stores them: its `raw_options` bytes, else its
    `custom_options` as a flexbuffer map (what the importer decoded, encoded back)."""
    from flatbuffers import flexbuffers

    # lazy: loads 1 more module (dialects)
    from mlconv.dialects.tpu import decode_param

    if op.raw_options is not None:
        return np.asarray(op.raw_options.get_values(), dtype=np.uint8).tobytes()
    if not op.custom_options.data:
        return b""

    def plain(value):
        if isinstance(value, np.ndarray):  # a blob (dense ui8), else a (nested) vector
            return value.tobytes() if value.dtype == np.uint8 else value.tolist()
        if isinstance(value, tuple | list):
            return [plain(v) for v in value]
        if isinstance(value, bool | int | float | str | bytes):
            return value
        raise TypeError(f"a {type(value).__name__} value")

    entries = {}
    for name, attr in op.custom_options.data.items():
        try:
            entries[name] = plain(decode_param(attr))
        except (TypeError, KeyError) as error:
            raise BackendError.at(
                op, f"option '{name}' cannot be written as a flexbuffer ({error})"
            ) from None
    return bytes(flexbuffers.Dumps(entries))


def tflite_bytes(module: ModuleOp) -> bytes:
    """The .tflite flatbuffer of a module of tflite-dialect ops."""
    return _Writer().model(module)


def write_tflite(module: ModuleOp, path: str | os.PathLike) -> None:
    """Write `module` to `path`; nothing is written when it cannot be serialised.

    A regular file is replaced atomically; a special file is written into (`mlconv.fileio`).
    """
    data = tflite_bytes(module)
    write_output(path, data)


def export_tflite(module: ModuleOp, out_path: str | os.PathLike) -> None:
    """Write a core- or tflite-dialect module as a .tflite file: core ops are lowered first
    (core-to-tflite-pipeline: core-infer-shapes, core-fold-constants, core-to-tflite), then
    every op gets the minimum version it needs (tflite-op-versions)."""
    # lazy: loads 18 more modules (dialects, passes, semantics)
    from mlconv.passes.pipelines import CoreToTflitePipeline

    if any(op.name.startswith("core.") for op in module.walk()):
        CoreToTflitePipeline().apply(make_context(), module)
    else:
        TfliteOpVersionsPass().apply(make_context(), module)
    write_tflite(module, out_path)

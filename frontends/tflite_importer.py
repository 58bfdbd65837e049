"""Import a .tflite flatbuffer into the tflite dialect.

    module = import_tflite("model.tflite")

Subgraph 0 becomes `func.func @main` (inputs and outputs in order, each named by
`{mlconv.name = "..."}`). The subgraphs of IF / WHILE operators become their regions (a copy
per operator that holds them, ending in `tflite.YIELD`); a subgraph index outside the file or a
subgraph that holds itself is refused. Tensors with a buffer become `tflite.CONST` ops (bytes, never lists;
a quantized constant keeps its storage integers in `value` and the `!quant.uniform` type on
its result). Each operator becomes `tflite.<BUILTIN_NAME>` with its options as attributes and
its `version`, located at `NameLoc(<first output tensor name>)`. A CUSTOM operator becomes
`tflite.CUSTOM` with its `custom_code` and its flexbuffer options decoded into
`custom_options` (tflite-to-core lowers it by its code, or keeps it as `core.Custom` with
`allow-custom`). An absent optional input (-1) becomes a `tflite.NO_VALUE`. Errors (not a
TFLite file, truncated file, an operator version the tables do not know) are one-line
`FrontendError`s.
"""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.builder import Builder
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    IntegerType,
    ModuleOp,
    NameLoc,
    NoneAttr,
    Signedness,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.rewriter import InsertPoint

from mlconv.dense import element_type, to_dense_attr
from mlconv.dialects import tflite
from mlconv.dialects.quant import UniformQuantizedType
from mlconv.dialects.tflite_versions import known_version
from mlconv.errors import FrontendError
from mlconv.frontends.names import name_hint
from mlconv.signature.main_function import main_function

# TFLite TensorType -> numpy dtype of the stored values.
NUMPY_DTYPES: dict[str, np.dtype] = {
    "FLOAT32": np.dtype(np.float32),
    "FLOAT16": np.dtype(np.float16),
    "FLOAT64": np.dtype(np.float64),
    "INT8": np.dtype(np.int8),
    "UINT8": np.dtype(np.uint8),
    "INT16": np.dtype(np.int16),
    "UINT16": np.dtype(np.uint16),
    "INT32": np.dtype(np.int32),
    "UINT32": np.dtype(np.uint32),
    "INT64": np.dtype(np.int64),
    "UINT64": np.dtype(np.uint64),
    "BOOL": np.dtype(np.bool_),
}
TENSOR_TYPE_NAMES: dict[int, str] = {v: k for k, v in tflite.ENUMS["TensorType"].items()}


@cache
def tflite_schema():
    """TensorFlow's generated TFLite schema module, loaded from its file alone.

    Importing `tensorflow.lite.python.schema_py_generated` runs TensorFlow's package init
    (seconds); the file itself only needs `flatbuffers`, so it is loaded on its own.
    """
    spec = importlib.util.find_spec("tensorflow")
    if spec is None or not spec.submodule_search_locations:
        raise FrontendError("reading and writing .tflite files needs tensorflow installed")
    path = Path(list(spec.submodule_search_locations)[0]) / "lite/python/schema_py_generated.py"
    module_spec = importlib.util.spec_from_file_location("mlconv_tflite_schema", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


def _storage_type(type_name: str) -> IntegerType:
    dtype = NUMPY_DTYPES[type_name]
    signedness = Signedness.UNSIGNED if dtype.kind == "u" else Signedness.SIGNLESS
    return IntegerType(dtype.itemsize * 8, signedness)


def element_of(tensor, type_name: str) -> Attribute:
    """A tensor's element type: `!quant.uniform` when it carries scales, else builtin."""
    q = tensor.quantization
    scales = [] if q is None or q.scale is None else [float(s) for s in q.scale]
    if scales and NUMPY_DTYPES[type_name].kind in "iu":
        zero_points = [int(z) for z in (q.zeroPoint if q.zeroPoint is not None else [0])]
        zero_points += [0] * (len(scales) - len(zero_points))
        axis = int(q.quantizedDimension) if len(scales) > 1 else -1
        return UniformQuantizedType(
            _storage_type(type_name), element_type(np.float32), scales, zero_points, axis
        )
    return element_type(NUMPY_DTYPES[type_name])


class _Importer:
    def __init__(self, path: str, data: bytes):
        self.path = path
        self.data = data
        self.schema = tflite_schema()

    def model(self):
        s = self.schema
        if len(self.data) < 8 or not s.Model.ModelBufferHasIdentifier(self.data, 0):
            raise FrontendError(f"{self.path} is not a TFLite flatbuffer (no 'TFL3' identifier)")
        try:
            return s.ModelT.InitFromObj(s.Model.GetRootAs(self.data, 0))
        except Exception as error:  # truncated/corrupt buffers raise struct/index errors
            raise FrontendError(
                f"{self.path} is a corrupt or truncated TFLite file ({type(error).__name__})"
            ) from None

    def buffer_bytes(self, model, index: int) -> bytes | None:
        if index <= 0 or index >= len(model.buffers or []):
            return None
        buffer = model.buffers[index]
        if buffer.offset > 1 and buffer.size:
            return self.data[buffer.offset : buffer.offset + buffer.size]
        if buffer.data is None or len(buffer.data) == 0:
            return None
        return np.asarray(buffer.data, dtype=np.uint8).tobytes()

    @staticmethod
    def check(codes, tensors, op) -> str | None:
        """Why `op` cannot be imported (custom, unknown operator or version), else None."""
        code = codes[op.opcodeIndex]
        builtin = max(code.builtinCode, code.deprecatedBuiltinCode)
        operator = tflite.OPERATOR_NAMES.get(builtin, str(builtin))
        outputs = op.outputs if op.outputs is not None else []
        where = f'loc("{_name(tensors[outputs[0]])}")' if len(outputs) else "loc(unknown)"
        if operator == "CUSTOM":
            problem = tflite.custom_code_problem(_custom_code(code))
            return f"CUSTOM operator: {problem} at {where}" if problem else None
        if tflite.op_class(operator) is None:
            return f"unknown builtin operator code {builtin} at {where}"
        if not known_version(operator, code.version):
            return (
                f"Didn't find op for builtin opcode '{operator}' version '{code.version}' "
                f"at {where}"
            )
        return None

    def run(self) -> ModuleOp:
        model = self.model()
        if not model.subgraphs:
            raise FrontendError(f"{self.path} has no subgraph")
        self.model_t = model
        codes = model.operatorCodes or []
        reached = self.reachable(model)
        problems = [
            p
            for index in reached
            for op in model.subgraphs[index].operators or []
            if (p := self.check(codes, model.subgraphs[index].tensors or [], op))
        ]
        if problems:  # every unknown (operator, version) at once
            raise FrontendError("; ".join(problems))
        graph = model.subgraphs[0]
        tensors = graph.tensors or []
        block, inputs, outputs = self.subgraph(0, ())
        names = [_name(tensors[i]) for i in inputs], [_name(tensors[i]) for i in outputs]
        return ModuleOp([main_function(block, *names)])

    def operator_name(self, op) -> str:
        code = (self.model_t.operatorCodes or [])[op.opcodeIndex]
        builtin = max(code.builtinCode, code.deprecatedBuiltinCode)
        return tflite.OPERATOR_NAMES.get(builtin, str(builtin))

    def callees(self, model, index: int) -> list[int]:
        """The subgraphs the IF / WHILE operators of subgraph `index` hold, in order."""
        return [c for op in model.subgraphs[index].operators or [] for c in self.callees_of(op)]

    def reachable(self, model) -> list[int]:
        """Subgraph 0 and every subgraph its control flow reaches (each once)."""
        seen, todo = [0], [0]
        while todo:
            for callee in self.callees(model, todo.pop()):
                if callee not in seen:
                    seen.append(callee)
                    todo.append(callee)
        return seen

    def subgraph(self, index: int, calling: tuple[int, ...]) -> tuple[Block, list[int], list[int]]:
        """Subgraph `index` as a block ending in tflite.YIELD of its outputs (the caller makes
        @main's func.return of it); its input and output tensor indices. `calling`: the
        subgraphs being translated around it (a subgraph that holds itself is refused)."""
        model = self.model_t
        if index in calling:
            raise FrontendError(
                f"subgraph {index} holds itself through control flow (recursion is not modelled)"
            )
        graph = model.subgraphs[index]
        tensors = graph.tensors or []

        def type_name(t) -> str:
            name = TENSOR_TYPE_NAMES.get(t.type, str(t.type))
            if name not in NUMPY_DTYPES:
                raise FrontendError(
                    f"tensor '{_name(t)}' has type {name}, which mlconv does not support"
                )
            return name

        def tensor_type(t) -> TensorType:
            dims = t.shapeSignature if t.shapeSignature is not None else t.shape
            # shape_signature's -1 (a dynamic dim, e.g. Keras's None batch) is `?`.
            dims = [] if dims is None else [DYNAMIC_INDEX if d < 0 else int(d) for d in dims]
            return TensorType(element_of(t, type_name(t)), dims)

        inputs = [int(i) for i in (graph.inputs if graph.inputs is not None else [])]
        outputs = [int(i) for i in (graph.outputs if graph.outputs is not None else [])]
        block = Block(arg_types=[tensor_type(tensors[i]) for i in inputs])
        values: dict[int, SSAValue] = dict(zip(inputs, block.args, strict=True))
        for i, arg in zip(inputs, block.args, strict=True):
            arg.name_hint = _hint(_name(tensors[i]))
        builder = Builder(InsertPoint.at_end(block))
        no_value: SSAValue | None = None

        def value_of(index: int) -> SSAValue:
            nonlocal no_value
            if index < 0:
                if no_value is None:
                    no_value = builder.insert(tflite.NoValueOp()).output
                return no_value
            if index not in values:
                t = tensors[index]
                raw = self.buffer_bytes(model, t.buffer)
                shape = [] if t.shape is None else [int(d) for d in t.shape]
                if raw is None and t.isVariable and all(d >= 0 for d in shape):
                    # A variable tensor without data (a fused RNN's state): LiteRT starts it
                    # at zeros; mlconv runs each call from that state (no state kept between).
                    dtype = NUMPY_DTYPES[type_name(t)]
                    raw = np.zeros(shape, dtype).tobytes()
                if raw is None:
                    raise FrontendError(
                        f"tensor '{_name(t)}' is used before it is produced and has no data"
                    )
                result_type = tensor_type(t)
                if any(d < 0 for d in result_type.get_shape()):  # data has its actual shape
                    shape = [] if t.shape is None else [int(d) for d in t.shape]
                    result_type = TensorType(result_type.get_element_type(), shape)
                dtype = NUMPY_DTYPES[type_name(t)]
                array = np.frombuffer(raw, dtype=dtype).reshape(result_type.get_shape())
                const = tflite.ConstOp(to_dense_attr(array), result_type)
                const.location = name_loc(_name(t))
                const.output.name_hint = _hint(_name(t))
                values[index] = builder.insert(const).output
            return values[index]

        codes = model.operatorCodes or []
        for op in graph.operators or []:
            code = codes[op.opcodeIndex]
            operator = self.operator_name(op)
            out_index = [int(i) for i in (op.outputs if op.outputs is not None else [])]
            where = _name(tensors[out_index[0]]) if out_index else "?"
            op_class = tflite.op_class(operator) if operator != "CUSTOM" else tflite.CustomOp
            operands = [value_of(int(i)) for i in (op.inputs if op.inputs is not None else [])]
            attributes: dict[str, Attribute] = {
                "version": tflite.IntegerAttr(code.version, tflite.i32)
            }
            options = op.builtinOptions if op.builtinOptions is not None else op.builtinOptions2
            regions: list[Region] = []
            if operator in tflite.REGION_OPTIONS:  # the subgraphs it holds, as regions
                for callee in self.callees_of(op):
                    region_block, _, _ = self.subgraph(callee, (*calling, index))
                    regions.append(Region(region_block))
            elif operator == "CUSTOM":
                raw = b"" if op.customOptions is None else bytes(op.customOptions)
                attributes |= custom_attributes(_custom_code(code), raw, where)
            elif options is not None:
                for field in tflite.fields_of(operator):
                    value = getattr(options, field["py"])
                    if value is not None and field["kind"] != "table":  # None: absent vector
                        attributes[field["name"]] = tflite.option_attr(field, value)
            new = op_class.create(
                operands=operands,
                result_types=[tensor_type(tensors[i]) for i in out_index],
                attributes=attributes,
                regions=regions,
            )
            new.location = name_loc(where)
            for i, result in zip(out_index, new.results, strict=True):
                result.name_hint = _hint(_name(tensors[i]))
                values[i] = result
            builder.insert(new)
        results = [value_of(i) for i in outputs]
        if index == 0:
            builder.insert(func.ReturnOp(*results))
        else:
            builder.insert(tflite.YieldOp.create(operands=results))
        return block, inputs, outputs

    def callees_of(self, op) -> list[int]:
        """The subgraph indices an IF / WHILE operator holds ([] for other operators)."""
        operator = self.operator_name(op)
        if operator not in tflite.REGION_OPTIONS:
            return []
        by_name = {f["name"]: f["py"] for f in tflite.fields_of(operator)}
        found = []
        for field in tflite.REGION_OPTIONS[operator]:
            options = op.builtinOptions
            callee = -1 if options is None else int(getattr(options, by_name[field]))
            count = len(self.model_t.subgraphs)
            if not 0 < callee < count:
                raise FrontendError(
                    f"{operator} names subgraph {callee} as its {field}, but the file has "
                    f"subgraphs 1 to {count - 1} besides the main one"
                )
            found.append(callee)
        return found


def _custom_code(code) -> str:
    return (code.customCode or b"").decode(errors="replace")


def _option_attr(value: Any, path: str) -> Attribute:
    """A decoded flexbuffer value as an attribute (the encoding core.Custom's `attrs` reads)."""
    # lazy: loads JAX, which this module does not
    from mlconv.dialects.tpu import encode_param

    if isinstance(value, bytes | bytearray):  # a blob: bytes, never a list
        return to_dense_attr(np.frombuffer(bytes(value), dtype=np.uint8))
    if isinstance(value, dict):
        raise FrontendError(f"option '{path}' is a nested map, which mlconv does not model")
    if isinstance(value, list | tuple) and any(isinstance(v, dict | bytes) for v in value):
        raise FrontendError(f"option '{path}' is a vector of maps or blobs, not modelled")
    return encode_param(value)


def custom_attributes(custom_code: str, raw: bytes, where: str) -> dict[str, Attribute]:
    """A CUSTOM operator's attributes: its code and its flexbuffer options map decoded
    (`custom_options`); options that are not a flexbuffer map stay bytes (`raw_options`)."""
    from flatbuffers import flexbuffers

    attributes: dict[str, Attribute] = {"custom_code": StringAttr(custom_code)}
    decoded: Any = {}
    if raw:
        try:
            decoded = flexbuffers.Loads(raw)
        except Exception:  # not a flexbuffer (a packed C struct, ...): kept as it is
            decoded = None
    if isinstance(decoded, dict):
        try:
            entries = {str(k): _option_attr(v, str(k)) for k, v in sorted(decoded.items())}
        except FrontendError as error:
            raise FrontendError(
                f"custom operator '{custom_code}': {error.message} at loc(\"{where}\")"
            ) from None
        attributes["custom_options"] = DictionaryAttr(entries)
    else:
        attributes["custom_options"] = DictionaryAttr({})
        attributes["raw_options"] = to_dense_attr(np.frombuffer(raw, dtype=np.uint8))
    return attributes


def name_loc(name: str) -> NameLoc:
    return NameLoc(StringAttr(name), NoneAttr())


def _name(tensor) -> str:
    name = tensor.name
    return name.decode(errors="replace") if isinstance(name, bytes) else str(name or "")


def _hint(name: str) -> str | None:
    cleaned = "".join(c if c.isalnum() or c in "_" else "_" for c in name)
    usable = cleaned and not cleaned[0].isdigit() and not cleaned.startswith("_")
    return name_hint(cleaned) if usable else None  # stable through a round trip


def import_tflite(path: str | Path) -> ModuleOp:
    """The module of a .tflite file (subgraph 0 as `func.func @main`, the subgraphs of its
    control flow as regions)."""
    path = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise FrontendError(f"cannot read {path}: {error.strerror}") from None
    return _Importer(path, data).run()


__all__ = ["import_tflite", "DenseIntOrFPElementsAttr"]

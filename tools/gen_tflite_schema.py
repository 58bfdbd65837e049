"""Snapshot TensorFlow's TFLite schema (schema_py_generated) as dialects/tflite_schema.json.

    /work/venv/bin/python tools/gen_tflite_schema.py [-o dialects/tflite_schema.json]

Loading the `tflite` dialect reads the JSON, not TensorFlow (whose import takes seconds). The
snapshot holds: the BuiltinOperator enum; the enums options use; every *Options table of the
BuiltinOptions/BuiltinOptions2 unions with its fields (flatbuffer slot, kind, default); and which
options table each operator takes. Field kinds and slots are read from the generated builder
functions (`XOptionsAddField` -> `builder.Prepend<Kind>Slot(slot, ...)`), defaults from the
object API (`XOptionsT.__init__`). Which operator takes which table is not in the Python
schema: names are matched after dropping `_` and case (CONV_2D ~ Conv2DOptions), plus the
OPTIONS_OF overrides below for tables shared by several operators.
"""

from __future__ import annotations

import argparse
import inspect
import json
import re
from pathlib import Path

# Tables shared by several operators, or named differently from the operator.
OPTIONS_OF = {
    "AVERAGE_POOL_2D": "Pool2DOptions",
    "MAX_POOL_2D": "Pool2DOptions",
    "L2_POOL_2D": "Pool2DOptions",
    "MEAN": "ReducerOptions",
    "SUM": "ReducerOptions",
    "REDUCE_MAX": "ReducerOptions",
    "REDUCE_MIN": "ReducerOptions",
    "REDUCE_PROD": "ReducerOptions",
    "REDUCE_ANY": "ReducerOptions",
    "REDUCE_ALL": "ReducerOptions",
    "MAXIMUM": "MaximumMinimumOptions",
    "MINIMUM": "MaximumMinimumOptions",
    "L2_NORMALIZATION": "L2NormOptions",
    "UNIDIRECTIONAL_SEQUENCE_RNN": "SequenceRNNOptions",
    "CONV_3D_TRANSPOSE": "Conv3DOptions",
    "RANDOM_STANDARD_NORMAL": "RandomOptions",
    "RANDOM_UNIFORM": "RandomOptions",
    "MULTINOMIAL": "RandomOptions",
    "STABLEHLO_COMPOSITE": "StableHLOCompositeOptions",
}

# Which enum an 8-bit options field holds (the Python schema keeps only its width).
ENUM_OF_FIELD = {
    "padding": "Padding",
    "fusedActivationFunction": "ActivationFunctionType",
    "type": "LSHProjectionType",
    "weightsFormat": "FullyConnectedOptionsWeightsFormat",
    "kernelType": "LSTMKernelType",
    "combiner": "CombinerType",
    "mode": "MirrorPadMode",
    "quantizedBiasType": "TensorType",
    "inDataType": "TensorType",
    "outDataType": "TensorType",
    "outputType": "TensorType",
    "idxOutType": "TensorType",
    "outType": "TensorType",
    "keyDtype": "TensorType",
    "valueDtype": "TensorType",
    "reduceFunction": "ReduceWindowFunction",
    "comparisonDirection": "StablehloComparisonDirection",
    "compareType": "StablehloComparisonType",
    "algorithm": "RngAlgorithm",
}

_SLOT = re.compile(r"builder\.Prepend(\w+)Slot\((\d+),")
_VECTOR_ELEMENT = re.compile(r"GetVectorAsNumpy\(flatbuffers\.number_types\.(\w+)Flags")
_SCALAR_KINDS = {
    "Bool": "bool",
    "Int8": "int",
    "Uint8": "int",
    "Int16": "int",
    "Uint16": "int",
    "Int32": "int",
    "Uint32": "int",
    "Int64": "int",
    "Uint64": "int",
    "Float32": "float",
    "Float64": "float",
}


def _normal(name: str) -> str:
    return name.replace("_", "").lower()


def _enum_values(cls: type) -> dict[str, int]:
    return {k: v for k, v in vars(cls).items() if not k.startswith("_") and isinstance(v, int)}


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])|(?<=[A-Z])([A-Z])(?=[a-z])", r"_\1\2", name).lower()


def _table_fields(schema, table: str) -> list[dict]:
    """Fields of one options table in slot order."""
    fields = []
    defaults = inspect.signature(getattr(schema, f"{table}T").__init__).parameters
    reader = getattr(schema, table)
    for camel, parameter in defaults.items():
        if camel == "self":
            continue
        upper = camel[0].upper() + camel[1:]
        adder = getattr(schema, f"{table}Add{upper}")
        slot_kind, slot = _SLOT.search(inspect.getsource(adder)).groups()
        field = {"name": _snake(camel), "py": camel, "slot": int(slot)}
        default = parameter.default
        if slot_kind in _SCALAR_KINDS:
            kind = _SCALAR_KINDS[slot_kind]
            if slot_kind in ("Int8", "Uint8") and camel in ENUM_OF_FIELD:
                field["enum"] = ENUM_OF_FIELD[camel]
                kind = "enum"
            field.update(kind=kind, width=slot_kind, default=default)
        elif hasattr(reader, f"{upper}AsNumpy"):
            element = _VECTOR_ELEMENT.search(inspect.getsource(getattr(reader, f"{upper}AsNumpy")))
            field.update(kind="vector", element=element.group(1), default=None)
        elif "self._tab.String(" in inspect.getsource(getattr(reader, upper)):
            field.update(kind="string", default=None)
        else:
            field.update(kind="table", default=None)  # nested tables: not modelled
        fields.append(field)
    return sorted(fields, key=lambda f: f["slot"])


def snapshot() -> dict:
    # TensorFlow: optional (mlconv[tf]) and seconds to load; only this path needs it
    from tensorflow.lite.python import schema_py_generated as schema

    operators = _enum_values(schema.BuiltinOperator)
    unions = {
        "BuiltinOptions": _enum_values(schema.BuiltinOptions),
        "BuiltinOptions2": _enum_values(schema.BuiltinOptions2),
    }
    options = {}
    for union, members in unions.items():
        for table, index in members.items():
            if table == "NONE":
                continue
            options[table] = {
                "union": union,
                "index": index,
                "fields": _table_fields(schema, table),
            }
    by_normal = {_normal(t.removesuffix("Options")): t for t in options}
    ops = []
    for op, code in sorted(operators.items(), key=lambda kv: kv[1]):
        table = OPTIONS_OF.get(op) or by_normal.get(_normal(op))
        ops.append({"name": op, "code": code, "options": table})
    enums = {
        name: _enum_values(getattr(schema, name))
        for name in sorted({*ENUM_OF_FIELD.values(), "TensorType"})
    }
    return {
        "source": "tensorflow.lite.python.schema_py_generated",
        "operators": ops,
        "options": options,
        "enums": enums,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = Path(__file__).resolve().parent.parent / "dialects" / "tflite_schema.json"
    parser.add_argument("-o", "--output", type=Path, default=default)
    args = parser.parse_args()
    args.output.write_text(json.dumps(snapshot(), indent=1, sort_keys=False) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()

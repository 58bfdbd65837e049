"""The `tflite` dialect: every TFLite builtin operator, generated from TensorFlow's schema.

The op list, the options tables and their fields come from `tflite_schema.json`, a snapshot of
`tensorflow.lite.python.schema_py_generated` written by `tools/gen_tflite_schema.py` (so that
loading the dialect does not import TensorFlow). Conventions:

- Op names are the builtin operator names: `tflite.CONV_2D`, `tflite.DEPTHWISE_CONV_2D`;
  classes are `<CamelCase>Op` (`Conv2DOp`, `DepthwiseConv2DOp`).
- Operands and results are variadic, in the order of the operator's inputs/outputs in the
  file. An optional input that is absent (index -1 in the flatbuffer) is the result of a
  `tflite.NO_VALUE` op (type `none`), so operand positions always match TFLite's.
- Each field of the operator's builtin options table is an attribute named as in schema.fbs
  (`stride_w`, `fused_activation_function`); enums are strings (`padding = "SAME"`), vectors
  are dense arrays (`new_shape = array<i32: 1, -1>`). A missing attribute means the schema's
  default. `version` (i32) is the operator version written in / to the file.
- Constant tensors are `tflite.CONST` ops: `value` holds the stored values (bytes); for a
  quantized tensor the result type has the `!quant.uniform` element type and `value` the
  storage integers.
- Control flow holds its subgraphs as regions instead of subgraph indices: `tflite.IF` has the
  regions `then_branch` and `else_branch`, `tflite.WHILE` has `cond` and `body`. Each region is
  one block whose arguments are the subgraph's inputs and which ends in `tflite.YIELD` of the
  subgraph's outputs (TFLite's subgraphs are closed: a region uses nothing from outside).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from xdsl.dialects.builtin import (
    BoolAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    Float32Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    NoneType,
    StringAttr,
    TensorType,
    i32,
)
from xdsl.ir import Attribute, Dialect
from xdsl.irdl import (
    IRDLOperation,
    attr_def,
    irdl_op_definition,
    opt_attr_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import ConstantLike, IsTerminator, Pure
from xdsl.utils.exceptions import VerifyException

from mlconv.dense import to_numpy

SCHEMA: dict[str, Any] = json.loads((Path(__file__).parent / "tflite_schema.json").read_text())
OPERATORS: dict[str, dict] = {op["name"]: op for op in SCHEMA["operators"]}
OPERATOR_NAMES: dict[int, str] = {op["code"]: op["name"] for op in SCHEMA["operators"]}
OPTIONS: dict[str, dict] = SCHEMA["options"]
ENUMS: dict[str, dict[str, int]] = SCHEMA["enums"]
# Pseudo-operators of the file format (no opcode), not builtins.
NOT_OPERATORS = {"CUSTOM", "DELEGATE", "PLACEHOLDER_FOR_GREATER_OP_CODES"}

_INT_TYPES = {
    "Int8": IntegerType(8),
    "Uint8": IntegerType(16),
    "Int16": IntegerType(16),
    "Uint16": IntegerType(32),
    "Int32": IntegerType(32),
    "Uint32": IntegerType(64),
    "Int64": IntegerType(64),
    "Uint64": IntegerType(64),
}
_ARRAY_TYPES = {
    "Int32": IntegerType(32),
    "Int64": IntegerType(64),
    "Uint32": IntegerType(64),
    "Uint8": IntegerType(8),
    "Bool": IntegerType(8),
    "Float32": Float32Type(),
}


def fields_of(operator: str) -> list[dict]:
    """The options fields of a builtin operator ([] when it has no options table, and for
    the dialect's own ops such as YIELD)."""
    table = OPERATORS[operator]["options"] if operator in OPERATORS else None
    return OPTIONS[table]["fields"] if table else []


def option_attr(field: dict, value: Any) -> Attribute:
    """The attribute of an options field's value (as the object API holds it)."""
    kind = field["kind"]
    if kind == "enum":
        names = {v: k for k, v in ENUMS[field["enum"]].items()}
        return StringAttr(names.get(int(value), str(int(value))))
    if kind == "bool":
        return BoolAttr.from_bool(bool(value))
    if kind == "int":
        return IntegerAttr(int(value), _INT_TYPES[field["width"]])
    if kind == "float":
        return FloatAttr(float(value), Float32Type())
    if kind == "string":
        return StringAttr(value.decode() if isinstance(value, bytes) else str(value))
    if kind == "vector":
        element = _ARRAY_TYPES[field["element"]]
        values = [] if value is None else [v.item() if hasattr(v, "item") else v for v in value]
        if isinstance(element, IntegerType):
            values = [int(v) for v in values]
        return DenseArrayBase.from_list(element, values)
    raise ValueError(f"options field kind {kind} is not modelled")


def option_value(field: dict, attr: Attribute | None) -> Any:
    """An options field's value as the object API wants it; the default when `attr` is None."""
    if attr is None:
        return field["default"]
    kind = field["kind"]
    if kind == "enum":
        assert isinstance(attr, StringAttr)
        return ENUMS[field["enum"]][attr.data]
    if kind in ("bool", "int"):
        assert isinstance(attr, IntegerAttr)
        return bool(attr.value.data) if kind == "bool" else attr.value.data
    if kind == "float":
        assert isinstance(attr, FloatAttr)
        return attr.value.data
    if kind == "string":
        assert isinstance(attr, StringAttr)
        return attr.data
    if kind == "vector":
        assert isinstance(attr, DenseArrayBase)
        return list(attr.get_values())
    raise ValueError(f"options field kind {kind} is not modelled")


class TFLiteOperation(IRDLOperation):
    """Base of the builtin operator classes (generated below)."""

    inputs = var_operand_def()
    outputs = var_result_def()
    version = attr_def(IntegerAttr)

    @property
    def operator(self) -> str:
        """The builtin operator name: CONV_2D for tflite.CONV_2D."""
        return self.name.removeprefix("tflite.")

    @property
    def key(self) -> str:
        """What lowerings are registered under: the operator name (a custom op's code)."""
        return self.operator

    def options(self) -> dict[str, Any]:
        """Every options field's value (enums as names, defaults filled in)."""
        values = {}
        for field in fields_of(self.operator):
            attr = self.attributes.get(field["name"])
            value = option_value(field, attr)
            if field["kind"] == "enum" and attr is None:
                value = {v: k for k, v in ENUMS[field["enum"]].items()}.get(value, value)
            elif field["kind"] == "enum":
                value = attr.data
            values[field["name"]] = value
        return values

    def verify_(self) -> None:
        if self.version.value.data < 1:
            raise VerifyException(f"version must be at least 1, got {self.version.value.data}")
        for field in fields_of(self.operator):
            attr = self.attributes.get(field["name"])
            if attr is None:
                continue
            if field["kind"] == "enum":
                if not isinstance(attr, StringAttr) or attr.data not in ENUMS[field["enum"]]:
                    known = ", ".join(ENUMS[field["enum"]])
                    raise VerifyException(
                        f"{field['name']} must be one of {known} (the {field['enum']} enum)"
                    )
            elif field["kind"] in ("int", "bool") and not isinstance(attr, IntegerAttr):
                raise VerifyException(f"{field['name']} must be an integer attribute")
            elif field["kind"] == "float" and not isinstance(attr, FloatAttr):
                raise VerifyException(f"{field['name']} must be a float attribute")
            elif field["kind"] == "vector" and not isinstance(attr, DenseArrayBase):
                raise VerifyException(f"{field['name']} must be a dense array")


def class_name(operator: str) -> str:
    """CONV_2D -> Conv2DOp, BATCH_MATMUL -> BatchMatmulOp."""
    parts = operator.split("_")
    return (
        "".join(p if p[:1].isdigit() else p.capitalize() for p in parts)
        .replace("2d", "2D")
        .replace("3d", "3D")
        + "Op"
    )


# Hand-written docs for the common operators; the rest get a generated one.
_DOCS = {
    "CONV_2D": """2-D convolution, NHWC input, OHWI filter, optional bias (TFLite CONV_2D).

    Inputs: input, filter, bias (may be `tflite.NO_VALUE`). Versions: 2 for uint8 quantized,
    3 int8, 4 hybrid, 5 grouped (input channels != filter channels), 6 per-channel hybrid,
    7 int16x8, 8 blockwise/int4. Example:

        %y = "tflite.CONV_2D"(%x, %w, %b) {padding = "SAME", stride_w = 1 : i32,
               stride_h = 1 : i32, fused_activation_function = "RELU6", version = 1 : i32}
             : (tensor<1x8x8x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x8x8x4xf32>
    """,
    "DEPTHWISE_CONV_2D": """Depthwise 2-D convolution, NHWC input, 1HW(C*M) filter.

    Version 2 when a dilation factor is not 1 (the versioning example of TFLite's docs),
    3 for int8, 5 per-channel int8 quantized with dilation/multiplier,
    6 int16x8. Example:

        %y = "tflite.DEPTHWISE_CONV_2D"(%x, %w, %b) {padding = "VALID", depth_multiplier = 1 : i32,
               dilation_w_factor = 2 : i32, dilation_h_factor = 2 : i32, version = 2 : i32}
             : (tensor<1x9x9x3xf32>, tensor<1x3x3x3xf32>, tensor<3xf32>) -> tensor<1x5x5x3xf32>
    """,
    "FULLY_CONNECTED": """Fully connected layer: y = x . W^T + b, W is [units, in].

    Example:

        %y = "tflite.FULLY_CONNECTED"(%x, %w, %b) {fused_activation_function = "NONE",
               weights_format = "DEFAULT", keep_num_dims = false, version = 1 : i32}
             : (tensor<1x16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<1x8xf32>
    """,
    "ADD": """Elementwise addition with broadcasting and a fused activation.

    Example:

        %z = "tflite.ADD"(%x, %y) {fused_activation_function = "NONE", version = 1 : i32}
             : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x4xf32>
    """,
}


def _make_op(operator: str) -> type[TFLiteOperation]:
    info = OPERATORS[operator]
    fields = fields_of(operator)
    doc = _DOCS.get(operator) or (
        f"TFLite builtin operator {operator} (code {info['code']}), generated from the schema.\n\n"
        + (
            f"Options ({info['options']}): "
            + ", ".join(f"{f['name']} ({f.get('enum', f['kind'])})" for f in fields)
            if fields
            else "No options."
        )
        + f'\n\n    %r = "tflite.{operator}"(...) {{version = 1 : i32}} : (...) -> ...\n'
    )
    body: dict[str, Any] = {
        "__doc__": doc,
        "__module__": __name__,
        "name": f"tflite.{operator}",
    }
    for field in fields:
        body[field["name"]] = opt_attr_def(Attribute, attr_name=field["name"])
    return irdl_op_definition(type(class_name(operator), (TFLiteOperation,), body))


@irdl_op_definition
class ConstOp(IRDLOperation):
    """A constant tensor of the file (a tensor with a non-empty buffer).

    `value` holds the stored values; a quantized tensor's result has a `!quant.uniform`
    element type and `value` its storage integers. Example:

        %w = "tflite.CONST"() {value = dense<...> : tensor<8x3xi8>}
             : () -> tensor<8x3x!quant.uniform<i8:f32:0, {...}>>
    """

    name = "tflite.CONST"
    value = attr_def(DenseIntOrFPElementsAttr)
    output = result_def(TensorType)
    traits = traits_def(ConstantLike(), Pure())

    def __init__(self, value: DenseIntOrFPElementsAttr, result_type: Attribute | None = None):
        super().__init__(attributes={"value": value}, result_types=[result_type or value.type])

    def verify_(self) -> None:
        if tuple(self.value.get_shape()) != tuple(self.output.type.get_shape()):
            raise VerifyException("value and result must have the same shape")

    def numpy(self):
        return to_numpy(self.value)


@irdl_op_definition
class NoValueOp(IRDLOperation):
    """An absent optional input (index -1 in the file), e.g. a convolution without bias.

    %none = "tflite.NO_VALUE"() : () -> none
    """

    name = "tflite.NO_VALUE"
    output = result_def(NoneType)
    traits = traits_def(Pure())

    def __init__(self):
        super().__init__(result_types=[NoneType()])


def custom_code_problem(code: str) -> str | None:
    """Why `code` cannot name a custom operator (empty, or spelled as a builtin), else None:
    tflite-to-core keys a custom op's lowering by its code beside the builtin names."""
    if not code:
        return "custom_code must not be empty"
    if code in OPERATORS:
        return f"custom_code '{code}' is the name of a builtin operator"
    return None


@irdl_op_definition
class CustomOp(TFLiteOperation):
    """A CUSTOM operator (BuiltinOperator CUSTOM): an op TFLite has no builtin for, named by
    its `custom_code` (a TF op converted with `allow_custom_ops=True`, TFLite_Detection_
    PostProcess, TF Text ...). `custom_options` is its flexbuffer options map decoded into
    attributes (ints i64, floats f64, bools, strings, vectors as arrays, blobs as dense ui8);
    options that are not a flexbuffer map are kept as bytes in `raw_options`. `tflite-to-core`
    keys its lowering by the custom code (`lowering("tflite", "<code>")`); with `allow-custom`
    one without a lowering becomes `core.Custom` with domain "tflite". Example:

        %y = "tflite.CUSTOM"(%x, %z) {custom_code = "ApproximateEqual",
               custom_options = {T = 0 : i64, tolerance = 1.000000e-02 : f64}, version = 1 : i32}
             : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xi1>
    """

    name = "tflite.CUSTOM"
    custom_code = attr_def(StringAttr)
    custom_options = attr_def(DictionaryAttr)
    raw_options = opt_attr_def(DenseIntOrFPElementsAttr)

    @property
    def key(self) -> str:
        return self.custom_code.data

    def verify_(self) -> None:
        super().verify_()
        if problem := custom_code_problem(self.custom_code.data):
            raise VerifyException(problem)


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Ends a region of `tflite.IF` / `tflite.WHILE`: the subgraph's outputs, in order.

    "tflite.YIELD"(%a, %b) : (tensor<?x4xf32>, tensor<i32>) -> ()
    """

    name = "tflite.YIELD"
    values = var_operand_def()
    traits = traits_def(IsTerminator())

    @property
    def key(self) -> str:
        """What its lowering is registered under (as a builtin's: `TFLiteOperation.key`)."""
        return "YIELD"


def _yielded(op: IRDLOperation, region_name: str) -> list:
    """The values region `region_name` of `op` yields (it must end in tflite.YIELD)."""
    block = getattr(op, region_name).block
    if not isinstance(block.last_op, YieldOp):
        raise VerifyException(f"region '{region_name}' must end with tflite.YIELD")
    return list(block.last_op.values)


def _check_region(op: IRDLOperation, region_name: str, inputs: list, outputs: int) -> list:
    """Region `region_name` takes one argument per value of `inputs`, of the same element
    type, and yields `outputs` values (-1: any number); the yielded values."""
    block = getattr(op, region_name).block
    if len(block.args) != len(inputs):
        raise VerifyException(
            f"region '{region_name}' has {len(block.args)} arguments for {len(inputs)} inputs"
        )
    for arg, value in zip(block.args, inputs, strict=True):
        if _element(arg.type) != _element(value.type):
            raise VerifyException(
                f"region '{region_name}': argument #{arg.index} has element type "
                f"{_element(arg.type)}, its input {_element(value.type)}"
            )
    yielded = _yielded(op, region_name)
    if outputs >= 0 and len(yielded) != outputs:
        raise VerifyException(
            f"region '{region_name}' yields {len(yielded)} values for {outputs} results"
        )
    return yielded


def _element(t: Attribute) -> Attribute:
    return t.get_element_type() if isinstance(t, TensorType) else t


@irdl_op_definition
class IfOp(TFLiteOperation):
    """TFLite IF: `then_branch` when the boolean `inputs[0]` is true, else `else_branch`; the
    other inputs are both branches' arguments. The subgraphs of `then_subgraph_index` /
    `else_subgraph_index` are held as the two regions. Example:

        %r = "tflite.IF"(%c, %x) ({
        ^bb0(%a: tensor<?x4xf32>):
          "tflite.YIELD"(%a) : (tensor<?x4xf32>) -> ()
        }, {
        ^bb0(%a: tensor<?x4xf32>):
          %n = "tflite.NEG"(%a) {version = 1 : i32} : (tensor<?x4xf32>) -> tensor<?x4xf32>
          "tflite.YIELD"(%n) : (tensor<?x4xf32>) -> ()
        }) {version = 1 : i32} : (tensor<i1>, tensor<?x4xf32>) -> tensor<?x4xf32>
    """

    name = "tflite.IF"
    then_branch = region_def("single_block")
    else_branch = region_def("single_block")

    def verify_(self) -> None:
        super().verify_()
        operands = list(self.operands)
        if not operands or _element(operands[0].type) != IntegerType(1):
            raise VerifyException("the condition (input #0) must be a boolean tensor")
        for region in ("then_branch", "else_branch"):
            yielded = _check_region(self, region, operands[1:], len(self.results))
            for value, result in zip(yielded, self.results, strict=True):
                if _element(value.type) != _element(result.type):
                    raise VerifyException(
                        f"region '{region}' yields {_element(value.type)} for a "
                        f"{_element(result.type)} result"
                    )


@irdl_op_definition
class WhileOp(TFLiteOperation):
    """TFLite WHILE: while `cond(*values)` gives true, `values = body(*values)`, starting from
    the inputs; the results are the final values. The subgraphs of `cond_subgraph_index` /
    `body_subgraph_index` are held as the regions `cond` (yields one boolean) and `body`
    (yields one value per input). Example:

        %n, %v = "tflite.WHILE"(%i, %x) ({
        ^bb0(%a: tensor<i32>, %b: tensor<?x4xf32>):
          %lt = "tflite.LESS"(%a, %ten) {version = 1 : i32} : (tensor<i32>, tensor<i32>) -> tensor<i1>
          "tflite.YIELD"(%lt) : (tensor<i1>) -> ()
        }, {
        ^bb0(%a: tensor<i32>, %b: tensor<?x4xf32>):
          ...
          "tflite.YIELD"(%a1, %b1) : (tensor<i32>, tensor<?x4xf32>) -> ()
        }) {version = 1 : i32} : (tensor<i32>, tensor<?x4xf32>) -> (tensor<i32>, tensor<?x4xf32>)
    """

    name = "tflite.WHILE"
    cond = region_def("single_block")
    body = region_def("single_block")

    def verify_(self) -> None:
        super().verify_()
        operands = list(self.operands)
        if len(self.results) != len(operands):
            raise VerifyException(
                f"has {len(self.results)} results for {len(operands)} inputs (one per value)"
            )
        (keep_going,) = _check_region(self, "cond", operands, 1)
        if _element(keep_going.type) != IntegerType(1):
            raise VerifyException("region 'cond' must yield a boolean tensor")
        yielded = _check_region(self, "body", operands, len(operands))
        for value, result in zip(yielded, self.results, strict=True):
            if _element(value.type) != _element(result.type):
                raise VerifyException(
                    f"region 'body' yields {_element(value.type)} for a "
                    f"{_element(result.type)} value"
                )


# Operators whose subgraph-index options are held as regions (option names, in region order).
REGION_OPTIONS: dict[str, tuple[str, ...]] = {
    "IF": ("then_subgraph_index", "else_subgraph_index"),
    "WHILE": ("cond_subgraph_index", "body_subgraph_index"),
}
OP_CLASSES: dict[str, type[TFLiteOperation]] = {
    name: _make_op(name) for name in OPERATORS if name not in NOT_OPERATORS
}
OP_CLASSES |= {"IF": IfOp, "WHILE": WhileOp}
globals().update({cls.__name__: cls for cls in OP_CLASSES.values()})


@cache
def op_class(operator: str) -> type[TFLiteOperation] | None:
    return OP_CLASSES.get(operator)


TFLite = Dialect("tflite", [ConstOp, NoValueOp, CustomOp, YieldOp, *OP_CLASSES.values()], [])

__all__ = [
    "TFLite",
    "ConstOp",
    "CustomOp",
    "IfOp",
    "NoValueOp",
    "REGION_OPTIONS",
    "TFLiteOperation",
    "OP_CLASSES",
    "WhileOp",
    "YieldOp",
    "i32",
]

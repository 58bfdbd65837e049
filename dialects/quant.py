"""The `quant` dialect: MLIR's uniform quantized element type.

    !quant.uniform<i8:f32, 0.0235:-128>               per tensor: scale:zero_point
    !quant.uniform<i8:f32:0, {0.1:0, 0.2:0}>          per axis 0: one scale:zero_point per slice
    tensor<1x8x8x3x!quant.uniform<i8:f32, 0.5:-1>>    as a tensor element type

real = scale * (stored - zero_point). Storage types are signless/unsigned integers (`i8`, `u8`,
`i16`, `i32`), expressed types floats. Scales are printed in the shortest form that gives back
the same value (the float32 form when the value is a float32, as TFLite's scales are).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import (
    AnyFloat,
    ArrayAttr,
    Float32Type,
    FloatData,
    IntAttr,
    IntegerType,
    Signedness,
)
from xdsl.ir import Attribute, Dialect, ParametrizedAttribute, TypeAttribute
from xdsl.irdl import irdl_attr_definition, param_def
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException


def format_scale(value: float) -> str:
    """Shortest text that reads back as `value` (the float32 form when it is a float32)."""
    single = np.float32(value)
    text = str(single) if float(single) == value and np.isfinite(single) else repr(value)
    mantissa, e, exponent = text.partition("e")
    if "." not in mantissa and mantissa.lstrip("-").isdigit():
        mantissa += ".0"  # MLIR float literals need a '.'
    return mantissa + e + exponent


def snap_scale(value: float) -> float:
    """A parsed scale: the float32 it names when its text is that float32's shortest form."""
    single = float(np.float32(value))
    return single if format_scale(single) == format_scale(value) else value


@irdl_attr_definition
class UniformQuantizedType(ParametrizedAttribute, TypeAttribute):
    """A uniform (affine) quantized type, per tensor or per axis.

    `quantized_dimension` is -1 per tensor, else the axis the scales run along. Example:

        %w = tflite.CONST ... -> tensor<8x3x3x3x!quant.uniform<i8:f32:0, {0.1:0, 0.2:0, ...}>>
    """

    name = "quant.uniform"

    storage_type: IntegerType = param_def()
    expressed_type: AnyFloat = param_def()
    scales: ArrayAttr[FloatData] = param_def()
    zero_points: ArrayAttr[IntAttr] = param_def()
    quantized_dimension: IntAttr = param_def()

    def __init__(
        self,
        storage_type: IntegerType,
        expressed_type: Attribute,
        scales: Sequence[float],
        zero_points: Sequence[int],
        quantized_dimension: int = -1,
    ):
        super().__init__(
            storage_type,
            expressed_type,
            ArrayAttr([FloatData(float(s)) for s in scales]),
            ArrayAttr([IntAttr(int(z)) for z in zero_points]),
            IntAttr(quantized_dimension),
        )

    @staticmethod
    def per_tensor(
        storage: IntegerType, scale: float, zero_point: int, expressed: Attribute | None = None
    ) -> UniformQuantizedType:
        return UniformQuantizedType(storage, expressed or Float32Type(), [scale], [zero_point])

    @property
    def is_per_axis(self) -> bool:
        return self.quantized_dimension.data >= 0

    def scale_values(self) -> list[float]:
        return [s.data for s in self.scales.data]

    def zero_point_values(self) -> list[int]:
        return [z.data for z in self.zero_points.data]

    def verify(self) -> None:
        super().verify()
        if len(self.scales.data) != len(self.zero_points.data):
            raise VerifyException("quant.uniform needs one zero point per scale")
        if not self.is_per_axis and len(self.scales.data) != 1:
            raise VerifyException("a per-tensor quant.uniform has exactly one scale")
        if not self.scales.data:
            raise VerifyException("quant.uniform needs at least one scale")

    # -- text form ------------------------------------------------------------------------
    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        parser.parse_punctuation("<")
        storage = _parse_storage(parser)
        parser.parse_punctuation(":")
        expressed = parser.parse_type()
        axis = -1
        if parser.parse_optional_punctuation(":") is not None:
            axis = parser.parse_integer(allow_boolean=False, allow_negative=False)
        parser.parse_punctuation(",")
        if axis >= 0:
            pairs = parser.parse_comma_separated_list(
                parser.Delimiter.BRACES, lambda: _parse_pair(parser)
            )
        else:
            pairs = [_parse_pair(parser)]
        if not pairs:  # a parse error at the type, not an exception out of the parser
            parser.raise_error("quant.uniform needs at least one scale")
        parser.parse_punctuation(">")
        return [
            storage,
            expressed,
            ArrayAttr([FloatData(s) for s, _ in pairs]),
            ArrayAttr([IntAttr(z) for _, z in pairs]),
            IntAttr(axis),
        ]

    def print_parameters(self, printer: Printer) -> None:
        storage = self.storage_type
        prefix = "u" if storage.signedness.data == Signedness.UNSIGNED else "i"
        pairs = [
            f"{format_scale(s)}:{z}"
            for s, z in zip(self.scale_values(), self.zero_point_values(), strict=True)
        ]
        printer.print_string(f"<{prefix}{storage.width.data}:")
        printer.print_attribute(self.expressed_type)
        if self.is_per_axis:
            printer.print_string(f":{self.quantized_dimension.data}, {{{', '.join(pairs)}}}>")
        else:
            printer.print_string(f", {pairs[0]}>")


def _parse_storage(parser: AttrParser) -> IntegerType:
    name = parser.parse_identifier()
    if len(name) > 1 and name[0] in "iu" and name[1:].isdigit():
        signedness = Signedness.UNSIGNED if name[0] == "u" else Signedness.SIGNLESS
        return IntegerType(int(name[1:]), signedness)
    parser.raise_error(f"expected a quantized storage type (i8, u8, i16, i32), got '{name}'")


def _parse_pair(parser: AttrParser) -> tuple[float, int]:
    scale = float(parser.parse_number())
    zero_point = 0
    if parser.parse_optional_punctuation(":") is not None:
        zero_point = parser.parse_integer(allow_boolean=False)
    return snap_scale(scale), zero_point


Quant = Dialect("quant", [], [UniformQuantizedType])

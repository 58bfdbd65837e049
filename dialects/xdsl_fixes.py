"""Fixes of the pinned xDSL release, applied once by `make_context` (so by every tool).

- Speed: `AttrParser._parse_dense_literal_type` converts the same type annotation,
  `RankedStructure[IntegerType | IndexType | AnyFloat | ComplexType]`, into an IRDL constraint
  for every dense attribute it parses (`irdl.attributes.base`, uncached): about 10 ms each,
  45% of the time to parse a model's IR. The parser module's `base` is memoized per annotation
  (annotations are hashable and constraints immutable).
- Meaning: MLIR reads a hexadecimal integer literal in a float dense literal as the float's bit
  pattern (`dense<0xFF800000> : tensor<f32>` is -inf; xDSL's printer writes inf and nan that
  way); xDSL read it as the integer's value (4.29e9). Such an element now takes its bits.
"""

from __future__ import annotations

import functools

import numpy as np
from xdsl.dialects.builtin import AnyFloat
from xdsl.parser import attribute_parser

from mlconv.dense import numpy_dtype

_applied = False


def apply() -> None:
    global _applied
    if _applied:
        return
    _applied = True
    _memoize_base()
    _hex_float_elements()


def _memoize_base() -> None:
    original = attribute_parser.base

    @functools.cache
    def cached(irdl):
        return original(irdl)

    def base(irdl):
        try:
            return cached(irdl)
        except TypeError:  # an unhashable annotation: convert it each time, as xDSL does
            return original(irdl)

    attribute_parser.base = base


def _hex_float_elements() -> None:
    element = attribute_parser.AttrParser._TensorLiteralElement
    original = element.to_type

    def to_type(self, parser, type):
        text = self.span.text if hasattr(self.span, "text") else ""
        if (
            isinstance(type, AnyFloat)
            and isinstance(self.value, int)
            and not isinstance(self.value, bool)
            and text.lower().startswith("0x")
        ):
            dtype = numpy_dtype(type)
            bits = np.array([self.value], dtype=np.dtype(f"uint{8 * dtype.itemsize}"))
            return float(bits.view(dtype)[0])
        return original(self, parser, type)

    element.to_type = to_type

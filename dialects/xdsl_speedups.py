"""Speed-ups of the pinned xDSL release that change no behaviour, applied by `make_context`.

- `AttrParser._parse_dense_literal_type` converts the same type annotation,
  `RankedStructure[IntegerType | IndexType | AnyFloat | ComplexType]`, into an IRDL constraint
  for every dense attribute it parses (`irdl.attributes.base`, uncached): about 10 ms each,
  45% of the time to parse a model's IR. The parser module's `base` is memoized per annotation
  (annotations are hashable and constraints immutable).
"""

from __future__ import annotations

import functools

from xdsl.parser import attribute_parser

_applied = False


def apply() -> None:
    global _applied
    if _applied:
        return
    _applied = True
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

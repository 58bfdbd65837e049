"""Parse a pass pipeline in MLIR's nested form or xDSL's flat form into pass instances.

builtin.module(onnx-to-core,core-infer-shapes{static-shape=true},core-to-tpu)
onnx-to-core,core-infer-shapes
"""

from __future__ import annotations

import re

from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import parse_pipeline
from xdsl.utils.exceptions import ArgSpecParseError

from mlconv.errors import OptionError
from mlconv.passes import PASSES, PIPELINES, get_pass

_ANCHOR = "builtin.module("


def strip_anchor(spec: str) -> str:
    """`builtin.module(a,b)` -> `a,b`; the module is the only anchor mlconv passes run on."""
    spec = spec.strip()
    while spec.startswith(_ANCHOR):
        if not spec.endswith(")"):
            raise OptionError(f"unbalanced parentheses in pass pipeline '{spec}'")
        spec = spec[len(_ANCHOR) : -1].strip()
    if "(" in spec:
        raise OptionError(
            f"nested pass managers other than builtin.module are not supported: '{spec}'"
        )
    return spec


_OPTIONS = re.compile(r"\{([^{}]*)\}")
_PLAIN_VALUE = re.compile(r'^(".*"|[\w.+-]+(,[\w.+-]+)*)$')


def quote_option_values(flat: str) -> str:
    """Quote option values xDSL's lexer rejects unquoted (`input-shapes=x:1,3,224,224`,
    `version=2.3.0`), so they can be written as in MLIR and ovc."""

    def quote(match: re.Match[str]) -> str:
        items = []
        for item in match.group(1).split():
            key, sep, value = item.partition("=")
            if sep and not _PLAIN_VALUE.match(value) or (sep and value.count(".") > 1):
                value = '"' + value.replace('"', "") + '"'
            items.append(f"{key}{sep}{value}")
        return "{" + " ".join(items) + "}"

    return _OPTIONS.sub(quote, flat)


def parse_pass_pipeline(spec: str) -> list[ModulePass]:
    """Instances of every pass in `spec`, with their options; unknown names are an OptionError."""
    flat = quote_option_values(strip_anchor(spec))
    if not flat:
        return []
    try:
        specs = list(parse_pipeline(flat))
    except ArgSpecParseError as error:
        raise OptionError(f"bad pass pipeline '{spec}': {error}") from None
    passes: list[ModulePass] = []
    for pass_spec in specs:
        pass_class = get_pass(pass_spec.name)
        if pass_class is None:
            known = ", ".join(sorted([*PASSES, *PIPELINES]))
            raise OptionError(f"unknown pass '{pass_spec.name}' (known: {known})")
        try:
            passes.append(pass_class.from_pass_spec(pass_spec))
        except Exception as error:  # xDSL raises plain Exceptions for bad options
            raise OptionError(f"bad options for pass '{pass_spec.name}': {error}") from None
    return passes

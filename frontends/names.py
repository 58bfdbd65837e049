"""SSA name hints from source tensor names that survive a textual round trip.

xDSL drops a trailing `_<digits>` from every name hint it is given (the printer adds such
suffixes to tell values apart), and the parser does the same to each `%name` it reads. A hint
that still ends in `_<digits>` after that (`keras_tensor_8_0` -> `keras_tensor_8`) prints as
`%keras_tensor_8` and parses back as `keras_tensor`: the printed IR would not round-trip.
`name_hint` strips such suffixes until none is left.
"""

from __future__ import annotations

import re

_INVALID = re.compile(r"[^\w$.-]")
_SUFFIX = re.compile(r"(?:_\d+)+$")


def name_hint(name: str) -> str | None:
    """A valid, round-trip-stable SSA name hint for a source name (None when nothing usable is
    left)."""
    hint = _SUFFIX.sub("", _INVALID.sub("_", name))
    if not hint:
        return None
    return hint if not hint[0].isdigit() and hint[0] != "-" else "v" + hint

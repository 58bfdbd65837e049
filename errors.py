"""One exception type per layer. Tools print `path: error: message` and exit with status 1."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from xdsl.ir import Attribute, Operation


def describe_location(location: Attribute | None) -> str | None:
    """The source node's name for a NameLoc, `file:line:col` for a FileLineColLoc, else None."""
    # Here, not at the top: a warm process (backends/program_cache.py) raises these errors
    # without ever loading xDSL (~0.3 s of imports).
    from xdsl.dialects.builtin import NameLoc, UnknownLoc

    if location is None or isinstance(location, UnknownLoc):
        return None
    if isinstance(location, NameLoc):
        return location.desc.data
    text = str(location)
    return text[4:-1] if text.startswith("loc(") else text


class MlconvError(Exception):
    """A user-facing error: bad input, unsupported op, bad option. Never a bug in mlconv."""

    def __init__(self, message: str, location: Attribute | str | None = None):
        super().__init__(message)
        self.message = message
        self.location = location if isinstance(location, str) else describe_location(location)

    @classmethod
    def at(cls, op: Operation, message: str) -> MlconvError:
        """An error located at `op`'s source node, naming the op."""
        return cls(f"'{op.name}' op {message}", op.location)

    def render(self, path: str | None = None) -> str:
        parts = [path] if path else []
        if self.location:
            parts.append(f'loc("{self.location}")')
        return ": ".join([*parts, f"error: {self.message}"])

    def __str__(self) -> str:
        return self.render()


class FrontendError(MlconvError):
    """A model file could not be read or imported."""


class PassFailure(MlconvError):
    """A pass met IR it cannot handle (an op without a lowering, a dynamic shape, ...)."""


class BackendError(MlconvError):
    """A backend (JAX, OpenVINO IR, TFLite writer) could not handle the IR."""


class OptionError(MlconvError):
    """A bad command-line or API option (pipeline syntax, pass option, input shape)."""


class InputError(BackendError):
    """A call's inputs contradict the model's signature (count, name, dtype or a static dim)."""


def render(error: MlconvError, path: str) -> str:
    """`error.render(path)`, without the path twice when the message already starts with it."""
    prefix = f"{path}: "
    if path and error.message.startswith(prefix):
        error = type(error)(error.message[len(prefix) :], error.location)
    return error.render(path)

"""What the command-line tools share: argument errors, one-line error reports, atomic output.

Every user-facing failure of a tool is one line on stderr (`path: error: message`) and exit
status 1; an output file gets its contents only once everything succeeded, so a failed run never
leaves a half-written file behind (`atomic_output`, by the rules of `mlconv.fileio`).
Set `MLCONV_DEBUG=1` to get Python tracebacks for internal errors instead.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from typing import IO, NoReturn

from mlconv.errors import MlconvError, OptionError, render
from mlconv.fileio import output_stream

MAX_CONTEXT_LINE = 160
"""A parse error shows its source line and caret only for lines up to this many characters."""


class ToolArgumentParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are `OptionError`s (one line, exit 1) instead of exit 2."""

    def error(self, message: str) -> NoReturn:
        raise OptionError(message)


def format_parse_error(error: Exception, path: str) -> str:
    """`path:line:col: error: msg`, then the source line and a caret when the line is short."""
    span = getattr(error, "span", None)
    message = getattr(error, "msg", None) or str(error)
    if span is None:
        return f"{path}: error: {message}"
    location = span.get_location()
    head = f"{path}:{location.line}:{location.col}: error: {message}"
    text = span.input.content
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    start = span.input.get_start_of_line(span.start)
    end = text.find("\n", start)
    line = text[start : end if end >= 0 else len(text)].rstrip("\r")
    if len(line) > MAX_CONTEXT_LINE or not line.strip():
        return head
    column = span.start - start
    width = max(1, min(span.end, start + len(line)) - span.start)
    return f"{head}\n{line}\n{' ' * column}{'^' * width}"


def format_error(error: BaseException, path: str) -> str:
    """The one-line (parse errors: up to three lines) report of any error a tool meets."""
    from xdsl.utils.exceptions import ParseError

    if isinstance(error, MlconvError):
        return render(error, path)
    if isinstance(error, ParseError):
        return format_parse_error(error, path)
    if isinstance(error, OSError):
        name = error.filename or path
        return f"{name}: error: {error.strerror or error}"
    message = str(error).strip().splitlines()
    text = message[0] if message else ""
    return f"{path}: error: internal error: {type(error).__name__}: {text}".rstrip(": ")


def run_tool(prog: str, body: Callable[[], int]) -> int:
    """Run `body`, turning every exception into a one-line report on stderr and status 1."""
    try:
        return body()
    except ToolFailure as failure:
        for line in failure.lines:
            print(line, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{prog}: error: interrupted", file=sys.stderr)
        return 1
    except BaseException as error:  # noqa: BLE001 - the tool's last line of defence
        if isinstance(error, SystemExit):
            raise
        if os.environ.get("MLCONV_DEBUG") and not isinstance(error, MlconvError):
            raise
        print(format_error(error, getattr(error, "tool_path", None) or prog), file=sys.stderr)
        return 1


class ToolFailure(Exception):
    """Raised by a tool body that has already formatted its error lines."""

    def __init__(self, lines: list[str]):
        super().__init__("\n".join(lines))
        self.lines = lines


def located(error: BaseException, path: str) -> BaseException:
    """Tag `error` with the path it concerns, for `run_tool`'s report."""
    error.tool_path = path  # type: ignore[attr-defined]
    return error


@contextlib.contextmanager
def atomic_output(path: str | None, binary: bool = False) -> Iterator[IO]:
    """A stream for `path` (stdout for None or '-') that gets its contents only on success.

    A regular file is replaced atomically; `/dev/null`, a FIFO or another special file is
    written into, never replaced; a symbolic link is written through (see `mlconv.fileio`).
    """
    if path is None or path == "-":
        yield sys.stdout.buffer if binary else sys.stdout
        return
    with output_stream(path, binary=binary) as stream:
        yield stream

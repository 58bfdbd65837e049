"""Writing an output file without harming what its path names.

Every writer of mlconv (the tools' `-o`, the TFLite, OpenVINO IR and StableHLO writers, the
artifact folder, `mlconv-run --outputs`) writes through these helpers, which choose by what the
path names today:

- a regular file, or nothing yet: the data goes to a temporary file beside it, renamed over it
  only once everything succeeded, so a failed run leaves the old file (or no file) behind; a
  replaced file keeps its permission bits, a new one gets the usual `0666 & ~umask`;
- a symbolic link: written through to its final target (the link stays a link), by the rule
  above for a regular target;
- anything else (a character or block device such as `/dev/null`, a FIFO, a socket) and a
  process's open file (`/dev/stdout`, `/dev/fd/N`, `/proc/self/fd/N`): never replaced; the
  finished data is staged in the system's temporary folder and then written into it directly.
  A folder stays an error (`IsADirectoryError`).

Replacing `/dev/null` with a regular file (as `os.replace` does, as root) would break every
other program on the machine that writes there, hence the rules.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from typing import IO

_PROCESS_FILES = ("/dev/stdin", "/dev/stdout", "/dev/stderr")


def _is_process_file(path: str) -> bool:
    """Whether `path` names a process's open file (`/dev/stdout`, `/dev/fd/1`, `/proc/...`)."""
    absolute = os.path.abspath(path)
    if absolute in _PROCESS_FILES or absolute.startswith(("/dev/fd/", "/proc/")):
        return True
    return os.path.realpath(path).startswith("/proc/")


def resolve_output(path: str | os.PathLike) -> tuple[str, bool]:
    """`(where the data goes, whether it is written in place)` for an output to `path`.

    In place (True) means the path names a special file or a process's open file: it is opened
    and written, never renamed over. Otherwise the returned path (a symbolic link's final
    target, or `path` itself) is a regular file or does not exist yet, and is replaced.
    """
    path = os.fspath(path)
    if _is_process_file(path):
        return path, True
    target = os.path.realpath(path) if os.path.islink(path) else path
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        return target, False
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):  # a folder fails in os.replace, as it should
        return target, False
    return path, True


@contextlib.contextmanager
def staged_output(path: str | os.PathLike, suffix: str = "") -> Iterator[str]:
    """A temporary file name whose contents become `path` when the block ends without error.

    For writers that want a file name (numpy.savez, a library's own writer). The temporary
    file exists (empty) when the block starts; it is removed whatever happens.
    """
    target, in_place = resolve_output(path)
    if in_place:
        folder = None  # the system's temporary folder, never beside /dev/null
    else:
        folder = os.path.dirname(os.path.abspath(target))
    name = os.path.basename(target) or "output"
    handle, temporary = tempfile.mkstemp(prefix=f".{name}.", suffix=suffix, dir=folder)
    os.close(handle)
    try:
        yield temporary
        install(temporary, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)


@contextlib.contextmanager
def output_stream(path: str | os.PathLike, binary: bool = False) -> Iterator[IO]:
    """A stream whose contents become `path` when the block ends without error."""
    with staged_output(path) as temporary:
        mode, encoding = ("wb", None) if binary else ("w", "utf-8")
        with open(temporary, mode, encoding=encoding) as stream:
            yield stream


def write_output(path: str | os.PathLike, data: bytes | str) -> None:
    """Write `data` to `path` by the rules above (str as UTF-8)."""
    with output_stream(path, binary=True) as stream:
        stream.write(data.encode("utf-8") if isinstance(data, str) else data)


def install(temporary: str | os.PathLike, path: str | os.PathLike) -> None:
    """Move the finished file `temporary` to `path` by the rules above.

    A temporary file on another file system than a regular target is copied beside the target
    first (`os.replace` cannot cross file systems).
    """
    target, in_place = resolve_output(path)
    if in_place:
        with open(temporary, "rb") as source, open(target, "wb") as destination:
            shutil.copyfileobj(source, destination)
        os.unlink(temporary)
        return
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    os.chmod(temporary, mode)
    try:
        os.replace(temporary, target)
    except OSError as error:
        if error.errno != errno.EXDEV:
            raise
        # Another file system: a copy beside the target first, then the atomic rename.
        with staged_output(target) as beside:
            shutil.copyfile(temporary, beside)
        os.unlink(temporary)


__all__ = ["install", "output_stream", "resolve_output", "staged_output", "write_output"]

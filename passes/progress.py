"""Progress per pass on a terminal, for mlconv-opt, mlconv-translate, mlconv-convert and
`mlconv.compile`: one `rich` progress bar on stderr naming the running pass, gone when the work
is done. Silent when stderr is not a terminal, with `--quiet` (`quiet=True`), or with
`MLCONV_PROGRESS=0` in the environment; `MLCONV_PROGRESS=1` shows it even without a terminal.

    with PassProgress(len(passes), "onnx-to-tpu", quiet=args.quiet) as progress:
        for pass_ in passes:
            with progress.step(pass_.name):
                pass_.apply(ctx, module)
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator, Sequence
from typing import Any


def progress_enabled(quiet: bool = False, stream: Any = None) -> bool:
    """Whether to show progress: not quiet, and stderr a terminal (or MLCONV_PROGRESS=1)."""
    if quiet:
        return False
    setting = os.environ.get("MLCONV_PROGRESS", "")
    if setting in ("0", "1"):
        return setting == "1"
    stream = stream if stream is not None else sys.stderr
    return bool(getattr(stream, "isatty", lambda: False)())


class PassProgress:
    """A progress bar over `total` passes (None: not known ahead); a no-op object when
    progress is disabled."""

    def __init__(self, total: int | None, description: str = "", quiet: bool = False) -> None:
        self.total = total
        self.description = description
        self.enabled = progress_enabled(quiet)
        self._progress = None
        self._task = None

    def __enter__(self) -> PassProgress:
        if self.enabled:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            self._progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[current]}"),
                TimeElapsedColumn(),
                console=Console(stderr=True, force_terminal=True),  # enabled: show it
                transient=True,
            )
            self._progress.__enter__()
            self._task = self._progress.add_task(
                self.description or "passes", total=self.total, current=""
            )
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.__exit__(*exc)
            self._progress = None

    @contextlib.contextmanager
    def step(self, name: str) -> Iterator[None]:
        """Show `name` as the running pass, then count it done."""
        if self._progress is not None:
            self._progress.update(self._task, current=name, refresh=True)
        yield
        if self._progress is not None:
            self._progress.advance(self._task)


def apply_passes(passes: Sequence[Any], ctx: Any, module: Any, description: str = "",
                 quiet: bool = False) -> None:  # fmt: skip
    """`pass.apply(ctx, module)` for each pass, with progress on a terminal."""
    with PassProgress(len(passes), description, quiet) as progress:
        for module_pass in passes:
            with progress.step(module_pass.name):
                module_pass.apply(ctx, module)

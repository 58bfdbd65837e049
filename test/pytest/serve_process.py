"""`mlconv-run OUT --serve` in a subprocess, for the tests that talk to it over HTTP.

process, line, log = start_server(out, folder / "stderr.txt", "--read-timeout", "1")
...  # Path(log.name).read_text(); then process.terminate(), log.close()
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import IO


def start_server(
    out: Path, log_path: Path, *arguments: str, timeout: float = 120
) -> tuple[subprocess.Popen, str, IO[str]]:
    """Start `mlconv-run out --serve --port 0 *arguments` (CPU JAX, this process's sys.path)
    with its stderr in `log_path`, and wait up to `timeout` seconds for its `... serving URL`
    line: (process, that line, the open log file, for the caller to close). Fails the test if the server exits or never says."""
    log = open(log_path, "w+")  # noqa: SIM115 - read back after the process ends
    command = [sys.executable, "-m", "mlconv.tools.mlconv_run", str(out), "--serve", "--port", "0"]
    process = subprocess.Popen(
        [*command, *arguments],
        stderr=log,
        env={**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    deadline = time.monotonic() + timeout
    while True:
        assert process.poll() is None, Path(log.name).read_text()
        assert time.monotonic() < deadline, "the server did not start"
        for line in Path(log.name).read_text().splitlines():
            if " serving " in line:
                return process, line, log
        time.sleep(0.1)

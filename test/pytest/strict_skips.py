"""No silent skips (issue 31): a pytest plugin that `conftest.py` loads and `.ci/run` turns on.

With `--strict-skips` a skip fails the run (exit status 1, the tests listed under "skips that
fail this run") when
- the test is marked `@pytest.mark.required` (it must run wherever the suite runs), or
- it skipped because a module could not be imported (`pytest.importorskip`, at module level
  too): CI installs every extra (`.ci/setup-venv`: all, dev, exporters), so a missing torch,
  TensorFlow, LiteRT, OpenVINO or Model Explorer there is a broken set-up, not an option.
Every other skip (no Chromium because apt failed, not root for os.mknod, a jaxlib without an
option) is listed with its reason in the summary (`-rs`). Without the flag nothing changes.
"""

from __future__ import annotations

import pytest

_BAD: list[str] = []
_STATE: dict[str, bool] = {"strict": False}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--strict-skips",
        action="store_true",
        help="fail the run when a test marked required, or one needing a module, is skipped",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "required: must run wherever the suite runs; a skip fails --strict-skips"
    )
    # Only the process that reports (the xdist controller, or the only one) counts skips.
    _STATE["strict"] = config.getoption("strict_skips") and not hasattr(config, "workerinput")


def _reason(report: pytest.TestReport | pytest.CollectReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])
    return str(longrepr)


def _check(report: pytest.TestReport | pytest.CollectReport, required: bool) -> None:
    if not _STATE["strict"] or not report.skipped or hasattr(report, "wasxfail"):
        return
    reason = _reason(report).removeprefix("Skipped: ")
    if required or reason.startswith("could not import"):
        _BAD.append(f"{report.nodeid}: {reason}")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _check(report, "required" in report.keywords)


def pytest_collectreport(report: pytest.CollectReport) -> None:
    _check(report, False)


def pytest_terminal_summary(terminalreporter) -> None:
    if _BAD:
        terminalreporter.section("skips that fail this run (--strict-skips)", red=True)
        for line in sorted(set(_BAD)):
            terminalreporter.write_line(line)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _BAD and exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED

"""--strict-skips (strict_skips.py): a required test or a missing module fails the run, any other
skip is listed with its reason, and without the flag a skip is a skip."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

CASES = {
    "plain": """
import pytest

def test_runs():
    pass

@pytest.mark.skipif(True, reason="no Chromium at /usr/bin/chromium")
def test_optional():
    pass
""",
    "required": """
import pytest

@pytest.mark.required
@pytest.mark.skipif(True, reason="exported_models needs torch")
def test_needed():
    pass
""",
    "module": """
import pytest

pytest.importorskip("a_module_nobody_installs")

def test_never():
    pass
""",
}


def run(tmp_path: Path, *flags: str) -> subprocess.CompletedProcess:
    for case, text in CASES.items():
        (tmp_path / f"test_{case}.py").write_text(text)
    path = os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])
    environ = dict(os.environ, PYTHONPATH=path, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    command = [sys.executable, "-m", "pytest", "-p", "strict_skips", "-p", "no:cacheprovider"]
    command += ["-rs", "--rootdir", str(tmp_path), *flags, str(tmp_path)]
    return subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, env=environ)


def test_without_the_flag_a_skip_is_a_skip(tmp_path: Path):
    result = run(tmp_path)
    assert result.returncode == 0, result.stdout
    assert "1 passed, 3 skipped" in result.stdout, result.stdout


def test_required_and_missing_modules_fail_others_are_listed(tmp_path: Path):
    result = run(tmp_path, "--strict-skips")
    assert result.returncode == 1, result.stdout
    summary = result.stdout.split("skips that fail this run")[1].split("short test summary")[0]
    assert "test_required.py::test_needed: exported_models needs torch" in summary
    assert "test_module.py: could not import 'a_module_nobody_installs'" in summary
    assert "chromium" not in summary.lower()
    assert "no Chromium at /usr/bin/chromium" in result.stdout  # listed by -rs

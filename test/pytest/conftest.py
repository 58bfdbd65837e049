"""Process-wide set-up for the pytest suite.

- This folder goes on sys.path, so test modules import the helper modules beside them
  (`import sensitivity`, `import numerics`, `import exported_models`) although pytest imports
  the tests themselves with --import-mode=importlib.
- mlconv's persistent compilation cache is off (MLCONV_COMPILATION_CACHE=0, inherited by the
  CLI subprocesses): the suite writes nothing to ~/.cache; test_compile_cache.py turns it on
  in a temporary folder.
- `--strict-skips` and the `required` marker (strict_skips.py, used by .ci/run): no silent
  skips in CI.
- torch (2.14.1) must be loaded before TensorFlow (2.21) in a process: with TensorFlow loaded
  first, importing torchvision (which pulls in triton) segfaults. Collection imports every test
  module in one process, so the order cannot be left to the modules.
- The suite tests the XLA path unless a test names another back end: mlconv.compile's default
  back end, "auto", would compile and time OpenVINO beside XLA for every static model on the CPU
  (backends/backend_choice.py; test_backend_choice.py tests it). Subprocesses inherit this.
"""

import contextlib
import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("MLCONV_COMPILATION_CACHE", "0")

HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)
os.environ.setdefault("MLCONV_BACKEND", "xla")

# --strict-skips and the `required` marker (strict_skips.py): its hooks become this conftest's.
from strict_skips import (  # noqa: E402, F401
    pytest_addoption,
    pytest_collectreport,
    pytest_configure,
    pytest_runtest_logreport,
    pytest_sessionfinish,
    pytest_terminal_summary,
)

with contextlib.suppress(ImportError):
    import torch  # noqa: F401
    import torchvision  # noqa: F401


@pytest.fixture(scope="session")
def exported(request, tmp_path_factory):
    """The exporter tests' models (exported_models.py), exported once per session and shared by
    every test module: `exported((model, exporter))` is the folder of that export."""
    import exported_models

    return exported_models.export_cache(request, tmp_path_factory)

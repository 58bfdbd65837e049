"""Process-wide set-up for the pytest suite.

- This folder goes on sys.path, so test modules import the helper modules beside them
  (`import sensitivity`, `import numerics`, `import exported_models`) although pytest imports
  the tests themselves with --import-mode=importlib.
- torch (2.14.1) must be loaded before TensorFlow (2.21) in a process: with TensorFlow loaded
  first, importing torchvision (which pulls in triton) segfaults. Collection imports every test
  module in one process, so the order cannot be left to the modules.
"""

import contextlib
import sys
from pathlib import Path

HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)

with contextlib.suppress(ImportError):
    import torch  # noqa: F401
    import torchvision  # noqa: F401

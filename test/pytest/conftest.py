"""Process-wide set-up for the pytest suite.

torch (2.14.1) must be loaded before TensorFlow (2.21) in a process: with TensorFlow loaded
first, importing torchvision (which pulls in triton) segfaults. Collection imports every test
module in one process, so the order cannot be left to the modules.
"""

import contextlib

with contextlib.suppress(ImportError):
    import torch  # noqa: F401
    import torchvision  # noqa: F401

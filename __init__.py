"""mlconv: an MLIR-style model compiler on xDSL.

import mlconv
run = mlconv.compile("model.onnx", device="cpu")
outputs = run(x)            # numpy arrays in, list of numpy arrays out
served = mlconv.load("converted/")   # a folder written by mlconv-convert
"""

from mlconv.api import compile, load
from mlconv.backends.padding import PadTo
from mlconv.version import __version__

__all__ = ["PadTo", "__version__", "compile", "load"]

"""mlconv: an MLIR-style model compiler on xDSL.

import mlconv
run = mlconv.compile("model.onnx", device="cpu")
outputs = run(x)            # numpy arrays in, list of numpy arrays out
served = mlconv.load("converted/")   # a folder written by mlconv-convert
"""

from mlconv.api import compile, load
from mlconv.version import __version__

__all__ = ["PadTo", "__version__", "compile", "load"]


def __getattr__(name: str):
    # PadTo on first use: importing mlconv.backends turns on jax_enable_x64 (mlconv.semantics),
    # which `import mlconv.dialects...` must not do (test_semantics).
    if name == "PadTo":
        # lazy: `import mlconv` stays light; JAX and the passes load on first use
        from mlconv.backends.padding import PadTo

        return PadTo
    raise AttributeError(f"module 'mlconv' has no attribute {name!r}")

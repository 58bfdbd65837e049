"""mlconv: an MLIR-style model compiler on xDSL.

    import mlconv
    run = mlconv.compile("model.onnx", device="cpu")
    outputs = run(x)            # numpy arrays in, list of numpy arrays out
"""

from mlconv.api import compile

__all__ = ["compile"]
__version__ = "0.1.0"

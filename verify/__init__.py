"""mlconv checked against independent runtimes: the source framework's own runtime
(`compare_source`: onnxruntime, TensorFlow, LiteRT) and OpenVINO (`openvino_oracle`). Both
compile through the public API (`mlconv.compile`), so this package sits above `api.py`."""

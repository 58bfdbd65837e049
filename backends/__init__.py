"""Backends: JAX/XLA, OpenVINO IR, TFLite, the saved artifact and the request batcher."""

import mlconv.semantics  # noqa: F401 - backends run jax on int64 shapes and indices (jax_enable_x64)

"""One lowering framework for every source dialect and target (mlconv.passes.lowering).

- `registry`: the table keyed by (dialect, op name, since-version) per target, with
  `lowering(...)` (decorator), `register`, `lookup`, `patterns`, `add_source`.
- `driver`: `lower_ops` (the one driver: all-at-once unsupported report, allow-partial, a
  fallback for ops without a pattern, location copying, result-count check), `check`,
  `unsupported`, `report`.
- `builder`: `Builder(op, reader, fold=...)`, whose `b(OpClass, *operands, **attrs)` creates a
  core op or folds it; the per-framework readers live beside their patterns
  (`onnx_patterns.builder.OnnxReader`, `tf_patterns.builder.TfReader`,
  `tflite_patterns.builder.TfliteReader`).
"""

from mlconv.passes.lowering.registry import (
    Pattern,
    add_source,
    load,
    lookup,
    lowering,
    patterns,
    register,
    unregister,
)

__all__ = [
    "Pattern",
    "add_source",
    "load",
    "lookup",
    "lowering",
    "patterns",
    "register",
    "unregister",
]

"""Running a core op's `semantics`: the code dialects declare but do not import.

- `binding`: `semantics` bound to an op's attributes and static operands (`bound_semantics`,
  `semantics_attributes`), the one way everything here calls it;
- `tracing`: the bound semantics traced to a jaxpr (one trace cache shared by the lowering
  builder, core-infer-shapes, core-fold-constants and core-to-tpu) and evaluated on constants
  or concrete values (`evaluate`, `run_with`, `evaluate_with`);
- `shapes`: result types from the traced semantics (`infer_result_types`, dynamic dims probed),
  partial evaluation of shape subgraphs, `meet_types`;
- `jaxpr_numpy`: a jaxpr run equation by equation, in numpy where numpy is bit-identical to XLA;
- `bodies`: the body runner of core.If/Loop/Scan (`run_block`), handed to their `semantics` as
  the keyword `run_block` by `binding.semantics_attributes(op)`.

Importing this package (or any module in it) turns on `jax_enable_x64` for the process: ONNX
and TF models compute shapes and indices in int64, and semantics must see them unchanged. It is
the one place mlconv sets it; passes/, backends/ and interpreters/ import this package for it.
Importing a dialect does not (`mlconv.dialects` never imports this package).
"""

import jax

jax.config.update("jax_enable_x64", True)

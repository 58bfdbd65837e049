"""The rewrite patterns `core-fuse` applies, one module per family (MLIR keeps patterns apart
from the pass that applies them):

- `activations`: Swish, HSigmoid, HSwish, SoftPlus, Mish, GELU (erf and tanh forms);
- `normalization`: MVN (LayerNorm), NormalizeL2;
- `layout`: ShuffleChannels, DepthToSpace;
- `padding`: Pad into Convolution, GroupConvolution, AvgPool, MaxPool;
- `linear`: Conv+BatchNorm, Multiply/Add folded into Convolution and MatMul weights.

`PHASES` orders them: the subgraph fusions first, then the linear folding, which would
otherwise fold a constant the subgraph patterns look for (relu6(conv + b + 3) is still
HSigmoid's x + 3 before it becomes conv + (b + 3)).
"""

from __future__ import annotations

import importlib

from xdsl.pattern_rewriter import RewritePattern

FAMILIES = ("activations", "normalization", "layout", "padding", "linear")

# Families applied together, in order.
PHASE_FAMILIES = (("activations", "normalization", "layout", "padding"), ("linear",))


def patterns(family: str) -> tuple[RewritePattern, ...]:
    return importlib.import_module(f"mlconv.passes.core_fusions.{family}").PATTERNS


def phases() -> list[list[RewritePattern]]:
    return [[p for family in group for p in patterns(family)] for group in PHASE_FAMILIES]


__all__ = ["FAMILIES", "PHASE_FAMILIES", "patterns", "phases"]

"""core-fuse: fuse core subgraphs into OpenVINO's fused opset ops and fold constant scales
into weights (seed 000's middle-phase transformations, seed 004's Conv+BatchNorm fusion).

Input/output: core dialect. The patterns live in `passes/core_fusions/`, one module per
family: Swish, HSigmoid, HSwish, SoftPlus, Mish, GELU (activations); MVN/LayerNorm,
NormalizeL2 (normalization); ShuffleChannels, DepthToSpace (layout); Pad into convolutions and
pooling (padding); Conv+BatchNorm and Multiply/Add folding into Convolution and MatMul weights
(linear). Subgraph fusions run first, then the linear folding; what a fusion bypassed is
removed at the end.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import GreedyRewritePatternApplier, PatternRewriteWalker
from xdsl.transforms.dead_code_elimination import region_dce

from mlconv.passes.core_fusions import phases


@dataclass(frozen=True)
class CoreFusePass(ModulePass):
    """core-fuse: fuse subgraphs into Swish, HSwish, Gelu, MVN, NormalizeL2, ... and fold
    constant scales and shifts into Convolution/MatMul weights. Input/output: core dialect."""

    name = "core-fuse"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for patterns in phases():
            PatternRewriteWalker(GreedyRewritePatternApplier(patterns)).rewrite_module(op)
            # What the fusions bypassed (the sigmoid, exp chains) is left without uses.
            region_dce(op.body)

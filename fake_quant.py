"""The FakeQuantize primitive: OpenVINO's quantization op as one jax primitive.

`core.FakeQuantize` (dialects/core_quant.py) binds `fake_quantize_p`, so `core-to-tpu` emits it
as one `tpu.fake_quantize` op instead of the dozen primitives its arithmetic would trace to:
`tpu-quantize` finds it there next to the convolution or matmul it feeds and lowers the pair to
integer arithmetic. Eagerly (the interpreters, constant folding) and under `jax.jit` it computes
OpenVINO's opset1 formula (numpy broadcasting of the four range operands):

    x <= min(il, ih): ol;   x > max(il, ih): oh;
    else round((x - il) / (ih - il) * (levels - 1)) / (levels - 1) * (oh - ol) + ol

`round` is half to even (numpy's, XLA's round_nearest_even).
"""

from __future__ import annotations

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import mlir

FAKE_QUANTIZE = "mlconv_fake_quantize"


def fake_quantize_reference(x, input_low, input_high, output_low, output_high, *, levels: int):
    """OpenVINO FakeQuantize-1 in jax.numpy."""
    steps = levels - 1
    low = jnp.minimum(input_low, input_high)
    high = jnp.maximum(input_low, input_high)
    q = jnp.round((x - input_low) / (input_high - input_low) * steps) / steps
    inside = q * (output_high - output_low) + output_low
    out = jnp.where(x <= low, output_low, jnp.where(x > high, output_high, inside))
    return jnp.broadcast_to(out, x.shape).astype(x.dtype)


fake_quantize_p = Primitive(FAKE_QUANTIZE)
fake_quantize_p.def_impl(fake_quantize_reference)


@fake_quantize_p.def_abstract_eval
def _abstract(x, *ranges, levels):
    return ShapedArray(x.shape, x.dtype)


mlir.register_lowering(
    fake_quantize_p, mlir.lower_fun(fake_quantize_reference, multiple_results=False)
)


def fake_quantize(x, input_low, input_high, output_low, output_high, *, levels: int):
    """Bind the primitive (what core.FakeQuantize's semantics does)."""
    return fake_quantize_p.bind(
        x, input_low, input_high, output_low, output_high, levels=int(levels)
    )

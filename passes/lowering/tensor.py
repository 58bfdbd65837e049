"""What the tensor lowerings of TF and TFLite share (their Slice/SLICE and Select/SELECT have
one meaning in both frameworks; each pattern reads its operands its own way and calls these).

- `slice_by_size(b, x, begin, size)`: a slice given its constant begin and size (-1: to the
  end) as a core_tf.StridedSlice.
- `lower_select(b, cond, then, other, rows)`: Select/SelectV2 as core.Select, with Select's
  rank-1 condition (`rows`: it picks whole rows) broadcast over the rest.
"""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from mlconv.dialects import core_tensor as ct
from mlconv.dialects import core_tf as ctf


def slice_by_size(b, x: SSAValue, begin: np.ndarray, size: np.ndarray) -> SSAValue:
    begin = begin.astype(np.int64).reshape(-1)
    size = size.astype(np.int64).reshape(-1)
    end = np.where(size < 0, 0, begin + size)
    return b(
        ctf.StridedSliceOp,
        x,
        b.ints(begin),
        b.ints(end),
        b.ints([1] * begin.size),
        begin_mask=[0] * begin.size,
        end_mask=[int(s < 0) for s in size],
    )


def lower_select(b, cond: SSAValue, then: SSAValue, other: SSAValue, rows: bool) -> SSAValue:
    rank_c, rank_t = b.rank(cond), b.rank(then)
    if rows and rank_c == 1 and rank_t and rank_t > 1:
        cond = b(ct.UnsqueezeOp, cond, b.ints(list(range(1, rank_t))))
    return b(ct.SelectOp, cond, then, other)

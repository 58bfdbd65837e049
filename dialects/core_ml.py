"""Classical-ML core ops (`ai.onnx.ml` through scikit-learn): PairwiseCoupling, the one step of
an SVM classifier with probabilities that core's elementwise and matrix ops cannot express
without unrolling a data-dependent loop.
"""

from __future__ import annotations

import jax.numpy as jnp
from jax import lax

from mlconv.dialects.core_base import CoreOp, core_op


@core_op(operands=("pairwise",))
class PairwiseCouplingOp(CoreOp):
    """Class probabilities (N, K) from pairwise ones `pairwise` (N, K, K), r[i, j] = P(class i
    | class i or j), by the second method of Wu, Lin and Weng (2004) as libsvm, scikit-learn's
    SVC and onnxruntime's SVMClassifier compute it: Gauss-Seidel sweeps over the classes from
    uniform probabilities, at most max(100, K) of them, stopping for a sample once
    max_t |(Qp)_t - p'Qp| < 0.005 / K (the diagonal of r is not read).

        %p = "core.PairwiseCoupling"(%r) : (tensor<?x3x3xf32>) -> tensor<?x3xf32>
    """

    name = "core.PairwiseCoupling"
    VERSION = 1

    @staticmethod
    def semantics(pairwise):
        n, k, _ = pairwise.shape
        dtype = pairwise.dtype
        eye = jnp.eye(k, dtype=bool)
        r = jnp.where(eye, jnp.zeros((), dtype), pairwise)
        rt = jnp.swapaxes(r, 1, 2)  # rt[t, j] = r[j, t]
        q = jnp.where(eye, (rt * rt).sum(axis=2)[:, :, None], -rt * r)
        eps = 0.005 / k

        def sweep(state):
            step, p, done = state
            qp = jnp.einsum("ntj,nj->nt", q, p)
            pqp = (p * qp).sum(axis=1)
            done = done | (jnp.abs(qp - pqp[:, None]).max(axis=1) < eps)
            for t in range(k):
                qtt = q[:, t, t]
                diff = jnp.where(done, jnp.zeros((), dtype), (pqp - qp[:, t]) / qtt)
                p = p + diff[:, None] * jnp.eye(k, dtype=dtype)[t]
                pqp = (pqp + diff * (diff * qtt + 2 * qp[:, t])) / ((1 + diff) * (1 + diff))
                p = p / (1 + diff)[:, None]
                qp = (qp + diff[:, None] * q[:, t, :]) / (1 + diff)[:, None]
            return step + 1, p, done

        def going(state):
            step, _, done = state
            return (step < max(100, k)) & ~done.all()

        start = (jnp.int32(0), jnp.full((n, k), 1.0 / k, dtype), jnp.zeros((n,), bool))
        _, p, _ = lax.while_loop(going, sweep, start)
        return p


OPS: list[type[CoreOp]] = [PairwiseCouplingOp]

"""`ai.onnx.preview.training`: the optimizer update rules Adagrad, Adam and Momentum.

The domain's nodes import as `onnx.Custom`, keyed `ai.onnx.preview.training.<op>`. Each takes
the learning rate R and the step count T (scalars) and one group of tensors per optimized
variable (X..., G..., then the state: H... or V... [and H...]); it gives the new X... and the
new state, group by group. The rules are elementwise; what depends on T (Adagrad's decayed
rate, Adam's bias correction, Momentum's first-step gradient coefficient) is computed from T
at run time, T converted to the variables' float type.
"""

from __future__ import annotations

from mlconv.dialects import core_elementwise as ew
from mlconv.dialects import core_tensor as ct
from mlconv.passes.onnx_patterns import lowering

TRAINING = "ai.onnx.preview.training."


def _groups(op, b, states: int):
    """R (as the variables' float type), T, T > 0, and the (X, G, state...) groups."""
    values = list(op.operands)
    per_variable = 2 + states
    if len(values) < 2 + per_variable or (len(values) - 2) % per_variable:
        raise b.fail(f"needs R, T and {per_variable} tensors per optimized variable")
    count = (len(values) - 2) // per_variable
    dtype = b.dtype(values[2])
    r, t = values[0], values[1]
    if b.dtype(r) != dtype:
        r = _as_float(b, r, values[2])
    positive = b(ew.GreaterOp, t, b.const(0, b.dtype(t)))
    groups = [values[2 + i :: count][:per_variable] for i in range(count)]
    return r, t, positive, groups, dtype


def _as_float(b, t, like):
    return b(ct.ConvertOp, t, destination_type=like.type.get_element_type())


def _scalar(b, value, dtype):
    return b.const(value, dtype)


def _regularized(b, x, g, norm, dtype):
    """norm_coefficient * X + G (the gradient of the L2 regularization term added)."""
    if norm == 0.0:
        return g
    return b(ew.AddOp, b(ew.MultiplyOp, _scalar(b, norm, dtype), x), g)


@lowering(TRAINING + "Adagrad")
def adagrad(op, b):
    """r' = R / (1 + T * decay_factor); H' = H + g*g; X' = X - r' * g / (sqrt(H') + epsilon)."""
    r, t, _, groups, dtype = _groups(op, b, 1)
    t = _as_float(b, t, groups[0][0])
    decay = float(op.onnx_attr("decay_factor") or 0.0)
    epsilon = float(op.onnx_attr("epsilon") or 0.0)
    norm = float(op.onnx_attr("norm_coefficient") or 0.0)
    one = _scalar(b, 1, dtype)
    rate = b(ew.DivideOp, r, b(ew.AddOp, one, b(ew.MultiplyOp, t, _scalar(b, decay, dtype))))
    xs, hs = [], []
    for x, g, h in groups:
        g = _regularized(b, x, g, norm, dtype)
        h_new = b(ew.AddOp, h, b(ew.MultiplyOp, g, g))
        scale = b(ew.AddOp, b(ew.SqrtOp, h_new), _scalar(b, epsilon, dtype))
        step = b(ew.DivideOp, b(ew.MultiplyOp, rate, g), scale)
        xs.append(b(ew.SubtractOp, x, step))
        hs.append(h_new)
    return xs + hs


@lowering(TRAINING + "Adam")
def adam(op, b):
    """V' = alpha V + (1-alpha) g; H' = beta H + (1-beta) g*g; for T > 0 the rate is
    bias-corrected, R sqrt(1 - beta^T) / (1 - alpha^T); X' = (1 - norm_coefficient_post) *
    (X - rate * V' / (sqrt(H') + epsilon))."""
    r, t, positive, groups, dtype = _groups(op, b, 2)
    t = _as_float(b, t, groups[0][0])
    alpha = float(op.onnx_attr("alpha") if op.onnx_attr("alpha") is not None else 0.9)
    beta = float(op.onnx_attr("beta") if op.onnx_attr("beta") is not None else 0.999)
    epsilon = float(op.onnx_attr("epsilon") or 0.0)
    norm = float(op.onnx_attr("norm_coefficient") or 0.0)
    post = float(op.onnx_attr("norm_coefficient_post") or 0.0)
    one = _scalar(b, 1, dtype)
    corrected = b(
        ew.DivideOp,
        b(
            ew.MultiplyOp,
            r,
            b(ew.SqrtOp, b(ew.SubtractOp, one, b(ew.PowerOp, _scalar(b, beta, dtype), t))),
        ),
        b(ew.SubtractOp, one, b(ew.PowerOp, _scalar(b, alpha, dtype), t)),
    )
    rate = b(ct.SelectOp, positive, corrected, r)
    xs, vs, hs = [], [], []
    for x, g, v, h in groups:
        g = _regularized(b, x, g, norm, dtype)
        v_new = b(
            ew.AddOp,
            b(ew.MultiplyOp, _scalar(b, alpha, dtype), v),
            b(ew.MultiplyOp, _scalar(b, 1 - alpha, dtype), g),
        )
        h_new = b(
            ew.AddOp,
            b(ew.MultiplyOp, _scalar(b, beta, dtype), h),
            b(ew.MultiplyOp, _scalar(b, 1 - beta, dtype), b(ew.MultiplyOp, g, g)),
        )
        scale = b(ew.AddOp, b(ew.SqrtOp, h_new), _scalar(b, epsilon, dtype))
        x_new = b(ew.SubtractOp, x, b(ew.MultiplyOp, rate, b(ew.DivideOp, v_new, scale)))
        if post != 0.0:
            x_new = b(ew.MultiplyOp, _scalar(b, 1 - post, dtype), x_new)
        xs.append(x_new)
        vs.append(v_new)
        hs.append(h_new)
    return xs + vs + hs


@lowering(TRAINING + "Momentum")
def momentum(op, b):
    """V' = alpha V + beta' g with beta' = beta for T > 0 and 1 at the first step; X' = X - R V'
    ("standard") or X - R (g + alpha V') ("nesterov")."""
    r, _, positive, groups, dtype = _groups(op, b, 1)
    for name in ("alpha", "beta", "mode", "norm_coefficient"):
        if op.onnx_attr(name) is None:
            raise b.fail(f"needs the attribute '{name}'")
    alpha = float(op.onnx_attr("alpha"))
    mode = op.onnx_attr("mode")
    if mode not in ("standard", "nesterov"):
        raise b.fail(f"unknown mode '{mode}' (standard or nesterov)")
    norm = float(op.onnx_attr("norm_coefficient"))
    beta = b(
        ct.SelectOp,
        positive,
        _scalar(b, float(op.onnx_attr("beta")), dtype),
        _scalar(b, 1, dtype),
    )
    xs, vs = [], []
    for x, g, v in groups:
        g = _regularized(b, x, g, norm, dtype)
        v_new = b(
            ew.AddOp, b(ew.MultiplyOp, _scalar(b, alpha, dtype), v), b(ew.MultiplyOp, beta, g)
        )
        step = v_new
        if mode == "nesterov":
            step = b(ew.AddOp, g, b(ew.MultiplyOp, _scalar(b, alpha, dtype), v_new))
        xs.append(b(ew.SubtractOp, x, b(ew.MultiplyOp, r, step)))
        vs.append(v_new)
    return xs + vs

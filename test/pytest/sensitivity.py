"""Model tests that can fail: the reference must depend on the input (issue 14).

A model whose output hardly moves when the input changes (random-weight CNNs whose BatchNorm
statistics do not match their activations; constant-fill weights) passes a comparison even when
the compiler drops the input, a transpose or a channel permutation. Every whole-model test first
calls `assert_input_sensitive`: a second, different input must move the reference output by at
least `FACTOR` times the test's tolerance.

`calibrate_batch_norms` makes a Keras model sensitive: each BatchNormalization's moving
statistics become the mean and variance of the activations it really sees on a batch of other
random inputs, with random scales and offsets, so every layer passes on a signal of unit size.

Test modules import it as `import sensitivity` (conftest.py puts this folder on sys.path).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

FACTOR = 100.0


def _arrays(outputs) -> list[np.ndarray]:
    if isinstance(outputs, np.ndarray) or np.isscalar(outputs):
        return [np.asarray(outputs)]
    return [np.asarray(o) for o in outputs]


def relative_change(first, second) -> float:
    """max |first - second| / max |first| over all outputs (f64; integers taken as is)."""
    first, second = _arrays(first), _arrays(second)
    assert len(first) == len(second)
    change = max(
        float(np.abs(a.astype(np.float64) - b.astype(np.float64)).max(initial=0))
        for a, b in zip(first, second, strict=True)
    )
    scale = max(float(np.abs(a.astype(np.float64)).max(initial=0)) for a in first)
    return change / scale if scale else float("inf") if change else 0.0


def assert_input_sensitive(
    first,
    second,
    *,
    rtol: float | None = None,
    atol: float | None = None,
    what: str = "",
    factor: float = FACTOR,
) -> float:
    """The reference outputs on two different inputs differ by at least `factor` (FACTOR unless
    a test says why not) times the test's tolerance: `rtol` relative to the largest |output|
    (max |a - b| / max |a|), or `atol` in the outputs' own units (quantization steps for integer
    outputs). Returns the change measured."""
    assert (rtol is None) != (atol is None), "give the test's rtol or its atol"
    if rtol is not None:
        change = relative_change(first, second)
        bar = factor * rtol
        unit = "of the largest |output|"
    else:
        change = max(
            float(np.abs(a.astype(np.float64) - b.astype(np.float64)).max(initial=0))
            for a, b in zip(_arrays(first), _arrays(second), strict=True)
        )
        bar = factor * atol
        unit = "(absolute)"
    assert change >= bar, (
        f"{what}: the reference hardly depends on its input: another input moves it by "
        f"{change:.3g} {unit}, below {factor:g} x the tolerance ({bar:.3g}); the comparison "
        "would pass whatever the compiler did with the input"
    )
    return change


def calibrate_batch_norms(model, inputs: Sequence[np.ndarray], seed: int) -> None:
    """Moving mean and variance of every keras BatchNormalization from the activations it sees
    on `inputs` (a batch of random inputs other than the test's), gamma ~ U(0.5, 1.5) and
    beta ~ N(0, 0.2) drawn with `seed`.

    One forward pass in training mode with momentum 0 sets each layer's moving statistics to its
    batch statistics; in training mode each layer normalizes with those same statistics, so the
    activations every later layer sees are the ones it sees in inference mode. Dropout is off
    for that pass."""
    import keras

    rng = np.random.default_rng(seed)
    norms, dropouts = [], []
    for layer in _layers(model):
        if isinstance(layer, keras.layers.BatchNormalization):
            names = [w.path.split("/")[-1] for w in layer.weights]
            shape = layer.weights[-1].shape
            values = {
                "gamma": rng.uniform(0.5, 1.5, shape),
                "beta": rng.normal(0, 0.2, shape),
                "moving_mean": np.zeros(shape),
                "moving_variance": np.ones(shape),
            }
            layer.set_weights([values[n].astype(np.float32) for n in names])
            norms.append((layer, layer.momentum))
            layer.momentum = 0.0
        elif isinstance(layer, keras.layers.Dropout):
            dropouts.append((layer, layer.rate))
            layer.rate = 0.0
    if not norms:
        return
    try:
        model(*[np.asarray(x, np.float32) for x in inputs], training=True)
    finally:
        for layer, momentum in norms:
            layer.momentum = momentum
        for layer, rate in dropouts:
            layer.rate = rate


def _layers(model):
    for layer in model.layers:
        if hasattr(layer, "layers"):
            yield from _layers(layer)
        else:
            yield layer


def center_head(model, inputs: Sequence[np.ndarray], spread: float | None = None) -> None:
    """The last Dense layer's bias set to -mean(its input over `inputs`) @ kernel: the part of
    the logits every input shares (pooled ReLU features are positive on average) is removed,
    so what is left moves with the input, as a trained classifier's logits do. With `spread`,
    kernel and bias are scaled so the logits' standard deviation on `inputs` is `spread` (a
    softmax after them is then not nearly uniform)."""
    import keras

    dense = [layer for layer in _layers(model) if isinstance(layer, keras.layers.Dense)][-1]
    features = keras.Model(model.inputs, dense.input)
    seen = np.asarray(features(*[np.asarray(x, np.float32) for x in inputs]))
    seen = seen.reshape(-1, seen.shape[-1])
    kernel, _ = dense.get_weights()
    bias = -seen.mean(0) @ kernel
    if spread is not None:
        factor = spread / float((seen @ kernel + bias).std())
        kernel, bias = kernel * factor, bias * factor
    dense.set_weights([kernel.astype(np.float32), bias.astype(np.float32)])


# --- ONNX models whose weights are constant fills (the onnx wheel's light models) -------------

_PASS_THROUGH = ("Unsqueeze", "Reshape", "Squeeze", "Flatten")


def _roles(graph) -> dict[str, str]:
    """Initializer name -> what it is for: weight, bias, scale, shift or stats (batch-norm mean
    and variance), from the ops that consume it (through Unsqueeze/Reshape)."""
    consumers: dict[str, list] = {}
    for node in graph.node:
        for index, name in enumerate(node.input):
            consumers.setdefault(name, []).append((node, index))

    def role(name: str, depth: int = 0) -> str | None:
        for node, index in consumers.get(name, []):
            kind = node.op_type
            if kind in _PASS_THROUGH and index == 0 and depth < 3:
                found = role(node.output[0], depth + 1)
                if found:
                    return found
            elif kind in ("Conv", "Gemm", "MatMul") and index == 1:
                return "weight"
            elif kind in ("Conv", "Gemm") and index == 2:
                return "bias"
            elif kind == "BatchNormalization":
                return {1: "scale", 2: "shift", 3: "stats", 4: "stats"}.get(index)
            elif kind == "Mul":
                return "scale"
            elif kind in ("Add", "Sum", "Sub"):
                return "shift"
        return None

    return {name: r for name in consumers if (r := role(name))}


def _fan_in(graph, name: str, shape: tuple[int, ...]) -> int:
    for node in graph.node:
        if node.op_type == "Gemm" and len(node.input) > 1 and node.input[1] == name:
            trans_b = any(a.name == "transB" and a.i for a in node.attribute)
            return shape[1] if trans_b else shape[0]
        if node.op_type == "MatMul" and len(node.input) > 1 and node.input[1] == name:
            return shape[0]
    return int(np.prod(shape[1:]))


def randomize_onnx_weights(model, seed: int, calibration: Sequence[np.ndarray]):
    """A copy of `model` with seeded random weights that keep activations of unit size, so its
    output depends on its input: every ConstantOfShape fill becomes an initializer; filters and
    matrices are He-normal (std sqrt(2 / fan_in)), biases N(0, 0.1), scales U(0.5, 1.5), shifts
    N(0, 0.2); each BatchNormalization's mean and variance are those of the activations it sees
    on `calibration` (the graph inputs, one other random sample), and the bias of a Gemm whose
    result goes into the Softmax subtracts that sample's logits (the part every input shares).
    """
    import onnx
    from onnx import helper, numpy_helper

    rng = np.random.default_rng(seed)
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    graph = copy.graph
    values = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    nodes = []
    for node in graph.node:
        if node.op_type == "ConstantOfShape" and node.input[0] in values:
            fill = np.zeros(1, np.float32)
            if node.attribute:
                fill = numpy_helper.to_array(node.attribute[0].t)
            shape = tuple(int(d) for d in values[node.input[0]])
            values[node.output[0]] = np.full(shape, fill.reshape(-1)[0], fill.dtype)
        else:
            nodes.append(node)
    del graph.node[:]
    graph.node.extend(nodes)
    roles = _roles(graph)
    for name, array in values.items():
        role = roles.get(name)
        if array.dtype != np.float32 or role in (None, "stats"):
            continue
        if role == "weight":
            std = np.sqrt(2.0 / max(_fan_in(graph, name, array.shape), 1))
            array = rng.standard_normal(array.shape) * std
        elif role == "scale":
            array = rng.uniform(0.5, 1.5, array.shape)
        else:
            array = rng.normal(0.0, 0.1 if role == "bias" else 0.2, array.shape)
        values[name] = array.astype(np.float32)
    used = {name for node in graph.node for name in node.input}
    del graph.initializer[:]
    graph.initializer.extend(numpy_helper.from_array(v, n) for n, v in values.items() if n in used)
    inputs = [v for v in graph.input if v.name in used or v.name not in values]
    del graph.input[:]
    graph.input.extend(inputs)
    _calibrate_onnx(copy, calibration, helper, numpy_helper)
    return copy


def _calibrate_onnx(model, calibration, helper, numpy_helper) -> None:
    """Batch-norm statistics and the head's bias from one run of a training-mode copy."""
    import onnx
    import onnxruntime

    graph = model.graph
    initializers = {t.name: t for t in graph.initializer}
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    del probe.graph.node[:]
    del probe.graph.output[:]
    stats: list[tuple[str, str, str, str]] = []  # mean name, var name, their probe outputs
    for node in graph.node:
        if node.op_type != "BatchNormalization":
            probe.graph.node.append(node)
            continue
        x, scale, shift, mean, var = node.input[:5]
        eps = next((a.f for a in node.attribute if a.name == "epsilon"), 1e-5)
        out = node.output[0]
        channels = numpy_helper.to_array(initializers[scale]).size
        for name, source in ((f"{out}/calib_scale", scale), (f"{out}/calib_shift", shift)):
            array = numpy_helper.to_array(initializers[source]).reshape(1, channels, 1, 1)
            probe.graph.initializer.append(numpy_helper.from_array(array, name))
        probe.graph.initializer.append(
            numpy_helper.from_array(np.asarray(eps, np.float32), f"{out}/calib_eps")
        )
        p = f"{out}/calib"
        probe.graph.node.extend(
            [
                helper.make_node("ReduceMean", [x], [f"{p}_mean"], axes=[0, 2, 3]),
                helper.make_node("Sub", [x, f"{p}_mean"], [f"{p}_centred"]),
                helper.make_node("Mul", [f"{p}_centred", f"{p}_centred"], [f"{p}_square"]),
                helper.make_node("ReduceMean", [f"{p}_square"], [f"{p}_var"], axes=[0, 2, 3]),
                helper.make_node("Add", [f"{p}_var", f"{p}_eps"], [f"{p}_var_eps"]),
                helper.make_node("Sqrt", [f"{p}_var_eps"], [f"{p}_std"]),
                helper.make_node("Div", [f"{p}_centred", f"{p}_std"], [f"{p}_normal"]),
                helper.make_node("Mul", [f"{p}_normal", f"{p}_scale"], [f"{p}_scaled"]),
                helper.make_node("Add", [f"{p}_scaled", f"{p}_shift"], [out]),
            ]
        )
        stats.append((mean, var, f"{p}_mean", f"{p}_var"))
    head = None
    producers = {o: n for n in graph.node for o in n.output}
    for node in graph.node:
        source = producers.get(node.input[0]) if node.op_type == "Softmax" else None
        if source is not None and source.op_type == "Gemm" and source.input[2] in initializers:
            head = (source.input[2], node.input[0])
    used = {name for node in probe.graph.node for name in node.input}
    kept = [t for t in probe.graph.initializer if t.name in used]
    del probe.graph.initializer[:]
    probe.graph.initializer.extend(kept)
    inputs = [v for v in probe.graph.input if v.name in used]
    del probe.graph.input[:]
    probe.graph.input.extend(inputs)
    names = [n for s in stats for n in s[2:]] + ([head[1]] if head else [])
    if not names:
        return
    for name in names:
        probe.graph.output.append(helper.make_tensor_value_info(name, 1, None))
    session = onnxruntime.InferenceSession(
        probe.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    feeds = dict(zip([i.name for i in session.get_inputs()], calibration, strict=True))
    got = dict(zip(names, session.run(names, feeds), strict=True))
    updates = {}
    for mean, var, mean_out, var_out in stats:
        updates[mean] = got[mean_out].reshape(-1)
        updates[var] = got[var_out].reshape(-1)
    if head is not None:
        bias = numpy_helper.to_array(initializers[head[0]])
        updates[head[0]] = bias - got[head[1]].reshape(bias.shape)
    for name, array in updates.items():
        initializers[name].CopyFrom(numpy_helper.from_array(array.astype(np.float32), name))

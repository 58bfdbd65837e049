"""The tpu target passes (tpu-fold-constants, tpu-conv-strategy, tpu-sink-transposes) keep
numerics: each model, built here with seeded random weights, is lowered to tpu ops and run
through the JAX backend before and after the passes on the same random input."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from mlconv.backends.jax_backend import compile_module
from mlconv.dialects import make_context, tpu
from mlconv.errors import OptionError
from mlconv.frontends.load import load_model
from mlconv.passes.pipelines import lower_to_tpu, target_passes
from mlconv.passes.tpu_conv_strategy import TpuConvStrategyPass


class Graph:
    """A small ONNX graph builder with seeded random initializers."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.count = [], [], 0

    def name(self) -> str:
        self.count += 1
        return f"t{self.count}"

    def weight(self, shape, positive=False) -> str:
        name = self.name()
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        array = (
            self.rng.uniform(0.5, 1.5, shape)
            if positive
            else self.rng.standard_normal(shape) / np.sqrt(fan_in)
        )
        self.inits.append(numpy_helper.from_array(array.astype(np.float32), name))
        return name

    def node(self, op, inputs, **attrs) -> str:
        out = self.name()
        self.nodes.append(helper.make_node(op, inputs, [out], **attrs))
        return out

    def conv(self, x, cin, cout, k, group=1, stride=1, pad=0, bn=True, act="Relu") -> str:
        y = self.node(
            "Conv",
            [x, self.weight((cout, cin // group, k, k))],
            group=group,
            strides=[stride] * 2,
            pads=[pad] * 4,
            kernel_shape=[k, k],
        )
        if bn:
            stats = [self.weight((cout,), positive=True) for _ in range(4)]
            y = self.node("BatchNormalization", [y, *stats])
        else:
            y = self.node("Add", [y, self.weight((1, cout, 1, 1))])
        if act == "Relu":
            y = self.node("Relu", [y])
        elif act == "Clip":
            lo, hi = self.name(), self.name()
            self.inits += [
                numpy_helper.from_array(np.float32(0), lo),
                numpy_helper.from_array(np.float32(6), hi),
            ]
            y = self.node("Clip", [y, lo, hi])
        return y

    def model(self, x_shape, out):
        graph = helper.make_graph(
            self.nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
            [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)], self.inits,
        )  # fmt: skip
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def mobile_block(g: Graph) -> str:
    """Inverted residual: 1x1 expand, depthwise 3x3 (stride 1 and 2), 1x1 project, residual."""
    a = g.conv("x", 8, 24, 1, act="Clip")
    b = g.conv(a, 24, 24, 3, group=24, pad=1, act="Clip")
    c = g.conv(b, 24, 8, 1, act=None)
    r = g.node("Add", ["x", c])
    d = g.conv(r, 8, 8, 3, group=8, stride=2, pad=1)
    pool = g.node("GlobalAveragePool", [d])
    return g.node("Flatten", [pool])


def shuffle_block(g: Graph) -> str:
    """ShuffleNet unit: grouped 1x1, channel shuffle, depthwise, grouped 1x1, concat with pool."""
    a = g.conv("x", 12, 12, 1, group=3)
    s = channel_shuffle(g, a, 3, 12, 8)
    d = g.conv(s, 12, 12, 3, group=12, stride=2, pad=1, act=None)
    e = g.conv(d, 12, 6, 1, group=3, act=None)
    p = g.node("AveragePool", ["x"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    return g.node("Relu", [g.node("Concat", [p, e], axis=1)])


def shuffle_v2_block(g: Graph) -> str:
    """A stem convolution, then a ShuffleNetV2 downsampling-style unit: two branches (a 1x1,
    and a 1x1 / depthwise / 1x1), concatenated, the channel shuffle straight after the
    concatenation."""
    stem = g.conv("x", 3, 16, 3, pad=1)
    left = g.conv(stem, 16, 8, 1)
    b = g.conv(stem, 16, 8, 1)
    b = g.conv(b, 8, 8, 3, group=8, pad=1, act=None)
    b = g.conv(b, 8, 8, 1)
    joined = g.node("Concat", [left, b], axis=1)
    s = channel_shuffle(g, joined, 2, 16, 6)
    return g.node("Flatten", [g.node("GlobalAveragePool", [s])])


def dense_block(g: Graph) -> str:
    """VGG/DenseNet-like: 3x3 conv with bias, max pool, concat, strided 1x1, flatten, Gemm."""
    a = g.conv("x", 3, 6, 3, pad=1, bn=False)
    p = g.node("MaxPool", [a], kernel_shape=[2, 2], strides=[2, 2])
    b = g.conv(p, 6, 4, 3, pad=1)
    c = g.node("Concat", [p, b], axis=1)
    d = g.conv(c, 10, 5, 1, stride=2, bn=False)
    f = g.node("Flatten", [d])
    return g.node("Gemm", [f, g.weight((5 * 2 * 2, 7)), g.weight((7,))])


def channel_shuffle(g: Graph, x: str, groups: int, channels: int, size: int) -> str:
    """ShuffleNet's shuffle: reshape to [N, groups, channels/groups, H, W], swap, reshape."""
    split, merged = g.name(), g.name()
    g.inits += [
        numpy_helper.from_array(
            np.array([1, groups, channels // groups, size, size], np.int64), split
        ),
        numpy_helper.from_array(np.array([1, channels, size, size], np.int64), merged),
    ]
    s = g.node("Reshape", [x, split])
    s = g.node("Transpose", [s], perm=[0, 2, 1, 3, 4])
    return g.node("Reshape", [s, merged])


def stem_block(g: Graph) -> str:
    """RGB stem (3 -> 24 channels), padded 3x3/2 max pool, a grouped 1x1 wider than
    BLOCK_DIAGONAL_CHANNELS (one dot per group) and its channel shuffle, an average pool."""
    a = g.conv("x", 3, 24, 3, stride=2, pad=1)
    p = g.node("MaxPool", [a], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    b = g.conv(p, 24, 192, 1)
    c = channel_shuffle(g, g.conv(b, 192, 192, 1, group=4), 4, 192, 4)
    d = g.node("AveragePool", [c], kernel_shape=[2, 2], strides=[2, 2])
    return g.node("Flatten", [d])


def shuffle_units_block(g: Graph) -> str:
    """Two ShuffleNet residual units wider than BLOCK_DIAGONAL_CHANNELS (each grouped 1x1 one
    dot per group): grouped 1x1, shuffle, depthwise, grouped 1x1, add the unit's input, ReLU."""
    x = "x"
    for _ in range(2):
        a = g.conv(x, 192, 192, 1, group=4)
        s = channel_shuffle(g, a, 4, 192, 4)
        d = g.conv(s, 192, 192, 3, group=192, pad=1, act=None)
        e = g.conv(d, 192, 192, 1, group=4, act=None)
        x = g.node("Relu", [g.node("Add", [x, e])])
    return g.node("Flatten", [g.node("GlobalAveragePool", [x])])


def small_map_block(g: Graph) -> str:
    """ResNet's last stage at a small input: 3x3 convolutions of a 2x2 map (the kernel larger
    than the map: one dot of the patches), a strided one to 1x1, a residual add."""
    a = g.conv("x", 8, 16, 3, pad=1)
    b = g.conv(a, 16, 16, 3, pad=1, act=None)
    r = g.node("Relu", [g.node("Add", [a, b])])
    c = g.conv(r, 16, 8, 3, stride=2, pad=1)
    return g.node("Flatten", [c])


def fire_block(g: Graph) -> str:
    """SqueezeNet's fire module twice (a squeeze 1x1, then a 1x1 and a 3x3 expand, each with
    bias and ReLU, concatenated), then an Inception-style pair of batch norm + Clip branches
    concatenated, and that concatenated with a max pool, whose branch ends differently."""
    x, channels = "x", 8
    for _ in range(2):
        s = g.conv(x, channels, 4, 1, bn=False)
        left, right = g.conv(s, 4, 4, 1, bn=False), g.conv(s, 4, 4, 3, pad=1, bn=False)
        x, channels = g.node("Concat", [left, right], axis=1), 8
    a = g.conv(x, 8, 4, 1, act="Clip")
    b = g.conv(x, 8, 4, 3, pad=1, act="Clip")
    p = g.node("MaxPool", [x], kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1])
    y = g.node("Concat", [g.node("Concat", [a, b], axis=1), p], axis=1)
    return g.node("Flatten", [g.node("GlobalAveragePool", [y])])


def residual_block(g: Graph) -> str:
    """A stem convolution, then ResNet's bottleneck block three times over one map (1x1, 3x3,
    1x1 convolutions with batch norm, the block's input added, ReLU)."""
    x = g.conv("x", 3, 16, 3, pad=1)
    for _ in range(3):
        a = g.conv(x, 16, 8, 1)
        b = g.conv(a, 8, 8, 3, pad=1)
        c = g.conv(b, 8, 16, 1, act=None)
        x = g.node("Relu", [g.node("Add", [x, c])])
    return g.node("Flatten", [g.node("GlobalAveragePool", [x])])


CASES = {
    "fire": (fire_block, [1, 8, 6, 6]),
    "stem": (stem_block, [1, 3, 16, 16]),
    "small_map": (small_map_block, [1, 8, 2, 2]),
    "mobile": (mobile_block, [1, 8, 8, 8]),
    "shuffle": (shuffle_block, [1, 12, 8, 8]),
    "shuffle_v2": (shuffle_v2_block, [1, 3, 6, 6]),
    "dense": (dense_block, [1, 3, 8, 8]),
    "shuffle_units": (shuffle_units_block, [1, 192, 4, 4]),
    "residual": (residual_block, [1, 3, 8, 8]),
}


# shuffle: its pool branch reads the NCHW input itself, so the concat stays NCHW.
LEFT_TRANSPOSES = {
    "fire": 1,
    "mobile": 1,
    "shuffle": 2,
    "dense": 2,
    "stem": 2,
    "shuffle_v2": 1,
    "small_map": 1,
    "shuffle_units": 1,
    "residual": 1,
}


def lowered(case: str):
    build, shape = CASES[case]
    g = Graph(seed=sorted(CASES).index(case))
    module = lower_to_tpu(load_model(g.model(shape, build(g))))
    x = np.random.default_rng(100).standard_normal(shape).astype(np.float32)
    return module, x


def lowered_before(case: str, stage_class: type) -> tuple:
    """`case` lowered to tpu ops and through the cpu target passes before the first
    `stage_class` one: (module, input, context), the IR a pass's numeric test starts from."""
    module, x = lowered(case)
    return module, x, through_passes_before(module, stage_class)


def through_passes_before(module, stage_class: type):
    """Run the cpu target passes before the first `stage_class` one on `module`; the context."""
    ctx = make_context()
    for stage in target_passes("cpu"):
        if isinstance(stage, stage_class):
            break
        stage.apply(ctx, module)
    return ctx


def ops_named(module, name: str) -> list:
    return [op for op in module.walk() if op.name == f"tpu.{name}"]


@pytest.mark.parametrize("case", sorted(CASES))
def test_cpu_target_keeps_numerics(case):
    module, x = lowered(case)
    (before,) = compile_module(module.clone(), "cpu")(x)
    ctx = make_context()
    for stage in target_passes("cpu"):
        stage.apply(ctx, module)
    module.verify()
    (after,) = compile_module(module, "cpu")(x)
    assert np.abs(before).max() > 0.1
    np.testing.assert_allclose(after, before, rtol=1e-4, atol=1e-4 * np.abs(before).max())
    # No grouped or NCHW convolution is left; of the layout transposes only the input's and
    # the one before a flatten in NCHW order remain (channel shuffles are folded away).
    for conv in ops_named(module, "conv_general_dilated"):
        params = conv.params()
        assert params["feature_group_count"] == 1
        assert tuple(params["dimension_numbers"].lhs_spec) == (0, 3, 1, 2)
    distinct = {
        (op.operands[0], op.params()["permutation"])
        for op in ops_named(module, "transpose")
        if len(op.params()["permutation"]) > 3
    }
    assert len(distinct) <= LEFT_TRANSPOSES[case]


def test_small_map_convolutions_become_patch_dots():
    module, _ = lowered("small_map")
    ctx = make_context()
    for stage in target_passes("cpu"):
        stage.apply(ctx, module)
    assert ops_named(module, "conv_general_dilated") == []
    assert len(ops_named(module, "dot_general")) == 3


def test_depthwise_becomes_multiply_adds():
    module, _ = lowered("mobile")
    ctx = make_context()
    for stage in target_passes("cpu"):
        stage.apply(ctx, module)
    convs = ops_named(module, "conv_general_dilated")
    # Depthwise as taps; the two 1x1 stay convolutions (NHWC, HWIO filters), ungrouped.
    assert [tuple(op.operands[1].type.get_shape()[:2]) for op in convs] == [(1, 1), (1, 1)]
    assert all(op.params()["feature_group_count"] == 1 for op in convs)
    assert ops_named(module, "dot_general") == []
    assert len(ops_named(module, "slice")) >= 18


@pytest.mark.parametrize("device", ["gpu", "tpu"])
def test_other_devices_keep_convolutions(device):
    """gpu and tpu keep every convolution a convolution, grouped ones as they came; on gpu
    the ungrouped ones run in NHWC / OHWI (the stem and ResNet-like cases: each layout
    transpose cancelled between layers), on tpu all stay NCHW / OIHW. Numbers unchanged."""
    for case in ("shuffle", "stem", "dense"):
        module, x = lowered(case)
        convs = [
            op.params()["feature_group_count"] for op in ops_named(module, "conv_general_dilated")
        ]
        (before,) = compile_module(module.clone(), "cpu")(x)
        ctx = make_context()
        for stage in target_passes(device):
            stage.apply(ctx, module)
        after_convs = ops_named(module, "conv_general_dilated")
        assert sorted(op.params()["feature_group_count"] for op in after_convs) == sorted(convs)
        for op in after_convs:
            numbers = op.params()["dimension_numbers"]
            nhwc_ohwi = device == "gpu" and op.params()["feature_group_count"] == 1
            assert tuple(numbers.lhs_spec) == ((0, 3, 1, 2) if nhwc_ohwi else (0, 1, 2, 3))
            assert tuple(numbers.rhs_spec) == ((0, 3, 1, 2) if nhwc_ohwi else (0, 1, 2, 3))
        if device == "gpu" and case != "shuffle":
            assert len(ops_named(module, "transpose")) <= LEFT_TRANSPOSES[case] + 1
        (after,) = compile_module(module, "cpu")(x)
        np.testing.assert_allclose(after, before, rtol=1e-4, atol=1e-4 * np.abs(before).max())


def test_unknown_device_is_an_option_error():
    module, _ = lowered("dense")
    with pytest.raises(OptionError, match="unknown device 'npu'"):
        TpuConvStrategyPass(device="npu").apply(make_context(), module)


def test_weights_are_constants_after_folding():
    module, _ = lowered("dense")
    ctx = make_context()
    for stage in target_passes("cpu"):
        stage.apply(ctx, module)
    for op in module.walk():
        if isinstance(op, tpu.PrimitiveOp) and op.operands:
            assert not all(isinstance(v.owner, tpu.ConstantOp) for v in op.operands), op.name


def _op_lines(module) -> list[str]:
    """The module's ops as text without SSA names, sorted: the same ops and constants in any
    order compare equal."""
    import re

    return sorted(re.sub(r"%[\w.]+", "%", line) for line in str(module).splitlines())


@pytest.mark.parametrize("case", sorted(CASES))
def test_cached_traces_give_the_closure_forms(case, monkeypatch):
    """tpu-conv-strategy traces each (form, convolution, shapes) once with the filters as an
    argument and runs the filter-only equations in numpy; the result has the same ops and
    constants as tracing each convolution with its filters closed over (the fallback)."""
    from mlconv.passes import tpu_conv_strategy

    cached, _ = lowered(case)
    TpuConvStrategyPass(device="cpu").apply(make_context(), cached)
    closure, _ = lowered(case)
    monkeypatch.setattr(tpu_conv_strategy, "_bind_filters", lambda closed, filters: None)
    TpuConvStrategyPass(device="cpu").apply(make_context(), closure)
    assert ops_named(cached, "conv_general_dilated") or ops_named(cached, "dot_general")
    assert _op_lines(cached) == _op_lines(closure)


WINDOWS = [  # (kind, dtype, shape, window, strides, padding, window dilation)
    ("max", np.float32, (1, 7, 7, 3), (1, 3, 3, 1), (1, 2, 2, 1), [(0, 0), (1, 1), (1, 1), (0, 0)], None),
    ("min", np.float32, (2, 6, 5, 2), (1, 2, 3, 1), (1, 1, 2, 1), [(0, 0), (0, 1), (1, 0), (0, 0)], None),
    ("sum", np.float32, (1, 3, 9, 9), (1, 1, 3, 3), (1, 1, 1, 1), [(0, 0), (0, 0), (1, 1), (1, 1)], None),
    ("max", np.int32, (1, 8, 8, 2), (1, 2, 2, 1), (1, 2, 2, 1), [(0, 0), (1, 0), (0, 1), (0, 0)], None),
    ("max", np.float32, (1, 9, 9, 2), (1, 3, 3, 1), (1, 1, 1, 1), [(0, 0), (2, 2), (2, 2), (0, 0)], (1, 2, 2, 1)),
    ("sum", np.int32, (1, 8, 8, 1), (1, 8, 8, 1), (1, 1, 1, 1), [(0, 0)] * 4, None),
]  # fmt: skip


@pytest.mark.parametrize("case", range(len(WINDOWS)))
def test_window_slices_equal_reduce_window(case):
    """tpu-window-strategy's slices give reduce_window's values, padding (with the identity of
    max, min and sum, for floats and integers) and window dilation included."""
    from jax import lax

    from mlconv.passes.tpu_window_strategy import window_slices

    kind, dtype, shape, window, strides, padding, dilation = WINDOWS[case]
    dilation = dilation or (1,) * len(shape)
    rng = np.random.default_rng(case)
    x = (rng.standard_normal(shape) * 10).astype(dtype)
    params = {
        "window_dimensions": window,
        "window_strides": strides,
        "padding": padding,
        "base_dilation": (1,) * len(shape),
        "window_dilation": dilation,
    }
    reduce = {"max": lax.reduce_window_max_p, "min": lax.reduce_window_min_p}.get(
        kind, lax.reduce_window_sum_p
    )
    expected = reduce.bind(x, **{**params, "padding": tuple(map(tuple, padding))})
    np.testing.assert_allclose(
        np.asarray(window_slices(x, kind, params)), np.asarray(expected), rtol=1e-6
    )


@pytest.mark.parametrize("case", ["shuffle", "stem", "shuffle_v2"])
def test_fold_channel_shuffle_numerics(case):
    """tpu-fold-channel-shuffle on the IR right before it (after tpu-sink-transposes): the
    shuffle's transpose is gone (folded into a block-diagonal dot in `shuffle`, into an
    interleaving concatenation of per-group dots in `stem`, of the two halves straight after
    their concatenation in `shuffle_v2`) and the outputs do not move."""
    from mlconv.passes.tpu_fold_channel_shuffle import TpuFoldChannelShufflePass

    module, x, ctx = lowered_before(case, TpuFoldChannelShufflePass)
    rank5 = [op for op in ops_named(module, "transpose") if len(op.params()["permutation"]) == 5]
    assert len(rank5) == 1
    (before,) = compile_module(module.clone(), "cpu")(x)
    TpuFoldChannelShufflePass().apply(ctx, module)
    module.verify()
    assert not [op for op in ops_named(module, "transpose") if len(op.params()["permutation"]) == 5]
    (after,) = compile_module(module, "cpu")(x)
    assert np.abs(before).max() > 0.1
    np.testing.assert_allclose(after, before, rtol=1e-5, atol=1e-5 * np.abs(before).max())


def test_merge_epilogues_numerics():
    """tpu-merge-epilogues on the IR right before it: the two fire modules' and the Clip
    pair's concatenations read the convolutions themselves, each under one epilogue (bias
    add, then ReLU or Clip's max and min); the concatenation with the max pool stays as it
    was. The outputs do not move."""
    from mlconv.passes.tpu_merge_epilogues import TpuMergeEpiloguesPass
    from mlconv.passes.tpu_sink_transposes import ELEMENTWISE

    module, x, ctx = lowered_before("fire", TpuMergeEpiloguesPass)

    def producers() -> list[list[str]]:
        return [[v.owner.name for v in op.operands] for op in ops_named(module, "concatenate")]

    def elementwise_ops() -> int:
        return sum(1 for op in module.walk() if getattr(op, "PRIMITIVE", None) in ELEMENTWISE)

    assert sorted(producers()) == [
        ["tpu.concatenate", "tpu.reduce_window_max"],
        ["tpu.max", "tpu.max"],
        ["tpu.max", "tpu.max"],
        ["tpu.min", "tpu.min"],
    ]
    count = elementwise_ops()
    (before,) = compile_module(module.clone(), "cpu")(x)
    TpuMergeEpiloguesPass().apply(ctx, module)
    module.verify()
    convolution = "tpu.conv_general_dilated"
    assert sorted(producers()) == [
        [convolution, convolution],
        [convolution, convolution],
        [convolution, convolution],
        ["tpu.min", "tpu.reduce_window_max"],
    ]
    # per merged pair one bias add and its ReLU (max), or its Clip (max, min)
    assert elementwise_ops() == count - 7
    (after,) = compile_module(module, "cpu")(x)
    assert np.abs(before).max() > 0.1
    np.testing.assert_allclose(after, before, rtol=1e-5, atol=1e-5 * np.abs(before).max())


def compiled_entry(module, x) -> str:
    """The entry computation of the HLO XLA:CPU compiles of the module's (one) region."""
    region = compile_module(module, "cpu").regions[0]
    hlo = region._jitted.lower(region.constants, x).compile().as_text()
    return hlo[hlo.index("\nENTRY") :]


def _xla_kernels(module, x) -> tuple[int, int]:
    """(loop fusions, concatenate kernels) XLA:CPU compiles of the module's (one) region."""
    entry = compiled_entry(module, x)
    return entry.count("kind=kLoop"), entry.count(" concatenate(")


def wide_fires(g: Graph) -> str:
    """Two SqueezeNet fire modules with expands of 64 channels (XLA:CPU fuses a concatenation
    of narrower parts into its reader by itself), then a 1x1 convolution."""
    x, channels = "x", 16
    for _ in range(2):
        s = g.conv(x, channels, 8, 1, bn=False)
        left, right = g.conv(s, 8, 64, 1, bn=False), g.conv(s, 8, 64, 3, pad=1, bn=False)
        x, channels = g.node("Concat", [left, right], axis=1), 128
    y = g.conv(x, channels, 8, 1, bn=False)
    return g.node("Flatten", [g.node("GlobalAveragePool", [y])])


def test_pad_concats_numerics():
    """tpu-pad-concats on the IR right before it: each fire module's concatenation, whose
    epilogue only the next 1x1 convolution reads, becomes two zero-padded parts added, which
    XLA:CPU fuses into that epilogue: its two concatenate kernels go and no loop fusion comes.
    The outputs are the same, bit for bit. (tpu-pad-concats.mlir has the concatenations it
    leaves alone.)"""
    from mlconv.passes.tpu_pad_concats import TpuPadConcatsPass

    g = Graph(seed=12)
    module = lower_to_tpu(load_model(g.model([1, 16, 16, 16], wide_fires(g))))
    x = np.random.default_rng(6).standard_normal((1, 16, 16, 16)).astype(np.float32)
    ctx = through_passes_before(module, TpuPadConcatsPass)
    assert len(ops_named(module, "concatenate")) == 2
    (before,) = compile_module(module.clone(), "cpu")(x)
    fusions, concatenates = _xla_kernels(module.clone(), x)
    assert concatenates == 2
    TpuPadConcatsPass().apply(ctx, module)
    module.verify()
    assert not ops_named(module, "concatenate")
    channel_pads = [p.params()["padding_config"][3] for p in ops_named(module, "pad")]
    assert [c for c in channel_pads if c != (0, 0, 0)] == [(0, 64, 0), (64, 0, 0)] * 2
    assert _xla_kernels(module.clone(), x) == (fusions, 0)
    (after,) = compile_module(module, "cpu")(x)
    assert np.abs(before).max() > 0.1
    np.testing.assert_array_equal(after, before)


def test_hoist_slices_numerics():
    """tpu-hoist-slices on the IR right before it: two wide ShuffleNet units, whose grouped 1x1
    convolutions read their groups as channel slices of the whole activation, read them after
    the pass from the per-group ops that computed them; only the first unit's slices of the
    model input (its NHWC transpose) remain. The outputs do not move."""
    from mlconv.passes.tpu_hoist_slices import TpuHoistSlicesPass

    module, x, ctx = lowered_before("shuffle_units", TpuHoistSlicesPass)

    def sliced_group_inputs():
        return [
            dot.operands[0].owner.operands[0]
            for dot in ops_named(module, "dot_general")
            if dot.operands[0].owner.name == "tpu.slice"
        ]

    assert len(sliced_group_inputs()) == 16  # 4 grouped convolutions x 4 groups
    (before,) = compile_module(module.clone(), "cpu")(x)
    TpuHoistSlicesPass().apply(ctx, module)
    module.verify()
    region_input = ops_named(module, "region")[0].body.block.args[0]
    read = [value.owner for value in sliced_group_inputs()]
    assert len(read) == 4 and len(set(read)) == 1
    assert read[0].name == "tpu.transpose" and read[0].operands[0] is region_input
    # the rest read per-group ops: the depthwise's bias adds and, across the residual path,
    # the first unit's per-group ReLUs
    owners = sorted(dot.operands[0].owner.name for dot in ops_named(module, "dot_general"))
    assert owners == ["tpu.add"] * 8 + ["tpu.max"] * 4 + ["tpu.slice"] * 4
    (after,) = compile_module(module, "cpu")(x)
    assert np.abs(before).max() > 0.1
    np.testing.assert_allclose(after, before, rtol=1e-5, atol=1e-5 * np.abs(before).max())


def loop_fusion_operands(module, x) -> list[int]:
    """The operand count of each loop fusion XLA:CPU makes of the module's (one) region."""
    import re

    entry = compiled_entry(module, x)
    return [
        len(operands.split(", ")) for operands in re.findall(r"fusion\((.*?)\), kind=kLoop", entry)
    ]


def test_materialize_activations_numerics():
    """tpu-materialize-activations on the IR right before it: the ReLUs that a convolution
    and the next residual add both read (the stem's and the first two blocks') become
    selects, the last block's (read by the pooling alone) stays. XLA:CPU then computes each
    once: no loop fusion recomputes the residual chain (before, the last block's add reads
    every earlier block's convolution and bias). The outputs are the same, bit for bit."""
    from mlconv.passes.tpu_materialize_activations import TpuMaterializeActivationsPass

    module, x, ctx = lowered_before("residual", TpuMaterializeActivationsPass)
    relus = len(ops_named(module, "max"))
    (before,) = compile_module(module.clone(), "cpu")(x)
    operands_before = loop_fusion_operands(module.clone(), x)
    TpuMaterializeActivationsPass().apply(ctx, module)
    module.verify()
    assert len(ops_named(module, "select_n")) == 3
    assert len(ops_named(module, "max")) == relus - 3
    operands_after = loop_fusion_operands(module.clone(), x)
    assert max(operands_before) >= 6 and max(operands_after) <= 3
    (after,) = compile_module(module, "cpu")(x)
    assert np.abs(before).max() > 0.1
    np.testing.assert_array_equal(after, before)


def test_materialize_activations_special_values():
    """The select forms of max(x, 0) and min(6, x) give what max and min give for NaN and the
    infinities."""
    from xdsl.parser import Parser

    from mlconv.passes.tpu_materialize_activations import TpuMaterializeActivationsPass

    t = "tensor<5xf32>"
    text = f"""
    func.func @main(%x: {t}) -> ({t}, {t}, {t}, {t}) {{
      %0:4 = "tpu.region"(%x) ({{
      ^bb0(%1: {t}):
        %z = tpu.constant {{value = dense<0.000000e+00> : tensor<f32>}} : tensor<f32>
        %six = tpu.constant {{value = dense<6.000000e+00> : tensor<f32>}} : tensor<f32>
        %r = "tpu.max"(%1, %z) : ({t}, tensor<f32>) -> {t}
        %c = "tpu.min"(%six, %1) : (tensor<f32>, {t}) -> {t}
        %n = "tpu.neg"(%r) : ({t}) -> {t}
        %m = "tpu.neg"(%c) : ({t}) -> {t}
        tpu.yield %r, %c, %n, %m : {t}, {t}, {t}, {t}
      }}) {{device = "tpu"}} : ({t}) -> ({t}, {t}, {t}, {t})
      func.return %0#0, %0#1, %0#2, %0#3 : {t}, {t}, {t}, {t}
    }}"""
    module = Parser(make_context(), text).parse_module()
    x = np.array([-np.inf, -2.0, np.nan, 7.0, np.inf], np.float32)
    before = compile_module(module.clone(), "cpu")(x)
    TpuMaterializeActivationsPass().apply(make_context(), module)
    assert len(ops_named(module, "select_n")) == 2 and not ops_named(module, "max")
    after = compile_module(module, "cpu")(x)
    np.testing.assert_array_equal(before[0], [0, 0, np.nan, 7, np.inf])
    np.testing.assert_array_equal(before[1], [-np.inf, -2, np.nan, 6, 6])
    for got, want in zip(after, before, strict=True):
        np.testing.assert_array_equal(got, want)


def classifier_head(g: Graph) -> str:
    """A convolution, global average pooling, a fully connected layer (its scale folded into
    the weights by core-fuse) and softmax: the end of
    most classifiers (ResNet, Inception, VGG), whose softmax XLA:CPU compiles to ~10 kernels."""
    y = g.conv("x", 3, 32, 3, pad=1, bn=False)
    flat = g.node("Flatten", [g.node("GlobalAveragePool", [y])])
    logits = g.node("Gemm", [flat, g.weight((100, 32)), g.weight((100,))], transB=1)
    return g.node("Softmax", [g.node("Mul", [logits, g.weight((1, 100), positive=True)])])


def test_outline_host_tail_numerics():
    """tpu-outline-host-tail on the IR right before it (min-flops=0: the model is small): the
    bias add and the softmax after the fully connected layer's dot run in a host region, in
    numpy; the compiled region ends at the dot and XLA compiles fewer loop fusions. The
    outputs agree to float32 rounding. With the default min-flops nothing moves."""
    from mlconv.passes.tpu_outline_host_tail import TpuOutlineHostTailPass

    g = Graph(seed=11)
    module = lower_to_tpu(load_model(g.model([1, 3, 24, 24], classifier_head(g))))
    x = np.random.default_rng(5).standard_normal((1, 3, 24, 24)).astype(np.float32) * 4
    ctx = through_passes_before(module, TpuOutlineHostTailPass)
    (before,) = compile_module(module.clone(), "cpu")(x)
    fusions_before = len(loop_fusion_operands(module.clone(), x))
    unchanged = module.clone()
    TpuOutlineHostTailPass().apply(ctx, unchanged)
    assert str(unchanged) == str(module)
    TpuOutlineHostTailPass(min_flops=0).apply(ctx, module)
    module.verify()
    compiled, host = [op for op in module.walk() if isinstance(op, tpu.RegionOp)]
    assert compiled.device.data == "tpu" and host.on_host()
    host_ops = {op.name for op in host.body.walk()}
    assert {"tpu.add", "tpu.reduce_max", "tpu.exp", "tpu.reduce_sum", "tpu.div"} <= host_ops
    assert compiled.body.block.last_op.operands[0].owner.name == "tpu.dot_general"
    assert len(loop_fusion_operands(module.clone(), x)) < fusions_before
    run = compile_module(module, "cpu")
    (after,) = run(x)
    assert after.flags.writeable and after.dtype == np.float32
    assert before.max() > 0.05  # the softmax is far from uniform: the input reaches it
    np.testing.assert_allclose(after, before, rtol=1e-5, atol=1e-7)
    (on_device,) = run.on_device(x)
    assert isinstance(on_device, jax.Array)
    np.testing.assert_array_equal(np.asarray(on_device), after)


def test_host_region_special_values():
    """A host region gives what the compiled region gives for NaN, the infinities and
    overflowing exponentials: exp(-inf) = 0, exp(100) = inf, 0 / 0 = NaN, max propagates NaN."""
    from xdsl.parser import Parser

    from mlconv.passes.tpu_outline_host_tail import TpuOutlineHostTailPass

    t, r = "tensor<2x4xf32>", "tensor<2xf32>"
    text = f"""
    func.func @main(%x: {t}) -> ({t}, {r}, {t}) {{
      %0:3 = "tpu.region"(%x) ({{
      ^bb0(%a: {t}):
        %w = tpu.constant {{value = dense<1.000000e+00> : tensor<4x4xf32>}} : tensor<4x4xf32>
        %d = "tpu.dot_general"(%a, %w) {{dimension_numbers = [[array<i64: 1>, array<i64: 0>], [array<i64>, array<i64>]], precision, preferred_element_type = f32, out_sharding}} : ({t}, tensor<4x4xf32>) -> {t}
        %e = "tpu.exp"(%a) {{accuracy}} : ({t}) -> {t}
        %l = "tpu.logistic"(%a) {{accuracy}} : ({t}) -> {t}
        %m = "tpu.reduce_max"(%e) {{axes = array<i64: 1>}} : ({t}) -> {r}
        %q = "tpu.div"(%e, %l) : ({t}, {t}) -> {t}
        tpu.yield %q, %m, %d : {t}, {r}, {t}
      }}) {{device = "tpu"}} : ({t}) -> ({t}, {r}, {t})
      func.return %0#0, %0#1, %0#2 : {t}, {r}, {t}
    }}"""
    module = Parser(make_context(), text).parse_module()
    x = np.array([[-np.inf, 1.0, 100.0, -3.0], [np.nan, 0.5, -20.0, 2.0]], np.float32)
    before = compile_module(module.clone(), "cpu")(x)
    TpuOutlineHostTailPass(min_flops=0).apply(make_context(), module)
    regions = [op for op in module.walk() if isinstance(op, tpu.RegionOp)]
    assert [op.device.data for op in regions] == ["tpu", "host"]
    after = compile_module(module, "cpu")(x)
    quotient, maximum, _ = after
    assert np.isnan(quotient[0, 0]) and np.isinf(quotient[0, 2]) and np.isnan(maximum[1])
    for got, want in zip(after, before, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_outline_host_head_numerics():
    """tpu-outline-host-head on the IR right before it (min-flops=0): the input's NCHW to
    NHWC transpose runs in a host region, numpy copying one channel at a time, and the
    compiled region takes the NHWC image. The outputs are the same, bit for bit."""
    from mlconv.passes.tpu_outline_host_head import TpuOutlineHostHeadPass

    g = Graph(seed=12)
    module = lower_to_tpu(load_model(g.model([2, 3, 24, 24], classifier_head(g))))
    x = np.random.default_rng(6).standard_normal((2, 3, 24, 24)).astype(np.float32)
    ctx = through_passes_before(module, TpuOutlineHostHeadPass)
    (before,) = compile_module(module.clone(), "cpu")(x)
    TpuOutlineHostHeadPass(min_flops=0).apply(ctx, module)
    module.verify()
    host, compiled = [op for op in module.walk() if isinstance(op, tpu.RegionOp)]
    assert host.on_host() and not compiled.on_host()
    assert [op.name for op in host.body.block.ops] == ["tpu.transpose", "tpu.yield"]
    assert [a.type.get_shape() for a in compiled.body.block.args] == [(2, 24, 24, 3)]
    assert not ops_named(compiled, "transpose")
    (after,) = compile_module(module, "cpu")(x)
    assert np.abs(before).max() > 0.01
    np.testing.assert_array_equal(after, before)


def test_host_broadcast_read_twice():
    """A host region's broadcast that one op reads as both operands (b * b) is broadcast for
    real: numpy's own broadcasting of the unbroadcast form would give the small shape."""
    from xdsl.parser import Parser

    from mlconv.backends.jax_backend import HostRegion

    text = """
    func.func @main(%x: tensor<3xf32>) -> tensor<2x3xf32> {
      %0 = "tpu.region"(%x) ({
      ^bb0(%a: tensor<3xf32>):
        %b = "tpu.broadcast_in_dim"(%a) {shape = array<i64: 2, 3>, broadcast_dimensions = array<i64: 1>, sharding} : (tensor<3xf32>) -> tensor<2x3xf32>
        %m = "tpu.mul"(%b, %b) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
        tpu.yield %m : tensor<2x3xf32>
      }) {device = "host"} : (tensor<3xf32>) -> tensor<2x3xf32>
      func.return %0 : tensor<2x3xf32>
    }"""
    module = Parser(make_context(), text).parse_module()
    (region,) = [op for op in module.walk() if isinstance(op, tpu.RegionOp)]
    x = np.array([1.0, 2.0, 3.0], np.float32)
    (got,) = HostRegion(region)(x)
    np.testing.assert_array_equal(got, np.broadcast_to(x * x, (2, 3)))


def test_host_values_need_a_numpy_type():
    """An element type numpy has no equivalent for (i3 here) keeps a value off the host
    instead of stopping the pass with numpy_dtype's error."""
    from xdsl.dialects.builtin import IntegerType, TensorType, f32
    from xdsl.ir import Block

    from mlconv.passes.tpu_outline_host_tail import small_host_value

    narrow, wide = Block(arg_types=[TensorType(IntegerType(3), [4]), TensorType(f32, [4])]).args
    assert not small_host_value(narrow, 16) and small_host_value(wide, 16)

"""core-fuse's fusions (passes/core_fusions/): each fires where the exporters write its
subgraph, and each keeps the numerics.

- Every case of the lit tests under test/filecheck/passes/core-fuse/ that core-fuse rewrites is
  run by the core interpreter before and after the pass on random inputs (the fusion's own
  numeric before/after test, per family and form).
- A PyTorch module written the way users write these functions (x * sigmoid(x),
  x * relu6(x + 3) / 6, 0.5 * x * (1 + erf(x / sqrt 2)), LayerNorm and F.normalize, a channel
  shuffle and a pixel shuffle by view/permute, Conv+BatchNorm, a zero pad before a
  convolution), exported by torch.onnx: each fused op is counted, and the IR before and after
  core-fuse is run by the core interpreter.
- Keras' EfficientNetB0 (Swish, Pad into convolutions, batch norms into filters) and a Keras
  transformer block (GELU, LayerNorm), through tf-to-core: the same.
"""

from __future__ import annotations

import collections
import math
import re
from pathlib import Path

import numerics  # noqa: E402 - a module beside this one (conftest.py)
import pytest
import sensitivity  # noqa: E402 - a module beside this one (conftest.py)
from onnx_graphs import float_model
from xdsl.parser import Parser

from mlconv.dialects import make_context

LIT = Path(__file__).parents[1] / "filecheck" / "passes" / "core-fuse"
RTOL = 1e-5
# Whole models: eighty convolutions with rescaled filters reassociate float32 sums (EfficientNet
# moved by 1.6e-5 of its largest output); the bar for a model.
RTOL_MODEL = 1e-4
# Up to core-fuse: what mlconv.compile runs before it.
BEFORE_FUSE = "core-infer-shapes,core-fold-constants{static-shape=true}"


def _lit_cases() -> list[tuple[str, str]]:
    cases = []
    for path in sorted(LIT.glob("*.mlir")):
        for chunk in path.read_text().split("// -----"):
            name = re.search(r"func\.func @(\w+)", chunk)
            if name:
                cases.append((f"{path.stem}/{name[1]}", chunk))
    return cases


def op_counts(module) -> collections.Counter:
    return collections.Counter(op.name for op in module.walk())


def check_fuse(before, inputs, other, rtol: float = RTOL, what: str = ""):
    """core-fuse on `before`: the core interpreter gives the same outputs before and after.
    `other` (another input) must move the outputs first; None where the test has shown that
    of the same model already."""
    after = numerics.apply_passes(before, "core-fuse")
    expected = numerics.interpret(before, inputs)
    if other is not None:
        moved = numerics.interpret(before, other)
        sensitivity.assert_input_sensitive(expected, moved, rtol=rtol, what=what)
    actual = numerics.interpret(after, inputs)
    numerics.assert_scaled_close(actual, expected, rtol, what)
    return after, actual


@pytest.mark.parametrize("name, text", _lit_cases(), ids=[c[0] for c in _lit_cases()])
def test_lit_case_numerics(name: str, text: str) -> None:
    module = Parser(make_context(), text).parse_module()
    after = numerics.apply_passes(module, "core-fuse")
    negative = name.split("/")[1].startswith("no_")
    assert (str(after) == str(module)) == negative, f"{name}: negative {negative}, rewritten"
    if negative:
        return
    check_fuse(
        module, numerics.random_inputs(module, 1), numerics.random_inputs(module, 2), what=name
    )


# --- PyTorch ---------------------------------------------------------------------------------


def _torch_module():
    import torch
    import torch.nn.functional as F
    from torch import nn

    class Fusions(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(8, 8, 3, padding=0)
            self.bn = nn.BatchNorm2d(8)
            self.ln = nn.LayerNorm(12)
            self.proj = nn.Linear(12, 12)

        def forward(self, x, t):
            y = self.bn(self.conv(F.pad(x, (1, 1, 1, 1))))
            y = y * torch.sigmoid(y)  # Swish
            y = y * F.relu6(y + 3) / 6  # HSwish
            n, c, h, w = y.shape
            y = y.view(n, 2, c // 2, h, w).transpose(1, 2).reshape(n, c, h, w)  # shuffle
            y = y.view(n, 2, c // 4, 2, h, w).permute(0, 1, 4, 2, 5, 3)  # pixel shuffle (CRD)
            y = y.reshape(n, 2, h * 2, w * 2)
            s = self.ln(t)  # LayerNorm (decomposed before opset 17)
            s = 0.5 * s * (1 + torch.erf(s / math.sqrt(2)))  # GELU
            s = s * torch.tanh(torch.log(torch.exp(s) + 1))  # SoftPlus, Mish
            s = F.normalize(self.proj(s), dim=-1)  # NormalizeL2
            return y, s

    torch.manual_seed(0)
    model = Fusions().eval()
    with torch.no_grad():  # statistics that fit the activations, so the output moves
        model.bn.running_mean.uniform_(-0.2, 0.2)
        model.bn.running_var.uniform_(0.5, 1.5)
        model.bn.weight.uniform_(0.5, 1.5)
        model.ln.weight.uniform_(0.5, 1.5)
        model.ln.bias.uniform_(-0.5, 0.5)
    return model


def test_torch_fusions_fire_and_keep_numerics(tmp_path) -> None:
    import onnx
    import torch

    from mlconv.frontends.onnx_importer import import_onnx

    model = _torch_module()
    path = tmp_path / "fusions.onnx"
    example = (torch.randn(1, 8, 6, 6), torch.randn(1, 5, 12))
    torch.onnx.export(
        model, example, str(path), dynamo=False, opset_version=14, do_constant_folding=False
    )
    imported = import_onnx(onnx.load(str(path)))
    before = numerics.apply_passes(
        imported, f"onnx-normalize,onnx-decompose,onnx-to-core,{BEFORE_FUSE}"
    )
    after, _ = check_fuse(
        before,
        numerics.random_inputs(before, 1),
        numerics.random_inputs(before, 2),
        what="torch fusions",
    )
    counts = op_counts(after)
    fused = {
        name: counts[f"core.{name}"]
        for name in (
            "Swish",
            "HSwish",
            "ShuffleChannels",
            "DepthToSpace",
            "MVN",
            "Gelu",
            "Mish",
            "NormalizeL2",
        )
    }
    assert fused == dict.fromkeys(fused, 1), fused
    # Pad went into the convolution, the batch norm into its filters.
    assert not counts["core.Pad"] and not counts["core.BatchNormInference"]
    assert not counts["core.Erf"] and not counts["core.Sigmoid"] and not counts["core.Exp"]
    outputs = numerics.interpret(after, [a.numpy() for a in example])
    with torch.no_grad():
        reference = [r.numpy() for r in model(*example)]
    numerics.assert_scaled_close(outputs, reference, 1e-4, "core-fuse against torch")


# --- Keras, through tf-to-core -----------------------------------------------------------------


@pytest.fixture(scope="module")
def keras_saved_model(request, tmp_path_factory):
    pytest.importorskip("tensorflow")
    from test_tf_to_core import saved_model  # the same models, built and cached the same way

    return saved_model.__wrapped__(request, tmp_path_factory)


def _keras_before_fuse(folder: str):
    from mlconv.frontends.tf_importer import import_tf

    return numerics.apply_passes(
        import_tf(folder), f"tf-to-core,core-fold-constants,core-layout-nchw,{BEFORE_FUSE}"
    )


def test_keras_efficientnet_swish(keras_saved_model) -> None:
    """EfficientNetB0: every swish activation (x * sigmoid(1 * x)) becomes Swish, the SE
    blocks' sigmoid gates stay; the batch norms go into the filters, the ZeroPadding2D before
    the strided depthwise convolutions into their pads."""
    folder, _, _ = keras_saved_model("EfficientNetB0")
    before = _keras_before_fuse(folder)
    after = numerics.apply_passes(before, "core-fuse")
    # Counts only: interpreting EfficientNet op by op takes a minute on CI's cores, and
    # test_tf_to_core compiles this model (core-fuse included) and compares with TensorFlow.
    old, new = op_counts(before), op_counts(after)
    assert new["core.Swish"] == 49 and new["core.Sigmoid"] == 16, new
    assert old["core.Pad"] == 5 and new["core.Pad"] == 1  # the first one is NHWC, transposed
    # The SE gates and the Rescaling of the NHWC input: no batch-norm scale is left.
    assert old["core.Multiply"] == 164 and new["core.Multiply"] == 17


def test_keras_transformer_gelu_layer_norm(keras_saved_model) -> None:
    """The Keras transformer block: its two LayerNormalizations become MVN (then gamma, beta),
    its exact GELU (0.5x * (1 - erf(-x / sqrt 2))) becomes Gelu."""
    folder, image, reference = keras_saved_model("transformer")
    before = _keras_before_fuse(folder)
    after, outputs = check_fuse(before, [image], None, RTOL_MODEL, what="transformer")
    numerics.assert_scaled_close(outputs, [reference], RTOL_MODEL, "against TensorFlow")
    counts = op_counts(after)
    assert counts["core.MVN"] == 2 and counts["core.Gelu"] == 1, counts
    assert not counts["core.Erf"] and not counts["core.SquaredDifference"]
    # The exact GELU: the tanh form would pass the comparisons here as well (within 1e-4).
    (gelu,) = [op for op in after.walk() if op.name == "core.Gelu"]
    assert gelu.attribute_values()["approximation_mode"] == "ERF"


# --- torchvision, through torch.onnx (TorchScript, opset 17) ---------------------------------


@pytest.fixture(scope="module")
def exported(request, tmp_path_factory):
    pytest.importorskip("torchvision")
    import exported_models

    return exported_models.export_cache(request, tmp_path_factory)


@pytest.mark.parametrize(
    "name, fused",
    [
        # Every channel shuffle (view, transpose, view) of ShuffleNetV2.
        ("shufflenet_v2", {"core.ShuffleChannels": 16}),
        # torch's hardsigmoid (ONNX HardSigmoid, alpha 1/6) in every SE block; hardswish is
        # ONNX's HardSwish, already core.HSwish.
        ("mobilenet_v3_small", {"core.HSigmoid": 9, "core.HardSigmoid": 0, "core.HSwish": 19}),
    ],
)
def test_torchvision_fusions(exported, name: str, fused: dict[str, int]) -> None:
    import exported_models
    import onnx

    from mlconv.frontends.onnx_importer import import_onnx

    folder = exported((name, "torchscript"))
    proto = onnx.load(str(exported_models.model_file(folder, "torchscript")))
    refs = exported_models.references(folder)
    (image,), _ = refs[1]
    shapes = f"{proto.graph.input[0].name}:{','.join(map(str, image.shape))}"
    before = numerics.apply_passes(
        import_onnx(proto),
        f"onnx-normalize,onnx-decompose,onnx-to-core,core-infer-shapes{{input-shapes={shapes}}},"
        "core-fold-constants{static-shape=true}",
    )
    after = numerics.apply_passes(before, "core-fuse")
    counts = op_counts(after)
    assert {op: counts[op] for op in fused} == fused
    # Counts only: test_exporters_torch compiles the same export (core-fuse included) and
    # compares with PyTorch; the numerics of each fusion are the lit cases' above.


def _small_variance_batch_norms():
    """Conv -> BN, depthwise Conv -> BN and MatMul + bias -> BN, each BN with variances of
    1e-4..3e-4 and epsilon 1e-3 (epsilon dominates the scale), seeded random weights."""
    import numpy as np
    from onnx import helper, numpy_helper

    rng = np.random.default_rng(31)

    def array(name, shape, low=-1.0, high=1.0):
        return numpy_helper.from_array(rng.uniform(low, high, shape).astype(np.float32), name)

    inits = [array("w", (4, 3, 3, 3)), array("wd", (4, 1, 3, 3)), array("wm", (4, 5))]
    inits += [array("bm", (5,))]
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv"),
        helper.make_node("Conv", ["c1", "wd"], ["d"], group=4, name="depthwise"),
        helper.make_node("GlobalAveragePool", ["d1"], ["p"], name="pool"),
        helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
        helper.make_node("MatMul", ["f", "wm"], ["m"], name="fc"),
        helper.make_node("Add", ["m", "bm"], ["mb"], name="bias"),
    ]
    for data, out, channels, name in (("c", "c1", 4, "bn1"), ("d", "d1", 4, "bn2"), ("mb", "y", 5, "bn3")):  # fmt: skip
        inits += [
            array(f"{name}_gamma", (channels,), 0.5, 1.5),
            array(f"{name}_beta", (channels,), -0.5, 0.5),
            array(f"{name}_mean", (channels,), -0.2, 0.2),
            array(f"{name}_var", (channels,), 1e-4, 3e-4),
        ]
        nodes.append(
            helper.make_node(
                "BatchNormalization",
                [data, *(f"{name}_{k}" for k in ("gamma", "beta", "mean", "var"))],
                [out],
                epsilon=1e-3,
                name=name,
            )
        )
    return float_model(nodes, {"x": [2, 3, 6, 6]}, {"y": [2, 5]}, inits, opset=15, name="bn")


def test_batch_norm_folds_keep_epsilon_with_small_variances() -> None:
    """Issue 31: dropping BatchNorm's epsilon when folding it passed every test (variances of
    0.5-1.5 hide an epsilon of 1e-5 under rtol 1e-5). With variances of 1e-4 and epsilon 1e-3
    every fold (convolution, depthwise convolution, biased MatMul) is checked after core-fuse
    against onnxruntime on the ONNX model."""
    import numpy as np
    import onnxruntime

    from mlconv.frontends.onnx_importer import import_onnx

    model = _small_variance_batch_norms()
    before = numerics.apply_passes(
        import_onnx(model), f"onnx-normalize,onnx-decompose,onnx-to-core,{BEFORE_FUSE}"
    )
    assert op_counts(before)["core.BatchNormInference"] == 3
    after = numerics.apply_passes(before, "core-fuse")
    assert not op_counts(after)["core.BatchNormInference"]
    session = onnxruntime.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    for seed in (1, 2):
        x = np.random.default_rng(seed).standard_normal((2, 3, 6, 6)).astype(np.float32)
        expected = session.run(None, {"x": x})
        numerics.assert_scaled_close(numerics.interpret(after, [x]), expected, RTOL, "BN folds")

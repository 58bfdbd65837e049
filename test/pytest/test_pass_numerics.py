"""Numerics are preserved by every pass (../shared/DESIGN.md's invariant), pass by pass.

Each test takes a model's IR right before one pass of the default pipelines and the IR right
after it, runs each by the reference interpreter of its own level (`mlconv.interpreters`:
onnx ops by onnx.reference, core ops by their semantics, tpu ops by their primitives, op by
op, eagerly) on the same random inputs, and compares. Neither side runs any other pass, so a
pass cannot be checked against itself. Where the IR before a pass is exactly the import of a
TensorFlow or TFLite model (tf-to-core, tflite-to-core), the framework itself runs the source
model instead.

Every test first shows that its reference depends on the input (a second input moves it by
100x the tolerance: `sensitivity.assert_input_sensitive`) and that the pass changed the IR.
The models: the onnx wheel's light SqueezeNet with seeded random weights at 64x64 (its
constant fills make every output equal otherwise), and small models built here with fixed
seeds for what SqueezeNet lacks (batch norm and swish for core-fuse, opset-9 attributes for
onnx-normalize, function ops for onnx-decompose, an NHWC Keras CNN for tf-to-core,
core-layout-nchw and tflite-to-core).
"""

from __future__ import annotations

import numerics  # noqa: E402 - a module beside this one (conftest.py)
import numpy as np
import onnx
import onnx.helper as oh
import onnx.numpy_helper
import pytest
import sensitivity  # noqa: E402 - a module beside this one (conftest.py)

from mlconv.frontends.onnx_importer import import_onnx

# Tolerance relative to the largest |output|: both sides compute the same math in float32,
# in a different order where a pass rewrites (folded batch norms, fused convolutions).
RTOL = 1e-5
# onnx.reference against core semantics: two implementations of every op.
RTOL_ACROSS = 1e-4

# The default pipelines, pass by pass (`mlconv.api`): an ONNX model's front phase and
# lowering, then core-to-tpu-pipeline.
ONNX_PIPELINE = [
    "onnx-normalize",
    "onnx-decompose",
    "onnx-to-core",
    "core-infer-shapes",
    "core-fold-constants{static-shape=true}",
    "core-fuse",
    "core-to-tpu",
]


# --- models ------------------------------------------------------------------------------------


def _tensor(rng, name: str, shape, scale: float | None = None) -> onnx.TensorProto:
    fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
    std = scale if scale is not None else np.sqrt(2.0 / fan_in)
    return onnx.numpy_helper.from_array((rng.standard_normal(shape) * std).astype(np.float32), name)


def _bn(rng, prefix: str, channels: int) -> list[onnx.TensorProto]:
    return [
        onnx.numpy_helper.from_array(
            rng.uniform(0.5, 1.5, channels).astype(np.float32), f"{prefix}_s"
        ),
        onnx.numpy_helper.from_array(
            rng.normal(0, 0.2, channels).astype(np.float32), f"{prefix}_b"
        ),
        onnx.numpy_helper.from_array(
            rng.normal(0, 0.2, channels).astype(np.float32), f"{prefix}_m"
        ),
        onnx.numpy_helper.from_array(
            rng.uniform(0.5, 1.5, channels).astype(np.float32), f"{prefix}_v"
        ),
    ]


def convnet() -> onnx.ModelProto:
    """Conv+BatchNorm+swish, strided conv with asymmetric pads, pooling and a classifier
    (opset 13, seeded weights): what core-fuse and core-fold-constants rewrite."""
    rng = np.random.default_rng(7)
    nodes = [
        oh.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
        oh.make_node(
            "BatchNormalization", ["c1", "bn1_s", "bn1_b", "bn1_m", "bn1_v"], ["b1"], name="bn1"
        ),
        oh.make_node("Sigmoid", ["b1"], ["s1"], name="sigmoid1"),
        oh.make_node("Mul", ["b1", "s1"], ["a1"], name="swish1"),
        oh.make_node("MaxPool", ["a1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2], name="pool1"),
        oh.make_node(
            "Conv", ["p1", "w2", "cb2"], ["c2"], pads=[0, 1, 1, 0], strides=[2, 2], name="conv2"
        ),
        oh.make_node(
            "BatchNormalization", ["c2", "bn2_s", "bn2_b", "bn2_m", "bn2_v"], ["b2"], name="bn2"
        ),
        oh.make_node("Relu", ["b2"], ["r2"], name="relu2"),
        oh.make_node("GlobalAveragePool", ["r2"], ["g"], name="gap"),
        oh.make_node("Flatten", ["g"], ["f"], name="flatten"),
        oh.make_node("Gemm", ["f", "fc_w", "fc_b"], ["logits"], transB=1, name="fc"),
        oh.make_node("Softmax", ["logits"], ["probs"], name="softmax"),
    ]
    inits = [
        _tensor(rng, "w1", [8, 3, 3, 3]),
        *_bn(rng, "bn1", 8),
        _tensor(rng, "w2", [16, 8, 3, 3]),
        _tensor(rng, "cb2", [16], 0.1),
        *_bn(rng, "bn2", 16),
        _tensor(rng, "fc_w", [10, 16], 0.5),
        _tensor(rng, "fc_b", [10], 0.1),
    ]
    graph = oh.make_graph(
        nodes,
        "convnet",
        [oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 3, 16, 16])],
        [
            oh.make_tensor_value_info("logits", onnx.TensorProto.FLOAT, [1, 10]),
            oh.make_tensor_value_info("probs", onnx.TensorProto.FLOAT, [1, 10]),
        ],
        inits,
    )
    return oh.make_model(graph, opset_imports=[oh.make_opsetid("", 13)])


def convnet_any_batch() -> onnx.ModelProto:
    """convnet with a dynamic batch dim: core-infer-shapes makes it static."""
    model = convnet()
    for value in [*model.graph.input, *model.graph.output]:
        value.type.tensor_type.shape.dim[0].dim_param = "N"
    return model


def legacy_attributes() -> onnx.ModelProto:
    """Opset 9 ops whose attributes later opsets made inputs (Unsqueeze/Squeeze axes, Slice
    starts/ends, Pad pads, Clip min/max, TopK k, ReduceSum axes): what onnx-normalize moves."""
    nodes = [
        oh.make_node("Slice", ["x"], ["s"], starts=[0, 1], ends=[2, 5], axes=[0, 3], name="slice"),
        oh.make_node("Pad", ["s"], ["p"], pads=[0, 0, 1, 0, 0, 0, 0, 2], value=0.5, name="pad"),
        oh.make_node("Clip", ["p"], ["c"], min=-1.0, max=1.5, name="clip"),
        oh.make_node("ReduceSum", ["c"], ["r"], axes=[2], keepdims=0, name="sum"),
        oh.make_node("Unsqueeze", ["r"], ["u"], axes=[0], name="unsqueeze"),
        oh.make_node("Squeeze", ["u"], ["q"], axes=[0], name="squeeze"),
        oh.make_node("TopK", ["q"], ["values", "indices"], k=3, axis=-1, name="topk"),
    ]
    graph = oh.make_graph(
        nodes,
        "legacy",
        [oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 3, 4, 6])],
        [
            oh.make_tensor_value_info("values", onnx.TensorProto.FLOAT, None),
            oh.make_tensor_value_info("indices", onnx.TensorProto.INT64, None),
        ],
    )
    return oh.make_model(graph, opset_imports=[oh.make_opsetid("", 9)])


def function_ops() -> onnx.ModelProto:
    """Ops that ONNX defines by function bodies (opset 18): what onnx-decompose expands."""
    rng = np.random.default_rng(11)
    nodes = [
        oh.make_node("LayerNormalization", ["x", "gamma", "beta"], ["ln"], axis=-1, name="ln"),
        oh.make_node("Celu", ["ln"], ["ce"], alpha=0.7, name="celu"),
        oh.make_node("HardSwish", ["ce"], ["hs"], name="hardswish"),
        oh.make_node("Shrink", ["hs"], ["sh"], lambd=0.2, bias=0.1, name="shrink"),
        oh.make_node("Softsign", ["sh"], ["ss"], name="softsign"),
        oh.make_node("MeanVarianceNormalization", ["ss"], ["y"], axes=[0, 2], name="mvn"),
    ]
    graph = oh.make_graph(
        nodes,
        "functions",
        [oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 3, 8])],
        [oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 3, 8])],
        [_tensor(rng, "gamma", [8], 1.0), _tensor(rng, "beta", [8], 0.5)],
    )
    return oh.make_model(graph, opset_imports=[oh.make_opsetid("", 18)])


def squeezenet() -> onnx.ModelProto:
    light = onnx.load(str(numerics.LIGHT_MODELS / "light_squeezenet.onnx"))
    return numerics.expose_logits(numerics.randomize_weights(light, seed=0, image_size=64))


ONNX_MODELS = {
    "squeezenet": squeezenet,
    "convnet": convnet,
    "convnet_any_batch": convnet_any_batch,
    "legacy": legacy_attributes,
    "functions": function_ops,
}


class OnnxCase:
    """A model's IR after each prefix of the ONNX pipeline, and two random inputs."""

    def __init__(self, name: str):
        self.proto = ONNX_MODELS[name]()
        self.name = name
        self.stages = {"import": import_onnx(self.proto)}
        static = self.stages["import"] if "any_batch" not in name else import_onnx(convnet())
        self.inputs = numerics.random_inputs(static, seed=1)
        self.other = numerics.random_inputs(static, seed=2)
        self._outputs: dict[str, list[np.ndarray]] = {}

    def before(self, pipeline_pass: str) -> object:
        """The IR right before `pipeline_pass` of ONNX_PIPELINE."""
        index = ONNX_PIPELINE.index(pipeline_pass)
        module = self.stages["import"]
        for name in ONNX_PIPELINE[:index]:
            if name not in self.stages:
                self.stages[name] = numerics.apply_passes(module, name)
            module = self.stages[name]
        return module


_CASES: dict[str, OnnxCase] = {}


def onnx_case(name: str) -> OnnxCase:
    if name not in _CASES:
        _CASES[name] = OnnxCase(name)
    return _CASES[name]


def check_pass(before, pipeline: str, inputs, other, rtol: float = RTOL, what: str = ""):
    """`pipeline` keeps the numerics of `before`: each side run by its level's interpreter."""
    after = numerics.apply_passes(before, pipeline)
    changed = str(after) != str(before)
    assert changed, f"{what}: {pipeline} changed nothing: the test would prove nothing"
    expected = numerics.interpret(before, inputs)
    sensitivity.assert_input_sensitive(
        expected, numerics.interpret(before, other), rtol=rtol, what=f"{what} before {pipeline}"
    )
    numerics.assert_scaled_close(
        numerics.interpret(after, inputs), expected, rtol=rtol, what=f"{what}: {pipeline}"
    )
    return after


# --- onnx level --------------------------------------------------------------------------------


def test_onnx_normalize() -> None:
    """Opset-9 attributes become inputs: each node then runs at the version that has them."""
    case = onnx_case("legacy")
    check_pass(
        case.before("onnx-normalize"), "onnx-normalize", case.inputs, case.other, what=case.name
    )


def test_onnx_decompose() -> None:
    """Every function op of the model expanded (all=true: by default only ops without a
    lowering are, and each of these has one)."""
    case = onnx_case("functions")
    check_pass(
        case.before("onnx-decompose"),
        "onnx-decompose{all=true}",
        case.inputs,
        case.other,
        rtol=RTOL_ACROSS,
        what=case.name,
    )


@pytest.mark.parametrize("name", ["squeezenet", "convnet", "legacy", "functions"])
def test_onnx_to_core(name: str) -> None:
    """onnx.reference (onnx level) against each core op's semantics (core level)."""
    case = onnx_case(name)
    check_pass(
        case.before("onnx-to-core"),
        "onnx-to-core",
        case.inputs,
        case.other,
        rtol=RTOL_ACROSS,
        what=name,
    )


def test_interpreted_model_matches_onnxruntime() -> None:
    """The onnx-level interpreter on the import agrees with onnxruntime on the source model."""
    case = onnx_case("squeezenet")
    numerics.assert_scaled_close(
        numerics.interpret(case.stages["import"], case.inputs),
        numerics.onnxruntime_outputs(case.proto, case.inputs),
        rtol=RTOL_ACROSS,
        what="onnx interpreter",
    )


# --- core level --------------------------------------------------------------------------------


def test_core_infer_shapes() -> None:
    """Dynamic batch dims made static by input-shapes; the interpreter runs the dynamic IR
    at the concrete input's shape."""
    case = onnx_case("convnet_any_batch")
    before = case.before("core-infer-shapes")
    assert "?x" in str(main_function_type(before))
    after = check_pass(
        before,
        "core-infer-shapes{input-shapes=x:1,3,16,16}",
        case.inputs,
        case.other,
        what=case.name,
    )
    assert "?x" not in str(main_function_type(after))


def main_function_type(module):
    return numerics.main_function(module).function_type


@pytest.mark.parametrize(
    "name, pipeline",
    [
        ("squeezenet", "core-fold-constants"),
        ("squeezenet", "core-fold-constants{static-shape=true}"),
        ("legacy", "core-fold-constants{static-shape=true}"),
        ("convnet", "core-fold-constants{static-shape=true}"),
        ("convnet", "core-fuse"),
        ("convnet", "core-op-versions"),
        ("convnet", "core-to-openvino"),  # the pipeline export_openvino runs
        ("convnet", "canonicalize"),
        ("squeezenet", "cse"),
    ],
)
def test_core_pass(name: str, pipeline: str) -> None:
    case = onnx_case(name)
    stage = pipeline.split("{")[0]
    if stage == "core-fold-constants" and "static-shape" not in pipeline:
        before = case.before("core-fold-constants{static-shape=true}")
    elif stage in ONNX_PIPELINE:
        before = case.before(pipeline if pipeline in ONNX_PIPELINE else stage)
    else:  # xDSL's canonicalize and cse: after folding (dead constants), after onnx-to-core
        before = case.before("core-fuse" if stage == "canonicalize" else "core-infer-shapes")
    check_pass(before, pipeline, case.inputs, case.other, what=name)


@pytest.mark.parametrize("name", ["squeezenet", "convnet", "legacy"])
def test_core_to_tpu(name: str) -> None:
    """Core semantics (core level) against the primitives they were traced to (tpu level)."""
    case = onnx_case(name)
    after = check_pass(
        case.before("core-to-tpu"), "core-to-tpu", case.inputs, case.other, what=name
    )
    assert not [op for op in after.walk() if op.name.startswith("core.")]


# --- tpu level: the target passes mlconv.compile runs after core-to-tpu (device cpu) -----------

TPU_PIPELINE = [
    "tpu-fold-constants",
    "tpu-conv-strategy{device=cpu}",
    "tpu-sink-transposes",
    "tpu-merge-epilogues",
    "tpu-window-strategy{device=cpu}",
    "tpu-pad-concats{device=cpu}",
    "tpu-outline-host-tail{device=cpu min-flops=0}",
    "tpu-outline-host-head{device=cpu min-flops=0}",
]


CONCATENATIONS = ("tpu-merge-epilogues", "tpu-pad-concats{device=cpu}")
"""Passes on concatenations: convnet has none, so they run on squeezenet alone."""


@pytest.mark.parametrize(
    ("name", "index"),
    [
        pytest.param(name, index, id=f"{name}-{stage}")
        for name in ("squeezenet", "convnet")
        for index, stage in enumerate(TPU_PIPELINE)
        if name == "squeezenet" or stage not in CONCATENATIONS
    ],
)
def test_tpu_pass(name: str, index: int) -> None:
    """Each target pass on the IR right before it (tpu level on both sides)."""
    case = onnx_case(name)
    key = ("tpu", index)
    if key not in case.stages:
        module = numerics.apply_passes(case.before("core-to-tpu"), "core-to-tpu")
        for stage in TPU_PIPELINE[:index]:
            module = numerics.apply_passes(module, stage)
        case.stages[key] = module
    before = case.stages[key]
    check_pass(before, TPU_PIPELINE[index], case.inputs, case.other, what=name)


def test_tpu_fold_constants_absorbs_gemm_weight_transpose() -> None:
    """convnet's Gemm transB=1: tpu-fold-constants hands the dot_general the untransposed
    [10, 16] weight (contracting its axis 1) instead of folding a transposed copy; same outputs."""
    case = onnx_case("convnet")
    before = numerics.apply_passes(case.before("core-to-tpu"), "core-to-tpu")
    (dot,) = [op for op in before.walk() if op.name == "tpu.dot_general"]
    assert dot.operands[1].owner.name == "tpu.transpose"
    after = check_pass(before, "tpu-fold-constants", case.inputs, case.other, what="convnet")
    (dot,) = [op for op in after.walk() if op.name == "tpu.dot_general"]
    weight = dot.operands[1].owner
    assert weight.name == "tpu.constant" and list(weight.output.type.get_shape()) == [10, 16]
    assert dot.params()["dimension_numbers"] == (((1,), (1,)), ((), ()))


def test_interpreters_leave_the_module_unchanged() -> None:
    case = onnx_case("convnet")
    module = case.before("core-fuse")
    text = str(module)
    numerics.interpret(module, case.inputs)
    assert str(module) == text


# --- tf and tflite: the framework runs the source model, then core and tpu interpreters ------


def keras_cnn():
    """A small NHWC CNN (fixed seed): convolution, depthwise convolution, batch norms
    calibrated on real activations, ReLU6, max pooling, a residual add, global pooling and a
    centred dense head."""
    import keras

    keras.utils.set_random_seed(0)
    layers = keras.layers
    image = keras.Input((16, 16, 3), batch_size=1, name="image")
    x = layers.Conv2D(8, 3, padding="same")(image)
    x = layers.BatchNormalization()(x)
    x = layers.ReLU()(x)
    y = layers.DepthwiseConv2D(3, padding="same")(x)
    y = layers.BatchNormalization()(y)
    y = layers.ReLU(6.0)(y)
    x = layers.Add()([x, layers.Conv2D(8, 1)(y)])
    x = layers.MaxPooling2D(2)(x)
    x = layers.Conv2D(12, 3, strides=2, padding="valid")(x)
    x = layers.GlobalAveragePooling2D()(x)
    logits = layers.Dense(10)(x)
    model = keras.Model(image, logits)
    calibration = np.random.default_rng(5).standard_normal((8, 16, 16, 3)).astype(np.float32)
    sensitivity.calibrate_batch_norms(model, [calibration], seed=0)
    sensitivity.center_head(model, [calibration])
    return model


@pytest.fixture(scope="module")
def keras_model(tmp_path_factory):
    """(SavedModel folder, .tflite path, two inputs) of `keras_cnn`."""
    import os

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    tf = pytest.importorskip("tensorflow")
    model = keras_cnn()
    folder = tmp_path_factory.mktemp("keras_cnn")

    class Serving(tf.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        @tf.function(input_signature=[tf.TensorSpec([1, 16, 16, 3], tf.float32, name="image")])
        def serve(self, image):
            return {"output": self.model(image, training=False)}

    serving = Serving()
    tf.saved_model.save(
        serving, str(folder / "saved"), signatures={"serving_default": serving.serve}
    )
    tflite = folder / "cnn.tflite"
    tflite.write_bytes(tf.lite.TFLiteConverter.from_keras_model(model).convert())
    rng = np.random.default_rng(3)
    inputs = [rng.standard_normal((1, 16, 16, 3)).astype(np.float32) for _ in range(2)]
    return str(folder / "saved"), str(tflite), inputs


def _tensorflow(folder: str, x: np.ndarray) -> list[np.ndarray]:
    import tensorflow as tf

    serve = tf.saved_model.load(folder).signatures["serving_default"]
    return [serve(tf.constant(x))["output"].numpy()]


def _litert(path: str, x: np.ndarray) -> list[np.ndarray]:
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=path)
    interpreter.allocate_tensors()
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], x)
    interpreter.invoke()
    return [interpreter.get_tensor(o["index"]) for o in interpreter.get_output_details()]


_TF_STAGES: dict[str, object] = {}


def tf_core(folder: str):
    """The SavedModel after tf-to-core, and after core-layout-nchw."""
    if folder not in _TF_STAGES:
        from mlconv.frontends.tf_importer import import_tf

        core = numerics.apply_passes(import_tf(folder), "tf-to-core")
        _TF_STAGES[folder] = (
            core,
            numerics.apply_passes(core, "core-fold-constants,core-layout-nchw"),
        )
    return _TF_STAGES[folder]


def test_tf_to_core(keras_model) -> None:
    """TensorFlow on the SavedModel (the IR before tf-to-core is its import) against the
    core interpreter on the IR after it."""
    folder, _, (x, other) = keras_model
    expected = _tensorflow(folder, x)
    sensitivity.assert_input_sensitive(expected, _tensorflow(folder, other), rtol=RTOL_ACROSS)
    core, _ = tf_core(folder)
    numerics.assert_scaled_close(numerics.interpret(core, [x]), expected, RTOL_ACROSS, "tf-to-core")


def test_core_layout_nchw(keras_model) -> None:
    """NHWC transposes sunk and cancelled: the core IR before and after, both interpreted."""
    from mlconv.passes.core_layout_nchw import count_transposes

    folder, _, (x, other) = keras_model
    core, laid_out = tf_core(folder)
    assert count_transposes(laid_out) < count_transposes(core)
    check_pass(core, "core-layout-nchw", [x], [other], what="keras cnn")


def test_core_to_tpu_on_nhwc_model(keras_model) -> None:
    folder, _, (x, other) = keras_model
    _, laid_out = tf_core(folder)
    before = numerics.apply_passes(
        laid_out, "core-infer-shapes,core-fold-constants{static-shape=true},core-fuse"
    )
    check_pass(before, "core-to-tpu", [x], [other], what="keras cnn")


def test_tflite_to_core(keras_model) -> None:
    """LiteRT on the .tflite file (the IR before tflite-to-core is its import) against the
    core interpreter on the IR after it."""
    from mlconv.frontends.tflite_importer import import_tflite

    _, path, (x, other) = keras_model
    expected = _litert(path, x)
    sensitivity.assert_input_sensitive(expected, _litert(path, other), rtol=RTOL_ACROSS)
    core = numerics.apply_passes(import_tflite(path), "tflite-to-core")
    numerics.assert_scaled_close(
        numerics.interpret(core, [x]), expected, RTOL_ACROSS, "tflite-to-core"
    )


@pytest.mark.parametrize("name", ["squeezenet", "convnet"])
def test_tpu_io_shapes(name: str) -> None:
    """tpu-io-shapes (mlconv-convert's IO shape optimization) right after core-to-tpu: the
    boundary reshapes leave every number as it was, bit for bit."""
    case = onnx_case(name)
    before = numerics.apply_passes(case.before("core-to-tpu"), "core-to-tpu")
    after = check_pass(before, "tpu-io-shapes", case.inputs, case.other, what=name)
    assert "tpu.reshape" in str(after)
    for got, expected in zip(
        numerics.interpret(after, case.inputs), numerics.interpret(before, case.inputs), strict=True
    ):
        np.testing.assert_array_equal(got, expected)


# A body whose Slice step is an outer constant unsqueezed in the body (SSD's batched NMS), and a
# core.If whose condition is a constant: core-fold-constants folds into the body, and replaces
# the second If by its taken branch.
IF_BODIES = """
func.func @main(%c: tensor<i1>, %x: tensor<6xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %two = core.Constant {value = dense<2> : tensor<i64>} : tensor<i64>
  %y = "core.If"(%c, %x, %two) ({
  ^bb0(%d: tensor<6xf32>, %s: tensor<i64>):
    %axes = core.Constant {value = dense<0> : tensor<1xi64>} : tensor<1xi64>
    %start = core.Constant {value = dense<0> : tensor<1xi64>} : tensor<1xi64>
    %stop = core.Constant {value = dense<6> : tensor<1xi64>} : tensor<1xi64>
    %step = "core.Unsqueeze"(%s, %axes) : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
    %t = "core.Slice"(%d, %start, %stop, %step) : (tensor<6xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xf32>
    core.Yield %t : tensor<3xf32>
  }, {
  ^bb0(%e: tensor<6xf32>, %u: tensor<i64>):
    %axes = core.Constant {value = dense<0> : tensor<1xi64>} : tensor<1xi64>
    %start = core.Constant {value = dense<1> : tensor<1xi64>} : tensor<1xi64>
    %stop = core.Constant {value = dense<6> : tensor<1xi64>} : tensor<1xi64>
    %step = "core.Unsqueeze"(%u, %axes) : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
    %t = "core.Slice"(%e, %start, %stop, %step) : (tensor<6xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xf32>
    %n = "core.Negative"(%t) : (tensor<3xf32>) -> tensor<3xf32>
    core.Yield %n : tensor<3xf32>
  }) : (tensor<i1>, tensor<6xf32>, tensor<i64>) -> tensor<3xf32>
  %false = core.Constant {value = dense<false> : tensor<i1>} : tensor<i1>
  %z = "core.If"(%false, %x, %two) ({
  ^bb0(%a: tensor<6xf32>, %s2: tensor<i64>):
    core.Yield %a : tensor<6xf32>
  }, {
  ^bb0(%b: tensor<6xf32>, %t2: tensor<i64>):
    %f = "core.Convert"(%t2) {destination_type = f32} : (tensor<i64>) -> tensor<f32>
    %m = "core.Multiply"(%b, %f) : (tensor<6xf32>, tensor<f32>) -> tensor<6xf32>
    core.Yield %m : tensor<6xf32>
  }) : (tensor<i1>, tensor<6xf32>, tensor<i64>) -> tensor<6xf32>
  %r = "core.Add"(%y, %y) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %r, %z : tensor<3xf32>, tensor<6xf32>
}
"""


@pytest.mark.parametrize("branch", [True, False])
def test_core_fold_constants_in_bodies(branch: bool) -> None:
    from xdsl.parser import Parser

    from mlconv.dialects import make_context

    before = Parser(make_context(), IF_BODIES).parse_module()
    rng = np.random.default_rng(3)
    x, other = (rng.standard_normal(6).astype(np.float32) for _ in range(2))
    after = check_pass(
        before, "core-fold-constants", [np.array(branch), x], [np.array(branch), other],
        what=f"if bodies ({branch})",
    )  # fmt: skip
    text = str(after)
    assert "core.Unsqueeze" not in text and text.count("core.If") == 1

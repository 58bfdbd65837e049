"""Models as the exporters users have write them (issue 7), built here from code with fixed seeds.

Each model is built with random weights made input-sensitive (BatchNorm statistics calibrated on
other random inputs, zero-initialized heads drawn at random) and exported with a dynamic batch
(and a dynamic sequence length for the token models):

- PyTorch (torchvision CNNs, a Swin transformer, Hugging Face ViT / BERT / GPT-2 from small
  configs): `torch.onnx.export` in TorchScript form (`dynamo=False`, opset 17, `dynamic_axes`)
  and in its default dynamo form (opset 18+, `dynamic_shapes`, weights in `model.onnx.data`;
  every model but those marked `TS`, whose dynamo export would cost CI time and cover nothing new);
- Keras 3 (a small CNN with a dilated depthwise convolution, MobileNetV2, a transformer block;
  inputs `(None, ...)`): tf2onnx (opset 17), `model.export` (a SavedModel) and
  `TFLiteConverter.from_keras_model` (.tflite with `shape_signature` -1).

`ExportCache(folder)((model, exporter))` returns the folder holding the exported file
(`model_file(...)`) and `reference.npz`: for each batch size in `BATCHES` the inputs
(`b{n}_in{i}`) and the source framework's output (`b{n}_out`: PyTorch, Keras for tf2onnx and
SavedModel, LiteRT for .tflite), and the output on a second input of the first batch's shape
(`other_out`), which shows that the reference moves with the input. Exports are made once per
cache under an exclusive lock per (model, exporter), so xdist workers wait for one export instead
of each making their own, and written to a temporary name then renamed.

Tests import it as `import exported_models` (conftest.py puts this folder on sys.path); tools in
bench/ put the folder on sys.path themselves.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import io
import os
import shutil
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# Bump when a builder, an exporter's options or the reference layout changes.
CACHE_VERSION = 1
BATCHES = (1, 3)
# Token models also change their sequence length between the two calls.
SEQUENCE = {1: 8, 3: 12}
RTOL, ATOL = 1e-3, 1e-4


@dataclass(frozen=True)
class Model:
    framework: str  # "torch" or "keras"
    build: Callable[[], object]
    inputs: Callable[[int, int], list[np.ndarray]]  # (batch, seed) -> arrays
    names: tuple[str, ...] = ("x",)
    # axis -> name of each input's dynamic dims (the batch at least)
    dynamic: tuple[tuple[int, str], ...] = ((0, "batch"),)
    exporters: tuple[str, ...] = ()  # a subset of its framework's EXPORTERS (all if empty)


EXPORTERS = {"torch": ("torchscript", "dynamo"), "keras": ("tf2onnx", "savedmodel", "tflite")}


# --- inputs ----------------------------------------------------------------------------------


def _image(channels_first: bool, size: int):
    def inputs(batch: int, seed: int) -> list[np.ndarray]:
        shape = (batch, 3, size, size) if channels_first else (batch, size, size, 3)
        return [np.random.default_rng(seed).standard_normal(shape).astype(np.float32)]

    return inputs


def _tokens(vocabulary: int, padded: bool):
    """input_ids and attention_mask; with `padded` the first sequence ends in two pad tokens."""

    def inputs(batch: int, seed: int) -> list[np.ndarray]:
        length = SEQUENCE[batch] if batch in SEQUENCE else SEQUENCE[1]
        ids = np.random.default_rng(seed).integers(0, vocabulary, (batch, length), np.int64)
        mask = np.ones((batch, length), np.int64)
        if padded:
            mask[0, -2:] = 0
        return [ids, mask]

    return inputs


# --- PyTorch models --------------------------------------------------------------------------


def _calibrate_torch(model, inputs: list[np.ndarray], seed: int):
    """Every BatchNorm's running statistics from the activations it sees on `inputs` (one pass
    in training mode with momentum 1), affine weights gamma ~ U(0.5, 1.5), beta ~ N(0, 0.2);
    then eval mode. With random statistics a random CNN's output hardly depends on its input."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    norms = []
    for module in model.modules():
        if isinstance(module, torch.nn.modules.batchnorm._BatchNorm):
            n = module.num_features
            if module.affine:
                module.weight.data = torch.rand(n, generator=generator) + 0.5
                module.bias.data = torch.randn(n, generator=generator) * 0.2
            norms.append((module, module.momentum))
            module.momentum = 1.0
    if norms:
        model.train()
        with torch.no_grad():
            model(*[torch.from_numpy(x) for x in inputs])
        for module, momentum in norms:
            module.momentum = momentum
    return model.eval()


def _torchvision(name: str, seed: int, **options):
    def build():
        import torch
        import torchvision

        torch.manual_seed(seed)
        model = getattr(torchvision.models, name)(num_classes=10, **options)
        calibration = _image(True, 64)(8, seed + 100)
        model = _calibrate_torch(model, calibration, seed)
        # The classifier's bias removes the logits every input shares (pooled features are
        # positive on average), as a trained head's logits move with the input.
        head = [m for m in model.modules() if isinstance(m, torch.nn.Linear)][-1]
        with torch.no_grad():
            features = {}
            hook = head.register_forward_hook(lambda m, i, o: features.setdefault("x", i[0]))
            model(torch.from_numpy(calibration[0]))
            hook.remove()
            head.bias.data = -features["x"].mean(0) @ head.weight.data.T
        return _logits(model)

    return build


def _vit():
    import torch
    import transformers

    torch.manual_seed(10)
    config = transformers.ViTConfig(
        image_size=32, patch_size=8, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=128, num_labels=10,
    )  # fmt: skip
    model = transformers.ViTForImageClassification(config)
    with torch.no_grad():  # zero at initialization
        torch.nn.init.normal_(model.classifier.weight, std=0.5)
        torch.nn.init.normal_(model.classifier.bias, std=0.1)
    return _logits(model.eval(), return_dict=False)


def _bert():
    import torch
    import transformers

    torch.manual_seed(11)
    config = transformers.BertConfig(
        vocab_size=100, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=128, max_position_embeddings=64,
    )  # fmt: skip
    return _logits(
        transformers.BertModel(config, add_pooling_layer=False).eval(), return_dict=False
    )


def _gpt2():
    import torch
    import transformers

    torch.manual_seed(12)
    config = transformers.GPT2Config(
        vocab_size=100, n_embd=64, n_layer=2, n_head=4, n_positions=64, bos_token_id=0,
        eos_token_id=0, use_cache=False,
    )  # fmt: skip
    return _logits(transformers.GPT2LMHeadModel(config).eval(), TOKENS, return_dict=False)


def _logits(model, keywords: tuple[str, ...] = (), **options):
    """The model's first output (logits or last hidden state) as a plain tensor, from its
    inputs given positionally (one form of `dynamic_shapes` for every model); `keywords` name
    the arguments they are passed as."""
    import torch

    class Logits(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, *inputs):
            named = dict(zip(keywords, inputs, strict=True)) if keywords else {}
            out = self.inner(*([] if keywords else inputs), **named, **options)
            return out if isinstance(out, torch.Tensor) else out[0]

    return Logits(model).eval()


# --- Keras models ----------------------------------------------------------------------------


def _keras_calibrated(model, seed: int):
    import sensitivity

    shape = (8, *model.inputs[0].shape[1:])
    calibration = [np.random.default_rng(seed + 100).standard_normal(shape).astype(np.float32)]
    sensitivity.calibrate_batch_norms(model, calibration, seed)
    sensitivity.center_head(model, calibration)
    return model


def _keras_cnn():
    import keras

    keras.utils.set_random_seed(20)
    x = keras.Input((32, 32, 3), name="x")
    h = keras.layers.Conv2D(16, 3, padding="same")(x)
    h = keras.layers.ReLU()(keras.layers.BatchNormalization()(h))
    h = keras.layers.DepthwiseConv2D(3, dilation_rate=2, padding="same")(h)
    h = keras.layers.BatchNormalization()(h)
    h = keras.layers.SeparableConv2D(24, 3, strides=2, activation="relu")(h)
    h = keras.layers.MaxPooling2D(2)(h)
    h = keras.layers.GlobalAveragePooling2D()(h)
    return _keras_calibrated(keras.Model(x, keras.layers.Dense(10)(h)), 20)


def _mobilenet_v2():
    import keras

    keras.utils.set_random_seed(21)
    model = keras.applications.MobileNetV2(
        input_shape=(64, 64, 3), alpha=0.35, weights=None, classifier_activation=None
    )
    return _keras_calibrated(model, 21)


def _keras_transformer():
    import keras

    keras.utils.set_random_seed(22)
    x = keras.Input((16, 32), name="x")
    attention = keras.layers.MultiHeadAttention(4, 8)(x, x)
    h = keras.layers.LayerNormalization()(x + attention)
    f = keras.layers.Dense(64, activation="relu")(h)
    f = keras.layers.Dense(32)(f)
    return keras.Model(x, keras.layers.LayerNormalization()(h + f))


def keras_transformer_block():
    """A post-norm transformer block on a static 1x6x16 input (two-head attention, exact GELU
    MLP) with Keras's default initializers: test_tf_frontend and test_tf_to_core import it."""
    import keras

    inputs = keras.Input((6, 16), batch_size=1)
    attn = keras.layers.MultiHeadAttention(num_heads=2, key_dim=8, name="mha")(inputs, inputs)
    x = keras.layers.LayerNormalization(name="ln1")(inputs + attn)
    h = keras.layers.Dense(32, name="ff1")(x)
    h = keras.layers.Activation(lambda t: keras.activations.gelu(t, approximate=False))(h)
    h = keras.layers.Dense(16, name="ff2")(h)
    outputs = keras.layers.LayerNormalization(name="ln2")(x + h)
    return keras.Model(inputs, outputs)


def _sequence_input(batch: int, seed: int) -> list[np.ndarray]:
    return [np.random.default_rng(seed).standard_normal((batch, 16, 32)).astype(np.float32)]


TOKENS = ("input_ids", "attention_mask")
TOKEN_AXES = ((0, "batch"), (1, "sequence"))

# The dynamo exporter takes 3-10x TorchScript's time: CNNs whose dynamo export adds nothing the
# other dynamo cases do not cover are exported by TorchScript only, to keep CI time.
TS = ("torchscript",)

MODELS: dict[str, Model] = {
    "resnet18": Model("torch", _torchvision("resnet18", 0), _image(True, 64)),
    "mobilenet_v3_small": Model("torch", _torchvision("mobilenet_v3_small", 1), _image(True, 64)),
    "efficientnet_b0": Model(
        "torch", _torchvision("efficientnet_b0", 2), _image(True, 64), exporters=TS
    ),
    "shufflenet_v2": Model(
        "torch", _torchvision("shufflenet_v2_x0_5", 3), _image(True, 64), exporters=TS
    ),
    "regnet_y_400mf": Model(
        "torch", _torchvision("regnet_y_400mf", 4), _image(True, 64), exporters=TS
    ),
    "convnext_tiny": Model("torch", _torchvision("convnext_tiny", 5), _image(True, 64)),
    # Swin's window padding is computed from shapes (Shape -> ... -> Pad); TorchScript only, to
    # keep CI time (28M parameters).
    "swin_t": Model("torch", _torchvision("swin_t", 6), _image(True, 64), exporters=TS),
    "vit": Model("torch", _vit, _image(True, 32), ("pixel_values",)),
    "bert": Model("torch", _bert, _tokens(100, padded=True), TOKENS, TOKEN_AXES),
    "gpt2": Model("torch", _gpt2, _tokens(100, padded=False), TOKENS, TOKEN_AXES),
    "keras_cnn": Model("keras", _keras_cnn, _image(False, 32)),
    "keras_mobilenet_v2": Model("keras", _mobilenet_v2, _image(False, 64)),
    "keras_transformer": Model("keras", _keras_transformer, _sequence_input),
}

CASES = [
    (name, exporter)
    for name, m in MODELS.items()
    for exporter in m.exporters or EXPORTERS[m.framework]
]


def cases(framework: str) -> list[tuple[str, str]]:
    """The (model, exporter) cases of the models of one framework ("torch", "keras")."""
    return [case for case in CASES if MODELS[case[0]].framework == framework]


def write_onnx(name: str, exporter: str, path: str | os.PathLike) -> object:
    """Export model `name` with an ONNX exporter (torchscript, dynamo, tf2onnx) to `path`;
    returns the source model it exported (bench/gpu.py runs it as the framework's own peer)."""
    spec = MODELS[name]
    model = spec.build()
    if spec.framework == "torch":
        _export_torch(model, spec, exporter, Path(path))
    else:
        _export_keras(model, exporter, Path(path))
    return model


def torchscript_onnx_cases(folder: str, names: str = "") -> list[tuple[str, str, dict, object]]:
    """(name, path, batch-1 inputs, PyTorch model) of MODELS' PyTorch models (only `names`,
    comma-separated, when given), exported with TorchScript into `folder`; a model whose
    builder fails (a package missing) is skipped with a printed line (bench/gpu.py,
    bench/latency.py)."""
    cases = []
    for name, spec in MODELS.items():
        if spec.framework != "torch" or (names and name not in names.split(",")):
            continue
        path = os.path.join(folder, f"{name}.onnx")
        try:
            model = write_onnx(name, "torchscript", path)
        except Exception as error:  # noqa: BLE001 - a builder that needs a missing package
            first = str(error).splitlines()[0] if str(error) else type(error).__name__
            print(f"(skipping {name}: {first[:100]})")
            continue
        cases.append((name, path, dict(zip(spec.names, spec.inputs(1, 0), strict=True)), model))
    return cases


def write_torchvision_onnx(arch: str, path: str | os.PathLike, size: int = 224) -> object:
    """torchvision's `arch` built as MODELS' CNNs are (seeded random weights, calibrated
    BatchNorm), exported by the TorchScript exporter with a dynamic batch and `size`x`size`
    example images: a model outside MODELS, for the benchmarks (bench/gpu.py). Returns the
    PyTorch model."""
    spec = Model("torch", _torchvision(arch, 0), _image(True, size))
    model = spec.build()
    _export_torch(model, spec, "torchscript", Path(path))
    return model


def model_file(folder: Path, exporter: str) -> Path:
    """The file (or SavedModel folder) an exporter wrote into `folder`."""
    return folder / {"savedmodel": "saved_model", "tflite": "model.tflite"}.get(
        exporter, "model.onnx"
    )


# --- exporters -------------------------------------------------------------------------------


def _export_torch(model, spec: Model, exporter: str, path: Path) -> None:
    import torch

    example = tuple(torch.from_numpy(x) for x in spec.inputs(2, 0))
    outputs = ["output"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if exporter == "torchscript":
            axes = dict(spec.dynamic)
            dynamic_axes = {name: axes for name in spec.names}
            dynamic_axes["output"] = {0: "batch"}
            torch.onnx.export(
                model, example, str(path), input_names=list(spec.names),
                output_names=outputs, dynamic_axes=dynamic_axes, opset_version=17, dynamo=False,
            )  # fmt: skip
        else:
            dims = {n: torch.export.Dim(n, min=1, max=64) for _, n in spec.dynamic}
            shapes = tuple({axis: dims[n] for axis, n in spec.dynamic} for _ in spec.names)
            torch.onnx.export(
                model, example, str(path), input_names=list(spec.names), output_names=outputs,
                dynamic_shapes=(shapes,), dynamo=True, external_data=True, verbose=False,
            )  # fmt: skip


def _torch_reference(model, inputs: list[np.ndarray]) -> np.ndarray:
    import torch

    with torch.no_grad():
        return model(*[torch.from_numpy(x) for x in inputs]).numpy()


def _export_keras(model, exporter: str, path: Path) -> None:
    import tensorflow as tf

    if exporter == "savedmodel":
        model.export(str(path), verbose=False)
    elif exporter == "tf2onnx":
        import tf2onnx

        signature = tuple(
            tf.TensorSpec((None, *i.shape[1:]), tf.float32, name=f"x{n}")
            for n, i in enumerate(model.inputs)
        )
        proto, _ = tf2onnx.convert.from_keras(model, input_signature=signature, opset=17)
        path.write_bytes(proto.SerializeToString())
    else:
        path.write_bytes(tf.lite.TFLiteConverter.from_keras_model(model).convert())


def litert_run(path: Path, inputs: list[np.ndarray]) -> np.ndarray:
    """LiteRT's output on `inputs`, resizing the (dynamic) inputs first."""
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=str(path))
    details = interpreter.get_input_details()
    for detail, x in zip(details, inputs, strict=True):
        interpreter.resize_tensor_input(detail["index"], x.shape)
    interpreter.allocate_tensors()
    for detail, x in zip(details, inputs, strict=True):
        interpreter.set_tensor(detail["index"], x)
    interpreter.invoke()
    return interpreter.get_tensor(interpreter.get_output_details()[0]["index"])


class ExportCache:
    """(model, exporter) -> the folder holding its exported file and reference.npz, made on
    first use under a lock (see the module's docstring)."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.built: dict[str, object] = {}

    def source(self, name: str):
        if name not in self.built:
            self.built[name] = MODELS[name].build()
        return self.built[name]

    def __call__(self, case: tuple[str, str]) -> Path:
        name, exporter = case
        folder = self.folder / name / exporter
        if (folder / "reference.npz").exists():
            return folder
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not (folder / "reference.npz").exists():
                self._export(name, exporter, folder)
        return folder

    def _export(self, name: str, exporter: str, folder: Path) -> None:
        spec = MODELS[name]
        model = self.source(name)
        target = model_file(folder, exporter)
        partial = folder.with_name(f"{folder.name}.{os.getpid()}.partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir()
        written = model_file(partial, exporter)
        if spec.framework == "torch":
            _export_torch(model, spec, exporter, written)
        else:
            # Keras prints the whole signature of what it saves (hundreds of lines).
            with contextlib.redirect_stdout(io.StringIO()):
                _export_keras(model, exporter, written)

        def reference(inputs):
            if exporter == "tflite":
                return litert_run(written, inputs)
            if spec.framework == "torch":
                return _torch_reference(model, inputs)
            return np.asarray(model(*inputs))

        arrays = {}
        for batch in BATCHES:
            inputs = spec.inputs(batch, batch)
            arrays.update({f"b{batch}_in{i}": x for i, x in enumerate(inputs)})
            arrays[f"b{batch}_out"] = reference(inputs)
        arrays["other_out"] = reference(spec.inputs(BATCHES[0], 1000))
        np.savez(partial / "reference.npz", **arrays)
        # The folder's content moves into place; reference.npz last (it marks completion).
        for item in partial.iterdir():
            if item.name != "reference.npz":
                destination = folder / item.name
                if destination.is_dir():
                    shutil.rmtree(destination)
                os.replace(item, destination)
        os.replace(partial / "reference.npz", folder / "reference.npz")
        partial.rmdir()
        assert target.exists()


def references(folder: Path) -> dict[int, tuple[list[np.ndarray], np.ndarray]]:
    """batch -> (inputs, the source framework's output), and -1 -> (None, output on another
    input of the first batch's shape)."""
    with np.load(folder / "reference.npz") as data:
        out: dict[int, tuple] = {}
        for batch in BATCHES:
            count = len([k for k in data.files if k.startswith(f"b{batch}_in")])
            out[batch] = ([data[f"b{batch}_in{i}"] for i in range(count)], data[f"b{batch}_out"])
        out[-1] = (None, data["other_out"])
    return out


def check_matches_source(folder: Path, exporter: str) -> None:
    """One `mlconv.compile` of the exported file, run at every batch size of `BATCHES`, matches
    the source framework; the reference first shows that it moves with the input."""
    import sensitivity

    import mlconv

    refs = references(folder)
    sensitivity.assert_input_sensitive(
        refs[BATCHES[0]][1], refs[-1][1], rtol=RTOL, what=str(folder)
    )
    run = mlconv.compile(str(model_file(folder, exporter)))
    for batch in BATCHES:
        inputs, expected = refs[batch]
        (got,) = run(*inputs)
        assert got.shape == expected.shape, f"batch {batch}: {got.shape} != {expected.shape}"
        np.testing.assert_allclose(
            got, expected, rtol=RTOL, atol=ATOL, err_msg=f"{folder} at batch {batch}"
        )


def export_cache(request, tmp_path_factory) -> ExportCache:
    """The session's cache: pytest's cache folder when the cache provider is on, else the run's
    temporary root (shared by all xdist workers)."""
    cache = getattr(request.config, "cache", None)
    key = f"exported-v{CACHE_VERSION}"
    if cache is not None:
        return ExportCache(cache.mkdir("mlconv_exported") / key)
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    return ExportCache(base / key)


# --- a detector: torchvision SSDlite320-MobileNetV3, compared with onnxruntime ---------------

# SSDlite takes a list of images and the TorchScript exporter unrolls its per-image
# post-processing (one set of outputs per traced image), so the batch cannot be dynamic: the
# export takes one image of dynamic height and width (the model resizes it to 320x320 and scales
# its boxes back), and the two calls of one conversion use two image sizes.
DETECTOR_SIZES = ((240, 320), (200, 260))
DETECTOR_OUTPUTS = ("boxes", "scores", "labels")


def ssdlite(num_classes: int = 4, detections: int = 20, seed: int = 7):
    """ssdlite320_mobilenet_v3_large with random weights (`weights=None, weights_backbone=None`),
    BatchNorm statistics calibrated on random images so that scores move with the input; few
    classes and detections keep its unrolled post-processing (one branch per class) small."""
    import torch
    import torchvision

    torch.manual_seed(seed)
    model = torchvision.models.detection.ssdlite320_mobilenet_v3_large(
        weights=None, weights_backbone=None, num_classes=num_classes,
        detections_per_img=detections,
    )  # fmt: skip

    class Features(torch.nn.Module):  # backbone and head: train mode needs no targets here
        def __init__(self, detector):
            super().__init__()
            self.detector = detector

        def forward(self, images):
            return self.detector.head(list(self.detector.backbone(images).values()))

    _calibrate_torch(Features(model), _image(True, 320)(4, seed + 100), seed)
    return model.eval()


def detector_image(size: tuple[int, int], seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((1, 3, *size)).astype(np.float32)


def write_ssdlite(path: str | os.PathLike, **options) -> None:
    """SSDlite exported by the TorchScript exporter (opset 17): input `images` [1, 3, height,
    width], outputs boxes [n, 4], scores [n], labels [n]."""
    import torch

    model = ssdlite(**options)
    example = torch.from_numpy(detector_image(DETECTOR_SIZES[0], 0))
    dynamic_axes = {"images": {2: "height", 3: "width"}}
    dynamic_axes.update({name: {0: "detections"} for name in DETECTOR_OUTPUTS})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model, (example,), str(path), input_names=["images"],
            output_names=list(DETECTOR_OUTPUTS), dynamic_axes=dynamic_axes, opset_version=17,
            dynamo=False,
        )  # fmt: skip


def ssdlite_file(cache: ExportCache) -> Path:
    """SSDlite's export (`write_ssdlite`) in an export cache's folder, made once under a lock."""
    return _cached_export(cache, "ssdlite", write_ssdlite)


# --- a two-stage detector: torchvision Faster R-CNN (MobileNetV3-Large 320 FPN) ---------------

# Its post-processing runs on one image as SSDlite's does (see above): one image of dynamic
# height and width per call, two sizes from one conversion.
FASTERRCNN_SIZES = ((240, 320), (300, 200))
FASTERRCNN_OUTPUTS = ("boxes", "labels", "scores")  # the order of torchvision's result dict


def fasterrcnn(num_classes: int = 4, detections: int = 20, seed: int = 11):
    """fasterrcnn_mobilenet_v3_large_320_fpn with random weights (`weights=None,
    weights_backbone=None`), BatchNorm statistics calibrated on random images; few classes,
    proposals and detections keep its post-processing (RPN NMS per level, box head NMS per
    class, both data-dependent) small."""
    import torch
    import torchvision

    torch.manual_seed(seed)
    model = torchvision.models.detection.fasterrcnn_mobilenet_v3_large_320_fpn(
        weights=None, weights_backbone=None, num_classes=num_classes,
        box_detections_per_img=detections, rpn_pre_nms_top_n_test=100,
        rpn_post_nms_top_n_test=50,
    )  # fmt: skip
    calibration = _image(True, 320)(4, seed + 100)
    _calibrate_torch(model.backbone, calibration, seed)
    model.eval()
    # The heads see large features (the FPN has no normalization): scale each prediction layer
    # so that its output spreads as a trained one's (objectness and class logits by about 1,
    # box deltas by about 0.1). Else every score saturates and float32 rounding, multiplied
    # by deltas near 100, moves boxes by pixels between any two runtimes.
    image = torch.from_numpy(calibration[0])
    heads = model.rpn.head, model.roi_heads.box_predictor
    for layer, spread in (
        (heads[0].cls_logits, 1.0), (heads[0].bbox_pred, 0.1),
        (heads[1].cls_score, 1.0), (heads[1].bbox_pred, 0.1),
    ):  # fmt: skip
        outputs = []
        hook = layer.register_forward_hook(lambda m, i, o, seen=outputs: seen.append(o))
        with torch.no_grad():
            model(image)
            hook.remove()
            scale = spread / float(torch.cat([o.reshape(-1) for o in outputs]).std())
            layer.weight.data *= scale
            layer.bias.data *= scale
    return model


def write_fasterrcnn(path: str | os.PathLike, **options) -> None:
    """Faster R-CNN exported by the TorchScript exporter (opset 17): input `images` [1, 3,
    height, width], outputs boxes [n, 4], labels [n], scores [n]."""
    import torch

    model = fasterrcnn(**options)
    example = torch.from_numpy(detector_image(FASTERRCNN_SIZES[0], 0))
    dynamic_axes = {"images": {2: "height", 3: "width"}}
    dynamic_axes.update({name: {0: "detections"} for name in FASTERRCNN_OUTPUTS})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model, (example,), str(path), input_names=["images"],
            output_names=list(FASTERRCNN_OUTPUTS), dynamic_axes=dynamic_axes, opset_version=17,
            dynamo=False,
        )  # fmt: skip


def _cached_export(cache: ExportCache, name: str, write: Callable[[Path], None]) -> Path:
    """`write`'s file in an export cache's folder, made once under a lock."""
    path = cache.folder / name / "model.onnx"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path.parent.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not path.exists():
                partial = path.with_name(f"model.{os.getpid()}.partial")
                write(partial)
                os.replace(partial, path)
    return path


def fasterrcnn_file(cache: ExportCache) -> Path:
    """Faster R-CNN's export (`write_fasterrcnn`) in an export cache's folder."""
    return _cached_export(cache, "fasterrcnn", write_fasterrcnn)


# For bench/latency.py: "model-exporter" -> a function writing that ONNX file to a path.
BENCHMARK_MODELS = {
    f"{name}-{exporter}": functools.partial(write_onnx, name, exporter)
    for name, exporter in CASES
    if exporter in ("torchscript", "dynamo", "tf2onnx")
}

"""Write `docs/tf-coverage.md`: the TensorFlow op census of Keras 3 layers and keras_hub backbones.

Each Keras 3 layer is built into a small functional model with a `None` batch and fixed seeds,
and each keras_hub backbone from a tiny config (no weights are downloaded); each is exported
with `Model.export()` as a SavedModel, imported with mlconv, and its TF op types are counted.
A model with no TF op left without a lowering is then compiled with `mlconv.compile` and
compared with Keras at batch 2 (max |diff| <= 1e-4 * max |reference|).

    python -m mlconv.tools.gen_tf_coverage [-o docs/tf-coverage.md] [-k NAME_SUBSTRING]

It takes a few minutes (TensorFlow exports every model). The backbones need keras_hub:
`pip install 'mlconv[tf,census]'` (without it only the Keras layers are counted).
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import tempfile
import traceback
from pathlib import Path

import numpy as np

import mlconv

DEFAULT_OUTPUT = Path(__file__).resolve().parent.parent / "docs" / "tf-coverage.md"
RTOL = 1e-4


def _layer_cases(keras):
    """name -> (layer factory, input shape without batch, input dtype)."""
    L = keras.layers
    f, i = "float32", "int32"
    image, seq, volume = (8, 8, 3), (6, 4), (4, 4, 4, 2)
    return {
        "Dense": (lambda: L.Dense(5), (4,), f),
        "EinsumDense": (lambda: L.EinsumDense("ab,bc->ac", output_shape=5), (4,), f),
        "Embedding": (lambda: L.Embedding(10, 4), (5,), i),
        "Conv1D": (lambda: L.Conv1D(4, 3, padding="same"), seq, f),
        "Conv2D": (lambda: L.Conv2D(4, 3, strides=2), image, f),
        "Conv3D": (lambda: L.Conv3D(3, 2), volume, f),
        "Conv1DTranspose": (lambda: L.Conv1DTranspose(3, 3, strides=2), seq, f),
        "Conv2DTranspose": (lambda: L.Conv2DTranspose(3, 3, strides=2), image, f),
        "Conv3DTranspose": (lambda: L.Conv3DTranspose(2, 2, strides=2), volume, f),
        "SeparableConv1D": (lambda: L.SeparableConv1D(4, 3), seq, f),
        "SeparableConv2D": (lambda: L.SeparableConv2D(4, 3), image, f),
        "DepthwiseConv1D": (lambda: L.DepthwiseConv1D(3), seq, f),
        "DepthwiseConv2D": (lambda: L.DepthwiseConv2D(3), image, f),
        **_ranks(L, "MaxPooling", "123", 2, (seq, image, volume)),
        **_ranks(L, "AveragePooling", "123", 2, (seq, image, volume)),
        **_ranks(L, "GlobalMaxPooling", "12", None, (seq, image, volume)),
        **_ranks(L, "GlobalAveragePooling", "123", None, (seq, image, volume)),
        "BatchNormalization": (lambda: L.BatchNormalization(), image, f),
        "LayerNormalization": (lambda: L.LayerNormalization(), seq, f),
        "GroupNormalization": (lambda: L.GroupNormalization(groups=3), image, f),
        "UnitNormalization": (lambda: L.UnitNormalization(), seq, f),
        "RMSNormalization": (lambda: L.RMSNormalization(), seq, f),
        "Dropout": (lambda: L.Dropout(0.5), seq, f),
        "ReLU": (lambda: L.ReLU(max_value=1.0, negative_slope=0.1), seq, f),
        "LeakyReLU": (lambda: L.LeakyReLU(), seq, f),
        "PReLU": (lambda: L.PReLU(), seq, f),
        "ELU": (lambda: L.ELU(), seq, f),
        "Softmax": (lambda: L.Softmax(), seq, f),
        "Activation(gelu)": (lambda: L.Activation("gelu"), seq, f),
        "Activation(silu)": (lambda: L.Activation("silu"), seq, f),
        "Activation(hard_swish)": (lambda: L.Activation("hard_swish"), seq, f),
        "Activation(mish)": (lambda: L.Activation("mish"), seq, f),
        "Activation(log_softmax)": (lambda: L.Activation("log_softmax"), seq, f),
        "Attention": (lambda: _listed(L.Attention()), seq, f),
        "AdditiveAttention": (lambda: _listed(L.AdditiveAttention()), seq, f),
        "MultiHeadAttention": (lambda: _self(L.MultiHeadAttention(2, 4)), seq, f),
        "GroupQueryAttention": (lambda: _self(L.GroupQueryAttention(4, 4, 2)), seq, f),
        "SimpleRNN": (lambda: L.SimpleRNN(3, return_sequences=True), seq, f),
        "LSTM": (lambda: L.LSTM(3), seq, f),
        "GRU": (lambda: L.GRU(3, return_sequences=True), seq, f),
        "Bidirectional(LSTM)": (lambda: L.Bidirectional(L.LSTM(3)), seq, f),
        "ConvLSTM1D": (lambda: L.ConvLSTM1D(2, 3), (3, 5, 2), f),
        "Flatten": (lambda: L.Flatten(), image, f),
        "Reshape": (lambda: L.Reshape((4, 6)), seq, f),
        "Permute": (lambda: L.Permute((2, 1)), seq, f),
        "RepeatVector": (lambda: L.RepeatVector(3), (4,), f),
        **_ranks(L, "Cropping", "123", 1, (seq, image, volume)),
        **_ranks(L, "ZeroPadding", "123", 1, (seq, image, volume)),
        "UpSampling1D": (lambda: L.UpSampling1D(2), seq, f),
        "UpSampling2D(nearest)": (lambda: L.UpSampling2D(2), image, f),
        "UpSampling2D(bilinear)": (lambda: L.UpSampling2D(2, interpolation="bilinear"), image, f),
        "UpSampling3D": (lambda: L.UpSampling3D(2), volume, f),
        "Concatenate": (lambda: _pair(L.Concatenate()), seq, f),
        "Add": (lambda: _pair(L.Add()), seq, f),
        "Subtract": (lambda: _pair(L.Subtract()), seq, f),
        "Multiply": (lambda: _pair(L.Multiply()), seq, f),
        "Average": (lambda: _pair(L.Average()), seq, f),
        "Maximum": (lambda: _pair(L.Maximum()), seq, f),
        "Minimum": (lambda: _pair(L.Minimum()), seq, f),
        "Dot": (lambda: _pair(L.Dot(axes=2)), seq, f),
        "Rescaling": (lambda: L.Rescaling(1 / 127.5, offset=-1), image, f),
        "Resizing(bilinear)": (lambda: L.Resizing(5, 7), image, f),
        "Resizing(nearest)": (lambda: L.Resizing(12, 5, interpolation="nearest"), image, f),
        "Resizing(bicubic)": (lambda: L.Resizing(5, 11, interpolation="bicubic"), image, f),
        "CenterCrop": (lambda: L.CenterCrop(4, 6), image, f),
        "Normalization": (
            lambda: L.Normalization(mean=[0.1, 0.2, 0.3], variance=[1, 2, 3]),
            image,
            f,
        ),
        "Discretization": (lambda: L.Discretization(bin_boundaries=[-1.0, 0.0, 1.0]), seq, f),
        "CategoryEncoding": (lambda: L.CategoryEncoding(10, output_mode="multi_hot"), (5,), i),
        "Hashing": (lambda: L.Hashing(8), (5,), i),
        "IntegerLookup": (lambda: L.IntegerLookup(vocabulary=[1, 2, 3, 5]), (5,), i),
        "MelSpectrogram": (
            lambda: L.MelSpectrogram(
                fft_length=32, sequence_stride=8, sequence_length=32, num_mel_bins=8
            ),
            (128,),
            f,
        ),
        "STFTSpectrogram": (
            lambda: L.STFTSpectrogram(
                mode="magnitude", frame_length=16, frame_step=8, fft_length=16
            ),
            (64, 1),
            f,
        ),
        "Masking": (lambda: L.Masking(0.0), seq, f),
        "TimeDistributed(Dense)": (lambda: L.TimeDistributed(L.Dense(3)), seq, f),
        "GaussianNoise": (lambda: L.GaussianNoise(0.1), seq, f),
        "RandomFlip": (lambda: L.RandomFlip(), image, f),
        "AutoContrast": (lambda: L.AutoContrast(), image, f),
        "Solarization": (lambda: L.Solarization(0.5), image, f),
        "Identity": (lambda: L.Identity(), seq, f),
    }


def _ranks(L, family, ranks, arg, shapes):
    """`family`1D/2D/3D (the ranks given), each built with `arg` (or none) on the input shape of
    its rank (shapes: the 1D, 2D and 3D ones)."""
    cases = {}
    for rank in ranks:
        layer = getattr(L, f"{family}{rank}D")
        factory = (lambda layer=layer: layer()) if arg is None else (lambda layer=layer: layer(arg))
        cases[f"{family}{rank}D"] = (factory, shapes[int(rank) - 1], "float32")
    return cases


def _self(layer):
    """Multi-head attention layers called on (query, value) = (x, x)."""
    return lambda x: layer(x, x)


def _listed(layer):
    """Dot-product attention layers called on [query, value] = [x, x]."""
    return lambda x: layer([x, x])


def _pair(layer):
    """Merge layers called on x and a second view of x."""
    return lambda x: layer([x, x * 0.5 + 1.0])


def _backbone_cases(keras_hub):
    """name -> (backbone factory, input builder). Tiny configs, random weights."""
    text = dict(vocabulary_size=50, num_layers=2, num_heads=2, hidden_dim=8, intermediate_dim=16)
    decoder = dict(
        vocabulary_size=50,
        num_layers=2,
        num_query_heads=2,
        num_key_value_heads=1,
        hidden_dim=8,
        intermediate_dim=16,
    )
    cases = {
        "BertBackbone": lambda: keras_hub.models.BertBackbone(**text, max_sequence_length=16),
        "DistilBertBackbone": lambda: keras_hub.models.DistilBertBackbone(
            **text, max_sequence_length=16
        ),
        "GPT2Backbone": lambda: keras_hub.models.GPT2Backbone(**text, max_sequence_length=16),
        "Llama3Backbone": lambda: keras_hub.models.Llama3Backbone(**decoder),
        "MistralBackbone": lambda: keras_hub.models.MistralBackbone(**decoder),
        "GemmaBackbone": lambda: keras_hub.models.GemmaBackbone(**decoder, head_dim=4),
        "ViTBackbone": lambda: keras_hub.models.ViTBackbone(
            image_shape=(16, 16, 3),
            patch_size=8,
            num_layers=2,
            num_heads=2,
            hidden_dim=8,
            mlp_dim=16,
        ),
        "ResNetBackbone": lambda: keras_hub.models.ResNetBackbone(
            input_conv_filters=[64],
            input_conv_kernel_sizes=[7],
            stackwise_num_filters=[64],
            stackwise_num_blocks=[1],
            stackwise_num_strides=[1],
            block_type="basic_block",
            image_shape=(None, None, 3),
        ),
    }
    return cases


def _model_from_layer(keras, factory, shape, dtype):
    inputs = keras.Input(shape, dtype=dtype)
    layer = factory()
    outputs = layer(inputs)
    return keras.Model(inputs, outputs)


def _sample(shape, dtype, rng, batch=2, high=9):
    if dtype.startswith("int"):
        return rng.integers(0, high, (batch, *shape)).astype(dtype)
    return rng.standard_normal((batch, *shape)).astype(dtype)


def _inputs_for(model, rng, batch=2):
    """Keras inputs (dict for named multi-input models) with the model's own shapes."""
    arrays = {}
    for tensor in model.inputs:
        shape = [8 if d is None else d for d in tensor.shape[1:]]
        dtype = str(tensor.dtype)
        name = tensor.name.split(":")[0]
        if "mask" in name:
            arrays[name] = np.ones((batch, *shape), dtype)
        elif "segment" in name:
            arrays[name] = np.zeros((batch, *shape), dtype)
        else:
            arrays[name] = _sample(shape, dtype, rng, batch, high=40)
    return arrays


def _census_one(keras, name, model, arrays, tf_ops_seen):
    """(status, tf op types, missing op types)."""
    # lazy: the command starts (and --help answers) before JAX and the passes load
    from mlconv.frontends.tf_importer import import_tf
    from mlconv.passes.tf_to_core import unsupported

    with tempfile.TemporaryDirectory(prefix="mlconv-census-") as tmp:
        folder = Path(tmp) / "saved"
        model.export(str(folder), format="tf_saved_model", verbose=False)
        module = import_tf(folder)
        types = sorted({op.name for op in module.walk() if op.name.startswith("tf.")})
        for t in types:
            tf_ops_seen[t].add(name)
        missing = sorted(f"tf.{key[0]}" for key in unsupported(module))
        if missing:
            return "unsupported ops", types, missing
        expected = model(arrays if len(arrays) > 1 else next(iter(arrays.values())))
        expected = [
            np.asarray(e)
            for e in (
                expected.values()
                if isinstance(expected, dict)
                else (expected if isinstance(expected, list | tuple) else [expected])
            )
        ]
        run = mlconv.compile(folder, quiet=True)
        got = run(**arrays) if len(arrays) > 1 else run(next(iter(arrays.values())))
        if len(got) != len(expected):
            return f"{len(got)} outputs, Keras gives {len(expected)}", types, []
        worst = 0.0
        for a, e in zip(
            sorted(got, key=lambda v: v.shape), sorted(expected, key=lambda v: v.shape), strict=True
        ):
            scale = max(float(np.abs(e).max()), 1e-30)
            worst = max(worst, float(np.abs(a.astype(np.float64) - e).max()) / scale)
        return ("matches" if worst <= RTOL else f"differs ({worst:.1e})"), types, []


LAYER, BACKBONE = "Keras 3 layer", "keras_hub backbone"


def _cases(keras):
    """(kind, name, build): build(rng) gives the model and its inputs. The backbones only when
    keras_hub is installed."""
    for name, (factory, shape, dtype) in _layer_cases(keras).items():
        yield LAYER, name, _layer_builder(keras, factory, shape, dtype)
    try:
        import keras_hub
    except ImportError:
        return
    for name, factory in _backbone_cases(keras_hub).items():
        yield BACKBONE, name, _backbone_builder(factory)


def _layer_builder(keras, factory, shape, dtype):
    return lambda rng: (
        _model_from_layer(keras, factory, shape, dtype),
        {"x": _sample(shape, dtype, rng)},
    )


def _backbone_builder(factory):
    def build(rng):
        model = factory()
        return model, _inputs_for(model, rng)

    return build


def run_census(only: str | None = None) -> tuple[list, dict]:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    # Keras: a generator-only dependency (mlconv[tf,census])
    import keras

    rows = []
    tf_ops_seen: dict[str, set] = collections.defaultdict(set)
    for kind, name, build in _cases(keras):
        if only and only not in name:
            continue
        keras.utils.set_random_seed(0)
        rng = np.random.default_rng(0)
        try:
            model, arrays = build(rng)
            status, types, missing = _census_one(keras, name, model, arrays, tf_ops_seen)
        except Exception as error:  # noqa: BLE001 - a census row, whatever failed
            if kind == BACKBONE:
                traceback.print_exc()
            status, types, missing = f"error: {_one_line(error)}", [], []
        rows.append((kind, name, status, types, missing))
        print(name, status, missing, flush=True)
    return rows, tf_ops_seen


def _one_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    line = (text[0] if text else type(error).__name__).replace("|", "/")
    return re.sub(r"/tmp/mlconv-census-[^/]+/saved", "SAVED", line)[:160]


def render(rows, tf_ops_seen) -> str:
    # lazy: the command starts (and --help answers) before JAX and the passes load
    from mlconv.passes.lowering.registry import lookup

    def counts(kind):
        mine = [r for r in rows if r[0] == kind]
        return sum(r[2] == "matches" for r in mine), len(mine)

    layers_ok, layers = counts(LAYER)
    hub_ok, hub = counts(BACKBONE)
    lowered = {t for t in tf_ops_seen if lookup("tf", t[3:], None, "core") is not None}
    lines = [
        "# TensorFlow op coverage: Keras 3 layers and keras_hub backbones",
        "",
        "Written by `python -m mlconv.tools.gen_tf_coverage` (do not edit by hand). Each Keras 3",
        "layer is one small model with a `None` batch, each keras_hub backbone a tiny config with",
        "random weights; each is exported with `Model.export()`, imported, and, when every TF op",
        "has a lowering, compiled with `mlconv.compile` and compared with Keras at batch 2",
        f"(max |diff| <= {RTOL:g} * max |reference|).",
        "",
        f"- Keras 3 layers that convert and match: **{layers_ok} of {layers}**",
        f"- keras_hub backbones that convert and match: **{hub_ok} of {hub}**",
        f"- TF op types seen: {len(tf_ops_seen)}, with a lowering to core: {len(lowered)} (the",
        "  types of models whose import or export failed are not counted)",
        "",
        "| model | kind | result | TF ops without a lowering |",
        "|---|---|---|---|",
    ]
    for kind, name, status, _types, missing in rows:
        lines.append(f"| {name} | {kind} | {status} | {', '.join(missing) or '-'} |")
    lines += [
        "",
        "## TF op types seen",
        "",
        "| TF op | lowered | models using it |",
        "|---|---|---|",
    ]
    for op in sorted(tf_ops_seen):
        users = sorted(tf_ops_seen[op])
        shown = ", ".join(users[:6]) + (f", ... ({len(users)})" if len(users) > 6 else "")
        lines.append(f"| {op} | {'yes' if op in lowered else '**no**'} | {shown} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", default=str(DEFAULT_OUTPUT))
    parser.add_argument("-k", dest="only", default=None, help="only models whose name has this")
    args = parser.parse_args(argv)
    rows, seen = run_census(args.only)
    Path(args.output).write_text(render(rows, seen))
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

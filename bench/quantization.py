"""Post-training int8 quantization: mlconv (static, dynamic, weight-only) beside TFLite's own
full-integer converter on the same Keras model, calibration set and evaluation set.

    python bench/quantization.py --model mobilenetv2 --calibration 100 --eval 500

A method with `/int8-inputs` quantizes the input layers' activations too
(quantize_input_layers), one with `/plain` also runs without activation smoothing and bias
correction (all three aids are on by default), to show what they bring. Each quantized model
is compared with the Keras float model on the evaluation images: top-1 agreement and relative
error (per image max |q - f| / max |f|; mean and max over images). The
models and images are test/pytest/quant_models.py's: keras.applications models trained there
(fixed seeds, its RECIPES; --size and --steps override them) on structured images of 32
classes, their weights cached as the tests cache them.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "test" / "pytest"))

import quant_models  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="mobilenetv2", choices=sorted(quant_models.APPS))
    parser.add_argument("--size", type=int, help="input size (default: the model's recipe)")
    parser.add_argument("--steps", type=int, help="training steps (default: the recipe's)")
    parser.add_argument("--calibration", type=int, default=100)
    parser.add_argument("--eval", type=int, default=500)
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument(
        "--modes",
        default="STATIC_RANGE,STATIC_RANGE/int8-inputs,STATIC_RANGE/plain,DYNAMIC_RANGE,"
        "DYNAMIC_RANGE/int8-inputs,DYNAMIC_RANGE/plain,WEIGHT_ONLY,WEIGHT_ONLY/plain",
        help="methods, each optionally /no-smoothing, /no-bias-correction, /int8-inputs or "
        "/plain (none of the three aids)",
    )
    args = parser.parse_args()

    import mlconv
    from mlconv.tools.mlconv_convert import convert

    overrides = {k: v for k, v in (("size", args.size), ("steps", args.steps)) if v}
    model = quant_models.build(args.model, **overrides)
    args.size = {**quant_models.RECIPES[args.model], **overrides}["size"]
    calibration, _ = quant_models.labelled_images(1, args.calibration, args.size)
    data, labels = quant_models.labelled_images(2, args.eval, args.size)
    reference = model.predict(data, batch_size=args.batch, verbose=0)
    accuracy = float((reference.argmax(-1) == labels).mean())
    rows = []
    start = time.perf_counter()
    flatbuffer = quant_models.tflite_int8(model, calibration)
    tflite = quant_models.run_tflite(flatbuffer, data)
    rows.append(
        (
            "TFLite int8 (full integer)",
            *quant_models.agreement(reference, tflite),
            time.perf_counter() - start,
        )
    )
    with tempfile.TemporaryDirectory() as tmp:
        folder = quant_models.save(model, Path(tmp) / "saved_model")
        np.savez(Path(tmp) / "calibration.npz", image=calibration)
        for spec in args.modes.split(","):
            start = time.perf_counter()
            mode, _, variant = spec.partition("/")
            out = Path(tmp) / spec.replace("/", "-")
            extra = {
                "": "",
                "no-smoothing": "disable_activation_smoothing: true ",
                "no-bias-correction": "disable_bias_correction: true ",
                "int8-inputs": "quantize_input_layers: true ",
                "plain": "disable_activation_smoothing: true disable_bias_correction: true "
                "quantize_input_layers: true ",
            }[variant]
            options = (
                "disable_default_optimizations: true external_feature_configs { "
                f"quantization_options {{ quantization_method: {mode} {extra}representative_datasets {{ "
                f'key: "serving_default" value {{ npz_file_path: "{tmp}/calibration.npz" }} }} }} }}'
            )
            convert(
                str(folder),
                str(out),
                options,
                input_shapes=f"image:{args.batch},{args.size},{args.size},3",
            )
            served = mlconv.load(str(out))
            got = np.concatenate(
                [
                    np.asarray(served(data[i : i + args.batch])[0])
                    for i in range(0, len(data), args.batch)
                ]
            )
            rows.append(
                (
                    f"mlconv {spec}",
                    *quant_models.agreement(reference, got),
                    time.perf_counter() - start,
                )
            )
    print(
        f"{args.model} {args.size}x{args.size}, calibrated on {args.calibration}, evaluated on {args.eval} images; "
        f"float accuracy on their labels {100 * accuracy:.1f}% ({quant_models.CLASSES} classes)"
    )
    print(
        f"{'':32} {'top-1 agreement':>16} {'rel err mean':>13} {'rel err max':>12} {'seconds':>8}"
    )
    for name, top1, mean, worst, seconds in rows:
        print(
            f"{name:32} {100 * top1:15.1f}% {100 * mean:12.2f}% {100 * worst:11.2f}% {seconds:8.1f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

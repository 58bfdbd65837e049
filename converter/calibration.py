"""Calibration for static-range quantization: representative datasets and observed ranges.

    samples = load_representative_dataset("calib.npz", input_names, input_shapes)
    calibrate(module, samples)        # core module: annotates each quantizable op
    CoreQuantizePass(mode="static").apply(ctx, module)

A representative dataset is an `.npz` (one array per model input, keyed by input name or
`arr_0`, ..., the samples stacked on a leading axis: N samples of the input's shape, or N
rows where the input's first dimension is a batch) or a TFRecord file as TensorFlow's
`TfRecordRepresentativeDatasetSaver` writes it: each record a serialized
`RepresentativeDataSample` (tensorflow/compiler/mlir/quantization/tensorflow/
quantization_options.proto), whose `tensor_proto_inputs` map each input name to a TensorProto
of one sample (read with TensorFlow's own protos).

`calibrate` runs the float model, compiled once with the data input of every op
`core-quantize` quantizes added as an extra output, over the samples, and records a range for
each of those inputs as the op's `mlconv.input_range`: with `method="minmax"` (TFLite's) the
min and max it took; with `method="mse"` (as OpenVINO POT's and TensorRT's MSE calibration)
each end of the min/max range shrunk by the factor in MSE_FACTORS whose 256-level
quantization of a seeded sample of the values it took (SAMPLE per call) has the least squared error: outliers
are clipped where a narrower step helps the bulk of the values more.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DenseArrayBase, DictionaryAttr, ModuleOp, f32
from xdsl.ir import Operation

from mlconv.dense import numpy_dtype, to_dense_attr, to_numpy
from mlconv.errors import OptionError


def _stack(
    arrays: list[np.ndarray], shape: Sequence[int], name: str, where: str
) -> list[np.ndarray]:
    """The dataset's arrays for one input (whole calls, batches of samples, or single samples)
    cut into calls of the input's `shape` (samples that do not fill a last call are left out)."""
    shape = tuple(shape)
    if not shape:
        return [np.asarray(a).reshape(()) for a in arrays]
    rows: list[np.ndarray] = []
    for array in arrays:
        sample = np.asarray(array)
        if sample.shape[1:] == shape[1:]:
            rows += list(sample)
        elif sample.shape == shape[1:]:
            rows.append(sample)
        else:
            raise OptionError(
                f"{where}: input '{name}' has shape {'x'.join(map(str, sample.shape))}, the "
                f"model takes {'x'.join(map(str, shape))} per call"
            )
    batch = shape[0]
    return [np.stack(rows[i : i + batch]) for i in range(0, len(rows) - batch + 1, batch)]


def load_representative_dataset(
    path: str, names: Sequence[str], shapes: Sequence[Sequence[int]], dtypes: Sequence[np.dtype]
) -> list[list[np.ndarray]]:
    """The calls (one array per input, in the model's order) a dataset file holds."""
    file = Path(path)
    if not file.exists():
        raise OptionError(f"{path}: representative dataset not found")
    if file.suffix == ".npz":
        with np.load(file) as data:
            keys = list(data.keys())
            per_input = {}
            for index, name in enumerate(names):
                key = name if name in data else f"arr_{index}" if f"arr_{index}" in data else None
                if key is None and len(names) == 1 and len(keys) == 1:
                    key = keys[0]
                if key is None:
                    raise OptionError(
                        f"{path}: no array for input '{name}' (has {', '.join(keys)})"
                    )
                per_input[name] = [data[key]]
    else:
        per_input = {name: [] for name in names}
        for sample in _tfrecord_samples(file):
            missing = [n for n in names if n not in sample]
            if missing:
                raise OptionError(
                    f"{path}: a sample has no input '{missing[0]}' (has {', '.join(sample)})"
                )
            for name in names:
                per_input[name].append(sample[name])
    calls_per_input = [
        _stack(per_input[name], shape, name, path)
        for name, shape in zip(names, shapes, strict=True)
    ]
    counts = {len(c) for c in calls_per_input}
    if len(counts) != 1 or not counts or 0 in counts:
        raise OptionError(f"{path}: inputs hold different numbers of samples (or none)")
    return [
        [np.asarray(c[i], dtype) for c, dtype in zip(calls_per_input, dtypes, strict=True)]
        for i in range(counts.pop())
    ]


def _tfrecord_samples(file: Path) -> Iterable[dict[str, np.ndarray]]:
    """`RepresentativeDataSample`s of a TFRecord file, as {input name: array}."""
    try:
        # TensorFlow: optional (mlconv[tf]) and seconds to load; only this path needs it
        import tensorflow as tf
        from tensorflow.compiler.mlir.quantization.tensorflow import quantization_options_pb2
    except ImportError:  # pragma: no cover - TensorFlow is a dependency of the tf extra
        raise OptionError(f"{file}: reading TFRecord datasets needs TensorFlow") from None
    try:
        for record in tf.data.TFRecordDataset(str(file)).as_numpy_iterator():
            sample = quantization_options_pb2.RepresentativeDataSample()
            sample.ParseFromString(record)
            yield {k: tf.make_ndarray(v) for k, v in sample.tensor_proto_inputs.items()}
    except tf.errors.OpError as error:
        raise OptionError(f"{file}: not a TFRecord file: {error.message.splitlines()[0]}") from None


def quantizable_ops(module: ModuleOp) -> list[Operation]:
    """The ops core-quantize quantizes (constant float weights), in walk order."""
    # lazy: loads JAX and turns on jax_enable_x64, which this module does not
    from mlconv.dialects.core_tensor import ConstantOp
    from mlconv.passes.core_quantize import QUANTIZABLE, weight_operand

    found = []
    for op in module.walk():
        if not isinstance(op, QUANTIZABLE):
            continue
        owner = op.operands[weight_operand(op)].owner
        if isinstance(owner, ConstantOp) and to_numpy(owner.value).dtype.kind == "f":
            found.append(op)
    return found


def _probe_module(module: ModuleOp) -> tuple[ModuleOp, int]:
    """A copy of `module` whose @main also returns the data input of each quantizable op."""
    # lazy: loads JAX, which this module does not
    from mlconv.signature.module_io import find_main

    probe = module.clone()
    main = find_main(probe, "calibrate")
    ops = quantizable_ops(probe)
    ret = main.body.block.last_op
    assert isinstance(ret, func.ReturnOp)
    extra = [op.operands[0] for op in ops]
    outputs = [*ret.operands, *extra]
    new_ret = func.ReturnOp(*outputs)
    main.body.block.insert_op_before(new_ret, ret)
    ret.detach()
    ret.erase()
    main.function_type = func.FunctionType.from_lists(
        list(main.function_type.inputs.data), [v.type for v in outputs]
    )
    if main.res_attrs is not None:
        main.res_attrs = ArrayAttr([*main.res_attrs.data, *[DictionaryAttr({}) for _ in extra]])
    return probe, len(ops)


CALIBRATION_METHODS = ("minmax", "mse")
SAMPLE = 4096
MSE_FACTORS = np.geomspace(0.02, 1.0, 40)


def mse_range(values: np.ndarray, low: float, high: float) -> tuple[float, float]:
    """[low, high] with each end on its side of 0 shrunk (the low end first, then the high
    end) by the factor of MSE_FACTORS whose 256-level quantization (zero a level, values
    outside clipped) of `values` has the least mean squared error."""
    # lazy: loads JAX and turns on jax_enable_x64, which this module does not
    from mlconv.passes.core_quantize import nudged_range

    x = np.asarray(values, np.float64)

    def error(lo: float, hi: float) -> float:
        lo, hi = nudged_range(lo, hi)
        step = (hi - lo) / 255.0
        q = np.round((np.clip(x, lo, hi) - lo) / step) * step + lo
        return float(np.mean((q - x) ** 2))

    if low < 0:
        low = min(MSE_FACTORS, key=lambda f: error(low * f, high)) * low
    if high > 0:
        high = min(MSE_FACTORS, key=lambda f: error(low, high * f)) * high
    return float(low), float(high)


def _run_float(
    module: ModuleOp,
    calls: Sequence[Sequence[np.ndarray]],
    device: str,
    probe: bool,
    sample: bool = False,
):
    """The float model's outputs on each call and, with `probe`, the per-channel minima,
    maxima and means the data input of each quantizable op took (channel: the axis its weights
    contract; with `sample`, also a seeded sample of its values)."""
    # lazy: loads JAX and turns on jax_enable_x64, which this module does not
    from mlconv.backends.jax_backend import compile_module
    from mlconv.passes.core_quantize import data_channel_axis
    from mlconv.passes.core_to_tpu import CoreToTpuPass
    from mlconv.passes.pipelines import run_passes, target_passes

    axes = []
    if probe:
        axes = [
            data_channel_axis(op, len(op.operands[0].type.get_shape()))
            for op in quantizable_ops(module)
        ]
        copy, count = _probe_module(module)
    else:
        copy, count = module.clone(), 0
    run_passes([CoreToTpuPass(), *target_passes(device)], copy)
    compiled = compile_module(copy, device)
    low: list[np.ndarray | None] = [None] * count
    high: list[np.ndarray | None] = [None] * count
    sums: list[np.ndarray | float] = [0.0] * count
    seen = [0] * count
    samples: list[list[np.ndarray]] = [[] for _ in range(count)]
    rng = np.random.default_rng(0)
    results = []
    for call in calls:
        outputs = compiled(*call)
        results.append([np.asarray(o) for o in outputs[: len(outputs) - count]])
        for index, value in enumerate(outputs[len(outputs) - count :]):
            value = np.asarray(value)
            others = tuple(a for a in range(value.ndim) if a != axes[index])
            least, most = value.min(axis=others), value.max(axis=others)
            low[index] = least if low[index] is None else np.minimum(low[index], least)
            high[index] = most if high[index] is None else np.maximum(high[index], most)
            sums[index] = sums[index] + value.sum(axis=others, dtype=np.float64)
            seen[index] += value.size // max(least.size, 1)
            if sample:
                flat = value.reshape(-1)
                samples[index].append(flat[rng.integers(0, flat.size, min(SAMPLE, flat.size))])
    means = [np.asarray(total) / max(n, 1) for total, n in zip(sums, seen, strict=True)]
    if sample:
        return (
            results,
            low,
            high,
            means,
            [np.concatenate(s) if s else np.zeros(0) for s in samples],
        )
    return results, low, high, means


def calibrate(
    module: ModuleOp,
    calls: Sequence[Sequence[np.ndarray]],
    device: str = "cpu",
    method: str = "minmax",
    channel_ranges: bool = False,
    channel_means: bool = False,
) -> list[list[np.ndarray]]:
    """Run the float model over `calls` and annotate each quantizable op of `module` with the
    range (`mlconv.input_range`) `method` chooses for its data input from what it took, and
    with `channel_ranges` also its per-channel minima and maxima (`mlconv.channel_ranges`, what
    core-smooth-activations reads), with `channel_means` its per-channel means
    (`mlconv.channel_means`, what core-quantize corrects the weights' bias with). Returns the
    float model's outputs."""
    # lazy: loads JAX and turns on jax_enable_x64, which this module does not
    from mlconv.passes.core_quantize import CHANNEL_MEANS_ATTR, RANGE_ATTR
    from mlconv.passes.core_smooth_activations import CHANNEL_RANGES_ATTR

    if method not in CALIBRATION_METHODS:
        raise OptionError(
            f"calibration method must be one of {', '.join(CALIBRATION_METHODS)}, got '{method}'"
        )
    ops = quantizable_ops(module)
    mse = method == "mse"
    outputs, low, high, means, *rest = _run_float(
        module, calls, device, probe=bool(ops), sample=mse
    )
    for index, (op, least, most) in enumerate(zip(ops, low, high, strict=True)):
        lo, hi = float(least.min()), float(most.max())
        if mse:
            lo, hi = mse_range(rest[0][index], lo, hi)
        op.attributes[RANGE_ATTR] = DenseArrayBase.from_list(f32, [lo, hi])
        if channel_ranges:
            op.attributes[CHANNEL_RANGES_ATTR] = to_dense_attr(
                np.stack([least, most]).astype(np.float32)
            )
        if channel_means:
            op.attributes[CHANNEL_MEANS_ATTR] = to_dense_attr(means[index].astype(np.float32))
    return outputs


# --------------------------------------------------------------------------- the converter's step

MODES = {"STATIC_RANGE": "static", "DYNAMIC_RANGE": "dynamic", "WEIGHT_ONLY": "weight-only"}
# core-smooth-activations' alpha in the converter (SmoothQuant's default). Measured on
# test_quantization's Keras models before their recipes took weight decay and bias correction
# came (static range, mean relative error of the logits): ResNet50 at 900 steps 5.1% without
# smoothing, 3.1% at 0.35, 2.7% at 0.5 and at 0.65; MobileNetV2 at 1200 steps 1.8% -> 1.7%.
SMOOTHING_ALPHA = 0.5


@dataclass
class QuantizationReport:
    """What `quantize_for_tpu` did and how close the result stays to float."""

    method: str
    products: dict[str, int]
    calibration_samples: int = 0
    accuracy: list[dict] = field(default_factory=list)
    smoothed: int = 0
    float_input_layers: int = 0

    def format(self) -> str:
        lines = ["-------- Quantization Report --------", f"Method: {self.method}"]
        p = self.products
        lines.append(
            f"Products: {p.get('int8', 0)} int8 x int8 -> int32, {p.get('weight-only', 0)} "
            f"int8 weights with float compute, {p.get('float', 0)} left in float"
        )
        if self.calibration_samples:
            lines.append(f"Calibrated on {self.calibration_samples} samples")
        if self.smoothed:
            lines.append(f"Activation smoothing: {self.smoothed} ops (alpha {SMOOTHING_ALPHA})")
        if self.float_input_layers:
            lines.append(
                f"Input layers with float activations: {self.float_input_layers} ops "
                "(quantize_input_layers quantizes them too)"
            )
        if self.accuracy:
            lines.append("Accuracy against float on the calibration set:")
        for row in self.accuracy:
            top1 = (
                f"top-1 agreement {100 * row['top1_agreement']:.2f}% "
                f"({row['top1_agree']}/{row['samples']}), "
                if row.get("top1_agreement") is not None
                else ""
            )
            lines.append(
                f"  {row['output']}: {top1}relative error mean {100 * row['rel_error_mean']:.3f}% "
                f"max {100 * row['rel_error_max']:.3f}%"
            )
        return "\n".join(lines) + "\n"

    def to_dict(self) -> dict:
        return {
            "method": self.method,
            "products": self.products,
            "calibration_samples": self.calibration_samples,
            "smoothed": self.smoothed,
            "float_input_layers": self.float_input_layers,
            "accuracy": self.accuracy,
        }


def compare_outputs(
    reference: Sequence[Sequence[np.ndarray]], quantized: Sequence[Sequence[np.ndarray]], names
) -> list[dict]:
    """Per output: top-1 agreement (argmax over the last axis, per row) and relative error
    (max |q - f| / max |f| per sample, the first axis of a batched output; mean and max)."""
    rows = []
    for index, name in enumerate(names):
        errors, agree, total = [], 0, 0
        for ref, got in zip(reference, quantized, strict=True):
            f = np.asarray(ref[index], np.float64)
            q = np.asarray(got[index], np.float64)
            rows_f = f.reshape(f.shape[0], -1) if f.ndim >= 2 else f.reshape(1, -1)
            rows_q = q.reshape(rows_f.shape)
            for fr, qr in zip(rows_f, rows_q, strict=True):
                scale = np.abs(fr).max()
                errors.append(
                    float(np.abs(qr - fr).max() / scale) if scale else float(np.abs(qr).max())
                )
            if f.ndim >= 1 and f.shape[-1] > 1:
                fa = f.reshape(-1, f.shape[-1]).argmax(-1)
                qa = q.reshape(-1, q.shape[-1]).argmax(-1)
                agree += int((fa == qa).sum())
                total += fa.size
        rows.append(
            {
                "output": name,
                "samples": total or len(errors),
                "top1_agree": agree if total else None,
                "top1_agreement": agree / total if total else None,
                "rel_error_mean": float(np.mean(errors)),
                "rel_error_max": float(np.max(errors)),
            }
        )
    return rows


def model_inputs(module: ModuleOp) -> tuple[list[str], list[tuple[int, ...]], list[np.dtype]]:
    # lazy: loads JAX and turns on jax_enable_x64, which this module does not
    from mlconv.passes.core_to_tpu import input_name
    from mlconv.signature.module_io import find_main

    main = find_main(module, "quantize")
    args = main.body.block.args
    names = [input_name(main, i) for i in range(len(args))]
    shapes = [tuple(a.type.get_shape()) for a in args]
    dtypes = [np.dtype(numpy_dtype(a.type.element_type)) for a in args]
    return names, shapes, dtypes


def output_names(module: ModuleOp) -> list[str]:
    # lazy: loads JAX, which this module does not
    from mlconv.signature.module_io import find_main, value_names

    main = find_main(module, "quantize")
    return value_names(main.res_attrs, len(main.function_type.outputs.data), "output")


def _copy_calibration(source: ModuleOp, target: ModuleOp) -> None:
    """The calibration attributes of `source`'s quantizable ops onto `target`'s (the same
    model at other shapes: the same ops in the same order)."""
    # lazy: loads JAX and turns on jax_enable_x64, which this module does not
    from mlconv.passes.core_quantize import CHANNEL_MEANS_ATTR, RANGE_ATTR
    from mlconv.passes.core_smooth_activations import CHANNEL_RANGES_ATTR

    ours, theirs = quantizable_ops(source), quantizable_ops(target)
    if [o.name for o in ours] != [o.name for o in theirs]:
        raise OptionError(
            "quantization_options: the model's quantizable ops differ between input sizes; "
            "give --input-shapes"
        )
    for op, other in zip(ours, theirs, strict=True):
        for name in (RANGE_ATTR, CHANNEL_RANGES_ATTR, CHANNEL_MEANS_ATTR):
            if name in op.attributes:
                other.attributes[name] = op.attributes[name]


def quantize_for_tpu(
    module: ModuleOp,
    quantization,
    device: str = "cpu",
    calibration_method: str = "minmax",
    calibrate_on: ModuleOp | None = None,
) -> QuantizationReport:
    """The converter's quantization step on a core module with static shapes: fold and fuse,
    calibrate (static range, and dynamic range given a dataset), core-smooth-activations (unless
    `disable_activation_smoothing`; static and dynamic range given a dataset), core-quantize
    (the input layers' activations float unless `quantize_input_layers`), core-to-tpu,
    tpu-quantize; then, when a dataset is given, the quantized model against
    float on it (compiled for `device`). `calibrate_on` is the same core model at other static
    input shapes (a dynamic model's probe sizes, backends/symbolic.py, are calibrated on it at
    one row per call, every sample's rows alike, so that every probe gets the same ranges): the
    dataset runs through it and its quantizable ops' calibration is copied onto `module`'s;
    the report's float-against-quantized comparison is then left out."""
    # lazy: loads JAX, protobuf and turns on jax_enable_x64, which this module does not
    from mlconv.converter.options import quantization_method
    from mlconv.passes.core_fold_constants import CoreFoldConstantsPass
    from mlconv.passes.core_fuse import CoreFusePass
    from mlconv.passes.core_quantize import quantize_module, reads_model_input
    from mlconv.passes.core_smooth_activations import smooth_module
    from mlconv.passes.core_to_tpu import CoreToTpuPass
    from mlconv.passes.pipelines import run_passes, target_passes
    from mlconv.passes.tpu_quantize import quantize_tpu_module

    method = quantization_method(quantization)
    mode = MODES[method]
    run_passes([CoreFoldConstantsPass(static_shape=True), CoreFusePass()], module)
    target = module
    if calibrate_on is not None:
        run_passes([CoreFoldConstantsPass(static_shape=True), CoreFusePass()], calibrate_on)
        target = calibrate_on
    calls: list[list[np.ndarray]] = []
    keys = list(quantization.signature_keys) or ["serving_default"]
    datasets = quantization.representative_datasets
    dataset = next((datasets[k] for k in keys if k in datasets), None)
    if dataset is None and len(datasets) == 1:
        dataset = next(iter(datasets.values()))
    if dataset is not None:
        path = getattr(dataset, dataset.WhichOneof("dataset_file"))
        calls = load_representative_dataset(path, *model_inputs(target))
        if quantization.num_calibration_samples:
            calls = calls[: quantization.num_calibration_samples]
    reference = None
    smooth = bool(calls) and mode != "weight-only" and not quantization.disable_activation_smoothing
    correct = bool(calls) and not quantization.disable_bias_correction
    calibrated = mode == "static" or smooth or correct
    if calibrated:
        reference = calibrate(
            target, calls, device, calibration_method, channel_ranges=smooth, channel_means=correct
        )
    elif calls:
        reference, *_ = _run_float(target, calls, device, probe=False)
    if calibrate_on is not None:
        _copy_calibration(calibrate_on, module)
        reference = None
    float_inputs = mode != "weight-only" and not quantization.quantize_input_layers
    float_layers = (
        sum(reads_model_input(op) for op in quantizable_ops(module)) if float_inputs else 0
    )
    smoothed = smooth_module(module, SMOOTHING_ALPHA) if smooth else 0
    quantize_module(module, mode, float_inputs)
    run_passes([CoreToTpuPass()], module)
    products = quantize_tpu_module(module)
    rows = sum(int(c[0].shape[0]) if c and c[0].ndim else 1 for c in calls)
    report = QuantizationReport(method, products, rows if calibrated else 0)
    report.smoothed = smoothed
    report.float_input_layers = float_layers
    if reference is not None:
        # lazy: loads JAX and turns on jax_enable_x64, which this module does not
        from mlconv.backends.jax_backend import compile_module

        copy = module.clone()
        run_passes(target_passes(device), copy)
        compiled = compile_module(copy, device)
        quantized = [[np.asarray(o) for o in compiled(*call)] for call in calls]
        report.accuracy = compare_outputs(reference, quantized, output_names(module))
    return report

"""Compare a converted model with its source framework, output by output and layer by layer.

    report = compare_with_source("model.onnx", per_layer=True)
    print(report.format_table()); report.to_json()

The source side runs in the framework's own runtime: onnxruntime for .onnx (every node output
added as a graph output), TensorFlow for a SavedModel folder (the frozen graph's tensors, fetched
in one session run) and LiteRT for .tflite (`experimental_preserve_all_tensors`). The mlconv
side is the model compiled by `mlconv.compile` (its outputs) and, for `per_layer`, the same model
lowered to tpu ops (without core-fuse, whose fused ops would stand at the location of one of
their parts) and run by the tpu reference interpreter, whose `Recorder` keeps each op's
results by location: the source node name every imported op carries (an ONNX node's name, a TF
op's name, a TFLite op's first output tensor). A layer is a source node both sides have, compared
where the shapes agree (an NHWC source tensor is compared with mlconv's NCHW value transposed).

Each row: tensor name, op location, shape, max absolute error, max relative error (to the
largest magnitude of the source tensor), and `diverged` when
`max_abs > atol + rtol * max|source|`. `first_divergence` is the first diverged layer in the
source's topological order. The Model Explorer overlay reads `rows` / `to_json()`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

import mlconv
from mlconv.dialects import make_context
from mlconv.errors import MlconvError, OptionError
from mlconv.frontends.load import format_input_shapes, load_model
from mlconv.interpreters import Recorder, run_module
from mlconv.interpreters.check_numerics import aligned, errors
from mlconv.passes.pipelines import CoreToTpuPipeline, lower_to_core
from mlconv.signature.main_inputs import make_inputs

DEFAULT_RTOL = 1e-3
DEFAULT_ATOL = 1e-5
LOCATION_WIDTH = 48


@dataclass
class Row:
    """One compared tensor: a model output (`kind="output"`) or an intermediate (`"layer"`)."""

    name: str
    location: str
    shape: tuple[int, ...]
    max_abs: float
    max_rel: float
    diverged: bool
    kind: str = "layer"
    op_type: str = ""

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["shape"] = list(self.shape)
        return data


@dataclass
class SourceComparison:
    """What `compare_with_source` found; `rows` are the outputs, then the layers in source
    order."""

    model: str
    framework: str
    runtime: str
    rtol: float
    atol: float
    outputs: list[Row] = field(default_factory=list)
    layers: list[Row] = field(default_factory=list)
    unmatched: int = 0
    """Source tensors with no mlconv value of the same shape (fused away, or split)."""

    @property
    def rows(self) -> list[Row]:
        return self.outputs + self.layers

    @property
    def first_divergence(self) -> Row | None:
        return next((row for row in self.layers if row.diverged), None) or next(
            (row for row in self.outputs if row.diverged), None
        )

    @property
    def ok(self) -> bool:
        return not any(row.diverged for row in self.rows)

    def to_dict(self) -> dict[str, Any]:
        first = self.first_divergence
        return {
            "model": self.model,
            "framework": self.framework,
            "runtime": self.runtime,
            "rtol": self.rtol,
            "atol": self.atol,
            "ok": self.ok,
            "outputs": [row.to_dict() for row in self.outputs],
            "layers": [row.to_dict() for row in self.layers],
            "unmatched": self.unmatched,
            "first_divergence": first.to_dict() if first else None,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def format_table(self, color: bool = False) -> str:
        """Aligned text tables (outputs, then layers); the first divergence is marked `<<`."""
        first = self.first_divergence
        lines = [f"{self.model}: mlconv vs {self.runtime} (rtol {self.rtol:g}, atol {self.atol:g})"]
        for title, rows in (("outputs", self.outputs), ("layers", self.layers)):
            if not rows and title == "layers":
                continue
            lines.append(f"{title}:")
            width = min(max([len(r.location) for r in rows] + [8]), LOCATION_WIDTH)
            lines.append(
                f"  {'location':<{width}}  {'op' if title == 'layers' else 'output':<16} "
                f"{'shape':<18} {'max abs':>10} "
                f"{'max rel':>10}  status"
            )
            for row in rows:
                status = "DIVERGED" if row.diverged else "ok"
                mark = "  << first divergence" if row is first else ""
                where = row.location
                if len(where) > width:  # keep the end: the layer's own name
                    where = "..." + where[len(where) - width + 3 :]
                text = (
                    f"  {where:<{width}}  {(row.op_type if row.kind == 'layer' else row.name)[:16]:<16} "
                    f"{'x'.join(map(str, row.shape)) or 'scalar':<18} {row.max_abs:>10.3g} "
                    f"{row.max_rel:>10.3g}  {status}{mark}"
                )
                if color and row.diverged:
                    text = f"\x1b[1;31m{text}\x1b[0m"
                lines.append(text)
        if self.layers or self.unmatched:
            lines.append(
                f"{len(self.layers)} layers matched, {self.unmatched} source tensors without "
                "an mlconv value of their shape"
            )
        lines.append(
            "first divergence: "
            + (
                f"{first.location} ({first.op_type}) max abs {first.max_abs:.3g}"
                if first
                else "none"
            )
        )
        return "\n".join(lines) + "\n"


def _row(name, location, op_type, ours, reference, kind, rtol, atol) -> Row:
    max_abs, max_rel = errors(ours, reference)
    scale = float(np.max(np.abs(reference))) if np.size(reference) else 0.0
    diverged = not max_abs <= atol + rtol * (scale if np.isfinite(scale) else 0.0)
    return Row(
        name, location, tuple(np.shape(reference)), max_abs, max_rel, diverged, kind, op_type
    )


# --------------------------------------------------------------------------- source runtimes


@dataclass
class SourceTensor:
    name: str
    location: str
    op_type: str
    value: np.ndarray
    output_index: int = 0


def _run_onnx(path: str, names, arrays, per_layer: bool):
    """(outputs, intermediates in node order) by onnxruntime."""
    import onnx

    # onnxruntime: an optional oracle; only this comparison needs it
    import onnxruntime

    model = onnx.load(path)
    graph_outputs = [o.name for o in model.graph.output]
    located: list[tuple[str, str, str, int]] = []  # tensor, node location, op type, index
    if per_layer:
        # lazy: loads protobuf, which this module does not
        from mlconv.frontends.onnx_importer import topological_order

        existing = set(graph_outputs)
        for index, node in topological_order(model.graph.node):
            where = node.name or f"{node.op_type}_{index}"
            for position, tensor in enumerate(node.output):
                if not tensor:
                    continue
                located.append((tensor, where, node.op_type, position))
                if tensor not in existing:
                    model.graph.output.append(onnx.ValueInfoProto(name=tensor))
                    existing.add(tensor)
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = onnxruntime.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    fetch = [o.name for o in session.get_outputs()]
    values = dict(
        zip(fetch, session.run(fetch, dict(zip(names, arrays, strict=True))), strict=True)
    )
    outputs = [values[n] for n in graph_outputs]
    layers = [
        SourceTensor(t, where, op_type, np.asarray(values[t]), position)
        for t, where, op_type, position in located
        if t in values
    ]
    producer = {
        tensor: node.name or f"{node.op_type}_{index}"
        for index, node in enumerate(model.graph.node)
        for tensor in node.output
    }
    return outputs, layers, [(n, producer.get(n, n)) for n in graph_outputs]


def _run_tf(path: str, names, arrays, per_layer: bool, frontend_options: dict):
    """(outputs, intermediates) by TensorFlow: the frozen graph the importer translates, every
    top-level op output fetched in one session run."""
    # TensorFlow: optional (mlconv[tf]) and seconds to load; only this path needs it
    from tensorflow.python.framework.convert_to_constants import (
        convert_variables_to_constants_v2,
    )

    # lazy: loads 2 more modules (frontends, signature)
    from mlconv.frontends import tf_importer

    tf = tf_importer.quiet_tensorflow()  # noqa: SLF001 - the importer's own TF setup
    fn, _, _loaded = tf_importer.pick(  # noqa: SLF001 - the function the importer picks
        __import__("pathlib").Path(path),
        tf,
        frontend_options.get("signature"),
        frontend_options.get("alias"),
        frontend_options.get("function"),
    )
    frozen = convert_variables_to_constants_v2(fn, lower_control_flow=False)
    graph_def = frozen.graph.as_graph_def()
    feeds = [t.name for t in frozen.inputs]
    out_names = [t.name for t in frozen.outputs]
    graph = tf.Graph()
    with graph.as_default():
        tf.graph_util.import_graph_def(graph_def, name="")
    skip = {"Placeholder", "Const", "NoOp", "Identity"}
    located = []
    if per_layer:
        for op in graph.get_operations():
            if op.type in skip or op.type.startswith("VarHandle"):
                continue
            for position, tensor in enumerate(op.outputs):
                if tensor.dtype.is_numpy_compatible and tensor.dtype != tf.string:
                    located.append((tensor.name, op.name, op.type, position))
    with tf.compat.v1.Session(graph=graph) as session:
        fetched = session.run(
            out_names + [t for t, *_ in located], dict(zip(feeds, arrays, strict=True))
        )
    outputs = fetched[: len(out_names)]
    info = [(name.split(":")[0], name.split(":")[0]) for name in out_names]
    layers = [
        SourceTensor(t, where, op_type, np.asarray(value), position)
        for (t, where, op_type, position), value in zip(
            located, fetched[len(out_names) :], strict=True
        )
    ]
    del names
    return outputs, layers, info


def _run_tflite(path: str, names, arrays, per_layer: bool):
    """(outputs, intermediates) by LiteRT with every tensor preserved."""
    import warnings

    # LiteRT: an optional oracle; only this comparison needs it
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    with warnings.catch_warnings():  # "preserve_all_tensors is for debugging": it is here
        warnings.simplefilter("ignore")
        interpreter = Interpreter(
            model_path=path,
            experimental_preserve_all_tensors=True,
            # no XNNPACK: the delegate would replace the ops whose outputs are compared
            experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
        )
    interpreter.allocate_tensors()
    for detail, array in zip(interpreter.get_input_details(), arrays, strict=True):
        if tuple(detail["shape"]) != array.shape:
            interpreter.resize_tensor_input(detail["index"], array.shape)
    interpreter.allocate_tensors()
    for detail, array in zip(interpreter.get_input_details(), arrays, strict=True):
        interpreter.set_tensor(detail["index"], array)
    interpreter.invoke()
    outputs = [interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()]
    info = [(d["name"], d["name"]) for d in interpreter.get_output_details()]
    layers = []
    if per_layer:
        tensors = {d["index"]: d["name"] for d in interpreter.get_tensor_details()}
        for op in interpreter._get_ops_details():  # noqa: SLF001 - LiteRT's only op listing
            produced = [int(i) for i in op["outputs"] if int(i) >= 0]
            if not produced or op["op_name"] == "DELEGATE":
                continue
            where = tensors.get(produced[0], "")
            for position, index in enumerate(produced):
                try:
                    value = interpreter.get_tensor(index)
                except ValueError:  # a tensor LiteRT did not keep
                    continue
                layers.append(
                    SourceTensor(tensors.get(index, where), where, op["op_name"], value, position)
                )
    del names
    return outputs, layers, info


# --------------------------------------------------------------------------- mlconv side


def _mlconv_layers(module, arrays, input_shapes: str) -> dict[str, list[np.ndarray]]:
    """Every op's results by location, from the tpu reference interpreter of the module
    lowered by core-to-tpu-pipeline without its target passes (device-neutral tpu ops in
    core's NCHW layout) and without core-fuse: a fusion leaves the fused op at the location of
    one of its parts (Convolution+BatchNorm at the Convolution's), whose value is then the
    fused one. The outputs are compared on the whole pipeline."""

    lower_to_core(module)
    ctx = make_context()
    for stage in CoreToTpuPipeline(input_shapes=input_shapes).passes():
        if stage.name != "core-fuse":
            stage.apply(ctx, module)
    recorder = Recorder()
    run_module(module, arrays, recorder)
    return recorder.by_location()


def framework_of(path: str) -> str:
    if os.path.isdir(path):
        return "tf"
    if path.lower().endswith(".tflite"):
        return "tflite"
    if path.lower().endswith(".onnx"):
        return "onnx"
    raise OptionError(
        f"'{path}': --compare-with-source needs an .onnx file, a SavedModel folder or a .tflite file"
    )


RUNTIMES = {"onnx": "onnxruntime", "tf": "TensorFlow", "tflite": "LiteRT"}


def compare_with_source(
    model_path: str | os.PathLike,
    inputs: Mapping[str, np.ndarray] | Sequence[np.ndarray] | None = None,
    per_layer: bool = False,
    seed: int = 0,
    *,
    rtol: float = DEFAULT_RTOL,
    atol: float = DEFAULT_ATOL,
    device: str | None = None,
    **frontend_options: Any,
) -> SourceComparison:
    """Run `model_path` by its source framework's runtime and by mlconv on the same inputs
    (`inputs` by name or in order; seeded random ones of the declared shapes when None) and
    compare every output and, with `per_layer`, every intermediate tensor both sides have."""

    path = os.fspath(model_path)
    if not os.path.exists(path):
        raise OptionError(f"'{path}': no such file or directory")
    framework = framework_of(path)
    module = load_model(path, **frontend_options)
    names, arrays = make_inputs(module, inputs, seed)
    shapes = format_input_shapes({n: a.shape for n, a in zip(names, arrays, strict=True)})
    try:
        if framework == "onnx":
            source_outputs, source_layers, source_names = _run_onnx(path, names, arrays, per_layer)
        elif framework == "tf":
            source_outputs, source_layers, source_names = _run_tf(
                path, names, arrays, per_layer, frontend_options
            )
        else:
            source_outputs, source_layers, source_names = _run_tflite(
                path, names, arrays, per_layer
            )
    except MlconvError:
        raise
    except Exception as error:  # noqa: BLE001 - the runtime's own failure, reported on one line
        text = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise MlconvError(f"{RUNTIMES[framework]} cannot run the model: {text}") from None

    compiled = mlconv.compile(path, device=device, input_shapes=shapes, **frontend_options)
    ours = [np.asarray(r) for r in compiled(*arrays)]
    output_names = list(getattr(compiled, "output_names", None) or [])
    report = SourceComparison(path, framework, RUNTIMES[framework], rtol, atol)
    if len(ours) != len(source_outputs):
        raise MlconvError(
            f"mlconv gives {len(ours)} outputs, {RUNTIMES[framework]} {len(source_outputs)}"
        )
    for index, (mine, theirs) in enumerate(zip(ours, source_outputs, strict=True)):
        name, where = source_names[index] if index < len(source_names) else (None, None)
        name = output_names[index] if index < len(output_names) else name or f"output_{index}"
        theirs = np.asarray(theirs)
        lined_up = aligned(mine, theirs)
        if lined_up is None:
            raise MlconvError(
                f"output {name}: mlconv's shape {mine.shape} differs from "
                f"{RUNTIMES[framework]}'s {theirs.shape}"
            )
        report.outputs.append(
            _row(name, where or name, "output", lined_up, theirs, "output", rtol, atol)
        )
    if per_layer:
        by_location = _mlconv_layers(module, arrays, shapes)
        for tensor in source_layers:
            results = by_location.get(tensor.location)
            if results is None or tensor.output_index >= len(results):
                report.unmatched += 1
                continue
            reference = tensor.value
            if not np.issubdtype(reference.dtype, np.number) and reference.dtype != np.bool_:
                continue
            lined_up = aligned(results[tensor.output_index], reference)
            if lined_up is None:
                report.unmatched += 1
                continue
            report.layers.append(
                _row(tensor.name, tensor.location, tensor.op_type, lined_up, reference, "layer",
                     rtol, atol)
            )  # fmt: skip
    return report

"""mlconv-convert: convert a model for serving on TPUs, as the Cloud TPU Inference Converter does.

    mlconv-convert saved_model/ -o converted/ --converter-options-string '
        tpu_functions { function_alias: "tpu_func" }'
    mlconv-convert model.onnx -o converted/ --converter-options options.txtpb
    mlconv-run converted/ --inputs in.npz --outputs out.npz     # or mlconv.load("converted/")

The options are the seed's `ConverterOptions` text proto (converter/converter_options.proto). The
seed's own flag spellings (`--input_model_dir`, `--output_model_dir`,
`--converter_options_string`) are accepted too. Each step is one of mlconv's passes; one line
per phase with its time goes to stderr (`--quiet` silences it).

Placement: for a SavedModel, `tpu_functions` names the function to place (function_alias,
concrete_function_name, signature_name or jit_compile_functions; none: the `serving_default`
signature), checked as the seed's converter does (converter/placement.py: duplicates,
indirect calls between TPU functions, host-only ops); ONNX and TFLite models are placed whole.
bfloat16 (`tpu-bf16`, on by default as in the seed, with its scope, filterlist and safety
check) is applied to the TPU functions, then the IO shape optimization (`tpu-io-shapes`, on by
default too). The output is an artifact folder (converter/artifact.py)
holding the TPU functions as serialized jax.export modules with their weights, a manifest, and
OUTDIR/saved_model: the model as a SavedModel whose TPU functions are XlaCallModule ops
(converter/saved_model_writer.py), the host part around them left in TensorFlow.
The artifact holds that host part as well (`manifest["signatures"]`): each signature is split
into host stages around its TPU calls (converter/host_part_split.py), converted with tf-to-core
and core-to-tpu for the host's CPU (in bfloat16 too under `scope: ALL`), so that
`mlconv.load(OUTDIR).signatures[name]` and `mlconv-run OUTDIR` run it whole without
TensorFlow; a signature whose host part holds ops mlconv cannot lower (strings, ...) is
recorded with the reason and runs from OUTDIR/saved_model with TensorFlow.
With `xla_sharding_options` each TPU function is exported for the device mesh they describe
and partitioned by XLA SPMD (converter/sharding.py).
The conversion report (`tpu-report`: TPU cost per function from XLA's cost analysis, the host
part's cost from TensorFlow's shapes) goes to stderr with the progress lines and to
OUTDIR/conversion_report.txt.
Post-training quantization (`external_feature_configs { quantization_options { ... } }`,
mlconv's extension of the schema): static range calibrated on a representative dataset,
dynamic range or weight-only (mlconv.converter.calibration, core-quantize, tpu-quantize); its report
(accuracy against float on the calibration set) is appended to the conversion report and
written to OUTDIR/quantization_report.txt.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mlconv.errors import OptionError
from mlconv.tools.cli import ToolArgumentParser, run_tool

PROG = "mlconv-convert"
REPORT = "conversion_report.txt"
QUANTIZATION_REPORT = "quantization_report.txt"


def make_parser() -> ToolArgumentParser:
    parser = ToolArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    parser.add_argument("model", nargs="?", help="SavedModel folder, .onnx, .tflite or .mlir")
    parser.add_argument("--input_model_dir", dest="input_model_dir", help=argparse.SUPPRESS)
    parser.add_argument(
        "-o", "--output", "--output_model_dir", dest="output", help="artifact folder to write"
    )
    options = parser.add_mutually_exclusive_group()
    options.add_argument(
        "--converter-options-string",
        "--converter_options_string",
        dest="options_string",
        metavar="TEXT",
        help="ConverterOptions as a text proto",
    )
    options.add_argument(
        "--converter-options", dest="options_file", metavar="FILE", help="a file holding it"
    )
    parser.add_argument(
        "--input-shapes",
        default="",
        metavar="x:1,3,224,224;y:1,10",
        help="static shapes for inputs whose dims the model leaves dynamic",
    )
    parser.add_argument("--quiet", action="store_true", help="no per-phase progress lines")
    return parser


class Phases:
    """One line per phase with its time on stderr, and the times for the manifest."""

    def __init__(self, quiet: bool):
        self.quiet = quiet
        self.times: dict[str, float] = {}

    def run(self, name: str, step: Callable[[], Any]) -> Any:
        # lazy: the command starts (and --help answers) before JAX and the passes load
        from mlconv.passes.progress import PassProgress

        start = time.perf_counter()
        with PassProgress(None, name, self.quiet) as progress, progress.step(name):
            result = step()  # a live bar on a terminal while the phase runs
        elapsed = time.perf_counter() - start
        self.times[name] = round(elapsed, 4)
        if not self.quiet:
            print(f"{PROG}: {name:<28} {elapsed:8.2f} s", file=sys.stderr, flush=True)
        return result


def place(settings: Any, model: Path) -> tuple[list[dict[str, str]], list[str], dict[str, str]]:
    """From `tpu_functions`: the TF frontend's choice of each TPU function, their names, and
    (for a SavedModel) each one's concrete function name in saved_model.pb, checked by
    converter/placement.py (duplicates, indirect calls, host-only ops)."""
    functions = list(settings.tpu_functions)
    if not model.is_dir():
        if functions:
            raise OptionError(
                "tpu_functions: names functions of a SavedModel; an ONNX or TFLite model is "
                "placed on the TPU whole (leave tpu_functions out)"
            )
        return [{}], [], {}
    # lazy: the command starts (and --help answers) before JAX and the passes load
    from mlconv.converter.placement import place_tpu_functions

    placed = place_tpu_functions(model, functions)
    frontends = []
    for chosen in placed:
        if chosen.kind == "function_alias" and [p.label for p in placed].count(chosen.label) == 1:
            frontends.append({"alias": chosen.label})
        elif chosen.kind == "signature_name":
            frontends.append({"signature": chosen.label})
        else:
            frontends.append({"function": chosen.concrete_name})
    if not functions:
        return frontends, [], {"tpu_function_0": placed[0].concrete_name}
    names = [
        p.label if len({q.label for q in placed}) == len(placed) else p.concrete_name
        for p in placed
    ]
    return frontends, names, {n: p.concrete_name for n, p in zip(names, placed, strict=True)}


def merge_functions(modules: list[Any], names: list[str]) -> Any:
    """One module whose @main runs every TPU function side by side: its inputs and outputs are
    theirs in order, named `<function>.<name>` (several functions placed from one SavedModel;
    OUTDIR/saved_model keeps each where its callers call it)."""
    from xdsl.dialects import func
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.ir import Block

    # lazy: the command starts (and --help answers) before JAX and the passes load
    from mlconv.signature.main_function import main_function
    from mlconv.signature.module_io import find_main, value_names

    mains = [find_main(m) for m in modules]
    block = Block(arg_types=[a.type for m in mains for a in m.body.block.args])
    args = iter(block.args)
    returned, in_names, out_names = [], [], []
    for name, main in zip(names, mains, strict=True):
        body = main.body.block
        in_names += [f"{name}.{n}" for n in value_names(main.arg_attrs, len(body.args), "input")]
        for old in body.args:
            old.replace_all_uses_with(next(args))
        for op in list(body.ops):
            op.detach()
            if isinstance(op, func.ReturnOp):
                returned += list(op.operands)
                out_names += [
                    f"{name}.{n}" for n in value_names(main.res_attrs, len(op.operands), "output")
                ]
                op.operands = ()
                op.erase()
            else:
                block.add_op(op)
    block.add_op(func.ReturnOp(*returned))
    return ModuleOp([main_function(block, in_names, out_names)])


def host_part_cost(model: Path, placement: dict[str, str]) -> int:
    """The host part's cost: the SavedModel's signatures outside the TPU functions
    (frontends/tf_placement.host_cost); an ONNX or TFLite model is placed whole."""
    if not placement:
        return 0
    # lazy: the command starts (and --help answers) before JAX and the passes load
    from mlconv.converter.placement import Placed, host_cost

    return host_cost(model, [Placed(name, name, "", 0) for name in placement.values()])


def function_costs(module: Any, names: list[str]) -> dict[str, dict[str, int]]:
    """Each TPU function's cost (tpu-report's annotation), named as the artifact names it."""
    # lazy: the command starts (and --help answers) before JAX and the passes load
    from mlconv.converter.artifact import function_name
    from mlconv.dialects import tpu
    from mlconv.passes.tpu_report import cost_of

    regions = [r for r in module.walk() if isinstance(r, tpu.RegionOp) and cost_of(r)]
    return {function_name(names, i): cost_of(r) for i, r in enumerate(regions)}


def _input_names(module: Any) -> list[str]:
    # lazy: the command starts (and --help answers) before JAX and the passes load
    from mlconv.passes.core_to_tpu import input_name
    from mlconv.signature.module_io import find_main

    main = find_main(module)
    return [input_name(main, i) for i in range(len(main.body.block.args))]


def unsupported_options(settings: Any, explicit: Any) -> list[str]:
    """Optimizations the options ask for that this version does not perform: an explicit
    ENABLED (or a block of options) is refused; a DEFAULT one is listed in the manifest and on
    the progress lines."""
    del explicit  # every explicitly enabled optimization is performed now
    pending: list[str] = []
    return pending


def convert(
    model: str,
    output: str,
    options_text: str | None = None,
    options_file: str | None = None,
    input_shapes: str = "",
    quiet: bool = True,
) -> dict[str, Any]:
    """Convert `model` into the artifact folder `output`; returns its manifest."""
    # lazy: the command starts (and --help answers) before JAX and the passes load
    from mlconv.backends.specialize import needs_specialization
    from mlconv.converter.artifact import function_name, save_artifact
    from mlconv.converter.options import ConversionSettings, load_converter_options
    from mlconv.dialects import make_context
    from mlconv.frontends.load import format_input_shapes, load_model
    from mlconv.passes.core_infer_shapes import CoreInferShapesPass
    from mlconv.passes.core_to_tpu import input_name
    from mlconv.passes.pipelines import CoreToTpuPipeline, lower_to_core, run_passes
    from mlconv.passes.tpu_bf16 import TpuBf16Pass, check_filterlist
    from mlconv.passes.tpu_io_shapes import TpuIoShapesPass
    from mlconv.passes.tpu_report import TpuReportPass, format_report, work
    from mlconv.signature.module_io import find_main, value_inputs

    phases = Phases(quiet)
    options = phases.run(
        "parse options", lambda: load_converter_options(options_text, options_file)
    )
    settings = ConversionSettings.from_options(options)
    path = Path(model)
    frontends, names, placement = place(settings, path)
    pending = unsupported_options(settings, options)
    # lazy: the command starts (and --help answers) before JAX and the passes load
    from mlconv.converter.sharding import MeshSpec

    mesh = MeshSpec.from_options(settings.sharding) if settings.sharding is not None else None
    shapes = format_input_shapes(input_shapes)

    quantized: list[Any] = []  # one QuantizationReport per TPU function
    arity: dict[str, tuple[int, int]] = {}  # TPU function -> its numbers of inputs and outputs
    cores: dict[int, Any] = {}  # each function imported and lowered to core once

    def to_core(index: int, frontend: dict[str, str], label: str) -> Any:
        if index not in cores:
            module = phases.run(f"import{label}", lambda: load_model(model, **frontend))
            phases.run(f"lower to core{label}", lambda: lower_to_core(module))
            phases.run(
                f"infer shapes{label}",
                lambda: CoreInferShapesPass(input_shapes=shapes).apply(make_context(), module),
            )
            value_bound = value_inputs(find_main(module))
            if value_bound:
                main = find_main(module)
                names_ = ", ".join(f"'{input_name(main, i)}'" for i in value_bound)
                raise OptionError(
                    f"input {names_} decides a shape (its value reaches a static operand), "
                    "which one TPU program cannot serve: give --input-shapes with every "
                    "dimension static"
                )
            cores[index] = module
        return cores[index].clone()

    def to_tpu(
        index: int, frontend: dict[str, str], label: str, probe: list[list[int]] | None
    ) -> Any:
        module = to_core(index, frontend, label)
        if probe is not None:  # the dynamic dims at one probe size (backends/symbolic.py)
            main = find_main(module)
            at = ";".join(
                f"{input_name(main, i)}:{','.join(str(d) for d in dims)}"
                for i, dims in enumerate(probe)
            )
            CoreInferShapesPass(input_shapes=at).apply(make_context(), module)
        if needs_specialization(module):
            raise OptionError(
                "the model has inputs of dynamic shape, or inputs that decide shapes: give "
                "--input-shapes with every dimension static"
            )
        if settings.quantization is not None:
            # lazy: the command starts (and --help answers) before JAX and the passes load
            from mlconv.converter.calibration import quantize_for_tpu
            from mlconv.passes.pipelines import target_passes

            calibrate_on = None
            if probe is not None:  # calibrated at one row per call, alike at every probe
                calibrate_on = to_core(index, frontend, label)
                main = find_main(calibrate_on)
                dynamic = [a.type.get_shape()[0] < 0 for a in main.body.block.args]
                one_row = ";".join(
                    f"{input_name(main, i)}:"
                    + ",".join(str(d) for d in [1 if dynamic[i] else dims[0], *dims[1:]])
                    for i, dims in enumerate(probe)
                )
                CoreInferShapesPass(input_shapes=one_row).apply(make_context(), calibrate_on)
            quantized.append(
                phases.run(
                    f"quantize (core-quantize, tpu-quantize){label}",
                    lambda: quantize_for_tpu(
                        module, settings.quantization, calibrate_on=calibrate_on
                    ),
                )
            )
            phases.run(
                f"tpu target passes{label}", lambda: run_passes(target_passes("tpu"), module)
            )
        else:
            phases.run(
                f"place on tpu (core-to-tpu){label}",
                lambda: run_passes(CoreToTpuPipeline(device="tpu").after_inference(), module),
            )
        if settings.bfloat16:
            bf16 = TpuBf16Pass(
                filterlist=settings.bfloat16_filterlist,
                skip_safety_checks=settings.bfloat16_skip_safety_checks,
                scope=settings.bfloat16_scope.lower(),
            )
            phases.run(f"bfloat16 (tpu-bf16){label}", lambda: bf16.apply(make_context(), module))
        main = find_main(module)
        arity[function_name(names, len(arity))] = (
            len(main.body.block.args),
            len(main.function_type.outputs),
        )
        return module

    def build(probes: list[list[list[int]]] | None, label: str = "") -> Any:
        """The whole tpu-level module, the dynamic dims at `probes` (per function)."""
        arity.clear()
        quantized.clear()
        if len(frontends) == 1:
            module = to_tpu(0, frontends[0], label, probes[0] if probes else None)
        else:
            modules = [
                to_tpu(i, f, f" {n}{label}", probes[i] if probes else None)
                for i, (f, n) in enumerate(zip(frontends, names, strict=True))
            ]
            module = merge_functions(modules, names)
        if settings.batch_options:
            # lazy: the command starts (and --help answers) before JAX and the passes load
            from mlconv.passes.tpu_batch import batch_pass_for

            batch = batch_pass_for(settings.batch_options, path, names, placement)
            phases.run(f"batching (tpu-batch){label}", lambda: batch.apply(make_context(), module))
        if settings.io_shape_optimization:
            phases.run(
                f"io shapes (tpu-io-shapes){label}",
                lambda: TpuIoShapesPass().apply(make_context(), module),
            )
        return module

    for index, frontend in enumerate(frontends):
        to_core(index, frontend, f" {names[index]}" if len(frontends) > 1 else "")
    symbols, generalized = None, None
    arg_shapes = [
        [tuple(a.type.get_shape()) for a in find_main(cores[i]).body.block.args]
        for i in range(len(frontends))
    ]
    if any(d < 0 for shapes_ in arg_shapes for shape in shapes_ for d in shape):
        # lazy: the command starts (and --help answers) before JAX and the passes load
        from mlconv.backends.symbolic import Symbols, generalize

        flat = [shape for shapes_ in arg_shapes for shape in shapes_]
        symbols = Symbols.of(
            flat, [n for i in range(len(frontends)) for n in _input_names(cores[i])]
        )
        probes = symbols.probes()
        if settings.quantization is not None and set(symbols.names) != {"b"}:
            raise OptionError(
                "quantization_options: the model has dynamic dimensions other than the batch; "
                "quantization needs static input shapes there: give --input-shapes"
            )
        if mesh is not None:
            raise OptionError(
                "xla_sharding_options: the model has dynamic dimensions; sharding needs static "
                "input shapes here: give --input-shapes"
            )

        def per_function(probe: dict[str, int]) -> list[list[list[int]]]:
            at = iter(symbols.shapes_at(probe, flat))
            return [[next(at) for _ in shapes_] for shapes_ in arg_shapes]

        text = lambda probe: ", ".join(f"{s}={v}" for s, v in probe.items())  # noqa: E731
        modules = [build(per_function(p), f" at {text(p)}") for p in probes[1:]]
        module = build(per_function(probes[0]), f" at {text(probes[0])}")
        generalized = phases.run(
            "symbolic dims (generalize)", lambda: generalize([module, *modules], symbols, probes)
        )
    else:
        module = build(None)
    if settings.bfloat16 and settings.bfloat16_scope.lower() != "all":
        check_filterlist(module, settings.bfloat16_filterlist)
    phases.run("cost report (tpu-report)", lambda: TpuReportPass().apply(make_context(), module))
    cpu_cost = host_part_cost(path, placement)
    tpu_costs = function_costs(module, names)
    report = format_report({name: work(cost) for name, cost in tpu_costs.items()}, cpu_cost)
    if symbols is not None:
        at = ", ".join(f"{s} = {v}" for s, v in symbols.manifest()["report_at"].items())
        report += (
            f"Symbolic dimensions: {', '.join(symbols.names)} (one program serves every size); "
            f"costs above at {at}\n"
        )
    host = None
    if placement:  # a SavedModel: its signatures' host part
        scope_all = settings.bfloat16 and settings.bfloat16_scope.lower() == "all"
        host_bf16 = None
        if scope_all:
            host_bf16 = TpuBf16Pass(
                filterlist=settings.bfloat16_filterlist,
                skip_safety_checks=settings.bfloat16_skip_safety_checks,
                scope="all",
            )
        # lazy: the command starts (and --help answers) before JAX and the passes load
        from mlconv.converter.host_part_build import convert_host_part

        host = convert_host_part(
            path,
            {function_name([k], 0): v for k, v in placement.items()},
            arity,
            host_bf16,
            phases,
        )
    from google.protobuf import text_format

    texts = {}  # written inside the artifact, so their SHA-256s are recorded with the rest
    if quantized:
        report += "".join(q.format() for q in quantized)
        texts[QUANTIZATION_REPORT] = "".join(q.format() for q in quantized)
    texts[REPORT] = report
    manifest = phases.run(
        "export and write",
        lambda: save_artifact(
            module,
            output,
            options_text=text_format.MessageToString(options),
            source=str(path),
            function_names=names,
            placement=placement,
            sharding=mesh,
            host=host,
            symbolic=generalized,
            texts=texts,
            extra={
                "bfloat16": settings.bfloat16,
                "io_shape_optimization": settings.io_shape_optimization,
                "report": {"tpu": tpu_costs, "cpu": cpu_cost},
                "quantization": [q.to_dict() for q in quantized],
                "not_performed": pending,
                "phase_seconds": phases.times,
            },
        ),
    )
    if not quiet:
        print(report, end="", file=sys.stderr)
    if pending and not quiet:
        print(
            f"{PROG}: note: not performed (on by default in the seed, not implemented yet): "
            + ", ".join(pending),
            file=sys.stderr,
        )
    return manifest


def main(argv: list[str] | None = None) -> int:
    def body() -> int:
        args = make_parser().parse_args(argv)
        model = args.model or args.input_model_dir
        if model is None:
            raise OptionError("give the model to convert (a path, or --input_model_dir)")
        if args.model and args.input_model_dir:
            raise OptionError("give the model once: a path or --input_model_dir")
        if not args.output:
            raise OptionError("give the artifact folder to write with -o (or --output_model_dir)")
        if not Path(model).exists():
            raise OptionError(f"{model}: no such file or folder")
        convert(
            model,
            args.output,
            args.options_string,
            args.options_file,
            args.input_shapes,
            args.quiet,
        )
        return 0

    return run_tool(PROG, body)


if __name__ == "__main__":
    sys.exit(main())

"""mlconv-translate: model files <-> mlconv IR (MLIR's mlir-translate for mlconv).

    mlconv-translate --import-onnx model.onnx -o model.mlir
    mlconv-translate --import-onnx model.onnx --check       # every op that would fail to lower
    mlconv-translate --import-tf saved_model_dir --signature serving_default
    mlconv-translate --import-tflite model.tflite
    mlconv-translate --export-openvino model.mlir -o model.xml [--compress-to-fp16]
    mlconv-translate --import-openvino model.xml -o model.mlir

Translations are a table (`TRANSLATIONS`): a flag names a lazily imported function. To add one,
add an entry; imports take the model path (plus the options in `extra`) and return a ModuleOp,
exports take the parsed module and an output path they write to (and may write files beside it).
Exports run the registered pipelines (`core-to-openvino`, `core-to-tflite-pipeline`) before writing.
"""

from __future__ import annotations

import importlib
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mlconv.errors import MlconvError, OptionError, render
from mlconv.fileio import install, resolve_output
from mlconv.tools.cli import ToolArgumentParser, ToolFailure, atomic_output, run_tool

PROG = "mlconv-translate"


@dataclass(frozen=True)
class Translation:
    """One `--flag INPUT` translation: `module.function`, imported only when it is used."""

    flag: str
    module: str
    function: str
    help: str
    direction: str = "import"  # "import": model -> IR text; "export": IR text -> file(s)
    extra: tuple[str, ...] = field(default=())
    """Names of the tool's options passed on as keyword arguments (when given)."""
    printer: str | None = None
    """`module.function(module, stream)` printing the imported IR; default: generic + locations."""

    def load(self) -> Callable[..., Any]:
        try:
            module = importlib.import_module(self.module)
        except ModuleNotFoundError as error:
            if error.name and self.module.startswith(error.name):
                raise OptionError(
                    f"{self.flag} is not available yet ({self.module} is missing)"
                ) from None
            raise OptionError(
                f"{self.flag} needs the Python package '{error.name}', which is not installed"
            ) from None
        function = getattr(module, self.function, None)
        if function is None:
            raise OptionError(
                f"{self.flag} is not available yet ({self.module}.{self.function} is missing)"
            )
        return function


TRANSLATIONS: dict[str, Translation] = {
    t.flag: t
    for t in [
        Translation(
            "--import-onnx",
            "mlconv.frontends.onnx_importer",
            "import_onnx",
            "ONNX model file -> onnx dialect",
            printer="mlconv.frontends.onnx_importer.print_module",
        ),
        Translation(
            "--import-tf",
            "mlconv.frontends.tf_importer",
            "import_tf",
            "TensorFlow SavedModel folder (or GraphDef) -> tf dialect",
            extra=("signature", "alias", "function"),
        ),
        Translation(
            "--import-tflite",
            "mlconv.frontends.tflite_importer",
            "import_tflite",
            "TFLite flatbuffer -> tflite dialect",
        ),
        Translation(
            "--export-openvino",
            "mlconv.backends.openvino_ir",
            "export_openvino",
            "core-dialect IR -> OpenVINO IR (.xml + .bin beside it)",
            direction="export",
            extra=("compress_to_fp16",),
        ),
        Translation(
            "--import-openvino",
            "mlconv.backends.openvino_ir",
            "import_openvino",
            "OpenVINO IR .xml (+ .bin beside it) -> core dialect",
        ),
        Translation(
            "--export-tflite",
            "mlconv.backends.tflite_writer",
            "export_tflite",
            "core-dialect IR -> TFLite flatbuffer",
            direction="export",
        ),
        Translation(
            "--export-stablehlo",
            "mlconv.backends.jax_backend",
            "export_stablehlo",
            "tpu-dialect IR -> StableHLO text",
            direction="export",
        ),
    ]
}


def make_parser() -> ToolArgumentParser:
    parser = ToolArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    group = parser.add_mutually_exclusive_group(required=True)
    for translation in TRANSLATIONS.values():
        group.add_argument(
            translation.flag,
            dest="translation",
            action="store_const",
            const=translation.flag,
            help=translation.help,
        )
    parser.add_argument("input", help="model file or folder (imports), .mlir file (exports)")
    parser.add_argument("-o", "--output", help="output file (default: stdout for imports)")
    parser.add_argument("--signature", help="--import-tf: the signature to import")
    parser.add_argument("--alias", help="--import-tf: the function alias to import")
    parser.add_argument("--function", help="--import-tf: the concrete function to import")
    parser.add_argument(
        "--check",
        action="store_true",
        help="imports: lower a copy to core and tpu ops as a dry run; report every op that "
        "would fail (exit 1) instead of printing the IR",
    )
    parser.add_argument(
        "--compress-to-fp16",
        action="store_true",
        help="--export-openvino: store f32 weights as f16 (decompressed when the model loads)",
    )
    parser.add_argument("--allow-unregistered-dialect", action="store_true")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress display")
    return parser


def _call_frontend(function: Callable[..., Any], path: str, kwargs: dict[str, Any]) -> Any:
    try:
        return function(path, **kwargs)
    except (MlconvError, OSError):
        raise
    except Exception as error:
        if os.environ.get("MLCONV_DEBUG"):
            raise
        lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
        detail = f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__
        raise MlconvError(f"cannot import the model: {detail}") from None


def _print_module(translation: Translation, module: Any, stream: Any) -> None:
    """Print with the frontend's own `print_module`, else the ONNX importer's (locations and
    resources), else xDSL's printer with locations."""
    candidates = [translation.printer] if translation.printer else []
    candidates += [
        f"{translation.module}.print_module",
        "mlconv.frontends.onnx_importer.print_module",
    ]
    for candidate in candidates:
        module_name, _, function = candidate.rpartition(".")
        try:
            printer = getattr(importlib.import_module(module_name), function, None)
        except ImportError:
            printer = None
        if printer is not None:
            printer(module, stream)
            return
    from xdsl.printer import Printer

    Printer(stream=stream, print_debuginfo=True).print_op(module)
    stream.write("\n")


def _import(args: Any, translation: Translation, path: str) -> int:
    function = translation.load()
    kwargs = {name: getattr(args, name) for name in translation.extra}
    if not os.path.exists(args.input):
        raise ToolFailure([f"{path}: error: no such file or directory"])
    # lazy: the command starts (and --help answers) before JAX and the passes load
    from mlconv.passes.progress import PassProgress

    with PassProgress(2, PROG, args.quiet) as progress:
        with progress.step(f"import {os.path.basename(path)}"):
            module = _call_frontend(function, args.input, kwargs)
        if args.check:
            # lazy: the command starts (and --help answers) before JAX and the passes load
            from mlconv.passes.dry_run import describe, dry_run

            with progress.step("dry run to core and tpu"):
                lines = describe(dry_run(module), path)
            if lines:
                raise ToolFailure(lines)
            return 0
        with progress.step("print"), atomic_output(args.output) as stream:
            _print_module(translation, module, stream)
    return 0


def _export(args: Any, translation: Translation, path: str) -> int:
    # lazy: the command starts (and --help answers) before JAX and the passes load
    from mlconv.tools.mlconv_opt import Chunk, Options, parse_and_verify, read_input

    function = translation.load()
    if not args.output or args.output == "-":
        raise OptionError(f"{translation.flag} needs -o OUTPUT")
    # lazy: the command starts (and --help answers) before JAX and the passes load
    from mlconv.passes.progress import PassProgress

    options = Options(path=path, passes=[], allow_unregistered=args.allow_unregistered_dialect)
    with PassProgress(2, PROG, args.quiet) as progress, progress.step("parse and verify"):
        module, errors = parse_and_verify(Chunk(read_input(args.input), 1), options)
    if module is None:
        raise ToolFailure([errors[0].render(path)])
    # The exporter writes into a fresh folder beside the output; its files are moved into
    # place only once it has succeeded (OpenVINO writes a .bin beside the .xml), each by the
    # rules of mlconv.fileio (/dev/null and FIFOs are written into, never replaced).
    destination = os.path.dirname(os.path.abspath(args.output))
    target, in_place = resolve_output(args.output)
    beside = None if in_place else os.path.dirname(os.path.abspath(target))
    staging = tempfile.mkdtemp(prefix=".mlconv-translate.", dir=beside)
    try:
        kwargs = {name: getattr(args, name) for name in translation.extra if getattr(args, name)}
        output = os.path.basename(args.output)
        function(module, os.path.join(staging, output), **kwargs)
        for name in os.listdir(staging):
            final = args.output if name == output else os.path.join(destination, name)
            install(os.path.join(staging, name), final)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return 0


def _run(argv: list[str] | None) -> int:
    # lazy: the command starts (and --help answers) before JAX and the passes load
    from mlconv import plugins

    args = make_parser().parse_args(argv)
    plugins.load()  # installed plugins' importers, lowerings and dialects (a PluginError: 1 line)
    translation = TRANSLATIONS[args.translation]
    path = args.input
    if args.check and translation.direction != "import":
        raise OptionError("--check goes with --import-onnx, --import-tf or --import-tflite")
    for name in ("signature", "alias", "function"):
        if getattr(args, name) is not None and name not in translation.extra:
            raise OptionError(f"--{name} goes with --import-tf")
    if args.compress_to_fp16 and "compress_to_fp16" not in translation.extra:
        raise OptionError("--compress-to-fp16 goes with --export-openvino")
    try:
        if translation.direction == "import":
            return _import(args, translation, path)
        return _export(args, translation, path)
    except MlconvError as error:
        if isinstance(error, OptionError) and not error.location:
            raise ToolFailure([error.render(PROG)]) from None
        raise ToolFailure([render(error, path)]) from None
    except OSError as error:
        raise ToolFailure([f"{error.filename or path}: error: {error.strerror or error}"]) from None


def main(argv: list[str] | None = None) -> int:
    return run_tool(PROG, lambda: _run(argv))


if __name__ == "__main__":
    sys.exit(main())

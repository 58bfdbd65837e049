"""mlconv-opt: parse textual IR, run a pass pipeline, verify, print (MLIR's mlir-opt for mlconv).

    mlconv-opt in.mlir --pass-pipeline='builtin.module(onnx-to-core,core-infer-shapes)' -o out.mlir
    mlconv-opt in.mlir -p cse,canonicalize --split-input-file
    mlconv-opt invalid.mlir --split-input-file --verify-diagnostics
    mlconv-opt model.mlir -p onnx-to-tpu --check-numerics=1e-4,1e-5 --inputs in.npz

Every parsed op without an explicit `loc(...)` gets the `FileLineColLoc` of its first token, as
in MLIR, so verifier errors and pass failures point at the line they concern
(`--mlir-print-debuginfo` shows these locations). `--verify-diagnostics` checks the errors
against `// expected-error {{...}}` annotations (`@below`, `@above`, `@+N`, `@-N`).
"""

from __future__ import annotations

import bisect
import re
import sys
import time
from dataclasses import dataclass, field
from io import StringIO

from xdsl.context import Context
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, NameLoc, StringAttr, UnknownLoc
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.passes import ModulePass
from xdsl.printer import Printer
from xdsl.utils.exceptions import ParseError

from mlconv.errors import MlconvError, OptionError
from mlconv.tools.cli import (
    ToolArgumentParser,
    ToolFailure,
    atomic_output,
    format_parse_error,
    run_tool,
)

PROG = "mlconv-opt"
SPLIT_MARKER = "// -----"


# --------------------------------------------------------------------------- diagnostics


@dataclass
class Diagnostic:
    """One error produced while processing the input, at a line of it where one is known."""

    message: str
    line: int | None = None
    column: int | None = None
    rendered: str | None = None
    """The full report when it is not `path:line:col: error: message` (parse errors, names)."""

    def render(self, path: str) -> str:
        if self.rendered is not None:
            return self.rendered
        if self.line is None:
            return f"{path}: error: {self.message}"
        return f"{path}:{self.line}:{self.column or 1}: error: {self.message}"


_FILE_LOC = re.compile(r'^"(?P<file>.*)":(?P<line>\d+):(?P<col>\d+)$')


class LocatingParser(Parser):
    """A Parser that gives each op lacking a `loc(...)` the FileLineColLoc of its first token,
    and remembers the line of each op that has a NameLoc (to place errors that name it)."""

    def __init__(self, ctx: Context, text: str, filename: str):
        super().__init__(ctx, text, filename)
        self.filename = StringAttr(filename)
        self.newlines = [m.start() for m in re.finditer("\n", text)]
        self.name_lines: dict[str, tuple[int, int]] = {}
        self.text = text

    def line_col(self, position: int) -> tuple[int, int]:
        index = bisect.bisect_left(self.newlines, position)
        line_start = self.newlines[index - 1] + 1 if index else 0
        return index + 1, position - line_start + 1

    def parse_operation(self) -> Operation:
        start = self._current_token.span.start
        op = super().parse_operation()
        line, column = self.line_col(start)
        explicit = self.text[start : self._current_token.span.start].rstrip()
        if isinstance(op.location, UnknownLoc) and not explicit.endswith("loc(unknown)"):
            # An op printed with `loc(unknown)` keeps it: printed IR parses back identically.
            op.location = FileLineColLoc(self.filename, IntAttr(line), IntAttr(column))
        elif isinstance(op.location, NameLoc):
            self.name_lines.setdefault(op.location.desc.data, (line, column))
        return op


def op_position(op: Operation | None) -> tuple[int | None, int | None]:
    if op is not None and isinstance(op.location, FileLineColLoc):
        return op.location.line.data, op.location.column.data
    return None, None


def verifier_errors(module: ModuleOp) -> list[tuple[Operation | None, str]]:
    """Every op that fails to verify with its message; empty when the module verifies."""
    try:
        module.verify()
        return []
    except Exception as error:  # noqa: BLE001 - verifiers raise more than VerifyException
        first = error
    errors: list[tuple[Operation | None, str]] = []
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
        except Exception as error:  # noqa: BLE001
            errors.append((op, _first_line(error)))
    return errors or [(None, _first_line(first))]


def _first_line(error: BaseException) -> str:
    """The error's message on one line (xDSL's constraint messages span several)."""
    lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
    return " ".join(lines) if lines else type(error).__name__


def _op_message(op: Operation | None, message: str) -> str:
    return f"'{op.name}' op {message}" if op is not None else message


# --------------------------------------------------------------------------- input chunks


@dataclass
class Chunk:
    """A piece of the input; `text` is padded with newlines so positions are file positions."""

    text: str
    first_line: int

    @property
    def is_empty(self) -> bool:
        for line in self.text.splitlines():
            stripped = line.strip()
            if stripped and not stripped.startswith("//"):
                return False
        return True


def split_input(text: str, split: bool) -> list[Chunk]:
    """The input as one chunk, or split at lines starting with `// -----` as MLIR does."""
    if not split:
        return [Chunk(text, 1)]
    chunks: list[Chunk] = []
    current: list[str] = []
    first = 1
    for number, line in enumerate(text.split("\n"), start=1):
        if line.lstrip().startswith(SPLIT_MARKER):
            chunks.append(Chunk("\n" * (first - 1) + "\n".join(current), first))
            current, first = [], number + 1
        else:
            current.append(line)
    chunks.append(Chunk("\n" * (first - 1) + "\n".join(current), first))
    return chunks


# --------------------------------------------------------------------------- expectations

_EXPECTED = re.compile(
    r"//\s*expected-(?P<kind>error|warning|remark|note)(?P<re>-re)?"
    r"\s*(?:@(?P<where>above|below|[+-]\d+))?\s*\{\{(?P<message>.*)\}\}"
)


@dataclass
class Expected:
    kind: str
    message: str
    line: int
    annotation_line: int
    matched: bool = field(default=False)


def parse_expectations(text: str) -> list[Expected]:
    lines = text.split("\n")
    designator = [("expected-" in line and _EXPECTED.search(line) is not None) for line in lines]
    expectations: list[Expected] = []
    for index, line in enumerate(lines):
        match = _EXPECTED.search(line)
        if match is None:
            continue
        where = match["where"]
        target = index
        if where == "below":
            target = index + 1
            while target < len(lines) and designator[target]:
                target += 1
        elif where == "above":
            target = index - 1
            while target >= 0 and designator[target]:
                target -= 1
        elif where:
            target = index + int(where)
        kind = match["kind"] + (match["re"] or "")
        expectations.append(Expected(kind, match["message"], target + 1, index + 1))
    return expectations


def _message_matches(expected: Expected, message: str) -> bool:
    if expected.kind.endswith("-re"):
        parts = re.split(r"\{\{(.*?)\}\}", expected.message)
        pattern = "".join(re.escape(p) if i % 2 == 0 else f"(?:{p})" for i, p in enumerate(parts))
        return re.search(pattern, message) is not None
    return expected.message in message


def check_expectations(
    path: str, expectations: list[Expected], diagnostics: list[Diagnostic]
) -> list[str]:
    """The lines to report: unexpected errors and expected ones that did not occur."""
    report: list[str] = []
    for diagnostic in diagnostics:
        for expected in expectations:
            if (
                not expected.matched
                and expected.kind.startswith("error")
                and expected.line == diagnostic.line
                and _message_matches(expected, diagnostic.message)
            ):
                expected.matched = True
                break
        else:
            where = (
                f"{path}:{diagnostic.line}:{diagnostic.column or 1}" if diagnostic.line else path
            )
            report.append(f"{where}: error: unexpected error: {diagnostic.message}")
    for expected in expectations:
        if not expected.matched:
            report.append(
                f"{path}:{expected.annotation_line}: error: expected {expected.kind} "
                f'"{expected.message}" was not produced (at line {expected.line})'
            )
    return report


# --------------------------------------------------------------------------- processing


@dataclass
class Options:
    path: str
    passes: list[ModulePass]
    allow_unregistered: bool = False
    print_ir_after_all: bool = False
    debuginfo: bool = False
    timing: Timing | None = None
    check_numerics: tuple[float, float] | None = None
    """(rtol, atol): run the IR after every pass and report the first that changes the numbers."""
    inputs: dict | None = None
    quiet: bool = False


class Timing:
    """Wall time per step (parse, each pass and a pipeline's stages, verify, print), printed
    as mlir-opt's `-mlir-timing` report."""

    def __init__(self) -> None:
        self.entries: dict[tuple[int, str], float] = {}

    def add(self, name: str, seconds: float, depth: int = 0) -> None:
        self.entries[(depth, name)] = self.entries.get((depth, name), 0.0) + seconds

    def report(self) -> str:
        total = sum(s for (depth, _), s in self.entries.items() if depth == 0) or 1e-12
        rule = "===" + "-" * 73 + "==="
        lines = [
            rule,
            "Execution time report".center(79),
            rule,
            f"  Total Execution Time: {total:.4f} seconds",
            "",
            "  ----Wall Time----  ----Name----",
        ]
        for (depth, name), seconds in self.entries.items():
            lines.append(f"  {seconds:8.4f} ({100 * seconds / total:5.1f}%)  {'  ' * depth}{name}")
        lines.append(f"  {total:8.4f} (100.0%)  Total")
        return "\n".join(lines) + "\n"


def _mlconv_diagnostic(error: MlconvError, path: str, parser: LocatingParser) -> Diagnostic:
    location = error.location or ""
    if match := _FILE_LOC.match(location):
        return Diagnostic(error.message, int(match["line"]), int(match["col"]))
    if location in parser.name_lines:
        line, column = parser.name_lines[location]
        return Diagnostic(error.message, line, column, rendered=error.render(path))
    return Diagnostic(error.message, rendered=error.render(path))


def _dump_after(pass_: ModulePass, module: ModuleOp, options: Options, ctx: Context) -> None:
    title = f"// -----// IR Dump After {type(pass_).__name__} ({pass_.name}) //----- //"
    print(title, file=sys.stderr)
    print(print_module(module, ctx, options.debuginfo), file=sys.stderr)


def print_module(module: ModuleOp, ctx: Context, debuginfo: bool = False) -> str:
    stream = StringIO()
    printer = Printer(stream=stream, print_debuginfo=debuginfo)
    printer.print_op(module)
    printer.print_metadata(ctx.loaded_dialects)
    stream.write("\n")
    return stream.getvalue()


def verify_module(module: ModuleOp) -> list[Diagnostic]:
    """The verifier errors of `module`, each at its op's line."""
    return [
        Diagnostic(_op_message(op, message), *op_position(op))
        for op, message in verifier_errors(module)
    ]


def parse_chunk(
    chunk: Chunk, options: Options
) -> tuple[Context, LocatingParser, ModuleOp | None, list[Diagnostic]]:
    """Parse one chunk into a verified module (None and the errors when it cannot)."""
    # lazy: the command starts (and --help answers) before JAX and the passes load
    from mlconv.dialects import make_context

    ctx = make_context(allow_unregistered=options.allow_unregistered)
    parser = LocatingParser(ctx, chunk.text, options.path)
    if chunk.is_empty:
        return ctx, parser, ModuleOp([]), []
    try:
        module = parser.parse_module()
    except ParseError as error:
        location = error.span.get_location()
        rendered = format_parse_error(error, options.path)
        return ctx, parser, None, [Diagnostic(error.msg, location.line, location.col, rendered)]
    except MlconvError as error:
        return ctx, parser, None, [_mlconv_diagnostic(error, options.path, parser)]
    if errors := verify_module(module):
        return ctx, parser, None, errors
    return ctx, parser, module, []


def parse_and_verify(chunk: Chunk, options: Options) -> tuple[ModuleOp | None, list[Diagnostic]]:
    """For other tools: the verified module of a text, or None and its errors."""
    _, _, module, errors = parse_chunk(chunk, options)
    return module, errors


def process_chunk(chunk: Chunk, options: Options) -> tuple[str | None, list[Diagnostic]]:
    """Parse, verify, run the passes (verifying after each) and print one chunk."""
    timing = options.timing
    start = time.perf_counter()
    ctx, parser, module, errors = parse_chunk(chunk, options)
    if timing:
        timing.add("parse and verify input", time.perf_counter() - start)
    if module is None:
        return None, errors

    def verify() -> list[Diagnostic]:
        start = time.perf_counter()
        found = verify_module(module)
        if timing:
            timing.add("verify", time.perf_counter() - start)
        return found

    def apply(pass_: ModulePass) -> None:
        start = time.perf_counter()
        stages = pass_.passes() if timing and hasattr(pass_, "passes") else None
        if stages is not None:
            timing.add(pass_.name, 0.0)  # the pipeline's line before its stages'
        if stages is None:
            pass_.apply(ctx, module)
        for stage in stages or ():  # a pipeline: one line per stage, nested
            stage_start = time.perf_counter()
            stage.apply(ctx, module)
            timing.add(stage.name, time.perf_counter() - stage_start, depth=1)
        if timing:
            timing.add(pass_.name, time.perf_counter() - start)

    if options.check_numerics is not None:
        return _check_numerics(module, ctx, parser, options)

    # lazy: the command starts (and --help answers) before JAX and the passes load
    from mlconv.passes.progress import PassProgress

    progress = PassProgress(len(options.passes), PROG, options.quiet).__enter__()
    for pass_ in options.passes:
        try:
            with progress.step(pass_.name):
                apply(pass_)
        except MlconvError as error:
            progress.__exit__(None, None, None)
            return None, [_mlconv_diagnostic(error, options.path, parser)]
        except Exception as error:
            progress.__exit__(None, None, None)
            from xdsl.utils.exceptions import DiagnosticException

            if not isinstance(error, DiagnosticException):
                import os

                if os.environ.get("MLCONV_DEBUG"):
                    raise
                message = f"internal error in pass '{pass_.name}': {type(error).__name__}: "
                return None, [Diagnostic(message + _first_line(error))]
            return None, [Diagnostic(f"pass '{pass_.name}' failed: {_first_line(error)}")]
        if errors := verify():
            return None, [
                Diagnostic(f"{e.message} (after pass '{pass_.name}')", e.line, e.column)
                for e in errors
            ]
        if options.print_ir_after_all:
            _dump_after(pass_, module, options, ctx)
    progress.__exit__(None, None, None)
    start = time.perf_counter()
    text = print_module(module, ctx, options.debuginfo)
    if timing:
        timing.add("print output", time.perf_counter() - start)
    return text, []


def _check_numerics(
    module: ModuleOp, ctx: Context, parser: LocatingParser, options: Options
) -> tuple[str | None, list[Diagnostic]]:
    """Run the passes, interpreting the IR after each (`--check-numerics`); the report goes to
    stderr and a divergence is an error at the first differing op."""
    # lazy: the command starts (and --help answers) before JAX and the passes load
    from mlconv.interpreters.check_numerics import NumericsDivergence, check_numerics
    from mlconv.passes.progress import PassProgress

    rtol, atol = options.check_numerics
    try:
        with PassProgress(len(options.passes), PROG, options.quiet) as progress:
            report = check_numerics(
                module,
                options.passes,
                options.inputs,
                rtol=rtol,
                atol=atol,
                ctx=ctx,
                on_pass=lambda p: progress.step(p.name).__enter__(),
            )
    except MlconvError as error:
        return None, [_mlconv_diagnostic(error, options.path, parser)]
    sys.stderr.write(f"{options.path}: numerics after every pass:\n{report.format()}")
    if errors := verify_module(module):
        return None, errors
    text = print_module(module, ctx, options.debuginfo)
    if report.ok:
        return text, []
    where = report.first_op.location if report.first_op else None
    return text, [
        _mlconv_diagnostic(NumericsDivergence(report.message(), where), options.path, parser)
    ]


# --------------------------------------------------------------------------- the tool


def make_parser() -> ToolArgumentParser:
    parser = ToolArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    parser.add_argument("input", nargs="?", default="-", help="input .mlir file, or - for stdin")
    parser.add_argument("--pass-pipeline", help="e.g. 'builtin.module(cse,canonicalize)'")
    parser.add_argument("-p", "--passes", help="flat pass list, e.g. 'cse,canonicalize'")
    parser.add_argument("-o", "--output", help="output file (default: stdout)")
    parser.add_argument("--print-ir-after-all", action="store_true")
    parser.add_argument("--split-input-file", action="store_true")
    parser.add_argument("--verify-diagnostics", action="store_true")
    parser.add_argument("--mlir-print-debuginfo", action="store_true")
    parser.add_argument("--allow-unregistered-dialect", action="store_true")
    parser.add_argument("--list-passes", action="store_true")
    parser.add_argument(
        "--list-plugins", action="store_true", help="what each installed plugin added"
    )
    parser.add_argument(
        "--check-numerics", nargs="?", const="", default=None, metavar="RTOL,ATOL",
        help="run the IR before and after every pass by its level's interpreter on the same "
        "inputs; report the first pass whose outputs diverge and its first differing op",
    )  # fmt: skip
    parser.add_argument(
        "--inputs", metavar="IN.npz",
        help="inputs for --check-numerics (default: seeded random ones of @main's types)",
    )  # fmt: skip
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress display")
    parser.add_argument(
        "--timing", "--mlir-timing", action="store_true",
        help="print the wall time of parsing, each pass (a pipeline's stages nested), verifying and printing to stderr",
    )  # fmt: skip
    return parser


def list_passes() -> str:
    # lazy: the command starts (and --help answers) before JAX and the passes load
    from mlconv import plugins
    from mlconv.passes import PASSES, PIPELINES

    plugins.load()
    lines = []
    for title, registry in (("Passes", PASSES), ("Pipelines", PIPELINES)):
        lines.append(f"{title}:")
        for name in sorted(registry):
            try:
                doc = (registry[name]().__doc__ or "").strip().split("\n")[0]
            except Exception as error:  # noqa: BLE001 - a pass not written yet
                doc = f"(unavailable: {type(error).__name__})"
            lines.append(f"  {name:<24} {doc}")
    return "\n".join(lines) + "\n"


def read_input(path: str) -> str:
    data = sys.stdin.buffer.read() if path == "-" else open(path, "rb").read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise MlconvError("input is not UTF-8 text (is it a binary model file?)") from None


def _run(argv: list[str] | None) -> int:
    # lazy: the command starts (and --help answers) before JAX and the passes load
    from mlconv.passes.pipeline_spec import parse_pass_pipeline

    args = make_parser().parse_args(argv)
    if args.list_passes:
        sys.stdout.write(list_passes())
        return 0
    if args.list_plugins:
        # lazy: the command starts (and --help answers) before JAX and the passes load
        from mlconv import plugins

        sys.stdout.write(plugins.describe())
        return 0
    if args.pass_pipeline is not None and args.passes is not None:
        raise OptionError("give either --pass-pipeline or -p, not both")
    try:
        passes = parse_pass_pipeline(args.pass_pipeline or args.passes or "")
    except MlconvError as error:
        raise ToolFailure([error.render(PROG)]) from None
    path = "<stdin>" if args.input == "-" else args.input
    try:
        text = read_input(args.input)
    except OSError as error:
        raise ToolFailure([f"{path}: error: {error.strerror or error}"]) from None
    except MlconvError as error:
        raise ToolFailure([error.render(path)]) from None

    check = None
    inputs = None
    if args.check_numerics is not None:
        # lazy: the command starts (and --help answers) before JAX and the passes load
        from mlconv.interpreters.check_numerics import parse_tolerances

        check = parse_tolerances(args.check_numerics)
        if args.inputs:
            # lazy: the command starts (and --help answers) before JAX and the passes load
            from mlconv.tools.mlconv_run import read_inputs

            inputs = read_inputs(args.inputs)
    elif args.inputs:
        raise OptionError("--inputs is for --check-numerics")
    options = Options(
        path=path,
        passes=passes,
        allow_unregistered=args.allow_unregistered_dialect,
        print_ir_after_all=args.print_ir_after_all,
        debuginfo=args.mlir_print_debuginfo,
        timing=Timing() if args.timing else None,
        check_numerics=check,
        inputs=inputs,
        quiet=args.quiet,
    )
    outputs: list[str] = []
    diagnostics: list[Diagnostic] = []
    for chunk in split_input(text, args.split_input_file):
        output, errors = process_chunk(chunk, options)
        if output is not None:
            outputs.append(output)
        # Without --verify-diagnostics, one error per chunk: the first is the one to fix.
        diagnostics.extend(errors if args.verify_diagnostics else errors[:1])

    if args.verify_diagnostics:
        report = check_expectations(path, parse_expectations(text), diagnostics)
    else:
        report = [d.render(path) for d in diagnostics]
    failed = bool(report)
    if not (failed and args.output):
        with atomic_output(args.output) as stream:
            stream.write(f"{SPLIT_MARKER}\n".join(outputs))
            stream.flush()
    for line in report:
        print(line, file=sys.stderr)
    if options.timing:
        sys.stderr.write(options.timing.report())
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    return run_tool(PROG, lambda: _run(argv))


if __name__ == "__main__":
    sys.exit(main())

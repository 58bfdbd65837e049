"""ConverterOptions: the TPU Inference Converter's options (seed 003), as a text proto.

    options = parse_converter_options('tpu_functions { function_alias: "tpu_func" }')
    settings = ConversionSettings.from_options(options)

The schema is `converter_options.proto` beside this file, the seed's messages, field numbers,
enums and oneofs unchanged; `converter_options_pb2.py` is protoc's output for it, checked in so
that running mlconv needs only the `protobuf` runtime. Text is parsed by protobuf's own
`text_format`; its errors, and the checks protobuf cannot express (the rules the seed states in
its comments), become one-line `OptionError`s that name the field path, e.g.
`batch_options[0].allowed_batch_sizes: the last entry (4) must equal max_batch_size (8)`.

Bounds (the same as an artifact's manifest is held to, converter/batcher.py): `num_batch_threads`
at most 256 (each is an OS thread), `max_batch_size` and every allowed batch size at most 65536
(a padded batch is that many rows in memory, one executable per size), `batch_timeout_micros`
at most one minute, `max_enqueued_batches` at most 100 000. An enum field holding a number the
schema does not name (`scope: 9`, `io_shape_optimization: -5`: proto3 text accepts them) is
refused, as is an empty bfloat16 filterlist entry; an options file must be UTF-8 text of at
most 16 MiB.

`python -m mlconv.converter.options --regenerate` rewrites the _pb2 module with
grpcio-tools' protoc (a dev dependency); a test checks that the checked-in module is current.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from google.protobuf import text_format

from mlconv.converter import converter_options_pb2
from mlconv.converter.batcher import (
    MAX_BATCH_SIZE,
    MAX_BATCH_THREADS,
    MAX_BATCH_TIMEOUT_MICROS,
    MAX_ENQUEUED_BATCHES,
)
from mlconv.errors import OptionError

MAX_OPTIONS_BYTES = 16 << 20
PROTO = Path(__file__).with_name("converter_options.proto")
GENERATED = Path(__file__).with_name("converter_options_pb2.py")


def schema():
    """The generated module (ConverterOptions, TpuFunction, BatchOptions, ...)."""

    return converter_options_pb2


# --------------------------------------------------------------------------- parsing


def seed_spellings(text: str) -> str:
    """The text with the seed's own spellings made text proto, line and column kept: a shell
    line continuation (a backslash ending a line, which a single-quoted shell string keeps, as
    in the seed's quantization example) is a space, and `name=value` at the start of a line (its
    "updating existing batch options" example: `disable_default_optimizations=True`) is
    `name: value`."""
    text = re.sub(r"\\(?=\r?\n|$)", " ", text)
    return re.sub(r"(?m)^(\s*[A-Za-z_]\w*)\s*=(?!=)", r"\1:", text)


def parse_converter_options(text: str, source: str = "converter options"):
    """A validated `ConverterOptions` message from its text form (`seed_spellings` first)."""
    message = schema().ConverterOptions()
    text = seed_spellings(text)
    try:
        text_format.Parse(text, message)
    except text_format.ParseError as error:
        raise OptionError(_describe_parse_error(text, error, source)) from None
    validate(message, source)
    return message


def _describe_parse_error(text: str, error: text_format.ParseError, source: str) -> str:
    line, column = error.GetLine(), error.GetColumn()
    message = str(error)
    prefix = f"{line}:{column} : "
    if message.startswith(prefix):
        message = message[len(prefix) :]
    # text_format repeats the offending line in quotes before the reason: keep the reason.
    if message.startswith("'") and "': " in message:
        message = message.split("': ", 1)[1]
    path = field_path_at(text, line, column)
    where = f"{source}:{line}:{column}"
    return f"{where}: {path}: {message}" if path else f"{where}: {message}"


def field_path_at(text: str, line: int, column: int) -> str:
    """The dotted path (`batch_options[0].experimental`) of the field being parsed at
    (line, column), both 1-based as text_format reports them, tokenized by protobuf."""
    tokenizer = text_format.Tokenizer(text.splitlines())
    stack: list[str] = []
    counts: list[dict[str, int]] = [{}]
    last_name: str | None = None
    while not tokenizer.AtEnd():
        position = (tokenizer._line + 1, tokenizer._column + 1)  # noqa: SLF001
        if position > (line, column):
            break
        token = tokenizer.token
        if position == (line, column):
            if _is_identifier(token) and not _after_colon(tokenizer):
                last_name = token  # an unknown field name: the error is about it
            break
        if token in ("{", "<"):
            name = last_name or "?"
            index = counts[-1].get(name, 0)
            counts[-1][name] = index + 1
            stack.append(f"{name}[{index}]" if _is_repeated(stack, name) else name)
            counts.append({})
            last_name = None
        elif token in ("}", ">"):
            if stack:
                stack.pop()
                counts.pop()
            last_name = None
        elif _is_identifier(token):
            # A field name when followed by ':' or '{'; an enum value or bool otherwise.
            if last_name is None or not _after_colon(tokenizer):
                last_name = token
        try:
            tokenizer.NextToken()
        except text_format.ParseError:
            break
    return ".".join([*stack, last_name] if last_name else stack)


def _is_identifier(token: str) -> bool:
    return token[:1].isalpha() or token[:1] == "_"


def _after_colon(tokenizer: text_format.Tokenizer) -> bool:
    """Whether the current identifier is a value (`field: VALUE`), looking at the line."""
    before = tokenizer._current_line[: tokenizer._column].rstrip()  # noqa: SLF001
    return before.endswith(":")


def _is_repeated(stack: list[str], name: str) -> bool:
    descriptor = schema().ConverterOptions.DESCRIPTOR
    for part in stack:
        field_descriptor = descriptor.fields_by_name.get(part.split("[")[0])
        if field_descriptor is None or field_descriptor.message_type is None:
            return False
        descriptor = field_descriptor.message_type
    found = descriptor.fields_by_name.get(name)
    return found is not None and found.is_repeated


# --------------------------------------------------------------------------- the seed's rules


def validate(options, source: str = "converter options") -> None:
    """The rules the schema's comments state, beyond what protobuf checks."""
    problems: list[str] = _enum_problems(options)
    if problems:  # the checks below read enums by name
        raise OptionError(f"{source}: " + "; ".join(problems))
    for index, filtered in enumerate(options.bfloat16_optimization_options.filterlist):
        if not filtered.strip():
            problems.append(
                f"bfloat16_optimization_options.filterlist[{index}]: names nothing (empty)"
            )
    for index, batch in enumerate(options.batch_options):
        problems += [f"batch_options[{index}].{p}" for p in _batch_problems(batch)]
    if len(options.batch_options) > 1:
        components = [_batch_component(b) for b in options.batch_options]
        if len(set(components)) != len(components):
            problems.append("batch_options: two entries batch the same component")
    if options.HasField("xla_sharding_options"):
        problems += [
            f"xla_sharding_options.{p}" for p in _sharding_problems(options.xla_sharding_options)
        ]
    quantization = quantization_options(options)
    if quantization is not None:
        problems += [
            f"external_feature_configs.quantization_options.{p}"
            for p in _quantization_problems(quantization)
        ]
    seen: dict[tuple[str, object], int] = {}
    for index, function in enumerate(options.tpu_functions):
        kind = function.WhichOneof("name")
        if kind is None:
            problems.append(
                f"tpu_functions[{index}]: name no function (set one of function_alias, concrete_function_name, signature_name, jit_compile_functions)"
            )
            continue
        key = (kind, getattr(function, kind))
        if key in seen:
            problems.append(
                f"tpu_functions[{index}].{kind}: {getattr(function, kind)!r} is already given by "
                f"tpu_functions[{seen[key]}]; provide a given function only once"
            )
        seen.setdefault(key, index)
    if problems:
        raise OptionError(f"{source}: " + "; ".join(problems))


def _enum_problems(message, path: str = "") -> list[str]:
    """Enum fields holding numbers their enum does not name (proto3 text accepts any int32)."""
    problems = []
    for field, value in message.ListFields():
        name = f"{path}{field.name}"
        if field.enum_type is not None:
            values = list(value) if field.is_repeated else [value]
            for number in values:
                if field.enum_type.values_by_number.get(number) is None:
                    known = ", ".join(f"{v.name} ({v.number})" for v in field.enum_type.values)
                    problems.append(f"{name}: {number} is not one of {known}")
        elif field.message_type is not None:
            if field.message_type.GetOptions().map_entry:
                entries = [(f"{name}[{k!r}]", v) for k, v in value.items()]
                entries = [(n, v) for n, v in entries if hasattr(v, "ListFields")]
            elif field.is_repeated:
                entries = [(f"{name}[{i}]", v) for i, v in enumerate(value)]
            else:
                entries = [(name, value)]
            for entry_path, entry in entries:
                problems += _enum_problems(entry, entry_path + ".")
    return problems


def _bound(problems: list[str], name: str, value: int, bound: int, why: str) -> None:
    if value > bound:
        problems.append(f"{name}: at most {bound} ({why}; got {value})")


def _batch_problems(batch) -> list[str]:
    problems = []
    _bound(problems, "num_batch_threads", batch.num_batch_threads, MAX_BATCH_THREADS, "threads")
    _bound(problems, "max_batch_size", batch.max_batch_size, MAX_BATCH_SIZE, "rows per batch")
    _bound(
        problems,
        "batch_timeout_micros",
        batch.batch_timeout_micros,
        MAX_BATCH_TIMEOUT_MICROS,
        "one minute",
    )
    _bound(
        problems,
        "max_enqueued_batches",
        batch.max_enqueued_batches,
        MAX_ENQUEUED_BATCHES,
        "waiting batches",
    )
    for size in batch.allowed_batch_sizes:
        if size > MAX_BATCH_SIZE:
            _bound(problems, "allowed_batch_sizes", size, MAX_BATCH_SIZE, "rows per batch")
            break
    if batch.max_batch_size <= 0:
        problems.append(f"max_batch_size: must be positive (got {batch.max_batch_size})")
    if batch.num_batch_threads < 0:
        problems.append(f"num_batch_threads: must not be negative (got {batch.num_batch_threads})")
    if batch.batch_timeout_micros < 0:
        problems.append(
            f"batch_timeout_micros: must not be negative (got {batch.batch_timeout_micros})"
        )
    if batch.max_enqueued_batches < 0:
        problems.append(
            f"max_enqueued_batches: must not be negative (got {batch.max_enqueued_batches})"
        )
    sizes = list(batch.allowed_batch_sizes)
    if sizes:
        if any(b <= a for a, b in zip(sizes, sizes[1:], strict=False)) or sizes[0] <= 0:
            problems.append(
                f"allowed_batch_sizes: entries must increase monotonically (got {sizes})"
            )
        elif sizes[-1] != batch.max_batch_size:
            problems.append(
                f"allowed_batch_sizes: the last entry ({sizes[-1]}) must equal max_batch_size "
                f"({batch.max_batch_size})"
            )
    return problems


def quantization_options(options):
    """The `external_feature_configs.quantization_options` block (mlconv's extension), or None."""
    if not options.HasField("external_feature_configs"):
        return None
    configs = options.external_feature_configs
    return configs.quantization_options if configs.HasField("quantization_options") else None


def quantization_method(quantization) -> str:
    """STATIC_RANGE, DYNAMIC_RANGE or WEIGHT_ONLY (unspecified: STATIC_RANGE)."""
    name = schema().QuantizationOptions.Method.Name(quantization.quantization_method)
    return "STATIC_RANGE" if name == "METHOD_UNSPECIFIED" else name


def _quantization_problems(quantization) -> list[str]:
    problems = []
    keys = list(quantization.signature_keys) or ["serving_default"]
    datasets = quantization.representative_datasets
    for key, dataset in datasets.items():
        if dataset.WhichOneof("dataset_file") is None:
            problems.append(
                f"representative_datasets[{key!r}]: give tfrecord_file_path or npz_file_path"
            )
    if quantization_method(quantization) == "STATIC_RANGE":
        missing = [k for k in keys if k not in datasets]
        if missing:
            problems.append(
                f"representative_datasets: static-range quantization needs a representative "
                f"dataset for signature {missing[0]!r}"
            )
    if quantization.num_calibration_samples < 0:
        problems.append("num_calibration_samples: must not be negative")
    return problems


def _batch_component(batch) -> tuple[str, str]:
    kind = (
        batch.experimental.WhichOneof("batch_component") if batch.HasField("experimental") else None
    )
    return (kind or "default", getattr(batch.experimental, kind) if kind else "")


def _sharding_problems(sharding) -> list[str]:
    problems = []
    cores = sharding.num_cores_per_replica
    if cores < 0:
        problems.append(f"num_cores_per_replica: must not be negative (got {cores})")
    if cores > 1 and not sharding.topology:
        problems.append(
            "topology: required when num_cores_per_replica > 1 (give mesh_shape and device_coordinates)"
        )
    if sharding.device_assignment and len(sharding.device_assignment) % 4:
        problems.append(
            "device_assignment: must be flattened [x, y, z, core] quadruples "
            f"(got {len(sharding.device_assignment)} numbers)"
        )
    return problems


# --------------------------------------------------------------------------- effective settings


@dataclass(frozen=True)
class ConversionSettings:
    """What the options mean once defaults are applied: DEFAULT states resolved (io shapes and
    bfloat16 are enabled by default, unless `disable_default_optimizations`), the bfloat16
    scope DEFAULT read as TPU."""

    tpu_functions: tuple = ()
    batch_options: tuple = ()
    io_shape_optimization: bool = True
    bfloat16: bool = True
    bfloat16_scope: str = "TPU"
    bfloat16_filterlist: tuple[str, ...] = ()
    bfloat16_skip_safety_checks: bool = False
    sharding: object | None = None
    quantization: object | None = None

    @classmethod
    def from_options(cls, options) -> ConversionSettings:
        pb = schema()
        state = pb.ConverterOptions.State
        default_on = not options.disable_default_optimizations

        def enabled(value: int) -> bool:
            return value == state.ENABLED or (value == state.DEFAULT and default_on)

        bf16 = options.bfloat16_optimization_options
        scope = pb.BFloat16OptimizationOptions.Scope.Name(bf16.scope)
        return cls(
            tpu_functions=tuple(options.tpu_functions),
            batch_options=tuple(options.batch_options),
            io_shape_optimization=enabled(options.io_shape_optimization),
            bfloat16=enabled(options.bfloat16_optimization),
            bfloat16_scope="TPU" if scope == "DEFAULT" else scope,
            bfloat16_filterlist=tuple(bf16.filterlist),
            bfloat16_skip_safety_checks=bf16.skip_safety_checks,
            sharding=options.xla_sharding_options
            if options.HasField("xla_sharding_options")
            else None,
            quantization=quantization_options(options),
        )


def load_converter_options(text: str | None = None, path: str | None = None):
    """Options from a string or a file (`--converter-options-string` / `--converter-options`)."""
    if text is not None and path is not None:
        raise OptionError("give the converter options as a string or as a file, not both")
    if path is not None:
        try:
            with open(path, "rb") as f:
                data = f.read(MAX_OPTIONS_BYTES + 1)
        except OSError as error:
            raise OptionError(f"{path}: cannot read: {error.strerror}") from None
        if len(data) > MAX_OPTIONS_BYTES:
            raise OptionError(f"{path}: larger than {MAX_OPTIONS_BYTES >> 20} MiB")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise OptionError(
                f"{path}: not UTF-8 text ({error.reason} at byte {error.start})"
            ) from None
        return parse_converter_options(text, path)
    return parse_converter_options(text or "", "converter options")


# --------------------------------------------------------------------------- regeneration


def generate(out_dir: str) -> Path:
    """Run protoc (grpcio-tools) on the schema; returns the generated module's path."""
    import importlib.util
    import subprocess

    if importlib.util.find_spec("grpc_tools") is None:
        raise OptionError("regenerating needs grpcio-tools (pip install grpcio-tools)")
    # protoc runs in its own process: its native module crashes inside a process that has
    # TensorFlow's or torch's copies of protobuf loaded.
    command = [
        sys.executable,
        "-m",
        "grpc_tools.protoc",
        f"-I{PROTO.parent}",
        f"--python_out={out_dir}",
        PROTO.name,
    ]
    status = subprocess.run(command, capture_output=True, text=True)
    if status.returncode != 0:
        raise OptionError(f"protoc failed on {PROTO}: {status.stderr.strip().splitlines()[-1:]}")
    return Path(out_dir) / GENERATED.name


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--regenerate", action="store_true", help=f"rewrite {GENERATED.name}")
    args = parser.parse_args(argv)
    if not args.regenerate:
        parser.print_help()
        return 0
    import tempfile

    with tempfile.TemporaryDirectory() as directory:
        generated = generate(directory)
        os.replace(generated, GENERATED)
    print(f"wrote {GENERATED}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

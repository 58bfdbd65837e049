"""mlconv-run: compile a model (or .mlir) and run it on inputs from an .npz, writing an .npz.

    mlconv-run model.onnx --inputs in.npz --outputs out.npz --device cpu
    mlconv-run model.onnx --inputs in.npz --outputs out.npz --input-shapes x:1,3,224,224
    mlconv-run model.onnx --compare-with-source --per-layer [--json]
    mlconv-opt in.mlir -p core-fuse | mlconv-run - --interpret --inputs x.npz --print-outputs
    mlconv-run converted/ --serve --port 8500      # HTTP, batching (converter/serving.py)
    mlconv-run sharded/ --inputs x.npz --outputs y.npz --coordinator host0:1234 \
        --num-processes 2 --process-id 0           # one of N jax.distributed processes

The .npz keys are the model's input names (`np.savez(f, x=...)`); positional `arr_0, arr_1, ...`
(`np.savez(f, a, b)`) are accepted too. Outputs are written under the model's output names.
`--print-outputs` prints each output's name, type and values (4 decimals) for lit/FileCheck;
`--interpret` runs a .mlir as it is, op by op by its level's reference interpreter, instead
of lowering and compiling it. `--compare-with-source` runs onnxruntime / TensorFlow / LiteRT
beside mlconv (seeded random inputs without `--inputs`) and prints a table per output and,
with `--per-layer`, per intermediate tensor both have; exit status 1 when one diverges.
"""

from __future__ import annotations

import json
import os
import re
import sys
from typing import Any

import numpy as np

import mlconv
from mlconv.dense import element_type
from mlconv.dialects import make_context
from mlconv.errors import MlconvError, OptionError, render
from mlconv.fileio import staged_output
from mlconv.signature.main_inputs import order_inputs
from mlconv.signature.module_io import value_names
from mlconv.tools.cli import ToolArgumentParser, ToolFailure, format_parse_error, run_tool

PROG = "mlconv-run"


def make_parser() -> ToolArgumentParser:
    parser = ToolArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    parser.add_argument(
        "model", help=".onnx, SavedModel folder, .tflite or .mlir (- : .mlir on stdin)"
    )
    parser.add_argument("--inputs", help="input .npz (keys: input names)")
    parser.add_argument("--outputs", help="output .npz to write")
    parser.add_argument(
        "--print-outputs", action="store_true",
        help="print every output (name, type, values with 4 decimals) to stdout",
    )  # fmt: skip
    parser.add_argument(
        "--interpret", action="store_true",
        help="run a .mlir as it is by its level's reference interpreter (no pass, no jit)",
    )  # fmt: skip
    parser.add_argument(
        "--compare-with-source", action="store_true",
        help="run the source framework's runtime beside mlconv and compare the outputs",
    )  # fmt: skip
    parser.add_argument(
        "--per-layer", action="store_true",
        help="with --compare-with-source: also every intermediate tensor both sides have",
    )  # fmt: skip
    parser.add_argument(
        "--json", action="store_true",
        help="the comparison as JSON on stdout; in a plain run, the back end that ran and why",
    )  # fmt: skip
    parser.add_argument("--rtol", type=float, default=None, help="comparison tolerance")
    parser.add_argument("--atol", type=float, default=None, help="comparison tolerance")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    parser.add_argument("--device", choices=["cpu", "gpu", "tpu"], default=None)
    parser.add_argument(
        "--backend", choices=["auto", "xla", "jax", "openvino"], default=None,
        help="auto (default, or $MLCONV_BACKEND): on the cpu the faster of XLA and OpenVINO, "
        "measured when compiling and cached; xla (alias jax): JAX/XLA; openvino: the OpenVINO "
        "runtime (cpu)",
    )  # fmt: skip
    parser.add_argument(
        "--allow-custom", action="store_true",
        help="ops nobody lowers run as core.Custom through the host implementations plugins "
        "register (mlconv.custom_ops)",
    )  # fmt: skip
    parser.add_argument(
        "--serve", action="store_true",
        help="serve an mlconv-convert artifact over HTTP, batching concurrent requests "
        "(converter/serving.py: POST /v1/predict, GET /v1/model)",
    )  # fmt: skip
    parser.add_argument(
        "--signature", metavar="NAME",
        help="with an mlconv-convert artifact of a SavedModel: the signature to run whole, "
        "host part included (default: serving_default); '-': its TPU functions only",
    )  # fmt: skip
    parser.add_argument(
        "--allow-tensorflow", action="store_true",
        help="with an mlconv-convert artifact: let a signature whose host part needs "
        "TensorFlow run the artifact's own TensorFlow graph (off: refused)",
    )  # fmt: skip
    parser.add_argument("--host", default="127.0.0.1", help="with --serve: address to bind")
    parser.add_argument("--port", type=int, default=8500, help="with --serve: port (0: any)")
    parser.add_argument(
        "--pad", action="append", default=[], metavar="DIM=B1,B2,...[:mask=NAME][:side=left]",
        help="serve a dynamic dim (an ONNX dim name or INPUT:AXIS) from a few compiled sizes: "
        "padded to the next bucket with zeros, the mask input widened, outputs sliced back, "
        "padding checked exact on the first call (mlconv.compile's pad_dims; repeatable)",
    )  # fmt: skip
    parser.add_argument(
        "--max-body-bytes", type=int, default=None, metavar="N",
        help="with --serve: the largest request body (default: a few times the largest valid "
        "request, at least 1 MiB)",
    )  # fmt: skip
    parser.add_argument(
        "--model-name", default=None, metavar="NAME",
        help="with --serve: the model's name in the Open Inference Protocol's /v2/models/NAME "
        "(default: the artifact folder's name)",
    )  # fmt: skip
    parser.add_argument(
        "--replicas", type=int, default=None, metavar="N",
        help="with --serve: N Ray Serve replicas behind Ray's HTTP proxy on --host/--port (a "
        "local Ray, or RAY_ADDRESS's cluster; extra ray: converter/ray_serve.py), the Open "
        "Inference Protocol only",
    )  # fmt: skip
    parser.add_argument(
        "--max-connections", type=int, default=64, metavar="N",
        help="with --serve: connections served at once (more are answered 503)",
    )  # fmt: skip
    parser.add_argument(
        "--read-timeout", type=float, default=10.0, metavar="SECONDS",
        help="with --serve: the longest wait for one read from a client's socket",
    )  # fmt: skip
    parser.add_argument(
        "--distributed", action="store_true",
        help="run as one process of a jax.distributed job whose coordinator, process count and "
        "id JAX detects from the environment (SLURM, Open MPI, Cloud TPU, ...): every process "
        "reads the same --inputs, process 0 alone prints/writes the outputs",
    )  # fmt: skip
    parser.add_argument(
        "--coordinator", metavar="HOST:PORT",
        help="as --distributed, with the coordinator's address given (process 0 listens on it); "
        "needs --num-processes and --process-id",
    )  # fmt: skip
    parser.add_argument(
        "--num-processes", type=int, default=None, metavar="N",
        help="with --coordinator: the number of processes",
    )  # fmt: skip
    parser.add_argument(
        "--process-id", type=int, default=None, metavar="I",
        help="with --coordinator: this process's id, 0..N-1",
    )  # fmt: skip
    parser.add_argument(
        "--input-shapes",
        action="append",
        default=[],
        metavar="NAME:D0,D1,...",
        help="static shape for an input (repeatable, or several separated by ';')",
    )
    return parser


def parse_input_shapes(specs: list[str]) -> dict[str, tuple[int, ...]]:
    """`["x:1,3,224,224", "y:1;z:2,2"]` -> {"x": (1, 3, 224, 224), "y": (1,), "z": (2, 2)}."""
    shapes: dict[str, tuple[int, ...]] = {}
    for spec in (s for group in specs for s in group.split(";") if s.strip()):
        name, sep, dims = spec.strip().rpartition(":")
        if not sep or not name:
            raise OptionError(f"bad --input-shapes entry '{spec}' (expected NAME:D0,D1,...)")
        try:
            shapes[name] = tuple(int(d) for d in dims.split(",") if d.strip()) if dims else ()
        except ValueError:
            raise OptionError(f"bad dimensions in --input-shapes entry '{spec}'") from None
        if any(d < 0 for d in shapes[name]):
            raise OptionError(f"negative dimension in --input-shapes entry '{spec}'")
    return shapes


def _names_from_onnx(path: str) -> tuple[list[str], list[str]] | None:
    import onnx

    try:
        model = onnx.load(path, load_external_data=False)
    except Exception:  # noqa: BLE001 - compile() reports an unreadable model properly
        return None
    initializers = {i.name for i in model.graph.initializer}
    inputs = [i.name for i in model.graph.input if i.name not in initializers]
    return inputs, [o.name for o in model.graph.output]


def _names_from_mlir(path: str) -> tuple[list[str], list[str]] | None:
    from xdsl.parser import Parser

    try:
        with open(path, encoding="utf-8") as f:
            module = Parser(make_context(), f.read(), path).parse_module()
    except Exception:  # noqa: BLE001 - compile() reports an unreadable file properly
        return None
    return names_of_module(module)


def names_of_module(module: Any) -> tuple[list[str], list[str]] | None:
    """The `mlconv.name`s of `@main`'s arguments and results (`argN`/`resultN` where absent)."""
    from xdsl.dialects.func import FuncOp

    main = next((op for op in module.walk() if isinstance(op, FuncOp)), None)
    for op in module.walk():
        if isinstance(op, FuncOp) and op.sym_name.data == "main":
            main = op
    if main is None:
        return None
    function_type = main.function_type
    return (
        value_names(main.arg_attrs, len(function_type.inputs.data), "arg"),
        value_names(main.res_attrs, len(function_type.outputs.data), "result"),
    )


def io_names(compiled: Any, path: str) -> tuple[list[str] | None, list[str] | None]:
    """The model's input and output names: from the compiled callable, else from the file."""
    inputs = getattr(compiled, "input_names", None)
    outputs = getattr(compiled, "output_names", None)
    if inputs is not None and outputs is not None:
        return list(inputs), list(outputs)
    found = None
    if path.endswith(".onnx"):
        found = _names_from_onnx(path)
    elif path.endswith(".mlir"):
        found = _names_from_mlir(path)
    if found is None:
        return inputs, outputs
    return (list(inputs) if inputs is not None else found[0]), (
        list(outputs) if outputs is not None else found[1]
    )


def read_inputs(path: str) -> dict[str, np.ndarray]:
    """`load_inputs` for a command's --inputs: a missing or unreadable file is its one-line
    failure."""
    try:
        return load_inputs(path)
    except FileNotFoundError:
        raise ToolFailure([f"{path}: error: no such file or directory"]) from None
    except MlconvError as error:
        raise ToolFailure([error.render(path)]) from None


def load_inputs(path: str) -> dict[str, np.ndarray]:
    with open(path, "rb") as f:
        if f.read(4) != b"PK\x03\x04":
            raise OptionError("not an .npz archive (write it with numpy.savez)")
    try:
        with np.load(path, allow_pickle=False) as npz:
            return {key: npz[key] for key in npz.files}
    except (OptionError, FileNotFoundError):
        raise
    except Exception as error:  # noqa: BLE001 - zipfile/pickle/format errors of a bad file
        raise OptionError(f"cannot read --inputs {path}: {error}") from None


def write_outputs(path: str, results: list[np.ndarray], names: list[str] | None) -> None:
    """Write the outputs under their names; `path` gets them only on success (`mlconv.fileio`)."""
    if names is None or len(names) != len(results):
        names = [f"arr_{i}" for i in range(len(results))]
    with staged_output(path, suffix=".npz") as temporary:
        with open(temporary, "wb") as f:
            np.savez(f, **{name: np.asarray(r) for name, r in zip(names, results, strict=True)})


def format_outputs(results: list[np.ndarray], names: list[str] | None) -> str:
    """`name: tensor<2x3xf32>` then the values (4 decimals, all of them) for each output."""

    if names is None or len(names) != len(results):
        names = [f"result{i}" for i in range(len(results))]
    lines = []
    for name, result in zip(names, results, strict=True):
        array = np.asarray(result)
        dims = "".join(f"{d}x" for d in array.shape)
        lines.append(f"{name}: tensor<{dims}{element_type(array.dtype)}>")
        if np.issubdtype(array.dtype, np.floating):
            array = array.astype(np.float64) + 0.0  # no -0.0000
        lines.append(
            np.array2string(
                array,
                precision=4,
                floatmode="fixed",
                separator=", ",
                threshold=sys.maxsize,
                max_line_width=100,
                suppress_small=False,
            )  # fmt: skip
        )
    return "\n".join(lines) + "\n"


def _compare(args: Any, arrays: dict[str, np.ndarray] | None) -> int:
    # lazy: the command starts (and --help answers) before JAX and the passes load
    from mlconv.verify.compare_source import DEFAULT_ATOL, DEFAULT_RTOL, compare_with_source

    try:
        report = compare_with_source(
            args.model,
            arrays,
            per_layer=args.per_layer,
            seed=args.seed,
            rtol=DEFAULT_RTOL if args.rtol is None else args.rtol,
            atol=DEFAULT_ATOL if args.atol is None else args.atol,
            device=args.device,
        )
    except MlconvError as error:
        raise ToolFailure([render(error, args.model)]) from None
    if args.json:
        sys.stdout.write(report.to_json() + "\n")
    else:
        sys.stdout.write(report.format_table(color=sys.stdout.isatty()))
    first = report.first_divergence
    if first is not None:
        print(
            f"{args.model}: error: mlconv diverges from {report.runtime} at "
            f"{'output' if first.kind == 'output' else 'layer'} '{first.location}' "
            f"(max abs {first.max_abs:.3g})",
            file=sys.stderr,
        )
        return 1
    return 0


def _parse_mlir(text: str, path: str) -> Any:
    from xdsl.parser import Parser
    from xdsl.utils.exceptions import ParseError

    try:
        module = Parser(make_context(), text, path).parse_module()
    except ParseError as error:
        raise ToolFailure([format_parse_error(error, path)]) from None
    module.verify()
    return module


def _run(argv: list[str] | None) -> int:
    args = make_parser().parse_args(argv)
    shapes = parse_input_shapes(args.input_shapes)
    if args.per_layer and not args.compare_with_source:
        raise OptionError("--per-layer goes with --compare-with-source")
    if args.json and args.print_outputs:
        raise OptionError("--json and --print-outputs both write to stdout: give one")
    distributed = _distributed_options(args)
    if args.serve:
        return _serve(args)
    if not args.compare_with_source:
        if args.inputs is None:
            raise OptionError("the following arguments are required: --inputs")
        if args.outputs is None and not args.print_outputs:
            raise OptionError("give --outputs, --print-outputs or --compare-with-source")
    if args.model != "-" and not os.path.exists(args.model):
        raise ToolFailure([f"{args.model}: error: no such file or directory"])
    arrays = None
    if args.inputs is not None:
        arrays = read_inputs(args.inputs)
    if args.compare_with_source:
        return _compare(args, arrays)
    assert arrays is not None
    leader = True
    if distributed is not None:
        leader = _initialize_distributed(distributed) == 0

    path = "<stdin>" if args.model == "-" else args.model
    model: Any = args.model
    if args.model == "-":
        model = _parse_mlir(sys.stdin.read(), path)
    elif args.interpret:
        if not args.model.endswith(".mlir"):
            raise OptionError("--interpret runs a .mlir file (or - for stdin)")
        with open(args.model, encoding="utf-8") as f:
            model = _parse_mlir(f.read(), path)
    if args.interpret:
        compiled = _Interpreted(model)
    else:
        options: dict[str, Any] = {"input_shapes": shapes} if shapes else {}
        if args.backend is not None:
            options["backend"] = args.backend
        if args.allow_custom:
            options["allow_custom"] = True
        if args.pad:
            # lazy: the command starts (and --help answers) before JAX and the passes load
            from mlconv.backends.padding import parse_pad_options

            options["pad_dims"] = parse_pad_options(args.pad)
        if args.allow_tensorflow:
            options["allow_tensorflow"] = True
        try:
            compiled = mlconv.compile(model, device=args.device, **options)
        except MlconvError as error:
            raise ToolFailure([render(error, path)]) from None
        except NotImplementedError:
            raise ToolFailure([f"{PROG}: error: mlconv.compile is not implemented yet"]) from None
        except Exception as error:
            if os.environ.get("MLCONV_DEBUG"):
                raise
            detail = str(error).strip().splitlines()
            text = f"{type(error).__name__}: {detail[0]}" if detail else type(error).__name__
            raise ToolFailure([f"{path}: error: cannot compile the model: {text}"]) from None

    compiled = _pick_signature(compiled, args.signature)
    if isinstance(model, str):
        input_names, output_names = io_names(compiled, args.model)
    else:
        input_names, output_names = _module_names(model, compiled)
    try:
        inputs = order_inputs(arrays, input_names)
    except MlconvError as error:
        raise ToolFailure([error.render(args.inputs)]) from None
    try:
        results = [np.asarray(r) for r in compiled(*inputs)]
    except MlconvError as error:
        raise ToolFailure([render(error, path)]) from None
    if not leader:
        return 0
    if args.outputs is not None:
        write_outputs(args.outputs, results, output_names)
    if args.print_outputs:
        sys.stdout.write(format_outputs(results, output_names))
    if args.json:
        sys.stdout.write(json.dumps(run_report(compiled)) + "\n")
    return 0


def _distributed_options(args: Any) -> dict[str, Any] | None:
    """`jax.distributed.initialize`'s arguments from --distributed / --coordinator
    --num-processes --process-id ({} for JAX's detection), None without them."""
    given = [
        flag
        for flag, value in (
            ("--coordinator", args.coordinator),
            ("--num-processes", args.num_processes),
            ("--process-id", args.process_id),
        )
        if value is not None
    ]
    if not given and not args.distributed:
        return None
    for flag, on in (
        ("--serve", args.serve),
        ("--compare-with-source", args.compare_with_source),
        ("--interpret", args.interpret),
    ):
        if on:
            raise OptionError(f"{flag} does not run under jax.distributed: drop {flag}")
    if args.distributed:
        if given:
            raise OptionError(
                f"--distributed takes the job from the environment: drop {', '.join(given)} "
                "(or drop --distributed and give all three)"
            )
        return {}
    if len(given) != 3:
        missing = [
            f for f in ("--coordinator", "--num-processes", "--process-id") if f not in given
        ]
        raise OptionError(f"{given[0]} needs {' and '.join(missing)}")
    host, sep, port = args.coordinator.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise OptionError(f"--coordinator {args.coordinator}: expected HOST:PORT")
    if args.num_processes < 1:
        raise OptionError(f"--num-processes {args.num_processes}: expected at least 1")
    if not 0 <= args.process_id < args.num_processes:
        raise OptionError(f"--process-id {args.process_id}: expected 0..{args.num_processes - 1}")
    return {
        "coordinator_address": args.coordinator,
        "num_processes": args.num_processes,
        "process_id": args.process_id,
    }


def _initialize_distributed(options: dict[str, Any]) -> int:
    """Join the jax.distributed job (gloo collectives on the CPU); this process's index."""
    import jax

    try:
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
    except (AttributeError, ValueError):  # a jax without the option: its default
        pass
    try:
        jax.distributed.initialize(**options)
    except Exception as error:  # noqa: BLE001 - JAX's detection/connection errors
        detail = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise ToolFailure(
            [f"{PROG}: error: cannot join the jax.distributed job: {detail}"]
        ) from None
    return jax.process_index()


def run_report(compiled: Any) -> dict[str, Any]:
    """`--json` of a plain run: the back end that ran and, where mlconv.compile chose it, why
    (backends/backend_choice.py's BackendChoice)."""
    choice = getattr(compiled, "backend_choice", None)
    backend = getattr(compiled, "backend", None)
    if backend is None:
        backend = "interpreter" if isinstance(compiled, _Interpreted) else "xla"
    return {"backend": backend, "choice": choice.as_dict() if choice is not None else None}


def _pick_signature(compiled: Any, name: str | None) -> Any:
    """An artifact that records a SavedModel's signatures runs one whole (`serving_default`
    unless named; `-`: the TPU functions as they are)."""
    manifest = getattr(compiled, "manifest", None)
    if manifest is None:
        if name is not None:
            raise OptionError("--signature goes with an mlconv-convert artifact")
        return compiled
    if name == "-" or (name is None and "signatures" not in manifest):
        return compiled
    signatures = compiled.signatures
    name = name or "serving_default"
    if name not in signatures:
        raise OptionError(
            f"--signature: the artifact has no signature '{name}'; signatures: "
            + ", ".join(sorted(signatures))
        )
    return _SignatureCall(signatures[name])


class _SignatureCall:
    """A signature (a dict of outputs by name) as a callable returning the outputs in order."""

    def __init__(self, signature: Any) -> None:
        self.signature = signature
        self.input_names = signature.input_names
        self.output_names = signature.output_names

    def __call__(self, *inputs: np.ndarray) -> list[np.ndarray]:
        results = self.signature(*inputs)
        return [results[name] for name in self.output_names]


class _Interpreted:
    """A parsed module run as it is by its level's reference interpreter."""

    def __init__(self, module: Any) -> None:
        self.module = module

    def __call__(self, *inputs: np.ndarray) -> list[np.ndarray]:
        # lazy: the command starts (and --help answers) before JAX and the passes load
        from mlconv.interpreters import run_module

        return run_module(self.module, inputs)


def _module_names(module: Any, compiled: Any) -> tuple[list[str] | None, list[str] | None]:
    inputs = getattr(compiled, "input_names", None)
    outputs = getattr(compiled, "output_names", None)
    if inputs is not None and outputs is not None:
        return list(inputs), list(outputs)
    found = names_of_module(module)
    return found if found is not None else (None, None)


def _serve(args: Any) -> int:
    """`--serve`: the artifact's model behind converter/serving.py's HTTP endpoint."""
    # lazy: the command starts (and --help answers) before JAX and the passes load
    from mlconv.converter.artifact import is_artifact, load_artifact
    from mlconv.converter.serving import ServerLimits, serve

    if not is_artifact(args.model):
        raise OptionError(f"--serve: {args.model} is not an mlconv-convert artifact folder")
    if args.replicas is not None:
        return _serve_replicas(args)
    try:
        model = load_artifact(args.model, args.device, allow_tensorflow=args.allow_tensorflow)
    except MlconvError as error:
        raise ToolFailure([render(error, args.model)]) from None
    if args.max_body_bytes is not None and args.max_body_bytes <= 0:
        raise OptionError("--max-body-bytes must be positive")
    if args.max_connections <= 0 or args.read_timeout <= 0:
        raise OptionError("--max-connections and --read-timeout must be positive")
    if args.model_name is not None and not re.fullmatch(r"[A-Za-z0-9._-]{1,64}", args.model_name):
        raise OptionError("--model-name: 1 to 64 letters, digits, '.', '_' or '-'")
    limits = ServerLimits(
        read_timeout=args.read_timeout,
        request_timeout=3 * args.read_timeout,
        max_connections=args.max_connections,
    )
    return serve(
        model,
        args.model,
        args.host,
        args.port,
        max_body_bytes=args.max_body_bytes,
        server_limits=limits,
        name=args.model_name,
    )


def _serve_replicas(args: Any) -> int:
    """`--serve --replicas N`: converter/ray_serve.py's deployment, N replicas."""
    # lazy: the command starts (and --help answers) before JAX and the passes load
    from mlconv.converter.ray_serve import serve_replicas

    if args.replicas <= 0:
        raise OptionError("--replicas must be positive")
    if args.port <= 0:
        raise OptionError("--replicas needs a --port (Ray's proxy cannot take 0)")
    if args.max_body_bytes is not None and args.max_body_bytes <= 0:
        raise OptionError("--max-body-bytes must be positive")
    if args.model_name is not None and not re.fullmatch(r"[A-Za-z0-9._-]{1,64}", args.model_name):
        raise OptionError("--model-name: 1 to 64 letters, digits, '.', '_' or '-'")
    return serve_replicas(
        args.model,
        args.replicas,
        args.host,
        args.port,
        name=args.model_name,
        device=args.device,
        max_body_bytes=args.max_body_bytes,
    )


def main(argv: list[str] | None = None) -> int:
    return run_tool(PROG, lambda: _run(argv))


if __name__ == "__main__":
    sys.exit(main())

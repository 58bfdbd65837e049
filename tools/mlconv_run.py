"""mlconv-run: compile a model (or .mlir) and run it on inputs from an .npz, writing an .npz.

    mlconv-run model.onnx --inputs in.npz --outputs out.npz --device cpu
    mlconv-run model.onnx --inputs in.npz --outputs out.npz --input-shapes x:1,3,224,224

The .npz keys are the model's input names (`np.savez(f, x=...)`); positional `arr_0, arr_1, ...`
(`np.savez(f, a, b)`) are accepted too. Outputs are written under the model's output names.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import numpy as np

from mlconv.errors import MlconvError, OptionError
from mlconv.tools.cli import ToolArgumentParser, ToolFailure, render, run_tool, temporary_path_for

PROG = "mlconv-run"


def make_parser() -> ToolArgumentParser:
    parser = ToolArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    parser.add_argument("model", help=".onnx, SavedModel folder, .tflite or .mlir")
    parser.add_argument("--inputs", required=True, help="input .npz (keys: input names)")
    parser.add_argument("--outputs", required=True, help="output .npz to write")
    parser.add_argument("--device", choices=["cpu", "gpu", "tpu"], default=None)
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
    from xdsl.dialects.builtin import DictionaryAttr, StringAttr
    from xdsl.dialects.func import FuncOp
    from xdsl.parser import Parser

    from mlconv.dialects import make_context

    try:
        with open(path, encoding="utf-8") as f:
            module = Parser(make_context(), f.read(), path).parse_module()
    except Exception:  # noqa: BLE001 - compile() reports an unreadable file properly
        return None
    main = next((op for op in module.walk() if isinstance(op, FuncOp)), None)
    for op in module.walk():
        if isinstance(op, FuncOp) and op.sym_name.data == "main":
            main = op
    if main is None:
        return None

    def names(attrs: Any, count: int, prefix: str) -> list[str]:
        result = []
        for i in range(count):
            entry = attrs.data[i] if attrs is not None and i < len(attrs.data) else None
            value = entry.data.get("mlconv.name") if isinstance(entry, DictionaryAttr) else None
            result.append(value.data if isinstance(value, StringAttr) else f"{prefix}{i}")
        return result

    function_type = main.function_type
    return (
        names(main.arg_attrs, len(function_type.inputs.data), "arg"),
        names(main.res_attrs, len(function_type.outputs.data), "result"),
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


def order_inputs(arrays: dict[str, np.ndarray], names: list[str] | None) -> list[np.ndarray]:
    """The arrays in the model's input order, by name or by position (`arr_0`, `arr_1`, ...)."""
    positional = [f"arr_{i}" for i in range(len(arrays))]
    if sorted(arrays) == sorted(positional) and not (names and set(names) & set(arrays)):
        return [arrays[key] for key in positional]
    if names is None:
        raise OptionError(
            "the model's input names are unknown: store the inputs positionally "
            "(np.savez(f, a, b)) in the order of the model's inputs"
        )
    missing = [n for n in names if n not in arrays]
    if missing:
        raise OptionError(
            f"input(s) {', '.join(missing)} missing from --inputs (it has: "
            f"{', '.join(sorted(arrays)) or 'nothing'})"
        )
    unknown = sorted(set(arrays) - set(names))
    if unknown:
        raise OptionError(
            f"--inputs has array(s) {', '.join(unknown)} that are not model inputs "
            f"(inputs: {', '.join(names)})"
        )
    return [arrays[n] for n in names]


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
    """Write the outputs under their names, through a temporary file renamed into place."""
    if names is None or len(names) != len(results):
        names = [f"arr_{i}" for i in range(len(results))]
    temporary = temporary_path_for(path if path.endswith(".npz") else path + ".npz")
    try:
        with open(temporary, "wb") as f:
            np.savez(f, **{name: np.asarray(r) for name, r in zip(names, results, strict=True)})
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def _run(argv: list[str] | None) -> int:
    args = make_parser().parse_args(argv)
    shapes = parse_input_shapes(args.input_shapes)
    if not os.path.exists(args.model):
        raise ToolFailure([f"{args.model}: error: no such file or directory"])
    try:
        arrays = load_inputs(args.inputs)
    except FileNotFoundError:
        raise ToolFailure([f"{args.inputs}: error: no such file or directory"]) from None
    except MlconvError as error:
        raise ToolFailure([error.render(args.inputs)]) from None

    import mlconv

    options: dict[str, Any] = {"input_shapes": shapes} if shapes else {}
    try:
        compiled = mlconv.compile(args.model, device=args.device, **options)
    except MlconvError as error:
        raise ToolFailure([render(error, args.model)]) from None
    except NotImplementedError:
        raise ToolFailure([f"{PROG}: error: mlconv.compile is not implemented yet"]) from None
    except Exception as error:
        if os.environ.get("MLCONV_DEBUG"):
            raise
        detail = str(error).strip().splitlines()
        text = f"{type(error).__name__}: {detail[0]}" if detail else type(error).__name__
        raise ToolFailure([f"{args.model}: error: cannot compile the model: {text}"]) from None

    input_names, output_names = io_names(compiled, args.model)
    try:
        inputs = order_inputs(arrays, input_names)
    except MlconvError as error:
        raise ToolFailure([error.render(args.inputs)]) from None
    try:
        results = compiled(*inputs)
    except MlconvError as error:
        raise ToolFailure([render(error, args.model)]) from None
    write_outputs(args.outputs, [np.asarray(r) for r in results], output_names)
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_tool(PROG, lambda: _run(argv))


if __name__ == "__main__":
    sys.exit(main())

"""mlconv-view: show a model at a chosen level in Google's Model Explorer (a local web page).

    mlconv-view model.onnx                          # core level, opens the browser
    mlconv-view model.tflite --level tpu --overlay-errors --no-browser --port 8090
    mlconv-view saved_model_dir --level framework --graph-json graphs.json

The model is converted once (errors are one line, exit 1, before any server starts), then
Model Explorer's server runs with the `mlconv.explorer` adapter; `--overlay-errors` compares
with the source framework layer by layer (`mlconv-run --compare-with-source --per-layer`) and
colours each node by its error. `--graph-json`/`--node-data-json` write Model Explorer's JSON
files instead of serving (the page's built-in JSON adapter loads them). Needs the `view` extra.
"""

from __future__ import annotations

import json
import os
import sys

from mlconv.errors import OptionError
from mlconv.tools.cli import ToolArgumentParser, atomic_output, run_tool

PROG = "mlconv-view"


def make_parser() -> ToolArgumentParser:
    # lazy: the command starts (and --help answers) before JAX and the passes load
    from mlconv.explorer import LEVELS

    parser = ToolArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    parser.add_argument("model", help=".onnx, SavedModel folder, .tflite or .mlir")
    parser.add_argument("--level", choices=LEVELS, default="core", help="IR level to show")
    parser.add_argument(
        "--overlay-errors",
        action="store_true",
        help="colour nodes by their error against the source framework (per layer)",
    )
    parser.add_argument("--inputs", help="input .npz for --overlay-errors (seeded random if none)")
    parser.add_argument(
        "--input-shapes", default="", metavar="NAME:D0,D1;...", help="static input shapes (tpu)"
    )
    parser.add_argument("--host", default="localhost")
    parser.add_argument("--port", type=int, default=8080, help="8080: the first free from 8080")
    parser.add_argument("--no-browser", action="store_true", help="serve without opening a browser")
    parser.add_argument("--graph-json", metavar="OUT", help="write the graphs JSON; no server")
    parser.add_argument("--node-data-json", metavar="OUT", help="write the overlay's node data")
    return parser


def _require_model_explorer() -> None:
    try:
        import model_explorer  # noqa: F401
    except ImportError:
        raise OptionError(
            "Model Explorer is not installed: pip install 'mlconv[view]' (ai-edge-model-explorer)"
        ) from None


def _load_inputs(path: str | None):
    if path is None:
        return None
    import numpy as np

    try:
        with np.load(path) as data:
            return {key: data[key] for key in data.files}
    except OSError as error:
        raise OptionError(f"cannot read --inputs '{path}': {error.strerror or error}") from None
    except ValueError as error:
        raise OptionError(f"--inputs '{path}' is not an .npz file: {error}") from None


def overlay_for(args, graphs):
    """Node data of the per-layer comparison with the source framework."""
    # lazy: the command starts (and --help answers) before JAX and the passes load
    from mlconv.explorer.overlay import error_node_data
    from mlconv.verify.compare_source import compare_with_source

    report = compare_with_source(args.model, _load_inputs(args.inputs), per_layer=True)
    return error_node_data(graphs, report.rows, against=report.runtime), report


def body(argv: list[str] | None) -> int:
    args = make_parser().parse_args(argv)
    _require_model_explorer()
    from model_explorer.utils import convert_adapter_response

    # lazy: the command starts (and --help answers) before JAX and the passes load
    from mlconv.explorer import load_at_level, model_argument
    from mlconv.explorer.graph import module_graphs
    from mlconv.explorer.main import ADAPTER_IDS, INPUT_SHAPES_VARIABLE, remember

    if not os.path.exists(args.model):
        raise OptionError(f"'{args.model}': no such file or directory")
    args.model = model_argument(args.model)
    if args.overlay_errors and args.model.endswith(".mlir"):
        raise OptionError(
            "--overlay-errors compares with the source framework: give the .onnx, SavedModel "
            "folder or .tflite, not an .mlir"
        )
    graphs = module_graphs(load_at_level(args.model, args.level, args.input_shapes))
    node_data = None
    if args.overlay_errors:
        node_data, report = overlay_for(args, graphs)
        first = report.first_divergence
        print(
            f"{PROG}: {len(report.layers)} layers compared with {report.runtime}; first "
            f"divergence: {first.location if first else 'none'}",
            file=sys.stderr,
        )
    if args.graph_json or args.node_data_json:
        if args.graph_json:
            with atomic_output(args.graph_json) as out:
                json.dump(convert_adapter_response({"graphs": graphs}), out, indent=1)
        if args.node_data_json:
            if node_data is None:
                raise OptionError("--node-data-json needs --overlay-errors")
            with atomic_output(args.node_data_json) as out:
                out.write(node_data.to_json_string())
        return 0

    from model_explorer import server
    from model_explorer.config import ModelExplorerConfig

    os.environ[INPUT_SHAPES_VARIABLE] = args.input_shapes
    remember(args.model, args.level, {"graphs": graphs})
    config = ModelExplorerConfig()
    # The page picks adapters by file extension: a SavedModel folder goes as its saved_model.pb
    page_path = args.model
    if os.path.isdir(page_path):
        page_path = os.path.join(page_path, "saved_model.pb")
    config.add_model_from_path(page_path, adapterId=ADAPTER_IDS[args.level])
    if node_data is not None:
        config.add_node_data(f"error vs {report.runtime}", node_data)
    sys.stdout.flush()
    server.start(
        host=args.host,
        port=args.port,
        config=config,
        no_open_in_browser=args.no_browser,
        extensions=["mlconv.explorer"],
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_tool(PROG, lambda: body(argv))


if __name__ == "__main__":
    sys.exit(main())

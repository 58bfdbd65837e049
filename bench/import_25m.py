"""Import cost of a 25M-parameter ONNX model: `onnx.load` alone vs mlconv's import + print +
re-parse of the textual IR.

    python bench/import_25m.py [--params 25e6] [--layers 6]

Builds an MLP of Gemm/MatMul layers with random float32 initializers (saved to a temporary
folder), then measures each step in a fresh subprocess, so that the peak memory of one does not
hide another's:

- wall time and peak RSS growth over the process after its imports (VmHWM, reset with
  /proc/self/clear_refs after the imports; `ru_maxrss` elsewhere),
- in a second subprocess the Python-heap peak (`tracemalloc`, which slows the run down, so its
  time is not reported).

Weights must stay bytes: the printed IR holds them as hex (`dense<"0x...">`), and the re-parsed
module must give back the initializers bit for bit. Prints a table with ratios against
`onnx.load`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np


def build_model(path: str, params: float, layers: int, seed: int = 0) -> int:
    """An MLP of `layers` square layers (alternately Gemm with bias and MatMul + Add) with about
    `params` float32 parameters; returns the exact count."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    width = int((params / layers) ** 0.5)
    rng = np.random.default_rng(seed)
    nodes, initializers = [], []
    current = "x"
    for i in range(layers):
        w = rng.standard_normal((width, width), dtype=np.float32) * np.float32(width**-0.5)
        b = rng.standard_normal(width, dtype=np.float32)
        initializers += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(b, f"b{i}")]
        out = f"h{i}" if i < layers - 1 else "y"
        if i % 2 == 0:
            nodes.append(
                helper.make_node("Gemm", [current, f"w{i}", f"b{i}"], [f"g{i}"], name=f"gemm{i}")
            )
        else:
            nodes.append(
                helper.make_node("MatMul", [current, f"w{i}"], [f"m{i}"], name=f"matmul{i}")
            )
            nodes.append(helper.make_node("Add", [f"m{i}", f"b{i}"], [f"g{i}"], name=f"add{i}"))
        nodes.append(helper.make_node("Relu", [f"g{i}"], [out], name=f"relu{i}"))
        current = out
    graph = helper.make_graph(
        nodes,
        "mlp25m",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, width])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, width])],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, path)
    return layers * (width * width + width)


# --------------------------------------------------------------------------- one measurement


def _status_kib(field: str) -> int | None:
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _reset_peak() -> int:
    """Current RSS in bytes, after resetting the peak RSS to it (Linux: clear_refs 5), so that
    the transient peak of the imports does not hide the step's."""
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")
    except OSError:
        pass
    current = _status_kib("VmRSS")
    return current * 1024 if current is not None else _peak_bytes()


def _peak_bytes() -> int:
    peak = _status_kib("VmHWM")
    if peak is None:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    return peak * 1024


def _run_step(step: str, path: str) -> dict:
    """Run `step` on `path` in this process and return its figures."""
    import io

    import onnx

    from mlconv.dialects import make_context
    from mlconv.frontends.onnx_importer import import_onnx, print_module

    figures: dict = {}
    if step == "onnx.load":
        start = time.perf_counter()
        onnx.load(path)
        figures["wall_s"] = time.perf_counter() - start
        return figures
    from xdsl.parser import Parser

    start = time.perf_counter()
    module = import_onnx(path)
    t_import = time.perf_counter()
    stream = io.StringIO()
    print_module(module, stream)
    text = stream.getvalue()
    t_print = time.perf_counter()
    reparsed = Parser(make_context(), text).parse_module()
    t_parse = time.perf_counter()
    figures.update(
        wall_s=t_parse - start,
        import_s=t_import - start,
        print_s=t_print - t_import,
        parse_s=t_parse - t_print,
        text_mb=len(text) / 1e6,
        hex_constants=text.count('dense<"0x'),
        decimal_list_constants=text.count("dense<["),
    )
    figures["bytes_roundtrip"] = _same_weights(path, reparsed)
    return figures


def _same_weights(path: str, module) -> bool:
    """Every initializer of the file, bit for bit, among the re-parsed module's constants."""
    import onnx
    from onnx import numpy_helper

    from mlconv.dense import to_numpy

    model = onnx.load(path)
    expected = {init.name: numpy_helper.to_array(init) for init in model.graph.initializer}
    found = [to_numpy(op.value) for op in module.walk() if op.name == "onnx.Constant"]
    found_bytes = {a.tobytes() for a in found}
    return len(found) == len(expected) and all(
        a.tobytes() in found_bytes for a in expected.values()
    )


def measure(step: str, path: str, traced: bool) -> dict:
    """Child process entry: import what the step needs first, then measure only the step."""
    import onnx  # noqa: F401 - imported before the baseline

    import mlconv.dialects.onnx  # noqa: F401
    import mlconv.frontends.onnx_importer  # noqa: F401
    from mlconv.dialects import make_context

    make_context()
    if traced:
        import tracemalloc

        tracemalloc.start()
        figures = _run_step(step, path)
        figures["py_peak_mb"] = tracemalloc.get_traced_memory()[1] / 1e6
        tracemalloc.stop()
        return {"py_peak_mb": figures["py_peak_mb"]}
    baseline = _reset_peak()
    figures = _run_step(step, path)
    figures["rss_peak_growth_mb"] = (_peak_bytes() - baseline) / 1e6
    return figures


def in_subprocess(step: str, path: str, traced: bool) -> dict:
    command = [sys.executable, __file__, "--measure", step, path] + (["--traced"] if traced else [])
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{step} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------- report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--params", type=float, default=25e6)
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--measure", nargs=2, metavar=("STEP", "PATH"), help=argparse.SUPPRESS)
    parser.add_argument("--traced", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(*args.measure, traced=args.traced)))
        return

    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "mlp25m.onnx")
        count = build_model(path, args.params, args.layers)
        size = os.path.getsize(path) / 1e6
        print(f"model: {count / 1e6:.2f}M float32 parameters, {size:.1f} MB file ({path})")
        rows = {}
        for step in ("onnx.load", "mlconv"):
            figures = in_subprocess(step, path, traced=False)
            figures.update(in_subprocess(step, path, traced=True))
            rows[step] = figures

    base = rows["onnx.load"]
    print()
    print(
        f"{'step':<38}{'wall s':>9}{'x load':>9}{'RSS+ MB':>10}{'x load':>9}{'py peak MB':>12}{'x load':>9}"
    )
    for step, f in rows.items():
        label = "onnx.load" if step == "onnx.load" else "mlconv import+print+parse"
        print(
            f"{label:<38}{f['wall_s']:>9.2f}{f['wall_s'] / base['wall_s']:>9.1f}"
            f"{f['rss_peak_growth_mb']:>10.0f}{f['rss_peak_growth_mb'] / max(base['rss_peak_growth_mb'], 1):>9.1f}"
            f"{f['py_peak_mb']:>12.0f}{f['py_peak_mb'] / max(base['py_peak_mb'], 1):>9.1f}"
        )
    m = rows["mlconv"]
    for key in ("import_s", "print_s", "parse_s"):
        print(f"  {key[:-2]:<36}{m[key]:>9.2f}{m[key] / base['wall_s']:>9.1f}")
    print()
    print(
        f"printed IR: {m['text_mb']:.0f} MB, {m['hex_constants']} hex constants, "
        f"{m['decimal_list_constants']} decimal-list constants; "
        f"weights bit-identical after re-parse: {m['bytes_roundtrip']}"
    )
    if not m["bytes_roundtrip"] or m["decimal_list_constants"]:
        raise SystemExit("weights did not stay bytes")


if __name__ == "__main__":
    main()

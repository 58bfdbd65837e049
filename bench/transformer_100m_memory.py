"""Peak memory of a ~100M-parameter transformer through import, lowering and compilation,
against its weight bytes (issue 7, item 6: within 3x).

    python bench/transformer_100m_memory.py [--layers 12] [--hidden 768] [--vocab 30522]
    python bench/transformer_100m_memory.py --layers 40 --hidden 1024 --steps import  # 2.1 GB

Builds a BERT-base-shaped encoder with `onnx.helper` (token + position embeddings, `layers`
blocks of LayerNormalization, Q/K/V/output projections, attention with 64-wide heads, a GELU MLP of 4x
width; random float32 weights, fixed seed) saved as the dynamo exporter saves models: the
graph in `model.onnx`, the weights in `model.onnx.data`, a dynamic batch and sequence length.
Each step runs in a fresh subprocess that first imports what it needs, then resets the peak
RSS (Linux `clear_refs` 5) and measures the peak RSS growth of the step alone:

- import: `import_onnx(model.onnx)`;
- +lower: then `lower_to_core` and the core-to-tpu pipeline at batch 1, sequence 128;
- +compile: then `compile_module` and one call (XLA compile, weights placed on the device).

Not a timed test: run it by hand; it prints one table (MB and ratio to the weight bytes).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

STEPS = ("import", "+lower", "+compile")


def build_model(
    folder: str, layers: int, hidden: int, vocab: int, seed: int = 0
) -> tuple[str, int]:
    """The encoder as model.onnx + model.onnx.data in `folder`; returns (path, weight bytes)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    heads, width, positions = hidden // 64, 4 * hidden, 512
    inits: list = []
    nodes: list = []

    def weight(name: str, *shape: int, scale: float | None = None) -> str:
        s = scale if scale is not None else shape[0] ** -0.5
        inits.append(
            numpy_helper.from_array((rng.standard_normal(shape) * s).astype(np.float32), name)
        )
        return name

    def const(name: str, values, dtype=np.int64) -> str:
        inits.append(numpy_helper.from_array(np.asarray(values, dtype), name))
        return name

    def node(op: str, inputs: list[str], output: str, **attrs) -> str:
        nodes.append(helper.make_node(op, inputs, [output], name=output, **attrs))
        return output

    const("zero", [0])
    const("one", [1])
    const("heads_dims", [heads, hidden // heads])
    const("hidden_dim", [hidden])
    const("scale", np.float32((hidden // heads) ** -0.5), np.float32)
    shape = node("Shape", ["input_ids"], "ids_shape")
    seq = node("Gather", [shape, "one"], "seq_len", axis=0)
    positions_range = node(
        "Range",
        [
            node("Squeeze", ["zero"], "zero_s"),
            node("Squeeze", [seq], "seq_s"),
            node("Squeeze", ["one"], "one_s"),
        ],
        "positions",
    )
    x = node(
        "Add",
        [
            node("Gather", [weight("tok_emb", vocab, hidden, scale=0.02), "input_ids"], "tok"),
            node(
                "Gather", [weight("pos_emb", positions, hidden, scale=0.02), positions_range], "pos"
            ),
        ],
        "emb",
    )
    for i in range(layers):
        p = f"l{i}_"

        def ln(name: str, value: str, p: str = p) -> str:
            gamma = const(p + name + "_g", np.ones(hidden), np.float32)
            beta = const(p + name + "_b", np.zeros(hidden), np.float32)
            return node("LayerNormalization", [value, gamma, beta], p + name, axis=-1, epsilon=1e-5)

        h = ln("ln1", x)
        split_shape = node(
            "Concat",
            [node("Slice", [shape, "zero", const(p + "two", [2])], p + "bs"), "heads_dims"],
            p + "split_shape",
            axis=0,
        )
        qkv = []
        for name in ("q", "k", "v"):
            projected = node("MatMul", [h, weight(p + name, hidden, hidden)], p + name + "_mm")
            split = node("Reshape", [projected, split_shape], p + name + "_split")
            qkv.append(node("Transpose", [split], p + name + "_t", perm=[0, 2, 1, 3]))
        q, k, v = qkv
        scores = node(
            "Mul",
            [
                node("MatMul", [q, node("Transpose", [k], p + "kT", perm=[0, 1, 3, 2])], p + "qk"),
                "scale",
            ],
            p + "scores",
        )
        attended = node(
            "MatMul", [node("Softmax", [scores], p + "probs", axis=-1), v], p + "attended"
        )
        merged_shape = node(
            "Concat",
            [node("Slice", [shape, "zero", const(p + "two_b", [2])], p + "bs2"), "hidden_dim"],
            p + "merged_shape",
            axis=0,
        )
        merged = node(
            "Reshape",
            [node("Transpose", [attended], p + "at", perm=[0, 2, 1, 3]), merged_shape],
            p + "merged",
        )
        x = node(
            "Add",
            [x, node("MatMul", [merged, weight(p + "o", hidden, hidden)], p + "o_mm")],
            p + "res1",
        )
        h = ln("ln2", x)
        up = node(
            "Add",
            [
                node("MatMul", [h, weight(p + "up", hidden, width)], p + "up_mm"),
                const(p + "up_b", np.zeros(width), np.float32),
            ],
            p + "up_b_add",
        )
        gelu = node(
            "Mul",
            [
                up,
                node(
                    "Sigmoid",
                    [
                        node(
                            "Mul",
                            [up, const(p + "gelu_k", np.float32(1.702), np.float32)],
                            p + "gk",
                        )
                    ],
                    p + "gs",
                ),
            ],
            p + "gelu",
        )
        x = node(
            "Add",
            [x, node("MatMul", [gelu, weight(p + "down", width, hidden)], p + "down_mm")],
            p + "res2",
        )
    graph = helper.make_graph(
        nodes,
        "encoder",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, ["batch", "sequence", hidden])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    path = os.path.join(folder, "model.onnx")
    onnx.save(
        model, path, save_as_external_data=True, location="model.onnx.data", size_threshold=1024
    )
    weight_bytes = sum(int(np.prod(i.dims)) * 4 for i in inits if i.data_type == TensorProto.FLOAT)
    return path, weight_bytes


# --------------------------------------------------------------------------- one measurement


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def _reset_peak() -> int:
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")
    return _status_kib("VmRSS") * 1024


def measure(step: str, path: str) -> dict:
    """Child process: import everything the step needs, reset the peak, run the step."""
    import jax  # noqa: F401

    from mlconv.backends.jax_backend import compile_module
    from mlconv.dialects import make_context
    from mlconv.frontends.onnx_importer import import_onnx
    from mlconv.passes.pipelines import CoreToTpuPipeline, lower_to_core

    make_context()
    baseline = _reset_peak()
    figures: dict = {}
    start = time.perf_counter()
    module = import_onnx(path)
    figures["import_s"] = time.perf_counter() - start
    if step != "import":
        start = time.perf_counter()
        lower_to_core(module)
        CoreToTpuPipeline(input_shapes="input_ids:1,128").apply(make_context(), module)
        figures["lower_s"] = time.perf_counter() - start
    if step == "+compile":
        start = time.perf_counter()
        run = compile_module(module, "cpu")
        ids = np.random.default_rng(1).integers(0, 1000, (1, 128))
        (out,) = run(ids)
        figures["compile_and_call_s"] = time.perf_counter() - start
        figures["finite"] = bool(np.isfinite(out).all())
    figures["rss_peak_growth"] = _status_kib("VmHWM") * 1024 - baseline
    return figures


def in_subprocess(step: str, path: str) -> dict:
    command = [sys.executable, __file__, "--measure", step, path]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{step} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--hidden", type=int, default=768)
    parser.add_argument("--vocab", type=int, default=30522)
    parser.add_argument(
        "--steps", default=",".join(STEPS), help="which of import,+lower,+compile to measure"
    )
    parser.add_argument("--measure", nargs=2, metavar=("STEP", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(*args.measure)))
        return
    with tempfile.TemporaryDirectory() as folder:
        path, weight_bytes = build_model(folder, args.layers, args.hidden, args.vocab)
        print(
            f"model: {weight_bytes / 4e6:.1f}M float32 parameters, {weight_bytes / 1e6:.0f} MB of "
            f"weights in model.onnx.data, graph {os.path.getsize(path) / 1e3:.0f} kB"
        )
        print(f"{'step':<10}{'peak RSS+ MB':>14}{'x weights':>11}  seconds")
        for step in args.steps.split(","):
            f = in_subprocess(step, path)
            times = ", ".join(f"{k[:-2]} {v:.1f}" for k, v in f.items() if k.endswith("_s"))
            growth = f["rss_peak_growth"]
            print(f"{step:<10}{growth / 1e6:>14.0f}{growth / weight_bytes:>11.2f}  {times}")
            if "finite" in f and not f["finite"]:
                raise SystemExit("the compiled model computed non-finite values")


if __name__ == "__main__":
    main()

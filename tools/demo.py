"""The bundled default job: what mlconv does to a model, shown on one whose output depends on
its input.

    python -m mlconv.tools.demo [--model MODEL.onnx] [--device cpu|gpu|tpu] [--out DIR]

1. A small residual CNN is built with seeded random weights and BatchNorm statistics (an
   ONNX file under --out), or --model is taken.
2. The conversion, pass by pass with its time, the IR run after each pass by its level's
   interpreter on the same input (`mlconv-opt --check-numerics`).
3. The converted model compiled with JAX and run on two different images: its top-5.
4. The per-layer comparison with onnxruntime (`mlconv-run --compare-with-source --per-layer`).
5. Where to open the graph page (`mlconv-view`, Model Explorer).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tempfile
import time

import numpy as np

CLASSES = 10


def build_model(path: str, seed: int = 0) -> str:
    """conv-bn-relu, a residual block (conv-bn-relu-conv-bn + skip), max pool, global average
    pool, fully connected, softmax, on 1x3x32x32 images; weights and BatchNorm statistics drawn
    from `seed`, so the class scores move with the image."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    weights: dict[str, np.ndarray] = {}
    nodes = []

    def conv_bn(name: str, x: str, cin: int, cout: int, relu: bool) -> str:
        fan_in = cin * 9
        weights[f"{name}.w"] = (rng.standard_normal((cout, cin, 3, 3)) / np.sqrt(fan_in)).astype(
            np.float32
        )
        weights[f"{name}.gamma"] = rng.uniform(0.5, 1.5, cout).astype(np.float32)
        weights[f"{name}.beta"] = (0.2 * rng.standard_normal(cout)).astype(np.float32)
        weights[f"{name}.mean"] = (0.2 * rng.standard_normal(cout)).astype(np.float32)
        weights[f"{name}.var"] = rng.uniform(0.5, 1.5, cout).astype(np.float32)
        nodes.append(
            helper.make_node("Conv", [x, f"{name}.w"], [f"{name}.c"], name=f"{name}/conv",
                             pads=[1, 1, 1, 1])
        )  # fmt: skip
        bn = [f"{name}.{k}" for k in ("gamma", "beta", "mean", "var")]
        nodes.append(
            helper.make_node("BatchNormalization", [f"{name}.c", *bn], [f"{name}.bn"],
                             name=f"{name}/bn")
        )  # fmt: skip
        if not relu:
            return f"{name}.bn"
        nodes.append(helper.make_node("Relu", [f"{name}.bn"], [f"{name}.y"], name=f"{name}/relu"))
        return f"{name}.y"

    h = conv_bn("stem", "image", 3, 16, relu=True)
    r = conv_bn("block/a", h, 16, 16, relu=True)
    r = conv_bn("block/b", r, 16, 16, relu=False)
    nodes.append(helper.make_node("Add", [h, r], ["block.sum"], name="block/add"))
    nodes.append(helper.make_node("Relu", ["block.sum"], ["block.y"], name="block/relu"))
    nodes.append(
        helper.make_node("MaxPool", ["block.y"], ["pool"], name="pool", kernel_shape=[2, 2],
                         strides=[2, 2])
    )  # fmt: skip
    nodes.append(helper.make_node("GlobalAveragePool", ["pool"], ["gap"], name="gap"))
    nodes.append(helper.make_node("Flatten", ["gap"], ["features"], name="flatten"))
    weights["fc.w"] = (3.0 * rng.standard_normal((16, CLASSES)) / 4).astype(np.float32)
    weights["fc.b"] = (0.1 * rng.standard_normal(CLASSES)).astype(np.float32)
    nodes.append(helper.make_node("Gemm", ["features", "fc.w", "fc.b"], ["logits"], name="fc"))
    nodes.append(helper.make_node("Softmax", ["logits"], ["probabilities"], name="softmax"))
    graph = helper.make_graph(
        nodes,
        "demo_cnn",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 32, 32])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [1, CLASSES])],
        [numpy_helper.from_array(v, k) for k, v in weights.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


def images(noise: np.ndarray) -> list[np.ndarray]:
    """Three different images of the model's input shape: noise, a gradient, stripes."""
    shape = noise.shape
    ramp = np.linspace(-2, 2, shape[-1], dtype=np.float32)
    gradient = np.broadcast_to(ramp, shape).copy()
    gradient[:, 1::2] = -gradient[:, 1::2]
    stripes = np.where((np.arange(shape[-2])[:, None] // 2) % 2 == 0, 1.5, -1.5)
    stripes = np.broadcast_to(stripes.astype(np.float32), shape).copy()
    return [noise, gradient, stripes]


def top5(probabilities: np.ndarray) -> str:
    flat = probabilities.reshape(-1)
    return ", ".join(f"class {i}: {flat[i]:.3f}" for i in np.argsort(flat)[::-1][:5])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="an ONNX model with static input shapes (default: built)")
    parser.add_argument("--device", default=None, help="cpu, gpu or tpu (default: JAX's)")
    parser.add_argument("--out", help="folder for the built model (default: a temporary one)")
    args = parser.parse_args(argv)

    # lazy: the command starts (and --help answers) before JAX and the passes load
    from mlconv.backends.jax_backend import compile_module
    from mlconv.frontends.load import load_model
    from mlconv.interpreters.check_numerics import check_numerics
    from mlconv.passes.pipeline_spec import parse_pass_pipeline
    from mlconv.passes.pipelines import target_device
    from mlconv.signature.main_inputs import make_inputs
    from mlconv.verify.compare_source import compare_with_source

    path = args.model
    if path is None:
        folder = args.out or os.path.join(tempfile.gettempdir(), "mlconv-demo")
        os.makedirs(folder, exist_ok=True)
        path = build_model(os.path.join(folder, "demo_cnn.onnx"))
        print(f"model: {path} (a residual CNN, seeded random weights and BatchNorm statistics)")
    else:
        print(f"model: {path}")

    device = target_device(args.device)
    pipeline = f"onnx-normalize,onnx-decompose,onnx-to-core,core-to-tpu-pipeline{{device={device}}}"
    print("\n== conversion, pass by pass (each level's IR run after each pass on one image) ==")
    start = time.perf_counter()
    module = load_model(path)
    print(f"  {'import (onnx dialect)':<24} {1e3 * (time.perf_counter() - start):8.1f} ms  "
          f"{sum(1 for _ in module.walk())} ops")  # fmt: skip
    report = check_numerics(module, parse_pass_pipeline(pipeline), rtol=1e-4, atol=1e-5)
    for step in report.steps[1:]:
        change = "" if step.max_abs is None else f"  outputs moved {step.max_abs:.2g}"
        print(f"  {step.name:<24} {1e3 * step.seconds:8.1f} ms  -> {step.level}{change}")
    print("  " + (report.message() or "numerics preserved by every pass"))
    tpu_ops = sum(1 for op in module.walk() if op.name.startswith("tpu."))

    start = time.perf_counter()
    run = compile_module(module, args.device)
    _, (image,) = make_inputs(module, None, seed=1)
    (first,) = run(image)
    compiled = time.perf_counter() - start
    timings = []
    for _ in range(10):
        begin = time.perf_counter()
        run(image)
        timings.append(time.perf_counter() - begin)
    results = [run(x)[0] for x in images(image)]
    print(f"\n== run: {tpu_ops} tpu ops, jit + first run {compiled:.2f} s, "
          f"{1e3 * np.median(timings):.2f} ms per run (median of 10) on {run.device} ==")  # fmt: skip
    for name, probabilities in zip(("noise", "gradient", "stripes"), results, strict=True):
        print(f"  {name:<9} top-5 {top5(probabilities)}")
    del first

    print("\n== per-layer comparison with the source framework ==")
    comparison = compare_with_source(path, per_layer=True, seed=1, device=args.device)
    sys.stdout.write(comparison.format_table(color=sys.stdout.isatty()))

    print("\n== the graph ==")
    print(
        f"  mlconv-view {path} --overlay-errors      (Model Explorer, per-layer errors as colours)"
    )
    if importlib.util.find_spec("model_explorer") is None:
        python = os.path.relpath(sys.executable)
        python = sys.executable if python.startswith("..") else python
        print(f"    (needs the `view` extra: {python} -m pip install 'mlconv[view]')")
    print(f"  mlconv-run {path} --compare-with-source --per-layer --json")
    return 0 if report.ok and comparison.ok else 1


if __name__ == "__main__":
    sys.exit(main())

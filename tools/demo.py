"""The bundled default job: ResNet50 from the onnx wheel, converted to the tpu dialect,
compiled with JAX, run, and compared with onnxruntime.

    python -m mlconv.tools.demo [--model light_resnet50] [--device cpu|gpu|tpu]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np


def light_model(name: str) -> str:
    import onnx

    return os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light", f"{name}.onnx")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="light_resnet50", help="a model of onnx's light set")
    parser.add_argument("--device", default=None, help="cpu, gpu or tpu (default: JAX's)")
    args = parser.parse_args(argv)

    import mlconv
    from mlconv.api import lower_to_tpu
    from mlconv.backends.jax_backend import compile_module
    from mlconv.frontends.onnx_importer import import_onnx

    path = light_model(args.model)
    start = time.perf_counter()
    module = import_onnx(path)
    imported = time.perf_counter()
    lower_to_tpu(module)
    lowered = time.perf_counter()
    tpu_ops = sum(1 for op in module.walk() if op.name.startswith("tpu."))
    run = compile_module(module, args.device)
    x = np.random.default_rng(0).random((1, 3, 224, 224), dtype=np.float32)
    (probabilities,) = run(x)
    compiled = time.perf_counter()
    timings = []
    for _ in range(10):
        begin = time.perf_counter()
        run(x)
        timings.append(time.perf_counter() - begin)

    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3  # the light models carry an unused initializer it warns about
    session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    (reference,) = session.run(None, {session.get_inputs()[0].name: x})

    print(f"model      {os.path.basename(path)} -> {tpu_ops} tpu ops in one tpu.region")
    print(f"import     {imported - start:.2f} s; lower to tpu {lowered - imported:.2f} s; "
          f"jit+first run {compiled - lowered:.2f} s; run {1e3 * np.median(timings):.1f} ms "
          f"(median of 10) on {run.device}")
    flat = probabilities.reshape(-1)
    top = np.argsort(flat)[::-1][:5]
    print("top-5      " + ", ".join(f"class {i}: {flat[i]:.4f}" for i in top))
    difference = float(np.max(np.abs(probabilities - reference)))
    print(f"onnxruntime max |difference| {difference:.3g} "
          f"({'match' if np.allclose(probabilities, reference, rtol=1e-3, atol=1e-4) else 'MISMATCH'})")
    del mlconv
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""XLA:CPU compile options on mlconv's programs: compile time and latency per option set.

    python bench/xla_cpu_options.py [--models squeezenet,shufflenet] [--rounds 5] [--runs 5]

Models: the light ONNX models of the onnx wheel with seeded random weights (as bench/latency.py).
Each is compiled with `mlconv.compile(..., "cpu")`; its tpu region (the first) is then jitted
again, as `jax_backend.CompiledRegion` jits it, under each of these XLA:CPU option sets:

- `xla default`: no options (XLA also hands convolutions to YNNPACK);
- `mlconv`: what mlconv compiles the region with (`jax_backend.region_compiler_options`:
  `XLA_CPU_OPTIONS`, and XLA's tree reduction rewriter off unless the region needs it);
- `mlconv, tree reductions`: `XLA_CPU_OPTIONS` alone (the tree reduction rewriter on);
- `mlconv at O3`: the same with LLVM at XLA's default -O3 instead of mlconv's -O2;
- `mlconv, legacy emitters` / `mlconv, fusion emitters`: the same with XLA:CPU's older LLVM IR
  emitters for loop fusions, one part per core (`jax_backend.small_program_options`, what
  mlconv picks for regions of at most `LEGACY_EMITTER_LIBRARY_CALLS` convolutions and dots),
  or with its MLIR fusion emitters;
- `dot+eltwise+reduce+conv`: YNNPACK library fusions of dots, elementwise ops, reductions and
  individual convolutions;
- `dot`: YNNPACK library fusions of dots only.

Printed per model and option set: XLA's compile time (wall and process CPU seconds of
`Lowered.compile()` with JAX's caches cleared first; tracing is the same for all and left out)
and the latency of one call (inputs placed, outputs fetched, as CompiledRegion runs it), medians
of `--rounds` interleaved rounds (the order rotates per round; each round compiles every set
once and times `--runs` calls of each), beside onnxruntime's latency measured in
the same process, and the ratio of each to onnxruntime's. Outputs are checked against the
`mlconv` option set's and the model's against onnxruntime's, so a fast wrong answer cannot pass.
Run it on an idle machine: under load onnxruntime's thread pool loses more than XLA does and the
ratios flatter mlconv (see bench/latency.py).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import numpy as np
import onnx

# Run as a script, bench/ is sys.path[0]; latency.py drops it from there when imported.
from latency import LIGHT, input_arrays, light_path, randomize, relative_error, time_calls

YNN_FUSION = "xla_cpu_experimental_ynn_fusion_type"
OPTION_SETS = {
    "xla default": None,
    "mlconv": "region options",  # replaced per model by jax_backend.region_compiler_options
    "dot+eltwise+reduce+conv": {
        YNN_FUSION: "LIBRARY_FUSION_TYPE_DOT,LIBRARY_FUSION_TYPE_ELTWISE,"
        "LIBRARY_FUSION_TYPE_REDUCE,LIBRARY_FUSION_TYPE_INDIVIDUAL_CONVOLUTION"
    },
    "dot": {YNN_FUSION: "LIBRARY_FUSION_TYPE_DOT"},
}


def region_args(compiled, inputs: list[np.ndarray]) -> tuple[list[np.ndarray], list]:
    """The host arrays regions[0] receives when `compiled` runs `inputs`, and the model's
    outputs of that call."""
    region = compiled.regions[0]
    seen: list[list[np.ndarray]] = []
    jitted = region._jitted

    def recording(constants, *args):
        if not seen:
            seen.append([np.asarray(a) for a in args])
        return jitted(constants, *args)

    region._jitted = recording
    try:
        outputs = compiled(*inputs)
    finally:
        region._jitted = jitted
    return seen[0], outputs


def bench_model(name: str, path: str, args: argparse.Namespace) -> None:
    import jax
    import onnxruntime

    import mlconv
    from mlconv.backends.jax_backend import (
        LITERAL_BYTES,
        XLA_CPU_OPTIONS,
        region_compiler_options,
        small_program_options,
    )
    from mlconv.dense import to_numpy
    from mlconv.dialects import tpu
    from mlconv.semantics.tpu_blocks import interpret_block

    inputs = input_arrays(onnx.load(path))
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    feeds = {i.name: inputs[i.name] for i in session.get_inputs()}
    expected = session.run(None, feeds)

    compiled = mlconv.compile(path, "cpu", quiet=True, backend="xla")
    host_args, outputs = region_args(compiled, [inputs[n] for n in compiled.input_names])
    for got, want in zip(outputs, expected, strict=True):
        if (error := relative_error(got, want)) > 1e-3:
            raise SystemExit(f"{name}: mlconv's output differs from onnxruntime's ({error:.1e})")

    region = compiled.regions[0]
    options = region_compiler_options(region.region, "cpu")
    OPTION_SETS["mlconv"] = options
    OPTION_SETS["mlconv, tree reductions"] = XLA_CPU_OPTIONS
    OPTION_SETS["mlconv at O3"] = {**options, "xla_backend_optimization_level": 3}
    legacy = small_program_options()
    fusion_emitters = {k: v for k, v in options.items() if k not in legacy}
    OPTION_SETS["mlconv, legacy emitters"] = {**fusion_emitters, **legacy}
    OPTION_SETS["mlconv, fusion emitters"] = fusion_emitters
    block, device = region.region.body.block, region.device
    values = {
        op: to_numpy(op.value) for op in region.region.body.walk() if isinstance(op, tpu.ConstantOp)
    }  # the weights in CompiledRegion's order: region.constants are their placed copies
    literals = {op: v for op, v in values.items() if v.nbytes <= LITERAL_BYTES}
    weight_ops = [op for op in values if op not in literals]
    constants = region.constants

    def program(weights, *xs):
        return interpret_block(
            block, {**literals, **dict(zip(weight_ops, weights, strict=True))}, xs
        )

    placed = [jax.device_put(a, device) for a in host_args]
    executables = {}

    def compile_set(label: str) -> tuple[float, float] | None:
        jax.clear_caches()
        lowered = jax.jit(program, compiler_options=OPTION_SETS[label]).lower(constants, *placed)
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            executables[label] = lowered.compile()
        except Exception as error:  # noqa: BLE001 - an option this jaxlib does not know
            print(f"{name:<14}{label:<25}(not compiled: {str(error).splitlines()[0][:60]})")
            return None
        return time.perf_counter() - wall, time.process_time() - cpu

    def run(label: str) -> list[np.ndarray]:
        xs = [jax.device_put(a, device) for a in host_args]
        return [np.asarray(r) for r in executables[label](constants, *xs)]

    compile_s: dict[str, list[tuple[float, float]]] = {}
    for label in OPTION_SETS:
        if (seconds := compile_set(label)) is not None:
            compile_s[label] = [seconds]
    if not compile_s:
        raise SystemExit(f"{name}: no option set compiled")
    first = {label: run(label) for label in compile_s}
    reference = first.get("mlconv", next(iter(first.values())))
    for label, got_outputs in first.items():
        for got, want in zip(got_outputs, reference, strict=True):
            if (error := relative_error(got, want)) > 1e-3:
                raise SystemExit(f"{name} {label}: output differs from mlconv's ({error:.1e})")
    runners = {label: (lambda label=label: run(label)) for label in compile_s}
    runners["onnxruntime"] = lambda: session.run(None, feeds)

    for fn in runners.values():  # warm-up
        time_calls(fn, 2)
    times: dict[str, list[float]] = {k: [] for k in runners}
    order = list(runners)
    for round_index in range(args.rounds):
        shift = round_index % len(order)
        for key in order[shift:] + order[:shift]:
            if round_index and key in compile_s and (seconds := compile_set(key)):
                compile_s[key].append(seconds)  # round 0's compile is the one above
            times[key] += time_calls(runners[key], args.runs)
    ms = {k: statistics.median(v) for k, v in times.items()}
    for label in runners:
        seconds = compile_s.get(label, [(float("nan"), float("nan"))])
        wall, cpu = (statistics.median(column) for column in zip(*seconds, strict=True))
        compile_text = "" if label == "onnxruntime" else f"{wall:>10.2f}{cpu:>9.2f}"
        print(
            f"{name:<14}{label:<25}{compile_text:>19}{ms[label]:>9.2f}"
            f"{ms[label] / ms['onnxruntime']:>9.2f}",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(LIGHT), help="light models, comma-separated")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=5, help="calls per option set per round")
    args = parser.parse_args()

    from mlconv.backends.jax_backend import XLA_CPU_OPTIONS

    print(
        f"batch 1, cpu, {args.rounds} rounds x {args.runs} runs, median; mlconv = "
        f"{XLA_CPU_OPTIONS}, XLA's tree reduction rewriter off where the region does not need it"
    )
    print(f"{'model':<14}{'XLA options':<25}{'compile s':>10}{'cpu s':>9}{'ms':>9}{'/ ort':>9}")
    with tempfile.TemporaryDirectory() as folder:
        for name in [m for m in args.models.split(",") if m]:
            path = os.path.join(folder, f"{name}.onnx")
            onnx.save(randomize(onnx.load(light_path(name))), path)
            bench_model(name, path, args)


if __name__ == "__main__":
    main()

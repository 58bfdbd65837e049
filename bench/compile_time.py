"""Compile time: mlconv.compile (XLA; auto) against OpenVINO's convert_model + compile_model.

    python bench/compile_time.py [--models squeezenet,densenet121] [--rounds 3] [--breakdown]

Models: the nine light ONNX models of the onnx wheel with seeded random weights (as
bench/latency.py). For each model the compilers run in `--rounds` interleaved rounds (the order
rotates per round): mlconv.compile with backend="xla"; with the default "auto" and an empty
choice cache (it compiles and times both XLA and OpenVINO: backends/backend_choice.py), then
"auto" again with that choice cached (it compiles the chosen back end only); and OpenVINO's
convert_model + compile_model. Each starts cold: mlconv's trace cache, its shared tpu parameter
attributes and types, and JAX's caches are cleared, so no compile reuses an earlier one's work.
All include their first inference (XLA compiles on mlconv's first call). Reported: the median
wall time of each side, the ratios to OpenVINO's, the CPU-time ratios (all threads, and children
it waited for) of xla and auto, and the back end auto chose. Timings on a shared machine swing,
so compare only the ratios of one run.

`--breakdown` adds, for the first round, where mlconv's time went: import, lowering to core,
each stage of core-to-tpu-pipeline, XLA compile (as `mlconv-opt --timing` splits it), and the
kernels XLA compiled: loop fusions (all / distinct bodies) and library calls. XLA:CPU generates
code once per distinct loop-fusion body, at about 11 ms each on this 2-core machine for a
bias + ReLU and about 23 ms with a reduction, while a library call (a YNNPACK dot, an Eigen
convolution) costs next to nothing to compile: the distinct count is what XLA's time follows.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx

# Cold compiles: no executable from mlconv's persistent XLA cache (backends/compile_cache.py).
os.environ["MLCONV_COMPILATION_CACHE"] = "0"

# Run as a script, bench/ is sys.path[0]; latency.py drops it from there when imported.
from latency import LIGHT, input_arrays, light_path, randomize


def cold() -> None:
    """Forget what an earlier compile traced or compiled."""
    import jax

    from mlconv.dense import clear_type_cache
    from mlconv.dialects.tpu import clear_param_caches
    from mlconv.semantics.tracing import clear_traces

    clear_traces()
    clear_param_caches()
    clear_type_cache()
    jax.clear_caches()


def cpu_seconds() -> float:
    """CPU time of this process (all threads) and of its finished children."""
    import resource

    own, children = (
        resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed(fn) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), cpu_seconds()
    fn()
    return time.perf_counter() - wall, cpu_seconds() - cpu


def compile_mlconv(path: str, inputs: dict[str, np.ndarray], backend: str = "xla") -> None:
    import mlconv

    run = mlconv.compile(path, device="cpu", quiet=True, backend=backend)
    run(**inputs)


def compile_openvino(path: str, inputs: dict[str, np.ndarray]) -> None:
    import openvino

    compiled = openvino.Core().compile_model(openvino.convert_model(path), "CPU")
    compiled.create_infer_request().infer(list(inputs.values()))


_NAME = re.compile(r"%[\w.\-]+")
_ANNOTATIONS = re.compile(r", (metadata|backend_config|frontend_attributes)=.*$", re.M)


def kernel_counts(hlo: str) -> tuple[int, int, int]:
    """(loop fusions, distinct loop-fusion bodies, library calls) of an optimized HLO module's
    entry computation; bodies are compared with instruction names and annotations removed."""
    bodies = {
        match.group(1): _ANNOTATIONS.sub("", _NAME.sub("%", match.group(2)))
        for match in re.finditer(r"^(%[\w.\-]+) \(.*?\) -> .*? \{\n(.*?)\n\}", hlo, re.M | re.S)
    }
    entry = hlo[hlo.index("\nENTRY") :]
    loops = re.findall(r"kind=k(?:Loop|Input|Output), calls=(%[\w.\-]+)", entry)
    library = len(re.findall(r"kind=kCustom|= \S+ (?:convolution|dot|custom-call)\(", entry))
    return len(loops), len({bodies[name] for name in loops}), library


def breakdown(path: str, inputs: dict[str, np.ndarray]) -> list[tuple[str, float, float]]:
    """mlconv.compile's steps one by one (cold): (step, wall seconds, CPU seconds), with the
    garbage collector paused as mlconv.compile pauses it."""
    import gc

    gc.disable()
    try:
        return _breakdown(path, inputs)
    finally:
        gc.enable()


def _breakdown(path: str, inputs: dict[str, np.ndarray]) -> list[tuple[str, float, float]]:
    import jax

    from mlconv.backends.jax_backend import (
        CompiledRegion,
        HostRegion,
        find_main,
        pick_device,
    )
    from mlconv.dialects import make_context, tpu
    from mlconv.frontends.load import load_model
    from mlconv.passes.core_to_tpu import input_name
    from mlconv.passes.pipelines import CoreToTpuPipeline, lower_to_core

    def input_names(main):
        return [input_name(main, i) for i in range(len(main.body.block.args))]

    cold()
    steps = []
    module = None

    def step(name: str, fn) -> None:
        wall, cpu = timed(fn)
        steps.append((name, wall, cpu))

    def load() -> None:
        nonlocal module
        module = load_model(path)

    step("import", load)
    step("lower to core", lambda: lower_to_core(module))
    for stage in CoreToTpuPipeline(device="cpu").passes():
        step(stage.name, lambda stage=stage: stage.apply(make_context(), module))
    main = find_main(module)
    # The compiled region; host regions (tpu-outline-host-head and -tail) are not, and the
    # head's run here gives the compiled region its operands.
    values = dict(zip(main.body.block.args, [inputs[n] for n in input_names(main)], strict=True))
    for op in main.body.block.ops:
        if isinstance(op, tpu.RegionOp) and op.on_host():
            outputs = HostRegion(op)(*map(values.get, op.operands))
            values.update(zip(op.results, outputs, strict=True))
        elif isinstance(op, tpu.RegionOp):
            region_op = op
            break
    region = CompiledRegion(region_op, pick_device("cpu"))
    args = [values[operand] for operand in region_op.operands]
    lowered = executable = None

    def lower() -> None:
        nonlocal lowered
        lowered = region._jitted.lower(region.constants, *args)

    def compile_() -> None:
        nonlocal executable
        executable = lowered.compile()

    step("JAX trace + StableHLO", lower)
    step("XLA compile", compile_)
    step("first call", lambda: jax.block_until_ready(executable(region.constants, *args)))
    loops, distinct, library = kernel_counts(executable.as_text())
    print(f"    XLA kernels: {loops} loop fusions ({distinct} distinct), {library} library calls")
    return steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(LIGHT), help="light models, comma-separated")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--breakdown", action="store_true", help="mlconv's time per step")
    args = parser.parse_args()

    import jax  # noqa: F401 - both sides start with their modules imported
    import openvino  # noqa: F401

    import mlconv.api  # noqa: F401
    import mlconv.backends.jax_backend  # noqa: F401

    print(
        f"{args.rounds} interleaved cold rounds, median; wall and process CPU seconds. xla: "
        "mlconv.compile(backend='xla'); auto: the default, measuring XLA and OpenVINO (an empty "
        "choice cache); cached: auto again with the choice cached (compiles the chosen back end "
        "only); ov: OpenVINO's convert_model + compile_model. Each with its first inference."
    )
    sides = ("xla", "auto", "cached", "ov")
    print(
        f"{'model':<16}"
        + "".join(f"{side + ' s':>9}" for side in sides)
        + "".join(f"{side + '/ov':>10}" for side in sides[:3])
        + f"{'xla cpu/ov':>11}{'auto cpu/ov':>12}{'ran':>10}"
    )
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for name in [m for m in args.models.split(",") if m]:
            path = os.path.join(folder, f"{name}.onnx")
            onnx.save(randomize(onnx.load(light_path(name))), path)
            inputs = input_arrays(onnx.load(path))
            times: dict[str, list[tuple[float, float]]] = {side: [] for side in sides}
            ran = "?"
            for round_index in range(args.rounds):
                cache = os.path.join(folder, f"cache-{name}-{round_index}")
                os.environ["MLCONV_CACHE_DIR"] = cache  # empty: auto measures, then cached reuses
                order = ["xla", "auto", "ov"]
                order = order[round_index % 3 :] + order[: round_index % 3]
                for key in order:
                    keys = ["auto", "cached"] if key == "auto" else [key]
                    for side in keys:
                        cold()
                        if side == "ov":
                            fn = compile_openvino
                        else:
                            backend = "xla" if side == "xla" else "auto"
                            fn = functools.partial(compile_mlconv, backend=backend)
                        times[side].append(
                            timed(lambda fn=fn, path=path, inputs=inputs: fn(path, inputs))
                        )
                chosen = [f.read_text() for f in Path(cache).glob("backend-choice/*.json")]
                ran = json.loads(chosen[0])["backend"] if chosen else "?"
            wall = {k: statistics.median(t[0] for t in v) for k, v in times.items()}
            cpu = {k: statistics.median(t[1] for t in v) for k, v in times.items()}
            row = {f"{k}/ov": wall[k] / wall["ov"] for k in sides[:3]}
            row |= {"xla cpu/ov": cpu["xla"] / cpu["ov"], "auto cpu/ov": cpu["auto"] / cpu["ov"]}
            rows.append(row)
            print(
                f"{name:<16}"
                + "".join(f"{wall[side]:>9.2f}" for side in sides)
                + "".join(f"{row[side + '/ov']:>10.2f}" for side in sides[:3])
                + f"{row['xla cpu/ov']:>11.2f}{row['auto cpu/ov']:>12.2f}{ran:>10}",
                flush=True,
            )
            if args.breakdown:
                for step, wall_s, cpu_s in breakdown(path, inputs):
                    print(f"    {step:<26}{wall_s:>8.2f}{'':>16}{cpu_s:>9.2f}", flush=True)
    if rows:
        print(
            "median ratio    "
            + "  ".join(f"{k} {statistics.median(r[k] for r in rows):.2f}" for k in rows[0])
        )


if __name__ == "__main__":
    main()

"""Run the ONNX backend node test cases through mlconv and report what passes.

    python -m mlconv.tools.onnx_conformance [-k REGEX] [-j JOBS] [--json OUT.json] [-v]
        [--write-expected test/pytest/onnx_conformance_expected.json [--accept-regressions]]

Each case (`onnx.backend.test.case.node.collect_testcases()`: a model plus input/output data
sets and its own rtol/atol) is compiled with `mlconv.compile(model, device="cpu")` (import,
onnx-to-core, core-to-tpu, one jax.jit) and every data set is compared with the expected
outputs: same shape, same dtype, values within the case's tolerances (NaNs equal).

`--write-expected` writes the table of cases mlconv cannot pass yet, grouped by cause
(`classify`: from the case's status and error message, never its name), that
`test/pytest/test_onnx_conformance.py` holds the compiler to: every case outside it must pass,
every case in it must still fail, for the cause it is listed under. Regenerate it after adding
lowerings:

    python -m mlconv.tools.onnx_conformance -j 2 --write-expected test/pytest/onnx_conformance_expected.json

It refuses (exit 1, the table unchanged) when a case the previous table did not list fails:
a regression is fixed, not absorbed. `--accept-regressions` lists such cases anyway.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import re
import sys
import time
import warnings
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

import mlconv
from mlconv.errors import MlconvError
from mlconv.verify.onnx_cases import as_array, collect_cases


@dataclass
class CaseResult:
    name: str
    op_type: str
    status: str  # "pass", "fail" (wrong numbers), "error" (refused/crashed)
    message: str
    seconds: float


def case_op_type(case: Any) -> str:
    """The op type the case tests: its model's last node's type for plain cases."""
    nodes = case.model.graph.node
    return nodes[-1].op_type if len(nodes) == 1 else (nodes[-1].op_type if nodes else "?")


def compare(expected: np.ndarray, actual: np.ndarray, rtol: float, atol: float) -> str | None:
    expected = np.asarray(expected)
    actual = np.asarray(actual)
    if expected.shape != actual.shape:
        return f"shape {actual.shape} != expected {expected.shape}"
    if expected.dtype != actual.dtype:
        return f"dtype {actual.dtype} != expected {expected.dtype}"
    if expected.dtype.kind == "V":  # ml_dtypes floats (bfloat16, ...): compare as float32
        expected, actual = expected.astype(np.float32), actual.astype(np.float32)
    if expected.dtype.kind in "fc":
        ok = np.isclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True)
    else:
        ok = actual == expected
    if not np.all(ok):
        bad = int(np.size(ok) - np.count_nonzero(ok))
        if expected.dtype.kind in "fc":
            wrong = ~np.asarray(ok)
            got, want = actual[wrong], expected[wrong]
            nan = int(np.count_nonzero(np.isnan(got) != np.isnan(want)))
            diff = np.abs(got.astype(np.complex128 if got.dtype.kind == "c" else np.float64) - want)
            largest = np.nan if nan else float(np.max(diff))
            detail = f"max abs diff {largest:.3g}" + (f": {nan} NaN vs number" if nan else "")
            return f"{bad}/{np.size(ok)} values differ ({detail})"
        return f"{bad}/{np.size(ok)} values differ"
    return None


def run_case(case: Any) -> CaseResult:
    start = time.perf_counter()
    op_type = case_op_type(case)

    def result(status: str, message: str) -> CaseResult:
        return CaseResult(case.name, op_type, status, message, time.perf_counter() - start)

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run = mlconv.compile(case.model, device="cpu", backend="xla")
            for inputs, outputs in case.data_sets:
                inputs, outputs = [as_array(v) for v in inputs], [as_array(v) for v in outputs]
                got = run(*inputs)
                if len(got) != len(outputs):
                    return result("fail", f"{len(got)} outputs, expected {len(outputs)}")
                for index, (expected, actual) in enumerate(zip(outputs, got, strict=True)):
                    problem = compare(expected, actual, case.rtol, case.atol)
                    if problem:
                        return result("fail", f"output {index}: {problem}")
    except MlconvError as error:
        return result("error", str(error).splitlines()[0][:300])
    except Exception as error:  # a crash is a result too: the scoreboard lists it
        text = f"{type(error).__name__}: {error}".splitlines()[0][:300]
        return result("error", text)
    return result("pass", "")


# Why a case fails, read from its status and its message alone (never from its name, so a
# case filed under a cause really fails for it): (status, regex on the message, cause). First
# match wins; the specific refusals come before the generic ones.
CAUSES: list[tuple[str, str, str]] = [
    ("error", r"string tensors are not supported", "string tensors"),
    (
        "error",
        r"element type (FLOAT8|FLOAT4|U?INT4|U?INT2)\w* is not supported",
        "float8/float4/int4/int2 element types",
    ),
    ("error", r"has sequence type", "sequence types (incl. loop-carried sequences)"),
    ("error", r"has optional type|an empty optional", "optional types"),
    (
        "error",
        r"unsupported ONNX ops: ai\.onnx\.preview\.training\.|in training mode"
        r"|: onnx\.ai\.onnx\.preview\.training\.\w+-\d",  # onnx.Custom of that domain
        "training-only ops",
    ),
    (
        "error",
        r"unsupported ONNX ops: ai\.onnx\.ml\.|: onnx\.ai\.onnx\.ml\.\w+-\d",
        "ai.onnx.ml domain",
    ),
    (
        "error",
        r"no lowering to core .*\b(RandomUniform|RandomNormal|RandomUniformLike|RandomNormalLike|"
        r"Bernoulli|Multinomial)-",
        "random outputs",
    ),
    (
        "error",
        # Other domains import as onnx.Custom, keyed `onnx.<domain>.<op>-<domain version>`.
        r"unsupported ONNX ops|of a custom-domain op is not supported"
        r"|no lowering to core .*: onnx\.[a-z]\w*\.[\w.]*-\d",
        "ops the onnx dialect does not define (other domains, newer opsets)",
    ),
    ("error", r"no lowering to core", "no onnx-to-core lowering yet"),
    (
        "error",
        r"static operand .* is not a constant|must be a constant",
        "shapes/axes computed at run time (dynamic)",
    ),
    ("error", r"dynamic|static leading dimension", "dynamic shapes"),
    ("error", r"is not supported|does not produce it", "refused by a lowering (not supported yet)"),
    ("error", r"", "crashes in lowering or backend"),
    ("fail", r"NaN vs number", "wrong results (NaN where a number is expected, or the reverse)"),
    ("fail", r"", "wrong results"),
]


def classify(result: CaseResult) -> str:
    """The cause of a failing case, for the expected-failure table, from its status and
    message."""
    for status, pattern, cause in CAUSES:
        if result.status == status and re.search(pattern, result.message):
            return cause
    raise ValueError(f"{result.name} passes: it has no cause")


def expected_failures(results: list[CaseResult]) -> dict[str, list[str]]:
    """cause -> sorted names of the cases that do not pass."""
    table: dict[str, list[str]] = {}
    for result in results:
        if result.status != "pass":
            table.setdefault(classify(result), []).append(result.name)
    return {cause: sorted(names) for cause, names in sorted(table.items())}


def table_changes(
    old: dict[str, list[str]], new: dict[str, list[str]]
) -> tuple[list[str], list[str], list[str]]:
    """(regressions: failing cases the old table did not list, fixed: listed cases that pass
    now, moved: 'name: old cause -> new cause')."""
    old_cause = {name: cause for cause, names in old.items() for name in names}
    new_cause = {name: cause for cause, names in new.items() for name in names}
    regressions = sorted(set(new_cause) - set(old_cause))
    fixed = sorted(set(old_cause) - set(new_cause))
    moved = [
        f"{name}: {old_cause[name]} -> {new_cause[name]}"
        for name in sorted(set(old_cause) & set(new_cause))
        if old_cause[name] != new_cause[name]
    ]
    return regressions, fixed, moved


def write_expected(
    path: str, results: list[CaseResult], accept_regressions: bool = False
) -> list[str]:
    """Write the expected-failure table to `path`; refuse (returning the regressions, writing
    nothing) when a case the table at `path` did not list fails now, unless
    `accept_regressions`."""
    table = expected_failures(results)
    try:
        with open(path) as stream:
            old = json.load(stream)
    except FileNotFoundError:
        old = {}
    regressions, fixed, moved = table_changes(old, table)
    for name in fixed:
        print(f"fixed: {name}")
    for line in moved:
        print(f"cause changed: {line}")
    for name in regressions:
        print(f"REGRESSION: {name} fails now and {path} did not list it")
    if regressions and old and not accept_regressions:
        return regressions
    with open(path, "w") as stream:
        json.dump(table, stream, indent=1)
        stream.write("\n")
    return []


def _worker(indices: list[int], pattern: str | None, queue: Any) -> None:
    cases = collect_cases(pattern)
    for index in indices:
        queue.put(asdict(run_case(cases[index])))
    queue.put(None)


def run_all(pattern: str | None = None, jobs: int = 1, verbose: bool = False) -> list[CaseResult]:
    """Run every matching case in `jobs` processes (each collects the cases itself)."""
    cases = collect_cases(pattern)
    if jobs <= 1:
        results = []
        for case in cases:
            results.append(run_case(case))
            if verbose:
                _print(results[-1])
        return results
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    shards = [list(range(i, len(cases), jobs)) for i in range(jobs)]
    workers = [context.Process(target=_worker, args=(shard, pattern, queue)) for shard in shards]
    for worker in workers:
        worker.start()
    results, done = [], 0
    while done < len(workers):
        item = queue.get()
        if item is None:
            done += 1
            continue
        results.append(CaseResult(**item))
        if verbose:
            _print(results[-1])
    for worker in workers:
        worker.join()
    return sorted(results, key=lambda r: r.name)


def _print(result: CaseResult) -> None:
    line = f"{result.status:5} {result.name} ({result.seconds:.2f}s)"
    print(line + (f": {result.message}" if result.message else ""), flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", dest="pattern", help="regex on case names")
    parser.add_argument("-j", dest="jobs", type=int, default=1)
    parser.add_argument("--json", dest="json_path")
    parser.add_argument("-v", dest="verbose", action="store_true")
    parser.add_argument(
        "--write-expected", dest="expected_path", help="write the expected-failure table"
    )
    parser.add_argument(
        "--accept-regressions",
        action="store_true",
        help="let --write-expected list failing cases the previous table did not list",
    )
    args = parser.parse_args(argv)
    start = time.perf_counter()
    results = run_all(args.pattern, args.jobs, args.verbose)
    counts = Counter(r.status for r in results)
    if args.json_path:
        with open(args.json_path, "w") as stream:
            json.dump([asdict(r) for r in results], stream, indent=0)
    refused = []
    if args.expected_path:
        if args.pattern:
            parser.error("--write-expected needs the full run (no -k)")
        refused = write_expected(args.expected_path, results, args.accept_regressions)
    print(
        f"{counts['pass']} passed, {counts['fail'] + counts['error']} failed "
        f"({counts['fail']} wrong results, {counts['error']} errors) of {len(results)} "
        f"in {time.perf_counter() - start:.0f}s"
    )
    if refused:
        print(
            f"error: {len(refused)} regression(s); {args.expected_path} is unchanged "
            "(fix them, or pass --accept-regressions to list them as expected failures)",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The nightly-size fuzzing run of issue 28: the properties of test/pytest/fuzz_readers.py with
10 000 generated inputs (or `--examples N`) per reader, no deadline, a fresh random seed
unless `--seed` is given.

    python bench/fuzz.py [--examples 10000] [--seed 0] [--only manifest,options,http,ir]

Each reader either returns a well-formed result or refuses with its layer's error in one line;
anything else (another exception, a crash of the process, a hang: Hypothesis reports an input
that runs past `--timeout` seconds) is a finding, printed with the input that shows it, and
the exit status is 1. Prints one line per reader: inputs run, how many were refused and how many
read, seconds. CI runs ~200 per reader (test_fuzz_readers.py).
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "test" / "pytest"))

import fuzz_readers as fz  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

READERS = {
    "manifest": (fz.manifests(), fz.check_manifest),
    "manifest-bytes": (st.binary(max_size=400), fz.check_manifest_bytes),
    "options": (fz.options_texts, fz.check_options),
    "options-file": (st.binary(max_size=200), fz.check_options_file),
    "http": (fz.request_bodies(), lambda request: fz.check_request(*request)),
    "content-length": (
        st.lists(st.text(max_size=24), max_size=2),
        fz.check_content_length,
    ),
    "ir": (fz.ir_files(), lambda ir: fz.check_ir(*ir)),
}


def run(
    name: str, examples: int, seed: int | None, timeout: float
) -> tuple[collections.Counter, bool]:
    strategy, check = READERS[name]
    counts: collections.Counter = collections.Counter()

    def classify(value):
        counts[check(value)] += 1

    options = settings(
        max_examples=examples,
        deadline=timedelta(seconds=timeout),
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    test = options(given(strategy)(classify))
    if seed is not None:
        from hypothesis import seed as with_seed

        test = with_seed(seed)(test)
    try:
        test()
        return counts, True
    except Exception as error:  # noqa: BLE001 - a finding: report it
        print(
            f"{name}: FINDING after {sum(counts.values())} inputs: {type(error).__name__}: {error}"
        )
        return counts, False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--examples", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per input")
    parser.add_argument("--only", default=",".join(READERS))
    args = parser.parse_args(argv)
    ok = True
    for name in args.only.split(","):
        start = time.perf_counter()
        counts, passed = run(name, args.examples, args.seed, args.timeout)
        ok &= passed
        print(
            f"{name:15s} {sum(counts.values()):6d} inputs ({counts['refused']} refused in one "
            f"line, {counts['ok']} read)  {'no finding' if passed else 'FINDING'}  "
            f"{time.perf_counter() - start:6.1f} s",
            flush=True,
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

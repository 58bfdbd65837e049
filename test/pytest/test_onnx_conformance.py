"""The ONNX backend node cases (shipped in the onnx wheel), each compiled with `mlconv.compile`
and compared with its expected outputs at the case's own rtol/atol.

`onnx_conformance_expected.json` (beside this file) is the one table of cases mlconv cannot
pass yet, grouped by cause. A case outside it must pass; a case in it must still fail, so the
table cannot go stale: when a lowering lands, its cases fail here until they leave the table.
Regenerate the table from a full run:

    python -m mlconv.tools.onnx_conformance -j 2 --write-expected test/pytest/onnx_conformance_expected.json

Run with `pytest -n 2` (xdist): each worker collects the cases itself.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mlconv.tools.onnx_conformance import collect_cases, run_case

EXPECTED_PATH = Path(__file__).with_name("onnx_conformance_expected.json")
EXPECTED_FAILURES: dict[str, str] = {
    name: cause for cause, names in json.loads(EXPECTED_PATH.read_text()).items() for name in names
}
CASES = {case.name: case for case in collect_cases()}


def test_table_names_real_cases():
    unknown = sorted(set(EXPECTED_FAILURES) - set(CASES))
    assert not unknown, f"the expected-failure table names cases onnx does not ship: {unknown[:10]}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_node_case(name):
    result = run_case(CASES[name])
    cause = EXPECTED_FAILURES.get(name)
    if cause is None:
        assert result.status == "pass", f"{result.status}: {result.message}"
    else:
        assert result.status != "pass", (
            f"passes now: remove it from {EXPECTED_PATH.name} (listed under '{cause}')"
        )

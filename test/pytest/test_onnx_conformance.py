"""The ONNX backend node cases (shipped in the onnx wheel), each compiled with `mlconv.compile`
and compared with its expected outputs at the case's own rtol/atol.

`onnx_conformance_expected.json` (beside this file) is the one table of cases mlconv cannot
pass yet, grouped by cause. A case outside it must pass; a case in it must still fail, and for
the cause it is listed under (`classify` reads the cause from the actual status and message),
so the table cannot go stale or lie: when a lowering lands, its cases fail here until they
leave the table; when a case starts failing differently, it fails here until it moves.
Regenerate the table from a full run (it refuses to add cases the table did not list):

    python -m mlconv.tools.onnx_conformance -j 2 --write-expected test/pytest/onnx_conformance_expected.json

Run with `pytest -n 2` (xdist): each worker collects the cases itself.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from mlconv.tools.onnx_conformance import (
    CAUSES,
    CaseResult,
    classify,
    compare,
    run_case,
    write_expected,
)
from mlconv.verify.onnx_cases import collect_cases

EXPECTED_PATH = Path(__file__).with_name("onnx_conformance_expected.json")
EXPECTED_FAILURES: dict[str, str] = {
    name: cause for cause, names in json.loads(EXPECTED_PATH.read_text()).items() for name in names
}
CASES = {case.name: case for case in collect_cases()}


def test_table_names_real_cases_and_causes():
    unknown = sorted(set(EXPECTED_FAILURES) - set(CASES))
    assert not unknown, f"the expected-failure table names cases onnx does not ship: {unknown[:10]}"
    causes = {cause for _, _, cause in CAUSES}
    assert set(EXPECTED_FAILURES.values()) <= causes, set(EXPECTED_FAILURES.values()) - causes


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
        actual = classify(result)
        assert actual == cause, (
            f"listed under '{cause}' in {EXPECTED_PATH.name}, but fails as '{actual}': "
            f"{result.status}: {result.message}"
        )


def _result(name: str, status: str, message: str) -> CaseResult:
    return CaseResult(name, "Op", status, message, 0.0)


def test_causes_come_from_the_message_not_the_name():
    named_like_a_sequence = _result(
        "test_if_opt", "error", "value 'sequence' has optional type, which is not supported"
    )
    assert classify(named_like_a_sequence) == "optional types"
    plain_tensor = _result(
        "test_optional_get_element_tensor",
        "error",
        "error: no lowering to core for 1 ONNX op version(s) at opset 28: OptionalGetElement-28",
    )
    assert classify(plain_tensor) == "no onnx-to-core lowering yet"
    assert classify(_result("test_x", "fail", "output 0: 1/3 values differ")) == "wrong results"


def test_nan_mismatches_are_reported_as_nan():
    message = compare(np.array([1.0, 2.0, 3.0]), np.array([1.0, np.nan, 3.5]), 1e-5, 1e-5)
    assert message == "2/3 values differ (max abs diff nan: 1 NaN vs number)"
    assert "NaN" in classify(_result("test_x", "fail", f"output 0: {message}"))
    message = compare(np.array([1.0, np.nan]), np.array([1.5, np.nan]), 1e-5, 1e-5)
    assert message == "1/2 values differ (max abs diff 0.5)"  # NaN where NaN is expected is equal


def test_write_expected_refuses_regressions(tmp_path, capsys):
    path = tmp_path / "expected.json"
    path.write_text(json.dumps({"string tensors": ["test_a"]}))
    results = [
        _result("test_a", "error", "value 'x': string tensors are not supported"),
        _result("test_b", "fail", "output 0: 1/3 values differ (max abs diff 1)"),
        _result("test_c", "pass", ""),
    ]
    assert write_expected(str(path), results) == ["test_b"]
    assert json.loads(path.read_text()) == {"string tensors": ["test_a"]}, "written anyway"
    assert "REGRESSION: test_b" in capsys.readouterr().out
    assert write_expected(str(path), results, accept_regressions=True) == []
    assert json.loads(path.read_text()) == {
        "string tensors": ["test_a"],
        "wrong results": ["test_b"],
    }
    assert write_expected(str(path), results[1:]) == []  # test_a is fixed: it leaves the table
    assert json.loads(path.read_text()) == {"wrong results": ["test_b"]}

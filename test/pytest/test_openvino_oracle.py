"""OpenVINO as the second runtime of every core op kind the test suite produces (issue 10
item 4).

`openvino_oracle_expected.json` names, for each core op kind the ONNX backend node cases lower
to, the smallest case that produces it (sampled by `python -m mlconv.verify.openvino_oracle
--write test/pytest/openvino_oracle_expected.json`, which also runs them). Each case's core IR
is written as OpenVINO IR, run by OpenVINO on the case's inputs and compared with the JAX path
(within 1e-4 of the largest output). Kinds OpenVINO lacks or computes differently are listed
with the reason under `unsupported` / `differs`, as onnx_conformance_expected.json lists the
conformance failures: a listed kind must still fail (else it is removed from the table), every
other kind must pass. The core op kinds of the model tests (light ONNX models, Keras, PyTorch
exports) are a subset of these, and run whole in test_openvino_models.py.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from mlconv.backends.openvino_layers import UNSUPPORTED
from mlconv.dialects.core import OPS_BY_NAME
from mlconv.verify.openvino_oracle import check_case

TABLE = json.loads((Path(__file__).parent / "openvino_oracle_expected.json").read_text())
CASES: dict[str, str] = TABLE["cases"]


@pytest.fixture(scope="module")
def node_cases():
    from mlconv.verify.onnx_cases import collect_cases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {case.name: case for case in collect_cases() if case.name in CASES.values()}


def test_table_is_consistent():
    assert len(CASES) >= 100
    for status in ("differs", "unsupported"):
        for kind, reason in TABLE[status].items():
            assert kind in CASES, f"{kind} is listed as {status} but no case produces it"
            assert reason.strip(), f"{kind}: give the reason"
    assert set(TABLE["differs"]).isdisjoint(TABLE["unsupported"])
    # Every op the writer refuses by name is refused in the table too (if a case produces it).
    for kind in UNSUPPORTED:
        assert kind in OPS_BY_NAME
        if kind in CASES:
            assert kind in TABLE["unsupported"], kind


@pytest.mark.parametrize("kind", sorted(CASES))
def test_core_op_in_openvino(kind, node_cases):
    status, detail = check_case(node_cases[CASES[kind]])
    expected = "pass"
    for listed in ("differs", "unsupported"):
        if kind in TABLE[listed]:
            expected = listed
    assert status == expected, f"{kind} ({CASES[kind]}): {status} {detail}"

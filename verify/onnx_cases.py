"""The ONNX backend node test cases shipped inside the `onnx` wheel, as the conformance run
(`tools/onnx_conformance.py`) and the OpenVINO oracle read them."""

from __future__ import annotations

import re
import warnings
from typing import Any


def collect_cases(pattern: str | None = None) -> list[Any]:
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = collect_testcases()
    if pattern:
        regex = re.compile(pattern)
        cases = [c for c in cases if regex.search(c.name)]
    return cases


def as_array(value: Any) -> Any:
    """Some cases (Cast's, whose types numpy cannot hold) store their data as TensorProtos."""
    from onnx import TensorProto, numpy_helper

    return numpy_helper.to_array(value) if isinstance(value, TensorProto) else value

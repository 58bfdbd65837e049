"""Property-based tests of the readers of someone else's data (issue 28): the artifact
manifest, ConverterOptions, the HTTP request parser and the OpenVINO IR reader each return a
well-formed result or refuse in one line, for ~200 generated inputs per reader (derandomized,
so CI runs the same inputs each time). bench/fuzz.py runs the same properties at 10 000+."""

from __future__ import annotations

from datetime import timedelta

import fuzz_readers as fz
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

CI = settings(
    max_examples=200,
    deadline=timedelta(seconds=5),
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@CI
@given(fz.manifests())
def test_manifest_loader(manifest):
    fz.check_manifest(manifest)


@settings(CI, max_examples=100)
@given(st.binary(max_size=300) | fz.json_values.map(lambda v: __import__("json").dumps(v).encode()))
def test_manifest_bytes(data):
    fz.check_manifest_bytes(data)


@CI
@given(fz.options_texts)
def test_options_parser(text):
    fz.check_options(text)


@settings(CI, max_examples=50)
@given(st.binary(max_size=100))
def test_options_file(data):
    fz.check_options_file(data)


@CI
@given(fz.request_bodies())
def test_http_request_parser(request):
    fz.check_request(*request)


@settings(CI, max_examples=100)
@given(
    st.lists(
        st.text(max_size=24) | st.sampled_from(["-1", "abc", "1000", "1001", "0", " 7"]),
        min_size=0,
        max_size=2,
    )
)
def test_content_length(values):
    fz.check_content_length(values)


@CI
@given(fz.ir_files())
def test_openvino_ir_reader(ir):
    fz.check_ir(*ir)

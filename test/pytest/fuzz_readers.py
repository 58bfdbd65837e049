"""Hypothesis strategies and properties for the four readers of someone else's data (issue 28):
the artifact manifest, ConverterOptions text, an HTTP request body and an OpenVINO IR file.
Each property: the reader returns a well-formed result, or refuses with its layer's error in
one line; never another exception, a crash or a hang. test_fuzz_readers.py runs ~200 inputs
per reader in CI; bench/fuzz.py runs the same properties with 10 000 or more.
"""

from __future__ import annotations

import copy
import io
import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import strategies as st

from mlconv.errors import MlconvError

NASTY = [
    "../../../outside/evil",
    "/etc/passwd",
    "..",
    ".",
    "",
    "a/b",
    "x\x00y",
    "\u202e",
    -1,
    -(2**63),
    2**64,
    10**30,
    1e308,
    float("inf"),
    0.5,
    True,
    None,
    [],
    {},
    [[[[[]]]]],
    "tensorflow",
    "saved_model",
    "object",
    "float32",
    "tpu_function_0",
]

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=20)
    | st.sampled_from(NASTY),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)


def one_line(error: BaseException) -> str:
    """Assert the refusal is one line; returns "refused" (bench/fuzz.py counts outcomes)."""
    message = getattr(error, "message", str(error))
    assert "\n" not in message, message
    return "refused"


# --------------------------------------------------------------------------- manifests

BASE_MANIFEST: dict[str, Any] = {
    "format": "mlconv-artifact",
    "version": 2,
    "source": "model.onnx",
    "inputs": [{"name": "x", "dtype": "float32", "shape": [-1, 8]}],
    "outputs": [
        {
            "name": "y",
            "value": {"reshape": {"function": "tpu_function_0", "output": 0}, "shape": [-1, 4]},
        }
    ],
    "functions": [
        {
            "name": "tpu_function_0",
            "inputs": [{"reshape": {"input": 0}, "shape": [-1, 8]}],
            "outputs": 1,
            "weights": [
                {"dtype": "float32", "shape": [8, 4], "dim": None, "offset": 0, "bytes": 128}
            ],
        }
    ],
    "platforms": ["cpu", "cuda", "tpu"],
    "converter_options": "",
    "sharding": {"axes": ["x"], "shape": [1], "devices": [0]},
    "batches": [
        {
            "name": "batch_0",
            "component": "function",
            "component_name": "",
            "options": {
                "num_batch_threads": 2,
                "max_batch_size": 8,
                "batch_timeout_micros": 1000,
                "allowed_batch_sizes": [2, 4, 8],
                "max_enqueued_batches": 10,
                "disable_large_batch_splitting": False,
            },
            "functions": ["tpu_function_0"],
            "inputs": [{"input": 0}],
            "outputs": [{"function": "tpu_function_0", "output": 0}],
        }
    ],
    "signatures": {
        "serving_default": {
            "runtime": "jax",
            "bfloat16": False,
            "inputs": [{"name": "x", "dtype": "float32", "shape": [2, 8]}],
            "outputs": [{"name": "y", "value": {"step": 1, "output": 0}}],
            "steps": [
                {"host": "serving_default.host_0", "inputs": [{"input": 0}]},
                {"call": "tpu_function_0", "inputs": [{"step": 0, "output": 0}]},
            ],
        },
        "strings": {
            "runtime": "tensorflow",
            "saved_model": "saved_model",
            "reason": "host-only ops",
            "inputs": [{"name": "text", "dtype": None, "shape": [2, 8]}],
            "outputs": [{"name": "logits"}],
            "graph": "strings.host.pb",
            "input_tensors": {"text": "text:0"},
            "output_tensors": {"logits": "add:0"},
            "calls": [{"call": "tpu_function_0", "inputs": ["a:0"], "outputs": ["b:0"]}],
        },
    },
    "saved_model": "saved_model",
    "files": {"tpu/tpu_function_0.jaxexport": "0" * 64},
}


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*prefix, index))
    return found


@st.composite
def manifests(draw) -> Any:
    """The base manifest with 1-3 mutations: a value replaced (by a nasty or random JSON
    value), a key deleted, or a list entry duplicated."""
    rnd = draw(st.randoms(use_true_random=False))
    manifest = copy.deepcopy(BASE_MANIFEST)
    for _ in range(rnd.randint(1, 3)):
        paths = _paths(manifest)
        path = rnd.choice(paths)  # uniform over every value of the tree
        if not path:
            if rnd.random() < 0.1:
                manifest = draw(json_values)
            continue
        parent = manifest
        for key in path[:-1]:
            parent = parent[key]
        action = rnd.choice(["replace", "replace", "nasty", "delete", "duplicate"])
        if action == "nasty":
            parent[path[-1]] = copy.deepcopy(rnd.choice(NASTY))
        elif action == "replace":
            parent[path[-1]] = draw(json_values)
        elif action == "delete":
            del parent[path[-1]]
        elif isinstance(parent, list):
            parent.append(copy.deepcopy(parent[path[-1]]))
        if not isinstance(manifest, dict):
            break
    return manifest


def check_manifest(manifest: Any) -> str:
    from mlconv.converter.artifact_manifest import validate_manifest
    from mlconv.errors import BackendError

    try:
        validate_manifest(copy.deepcopy(manifest))
    except BackendError as error:
        return one_line(error)
    return "ok"


def check_manifest_bytes(data: bytes) -> str:
    from mlconv.converter.artifact_manifest import read_manifest
    from mlconv.errors import BackendError

    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "manifest.json").write_bytes(data)
        try:
            read_manifest(folder)
        except BackendError as error:
            return one_line(error)
        return "ok"


# --------------------------------------------------------------------------- options

OPTION_TOKENS = [
    "tpu_functions", "function_alias", "concrete_function_name", "signature_name",
    "jit_compile_functions", "batch_options", "num_batch_threads", "max_batch_size",
    "batch_timeout_micros", "allowed_batch_sizes", "max_enqueued_batches",
    "disable_large_batch_splitting", "experimental", "disable_default_optimizations",
    "io_shape_optimization", "bfloat16_optimization", "bfloat16_optimization_options", "scope",
    "filterlist", "skip_safety_checks", "xla_sharding_options", "num_cores_per_replica",
    "device_assignment", "topology", "external_feature_configs", "quantization_options",
    "quantization_method", "representative_datasets", "npz_file_path", "key", "value",
    "ENABLED", "DISABLED", "DEFAULT", "TPU", "ALL", "STATIC_RANGE", "true", "false",
    "{", "}", "[", "]", ":", ",", "<", ">", '"f"', '""', '"\\xff"', "=", "\\\n", "\n", " ",
    "0", "1", "-1", "7", "-5", "9", "65536", "65537", "1000000", "2147483647",
    "99999999999", "1.5", "#",
]  # fmt: skip

VALID_OPTIONS = [
    'tpu_functions { function_alias: "tpu_func" }',
    "batch_options { num_batch_threads: 2 max_batch_size: 8 allowed_batch_sizes: [2, 4, 8] }",
    'bfloat16_optimization_options { scope: ALL filterlist: "exp" }',
    "xla_sharding_options { num_cores_per_replica: 1 device_assignment: [0, 0, 0, 0] }",
    "io_shape_optimization: DISABLED\ndisable_default_optimizations: true",
]

options_texts = st.one_of(
    st.lists(st.sampled_from(OPTION_TOKENS), max_size=30).map(" ".join),
    st.builds(
        lambda base, cut, insert: base[:cut] + insert + base[cut:],
        st.sampled_from(VALID_OPTIONS),
        st.integers(0, 80),
        st.sampled_from(OPTION_TOKENS) | st.text(max_size=6),
    ),
    st.text(max_size=60),
)


def check_options(text: str) -> str:
    from mlconv.converter.options import ConversionSettings, parse_converter_options

    try:
        options = parse_converter_options(text)
    except MlconvError as error:
        return one_line(error)
    ConversionSettings.from_options(options)
    return "ok"


def check_options_file(data: bytes) -> str:
    from mlconv.converter.options import load_converter_options

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "options.txt"
        path.write_bytes(data)
        try:
            load_converter_options(path=str(path))
        except MlconvError as error:
            return one_line(error)
        return "ok"


# --------------------------------------------------------------------------- HTTP requests


def request_specs():
    from mlconv.signature.inputs import InputSpec

    return [
        InputSpec("x", np.dtype("float32"), None),
        InputSpec("k", np.dtype("int32"), None),
        InputSpec("b", np.dtype("bool"), None),
    ]


def _npz(arrays: dict[str, np.ndarray]) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


arrays = st.sampled_from(
    ["float32", "float64", "int32", "int64", "uint8", "bool", "float16"]
).flatmap(
    lambda dtype: st.lists(st.integers(0, 3), max_size=3).map(
        lambda shape: np.random.default_rng(len(shape)).integers(-5, 5, shape).astype(dtype)
    )
)


@st.composite
def request_bodies(draw) -> tuple[bytes, str]:
    kind = draw(st.sampled_from(["json-valid", "json-random", "bytes", "npz", "npz-mutated"]))
    if kind == "json-valid":
        body = {"inputs": {
            "x": draw(st.lists(st.lists(st.floats(allow_nan=False, width=32) | st.integers(-10, 10), min_size=2, max_size=2), max_size=3)),
            "k": draw(st.lists(st.integers(-(2**40), 2**40) | st.floats(allow_nan=False) | st.booleans(), max_size=4)),
            "b": draw(st.lists(st.booleans() | st.integers(0, 1), max_size=3)),
        }}  # fmt: skip
        return json.dumps(body).encode(), "application/json"
    if kind == "json-random":
        return json.dumps({"inputs": draw(json_values)}).encode(), "application/json"
    if kind == "bytes":
        return draw(st.binary(max_size=200)), draw(
            st.sampled_from(["application/json", "application/x-npz"])
        )
    data = _npz(
        {
            name: draw(arrays)
            for name in draw(
                st.lists(st.sampled_from(["x", "k", "b", "evil"]), max_size=4, unique=True)
            )
        }
    )
    if kind == "npz-mutated" and data:
        data = bytearray(data)
        for _ in range(draw(st.integers(1, 4))):
            data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
        data = bytes(data[: draw(st.integers(0, len(data)))])
    return data, "application/x-npz"


def check_request(body: bytes, kind: str) -> str:
    from mlconv.backends.http_request import RequestError, RequestLimits, parse_body

    specs = request_specs()
    try:
        arrays = parse_body(body, kind, specs, RequestLimits(max_array_bytes=1 << 20))
    except RequestError as error:
        assert error.status in (400, 413, 422), error.status
        return one_line(error)
    for spec in specs:
        assert arrays[spec.name].dtype == spec.dtype
    if kind == "application/json":  # exact: what was sent is what the model gets
        sent = json.loads(body)["inputs"]
        for spec in specs:
            if spec.dtype.kind in "biu":  # no truncation, no wrap-around
                expected = np.asarray(sent[spec.name], dtype=object)
                assert (arrays[spec.name].astype(object) == expected).all()
    return "ok"


def check_content_length(values: list[str]) -> str:
    from email.message import Message

    from mlconv.backends.http_request import RequestError, RequestLimits, content_length

    headers = Message()
    for value in values:
        headers["Content-Length"] = value
    try:
        length = content_length(headers, RequestLimits(max_body_bytes=1000))
    except RequestError as error:
        assert error.status in (400, 413)
        return one_line(error)
    assert 0 <= length <= 1000
    return "ok"


# --------------------------------------------------------------------------- OpenVINO IR


def base_ir() -> tuple[str, bytes]:
    """Parameter x [2, 3] -> Add(Const) -> Convert(i32) -> Convert(f32) -> ReLU -> Result."""

    def port(i, dims, precision="FP32"):
        return (
            f'<port id="{i}" precision="{precision}">'
            + "".join(f"<dim>{d}</dim>" for d in dims)
            + "</port>"
        )

    xml = (
        '<?xml version="1.0"?><net name="t" version="11"><layers>'
        f'<layer id="0" name="x" type="Parameter" version="opset1"><data shape="2,3" element_type="f32"/><output>{port(0, [2, 3])}</output></layer>'
        f'<layer id="1" name="c" type="Const" version="opset1"><data element_type="f32" shape="2,3" offset="0" size="24"/><output>{port(0, [2, 3])}</output></layer>'
        f'<layer id="2" name="add" type="Add" version="opset1"><input>{port(0, [2, 3])}{port(1, [2, 3])}</input><output>{port(2, [2, 3])}</output></layer>'
        f'<layer id="3" name="toint" type="Convert" version="opset1"><data destination_type="i32"/><input>{port(0, [2, 3])}</input><output>{port(1, [2, 3], "I32")}</output></layer>'
        f'<layer id="4" name="tofloat" type="Convert" version="opset1"><data destination_type="f32"/><input>{port(0, [2, 3], "I32")}</input><output>{port(1, [2, 3])}</output></layer>'
        f'<layer id="5" name="relu" type="ReLU" version="opset1"><input>{port(0, [2, 3])}</input><output>{port(1, [2, 3])}</output></layer>'
        f'<layer id="6" name="y" type="Result" version="opset1"><input>{port(0, [2, 3])}</input></layer>'
        "</layers><edges>"
        '<edge from-layer="0" from-port="0" to-layer="2" to-port="0"/>'
        '<edge from-layer="1" from-port="0" to-layer="2" to-port="1"/>'
        '<edge from-layer="2" from-port="2" to-layer="3" to-port="0"/>'
        '<edge from-layer="3" from-port="1" to-layer="4" to-port="0"/>'
        '<edge from-layer="4" from-port="1" to-layer="5" to-port="0"/>'
        '<edge from-layer="5" from-port="1" to-layer="6" to-port="0"/>'
        "</edges></net>"
    )  # fmt: skip
    return xml, np.linspace(-2, 2, 6, dtype=np.float32).tobytes()


IR_VALUES = ["-1", "-8", "0", "8", "24", "25", "99999999999", "abc", "", "f32", "i32", "i64",
             "u1", "q7", "FP32", "I32", "2,3", "3,2", "2", "-1,3", "1e3", "opset1", "opset99",
             "Frobnicate", "ReLU", "Const", "Parameter", "Result", "Convert", "7", "6", "5"]  # fmt: skip


DATA_ATTRIBUTES = ("offset", "size", "shape", "element_type", "precision", "destination_type")


@st.composite
def ir_files(draw) -> tuple[str, bytes]:
    """The base IR with 1-3 mutations, picked uniformly (a seeded random.Random from
    Hypothesis: its own choices lean to the first, simplest values), three in four on the
    attributes that describe data (offsets, sizes, element types, precisions)."""
    import re

    rnd = draw(st.randoms(use_true_random=False))
    xml, weights = base_ir()
    for _ in range(rnd.randint(1, 3)):
        action = rnd.choice(["value", "value", "value", "dim", "drop", "bytes"])
        if action == "value":
            spots = list(re.finditer(r'([\w-]+)="([^"]*)"', xml))
            data = [m for m in spots if m.group(1) in DATA_ATTRIBUTES] or spots
            spot = rnd.choice(data if rnd.random() < 0.75 else spots)
            if spot.group(1) in ("offset", "size"):
                value = str(rnd.choice([rnd.randint(-64, 64), 2**40, -(2**40)]))
            elif rnd.random() < 0.8:
                value = rnd.choice(IR_VALUES)
            else:
                value = "".join(rnd.choice("0123456789-,abc") for _ in range(rnd.randint(0, 6)))
            xml = xml[: spot.start(2)] + value + xml[spot.end(2) :]
        elif action == "dim":
            spots = list(re.finditer(r"<dim>([^<]*)</dim>", xml))
            if spots:
                spot = rnd.choice(spots)
                value = rnd.choice(["-1", "0", "4", "x", "", "-7", "3", "2"])
                xml = xml[: spot.start(1)] + value + xml[spot.end(1) :]
        elif action == "drop":
            spots = list(re.finditer(r"<(layer|edge|port|data|dim)\b[^>]*/>|<dim>[^<]*</dim>", xml))
            if spots:
                spot = rnd.choice(spots)
                xml = xml[: spot.start()] + xml[spot.end() :]
        else:
            weights = weights[: rnd.randint(0, len(weights))]
    return xml, weights


def check_ir(xml: str, weights: bytes) -> str:
    from mlconv.backends.openvino_ir import import_openvino

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "m.xml"
        path.write_text(xml)
        path.with_suffix(".bin").write_bytes(weights)
        try:
            module = import_openvino(path)
        except MlconvError as error:
            return one_line(error)
    module.verify()
    return "ok"

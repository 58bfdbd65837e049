"""The OpenVINO IR reader under attack (issue 28): each bad file a one-line FrontendError, never
a raw KeyError / ValueError / RecursionError and never silently wrong numbers; a long chain
listed out of order and Convert layers read right (OpenVINO's runtime as the oracle)."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

import mlconv
from mlconv.backends.openvino_ir import import_openvino
from mlconv.errors import FrontendError


def port(port_id: int, dims, precision: str = "FP32") -> str:
    return (
        f'<port id="{port_id}" precision="{precision}">'
        + "".join(f"<dim>{d}</dim>" for d in dims)
        + "</port>"
    )


def layer(layer_id, type_, inputs=(), outputs=(), data=None, name=None, version="opset1"):
    attrs = "".join(f' {k}="{v}"' for k, v in (data or {}).items())
    body = f"<data{attrs}/>" if data else ""
    if inputs:
        body += "<input>" + "".join(inputs) + "</input>"
    if outputs:
        body += "<output>" + "".join(outputs) + "</output>"
    return (
        f'<layer id="{layer_id}" name="{name or f"l{layer_id}"}" type="{type_}" '
        f'version="{version}">{body}</layer>'
    )


def ir(layers, edges) -> str:
    edge_text = "".join(
        f'<edge from-layer="{a}" from-port="{b}" to-layer="{c}" to-port="{d}"/>'
        for a, b, c, d in edges
    )
    return (
        '<?xml version="1.0"?><net name="t" version="11"><layers>'
        + "".join(layers)
        + f"</layers><edges>{edge_text}</edges></net>"
    )


def write(tmp_path: Path, xml: str, weights: bytes = b"") -> Path:
    path = tmp_path / "m.xml"
    path.write_text(xml)
    path.with_suffix(".bin").write_bytes(weights)
    return path


WEIGHTS = np.arange(6, dtype=np.float32).tobytes()


def add_const(const_data, const_port, weights=WEIGHTS):
    """x [2, 3] + Const -> Result."""
    return ir(
        [
            layer(
                0,
                "Parameter",
                outputs=[port(0, [2, 3])],
                data={"shape": "2,3", "element_type": "f32"},
            ),
            layer(1, "Const", outputs=[const_port], data=const_data),
            layer(2, "Add", inputs=[port(0, [2, 3]), port(1, [2, 3])], outputs=[port(2, [2, 3])]),
            layer(3, "Result", inputs=[port(0, [2, 3])]),
        ],
        [(0, 0, 2, 0), (1, 0, 2, 1), (2, 2, 3, 0)],
    ), weights


GOOD_CONST = {"element_type": "f32", "shape": "2,3", "offset": "0", "size": "24"}

BAD = {
    # the silently wrong cases
    "negative offset": (
        add_const({**GOOD_CONST, "offset": "-8"}, port(0, [2, 3])),
        "negative offset",
    ),
    "i32 Const on an FP32 port": (
        add_const({**GOOD_CONST, "element_type": "i32"}, port(0, [2, 3])),
        "feeds an output port of f32",
    ),
    "declared dims disagree": (
        (
            ir(
                [
                    layer(0, "Parameter", outputs=[port(0, [2, 3])]),
                    layer(1, "ReLU", inputs=[port(0, [2, 3])], outputs=[port(1, [2, 4])]),
                    layer(2, "Result", inputs=[port(0, [2, 4])]),
                ],
                [(0, 0, 1, 0), (1, 1, 2, 0)],
            ),
            b"",
        ),
        "semantics give",
    ),
    # the raw exceptions
    "beyond the .bin": (add_const({**GOOD_CONST, "offset": "8"}, port(0, [2, 3])), "outside the .bin"),
    "size not shape times type": (
        add_const({**GOOD_CONST, "size": "20"}, port(0, [2, 3])),
        "is not its shape",
    ),
    "unknown element type": (
        add_const({**GOOD_CONST, "element_type": "q7"}, port(0, [2, 3])),
        "element_type 'q7'",
    ),
    "offset not a number": (
        add_const({**GOOD_CONST, "offset": "zero"}, port(0, [2, 3])),
        "integer offset",
    ),
    "dim not a number": (
        add_const(GOOD_CONST, port(0, ["two", 3])),
        "has dim 'two'",
    ),
    "unknown layer types, all at once": (
        (
            ir(
                [
                    layer(0, "Parameter", outputs=[port(0, [2, 3])]),
                    layer(1, "Frobnicate", inputs=[port(0, [2, 3])], outputs=[port(1, [2, 3])]),
                    layer(2, "Twiddle", inputs=[port(0, [2, 3])], outputs=[port(1, [2, 3])]),
                    layer(3, "Result", inputs=[port(0, [2, 3])]),
                ],
                [(0, 0, 1, 0), (1, 1, 2, 0), (2, 1, 3, 0)],
            ),
            b"",
        ),
        "OpenVINO layers without a core op: Frobnicate-opset1, Twiddle-opset1",
    ),
    "cycle": (
        (
            ir(
                [
                    layer(1, "ReLU", inputs=[port(0, [2])], outputs=[port(1, [2])]),
                    layer(2, "ReLU", inputs=[port(0, [2])], outputs=[port(1, [2])]),
                ],
                [(1, 1, 2, 0), (2, 1, 1, 0)],
            ),
            b"",
        ),
        "cycle",
    ),
    "edge from nowhere": (
        (
            ir(
                [layer(1, "ReLU", inputs=[port(0, [2])], outputs=[port(1, [2])])],
                [(9, 0, 1, 0)],
            ),
            b"",
        ),
        "no such output port",
    ),
    "input without edge": (
        (ir([layer(1, "ReLU", inputs=[port(0, [2])], outputs=[port(1, [2])])], []), b""),
        "has no edge",
    ),
    "repeated id": (
        (ir([layer(1, "Parameter", outputs=[port(0, [2])]), layer(1, "Parameter", outputs=[port(0, [2])])], []), b""),
        "repeated",
    ),
    "not XML": (("<net><layers>", b""), "not an OpenVINO IR .xml"),
    # found by bench/fuzz.py: a Parameter turned Result left its users without a value
    "Parameter with an input port": (
        (
            ir(
                [
                    layer(0, "Result", outputs=[port(0, [2])]),
                    layer(1, "ReLU", inputs=[port(0, [2])], outputs=[port(1, [2])]),
                    layer(2, "Result", inputs=[port(0, [2])]),
                ],
                [(0, 0, 1, 0), (1, 1, 2, 0)],
            ),
            b"",
        ),
        "a Result needs one input port and no output",
    ),
    "billion laughs": (
        (
            '<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa">'
            + "".join(f'<!ENTITY {chr(98 + i)} "{("&" + chr(97 + i) + ";") * 10}">' for i in range(9))
            + ']><net name="&j;"><layers/></net>',
            b"",
        ),
        "not an OpenVINO IR .xml",
    ),
    "bad attribute": (
        (
            ir(
                [
                    layer(0, "Parameter", outputs=[port(0, [2, 3])]),
                    layer(1, "Convert", inputs=[port(0, [2, 3])], outputs=[port(1, [2, 3], "I32")], data={"destination_type": "q9"}),
                    layer(2, "Result", inputs=[port(0, [2, 3], "I32")]),
                ],
                [(0, 0, 1, 0), (1, 1, 2, 0)],
            ),
            b"",
        ),
        "destination_type='q9'",
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_ir_is_a_one_line_error(tmp_path, case):
    (xml, weights), fragment = BAD[case]
    with pytest.raises(FrontendError) as caught:
        import_openvino(write(tmp_path, xml, weights))
    message = str(caught.value)
    assert fragment in message and "\n" not in message, message


def test_good_const_reads_right(tmp_path):
    xml, weights = add_const(GOOD_CONST, port(0, [2, 3]))
    module = import_openvino(write(tmp_path, xml, weights))
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    (got,) = mlconv.compile(module, device="cpu")(x)
    np.testing.assert_allclose(got, x + np.arange(6, dtype=np.float32).reshape(2, 3))


def test_long_chain_listed_out_of_order(tmp_path):
    """The issue: a 1500-layer chain listed out of order exceeded the recursion limit."""
    count = 1500
    layers = [layer(0, "Parameter", outputs=[port(0, [4])])]
    edges = []
    for i in range(1, count + 1):
        kind = "ReLU" if i % 2 else "Negative"
        layers.append(layer(i, kind, inputs=[port(0, [4])], outputs=[port(1, [4])]))
        edges.append((i - 1, 0 if i == 1 else 1, i, 0))
    layers.append(layer(count + 1, "Result", inputs=[port(0, [4])]))
    edges.append((count, 1, count + 1, 0))
    random.Random(3).shuffle(layers)
    module = import_openvino(write(tmp_path, ir(layers, edges)))
    x = np.array([-2.0, -0.5, 0.5, 2.0], np.float32)
    expected = x
    for i in range(1, count + 1):
        expected = np.maximum(expected, 0) if i % 2 else -expected
    from mlconv.interpreters import run_module

    (got,) = run_module(module, [x])
    np.testing.assert_array_equal(np.asarray(got), expected)


def test_convert_layers_round_trip_against_openvino(tmp_path):
    """The issue: any Convert layer made the imported IR unparseable. Written by mlconv, read
    by OpenVINO's runtime (the oracle) and by mlconv's reader, whose module prints and parses
    back and computes what OpenVINO computes."""
    from onnx import TensorProto, helper
    from xdsl.parser import Parser

    from mlconv.backends.openvino_ir import write_openvino
    from mlconv.dialects import make_context
    from mlconv.frontends.load import load_model
    from mlconv.passes.core_infer_shapes import CoreInferShapesPass
    from mlconv.passes.pipelines import lower_to_core

    nodes = [
        helper.make_node("Mul", ["x", "x"], ["sq"], name="square"),
        helper.make_node("Cast", ["sq"], ["i"], to=TensorProto.INT32, name="to_int"),
        helper.make_node("Cast", ["i"], ["y"], to=TensorProto.FLOAT16, name="to_half"),
    ]
    graph = helper.make_graph(
        nodes,
        "casts",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [2, 3])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    module = lower_to_core(load_model(model))
    CoreInferShapesPass().apply(make_context(), module)
    xml_path, bin_path = write_openvino(module, tmp_path / "casts.xml")
    back = import_openvino(xml_path)
    text = str(back)
    assert "destination_type = i32" in text and "destination_type = f16" in text
    assert str(Parser(make_context(), text).parse_module()) == text
    import openvino as ov

    x = np.random.default_rng(2).uniform(-3, 3, (2, 3)).astype(np.float32)
    core = ov.Core()
    compiled = core.compile_model(
        core.read_model(str(xml_path), str(bin_path)), "CPU", {"INFERENCE_PRECISION_HINT": "f32"}
    )
    expected = compiled([x])[0]
    (got,) = mlconv.compile(back, device="cpu")(x)
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, expected)
    assert not np.array_equal(expected, mlconv.compile(back, device="cpu")(x + 1.5)[0])

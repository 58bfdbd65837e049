"""float8, float4 and int4/uint4/int2/uint2 end to end: the importer's types and packed
initializers, dense constants (and their text form), Cast/CastLike semantics (saturate,
round to nearest even, sub-byte wrap-around) and the backend's input conversion, compared with
the ONNX reference implementation."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from xdsl.context import Context
from xdsl.parser import Parser

import mlconv
from mlconv.dense import to_dense_attr, to_numpy

FLOAT8 = {
    TensorProto.FLOAT8E4M3FN: ml_dtypes.float8_e4m3fn,
    TensorProto.FLOAT8E4M3FNUZ: ml_dtypes.float8_e4m3fnuz,
    TensorProto.FLOAT8E5M2: ml_dtypes.float8_e5m2,
    TensorProto.FLOAT8E5M2FNUZ: ml_dtypes.float8_e5m2fnuz,
}
LOW_PRECISION = {
    **FLOAT8,
    TensorProto.FLOAT4E2M1: ml_dtypes.float4_e2m1fn,
    TensorProto.INT4: ml_dtypes.int4,
    TensorProto.UINT4: ml_dtypes.uint4,
    TensorProto.INT2: ml_dtypes.int2,
    TensorProto.UINT2: ml_dtypes.uint2,
    TensorProto.FLOAT8E8M0: ml_dtypes.float8_e8m0fnu,
}
_NAMES = {t: TensorProto.DataType.Name(t) for t in LOW_PRECISION}

# Ties (0.5625 lies halfway between e4m3's 0.5 and 0.625), values beyond every float8 range,
# infinities, NaN, underflow to (signed) zero, and integers beyond the sub-byte ranges.
SPECIAL = np.array(
    [0.5625, 0.4, 1.05, -3.7, 2.5, 500.0, 1e6, -1e6, np.inf, -np.inf, np.nan, 1e-7, -1e-7,
     -0.0, -9.0, 17.0, 7.0, 0.0],
    dtype=np.float32,
)  # fmt: skip


def _is_integer(dtype) -> bool:
    return "int" in np.dtype(dtype).name  # ml_dtypes' int4 & co. are not numpy integers


def _run_both(model, *inputs):
    names = [i.name for i in model.graph.input]
    expected = ReferenceEvaluator(model).run(None, dict(zip(names, inputs, strict=True)))
    actual = mlconv.compile(model, device="cpu")(*inputs)
    return expected, actual


def _assert_same(expected, actual):
    """Same dtype and shape, equal values (NaN equals NaN), and the same sign of zero."""
    for want, got in zip(expected, actual, strict=True):
        assert (got.dtype, got.shape) == (want.dtype, want.shape)
        want, got = want.astype(np.float64), got.astype(np.float64)
        np.testing.assert_array_equal(got, want)
        numbers = ~np.isnan(want)
        np.testing.assert_array_equal(np.signbit(got[numbers]), np.signbit(want[numbers]))


def _cast_model(source, target, saturate=None, opset=21, size=None, **attributes):
    size = len(SPECIAL) if size is None else size
    attributes["to"] = target
    if saturate is not None:
        attributes["saturate"] = saturate
    node = helper.make_node("Cast", ["x"], ["y"], **attributes)
    graph = helper.make_graph(
        [node],
        "cast",
        [helper.make_tensor_value_info("x", source, [size])],
        [helper.make_tensor_value_info("y", target, [size])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


@pytest.mark.parametrize("saturate", [None, 1, 0], ids=["default", "saturate", "no_saturate"])
@pytest.mark.parametrize("target", list(FLOAT8), ids=[_NAMES[t] for t in FLOAT8])
@pytest.mark.parametrize("source", [TensorProto.FLOAT, TensorProto.FLOAT16], ids=["f32", "f16"])
def test_cast_to_float8(source, target, saturate):
    model = _cast_model(source, target, saturate)
    with np.errstate(over="ignore"):  # 1e6 is inf in float16
        x = SPECIAL.astype(helper.tensor_dtype_to_np_dtype(source))
    expected, actual = _run_both(model, x)
    _assert_same(expected, actual)


@pytest.mark.parametrize("saturate", [1, 0], ids=["saturate", "no_saturate"])
@pytest.mark.parametrize("round_mode", ["up", "nearest", "down"])
def test_cast_to_float8e8m0(round_mode, saturate):
    """The exponent-only type (Cast-24 round_mode): powers of two and the values next to them,
    ties of the nearest mode (1.5, 6: guard bit alone), values past 2^127 and up to
    float32's largest, subnormals, zeros, negatives (the sign is dropped), inf and NaN."""
    rng = np.random.default_rng(7)
    powers = np.ldexp(np.float32(1), np.arange(-130, 128, 7)).astype(np.float32)
    near = np.concatenate([powers, np.nextafter(powers, 0), np.nextafter(powers, np.inf)])
    random = (rng.standard_normal(64) * np.exp2(rng.integers(-40, 40, 64))).astype(np.float32)
    # subnormals (exponent 0, so nearest rounds a lone guard bit down): guard only, guard +
    # sticky, guard + round
    subnormal = np.uint32([0x400000, 0x400001, 0x600000, 0x3FFFFF]).view(np.float32)
    x = np.concatenate(
        [SPECIAL, near, random, subnormal, np.float32([1.5, 6.0, 3e38, 3.4028235e38])]
    ).astype(np.float32)
    model = _cast_model(
        TensorProto.FLOAT, TensorProto.FLOAT8E8M0, saturate, opset=24, size=x.size,
        round_mode=round_mode,
    )  # fmt: skip
    expected, actual = _run_both(model, x)
    assert actual[0].dtype == expected[0].dtype
    np.testing.assert_array_equal(actual[0].view(np.uint8), expected[0].view(np.uint8))


@pytest.mark.parametrize(
    "target",
    [TensorProto.FLOAT4E2M1, TensorProto.INT4, TensorProto.UINT4, TensorProto.INT2,
     TensorProto.UINT2],
    ids=lambda t: _NAMES[t],
)  # fmt: skip
def test_cast_to_sub_byte(target):
    # finite inputs only: numpy's float -> int of inf/NaN is undefined behaviour
    model = _cast_model(TensorProto.FLOAT, target)
    x = np.nan_to_num(SPECIAL, nan=3.0, posinf=100.0, neginf=-100.0)
    expected, actual = _run_both(model, x)
    _assert_same(expected, actual)


@pytest.mark.parametrize("source", list(LOW_PRECISION), ids=[_NAMES[t] for t in LOW_PRECISION])
def test_cast_from_low_precision(source):
    """Every bit pattern of the type as a model input (the backend's input conversion)."""
    dtype = np.dtype(LOW_PRECISION[source])
    if _is_integer(dtype):
        info = ml_dtypes.iinfo(dtype)
        values = np.arange(int(info.min), int(info.max) + 1).astype(dtype)
    else:
        values = np.arange(2 ** ml_dtypes.finfo(dtype).bits, dtype=np.uint8).view(dtype)
    node = helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT)
    graph = helper.make_graph(
        [node],
        "cast",
        [helper.make_tensor_value_info("x", source, [values.size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [values.size])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    expected, actual = _run_both(model, values)
    _assert_same(expected, actual)


def test_castlike_no_saturate():
    node = helper.make_node("CastLike", ["x", "like"], ["y"], saturate=0)
    graph = helper.make_graph(
        [node],
        "castlike",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [len(SPECIAL)]),
            helper.make_tensor_value_info("like", TensorProto.FLOAT8E4M3FN, [1]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT8E4M3FN, [len(SPECIAL)])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    expected, actual = _run_both(model, SPECIAL, np.zeros(1, ml_dtypes.float8_e4m3fn))
    _assert_same(expected, actual)


@pytest.mark.parametrize(
    "elem", [TensorProto.INT4, TensorProto.UINT4, TensorProto.FLOAT4E2M1], ids=_NAMES.get
)
def test_sub_byte_initializer_through_identity_and_add(elem):
    """A packed initializer of odd length: Identity returns it as is, and Cast + Add use it."""
    dtype = LOW_PRECISION[elem]
    values = np.array([-8, -3, 0, 1, 5, 7, -1], dtype=np.float32)
    if elem == TensorProto.UINT4:
        values = np.abs(values) + 8
    weights = values.astype(dtype)
    init = numpy_helper.from_array(weights, "w")
    nodes = [
        helper.make_node("Identity", ["w"], ["same"]),
        helper.make_node("Cast", ["w"], ["wf"], to=TensorProto.FLOAT),
        helper.make_node("Add", ["x", "wf"], ["sum"]),
    ]
    graph = helper.make_graph(
        nodes,
        "init",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [values.size])],
        [
            helper.make_tensor_value_info("same", elem, [values.size]),
            helper.make_tensor_value_info("sum", TensorProto.FLOAT, [values.size]),
        ],
        initializer=[init],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    x = np.linspace(-2, 2, values.size, dtype=np.float32)
    expected, actual = _run_both(model, x)
    _assert_same(expected, actual)
    np.testing.assert_array_equal(actual[0].astype(np.float32), weights.astype(np.float32))


@pytest.mark.parametrize("dtype", list(LOW_PRECISION.values()), ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("size", [7, 300], ids=["decimal", "hex"])
def test_dense_text_round_trip(dtype, size):
    """One element per byte (signed sub-byte ints sign-extended) prints and parses back."""
    rng = np.random.default_rng(size)
    if _is_integer(dtype):
        info = ml_dtypes.iinfo(dtype)
        array = rng.integers(int(info.min), int(info.max) + 1, size).astype(dtype)
    else:
        array = (rng.standard_normal(size) * 4).astype(dtype)  # finite: see mlconv.dense
        if dtype == ml_dtypes.float8_e8m0fnu:  # no sign: NaN for negative values
            array = np.abs(rng.standard_normal(size) * 4).astype(dtype)
    attr = to_dense_attr(array)
    again = Parser(Context(), str(attr)).parse_attribute()
    assert again == attr
    np.testing.assert_array_equal(to_numpy(again), array)

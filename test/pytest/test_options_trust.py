"""ConverterOptions under attack (issue 28): bounds on threads and batch sizes, enum numbers
outside the schema, a bf16 filterlist naming nothing, undecodable files: each a one-line
OptionError naming the field, nothing written."""

from __future__ import annotations

import forgery
import pytest

from mlconv.converter.options import load_converter_options, parse_converter_options
from mlconv.errors import OptionError

CASES = {
    # the cases
    "a million batch threads": (
        "batch_options { num_batch_threads: 1000000 max_batch_size: 2 }",
        "batch_options[0].num_batch_threads: at most 256",
    ),
    "2147483647 rows": (
        "batch_options { max_batch_size: 2147483647 allowed_batch_sizes: [1, 2147483647] }",
        "batch_options[0].max_batch_size: at most 65536",
    ),
    "enum number 7": ("io_shape_optimization: 7", "io_shape_optimization: 7 is not one of"),
    "enum number -5": ("bfloat16_optimization: -5", "bfloat16_optimization: -5 is not one of"),
    "scope 9": (
        "bfloat16_optimization_options { scope: 9 }",
        "bfloat16_optimization_options.scope: 9 is not one of DEFAULT (0), TPU (1), ALL (2)",
    ),
    "empty filterlist entry": (
        'bfloat16_optimization_options { filterlist: "" }',
        "filterlist[0]: names nothing",
    ),
    # and beyond
    "nested enum number": (
        "external_feature_configs { quantization_options { quantization_method: 9 } }",
        "quantization_options.quantization_method: 9 is not one of",
    ),
    "timeout beyond a minute": (
        "batch_options { max_batch_size: 2 batch_timeout_micros: 2000000000 }",
        "batch_timeout_micros: at most 60000000",
    ),
    "a billion enqueued batches": (
        "batch_options { max_batch_size: 2 max_enqueued_batches: 1000000000 }",
        "max_enqueued_batches: at most 100000",
    ),
    "int32 overflow": ("batch_options { max_batch_size: 99999999999 }", "out of range"),
    "a string as a scope": ('bfloat16_optimization_options { scope: "x" }', "scope"),
    "bytes that are not UTF-8": ('tpu_functions { function_alias: "\\xff" }', "function_alias"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_options_are_one_line(case):
    text, fragment = CASES[case]
    with pytest.raises(OptionError) as caught:
        parse_converter_options(text)
    assert fragment in caught.value.message and "\n" not in caught.value.message


def test_largest_bounded_options_parse():
    options = parse_converter_options(
        "batch_options { num_batch_threads: 256 max_batch_size: 65536 "
        "allowed_batch_sizes: [1, 65536] batch_timeout_micros: 60000000 "
        "max_enqueued_batches: 100000 }"
    )
    assert options.batch_options[0].max_batch_size == 65536


@pytest.mark.parametrize(
    "data, fragment",
    [
        (b"\xff\xfe tpu_functions {}", "not UTF-8 text"),
        (b'tpu_functions { function_alias: "f" }\n\x80', "not UTF-8 text"),
    ],
)
def test_options_file_that_is_not_utf8_is_one_line(tmp_path, data, fragment):
    path = tmp_path / "options.txt"
    path.write_bytes(data)
    with pytest.raises(OptionError) as caught:
        load_converter_options(path=str(path))
    assert fragment in caught.value.message and "\n" not in caught.value.message


def test_filterlist_naming_no_op_is_refused_and_nothing_written(tmp_path):
    from mlconv.tools.mlconv_convert import main

    model = forgery.small_onnx(tmp_path / "small.onnx")
    out = tmp_path / "out"
    options = 'bfloat16_optimization_options { filterlist: "no_such_op" }'
    assert main([str(model), "-o", str(out), "--converter-options-string", options]) == 1
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out")]
    # a name the model has (its source node `relu`) converts
    options = 'bfloat16_optimization_options { filterlist: "relu" }'
    assert main([str(model), "-o", str(out), "--converter-options-string", options]) == 0


def test_filterlist_error_names_the_entries(tmp_path):
    from mlconv.tools.mlconv_convert import convert

    model = forgery.small_onnx(tmp_path / "small.onnx")
    options = 'bfloat16_optimization_options { filterlist: ["relu", "nope"] }'
    with pytest.raises(OptionError, match="filterlist: 'nope' names no op of the TPU functions"):
        convert(str(model), str(tmp_path / "out"), options, quiet=True)

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


# Issue 31 (mutation score): each rule's whole message, and the values just inside each bound.

BATCH = "batch_options[0]."
RULES = [
    (
        "batch_options { max_batch_size: 65537 num_batch_threads: 257 batch_timeout_micros: "
        "60000001 max_enqueued_batches: 100001 allowed_batch_sizes: [65537, 70000] }",
        [
            f"{BATCH}num_batch_threads: at most 256 (threads; got 257)",
            f"{BATCH}max_batch_size: at most 65536 (rows per batch; got 65537)",
            f"{BATCH}batch_timeout_micros: at most 60000000 (one minute; got 60000001)",
            f"{BATCH}max_enqueued_batches: at most 100000 (waiting batches; got 100001)",
            f"{BATCH}allowed_batch_sizes: at most 65536 (rows per batch; got 65537)",
            f"{BATCH}allowed_batch_sizes: the last entry (70000) must equal max_batch_size (65537)",
        ],
    ),
    (
        "batch_options { max_batch_size: 0 num_batch_threads: -1 batch_timeout_micros: -1 "
        "max_enqueued_batches: -1 }",
        [
            f"{BATCH}max_batch_size: must be positive (got 0)",
            f"{BATCH}num_batch_threads: must not be negative (got -1)",
            f"{BATCH}batch_timeout_micros: must not be negative (got -1)",
            f"{BATCH}max_enqueued_batches: must not be negative (got -1)",
        ],
    ),
    (
        "batch_options { max_batch_size: 4 allowed_batch_sizes: [0, 4] }",
        [f"{BATCH}allowed_batch_sizes: entries must increase monotonically (got [0, 4])"],
    ),
    (
        "batch_options { max_batch_size: 4 allowed_batch_sizes: [2, 2, 4] }",
        [f"{BATCH}allowed_batch_sizes: entries must increase monotonically (got [2, 2, 4])"],
    ),
    (
        "batch_options { max_batch_size: 4 } batch_options { max_batch_size: 8 }",
        ["batch_options: two entries batch the same component"],
    ),
    (
        'batch_options { max_batch_size: 4 experimental { signature_name: "a" } } '
        'batch_options { max_batch_size: 8 experimental { signature_name: "a" } }',
        ["batch_options: two entries batch the same component"],
    ),
    (
        "xla_sharding_options { num_cores_per_replica: -1 device_assignment: [0, 0, 0] }",
        [
            "xla_sharding_options.num_cores_per_replica: must not be negative (got -1)",
            "xla_sharding_options.device_assignment: must be flattened [x, y, z, core] "
            "quadruples (got 3 numbers)",
        ],
    ),
    (
        "tpu_functions { }",
        [
            "tpu_functions[0]: name no function (set one of function_alias, "
            "concrete_function_name, signature_name, jit_compile_functions)"
        ],
    ),
    (
        "bfloat16_optimization_options { filterlist: [' ', 'a', ''] }",
        [
            "bfloat16_optimization_options.filterlist[0]: names nothing (empty)",
            "bfloat16_optimization_options.filterlist[2]: names nothing (empty)",
        ],
    ),
    (
        "io_shape_optimization: -5 bfloat16_optimization_options { scope: 9 filterlist: '' }",
        [  # enum numbers first, alone: the other checks read enums by name
            "io_shape_optimization: -5 is not one of DEFAULT (0), ENABLED (1), DISABLED (2)",
            "bfloat16_optimization_options.scope: 9 is not one of DEFAULT (0), TPU (1), ALL (2)",
        ],
    ),
    (
        "external_feature_configs { quantization_options { num_calibration_samples: -1 } }",
        [
            "external_feature_configs.quantization_options.representative_datasets: "
            "static-range quantization needs a representative dataset for signature "
            "'serving_default'",
            "external_feature_configs.quantization_options.num_calibration_samples: "
            "must not be negative",
        ],
    ),
    (
        "external_feature_configs { quantization_options { quantization_method: DYNAMIC_RANGE "
        "representative_datasets { key: 'x' value { } } } }",
        [
            "external_feature_configs.quantization_options.representative_datasets['x']: "
            "give tfrecord_file_path or npz_file_path"
        ],
    ),
    (
        "external_feature_configs { quantization_options { signature_keys: ['a', 'b'] "
        "representative_datasets { key: 'a' value { npz_file_path: 'x' } } } }",
        [
            "external_feature_configs.quantization_options.representative_datasets: "
            "static-range quantization needs a representative dataset for signature 'b'"
        ],
    ),
]


@pytest.mark.parametrize("text, problems", RULES, ids=[str(i) for i in range(len(RULES))])
def test_every_broken_rule_is_named_in_one_line(text, problems):
    with pytest.raises(OptionError) as caught:
        parse_converter_options(text)
    assert caught.value.message == "converter options: " + "; ".join(problems)


def test_values_at_the_bounds_parse_and_mean_what_they_say():
    from mlconv.converter.options import ConversionSettings, quantization_method

    options = parse_converter_options(
        "batch_options { num_batch_threads: 0 max_batch_size: 1 batch_timeout_micros: 0 "
        "max_enqueued_batches: 0 allowed_batch_sizes: [1] } "
        'batch_options { max_batch_size: 2 experimental { signature_name: "s" } } '
        "xla_sharding_options { num_cores_per_replica: 1 device_assignment: [0, 0, 0, 1] } "
        "bfloat16_optimization_options { scope: ALL filterlist: 'conv' skip_safety_checks: true } "
        "external_feature_configs { quantization_options { num_calibration_samples: 0 "
        "quantization_method: WEIGHT_ONLY } }"
    )
    settings = ConversionSettings.from_options(options)
    assert settings.bfloat16_scope == "ALL" and settings.bfloat16_filterlist == ("conv",)
    assert settings.bfloat16_skip_safety_checks is True
    assert list(settings.sharding.device_assignment) == [0, 0, 0, 1]
    assert quantization_method(settings.quantization) == "WEIGHT_ONLY"
    assert len(settings.batch_options) == 2 and settings.tpu_functions == ()
    plain = ConversionSettings.from_options(parse_converter_options(""))
    assert ConversionSettings() == plain  # the class's defaults are those of empty options
    assert plain.io_shape_optimization is True and plain.bfloat16 is True
    assert plain.sharding is None and plain.quantization is None
    assert plain.bfloat16_skip_safety_checks is False and plain.bfloat16_filterlist == ()
    unspecified = parse_converter_options(
        "external_feature_configs { quantization_options { representative_datasets "
        "{ key: 'serving_default' value { tfrecord_file_path: 'd' } } } }"
    )
    assert quantization_method(ConversionSettings.from_options(unspecified).quantization) == (
        "STATIC_RANGE"
    )


def test_options_from_a_file_or_a_string(tmp_path, monkeypatch):
    from mlconv.converter.options import MAX_OPTIONS_BYTES

    assert MAX_OPTIONS_BYTES == 16 << 20
    path = tmp_path / "options.txt"
    path.write_text("tpu_functions { function_alias: 'f' }\ntpu_functions { }\n")
    with pytest.raises(OptionError) as caught:
        load_converter_options(path=str(path))
    assert caught.value.message.startswith(f"{path}: tpu_functions[1]: name no function")
    with pytest.raises(OptionError) as caught:
        load_converter_options("", str(path))
    assert caught.value.message == "give the converter options as a string or as a file, not both"
    with pytest.raises(OptionError) as caught:
        load_converter_options(path=str(tmp_path / "missing.txt"))
    assert (
        caught.value.message
        == f"{tmp_path / 'missing.txt'}: cannot read: No such file or directory"
    )
    path.write_bytes(b" " * (MAX_OPTIONS_BYTES + 1))
    with pytest.raises(OptionError) as caught:
        load_converter_options(path=str(path))
    assert caught.value.message == f"{path}: larger than 16 MiB"
    # exactly the limit is read (a smaller limit here: parsing 16 MiB takes seconds)
    monkeypatch.setattr("mlconv.converter.options.MAX_OPTIONS_BYTES", 64)
    path.write_bytes(b"tpu_functions { signature_name: 's' }".ljust(64))
    assert load_converter_options(path=str(path)).tpu_functions[0].signature_name == "s"
    path.write_bytes(b" " * 65)
    with pytest.raises(OptionError, match="larger than"):
        load_converter_options(path=str(path))
    monkeypatch.undo()
    path.write_bytes(b"tpu_functions {}\n\xc3")
    with pytest.raises(OptionError) as caught:
        load_converter_options(path=str(path))
    assert caught.value.message == f"{path}: not UTF-8 text (unexpected end of data at byte 17)"
    assert load_converter_options(None).ListFields() == []
    assert (
        load_converter_options("tpu_functions { signature_name: 's' }")
        .tpu_functions[0]
        .signature_name
        == "s"
    )


def test_a_parse_error_deep_inside_names_its_whole_field_path():
    """A map entry (a repeated message) two messages deep is indexed like a top-level one."""
    with pytest.raises(OptionError) as caught:
        parse_converter_options(
            "external_feature_configs { quantization_options {\n"
            ' representative_datasets { key: "a" value { bad: 1 } } } }'
        )
    assert caught.value.message == (
        "converter options:2:45: external_feature_configs.quantization_options."
        'representative_datasets[0].value.bad: Message type "mlconv.converter.'
        'RepresentativeDatasetFile" has no field named "bad".'
    )

"""OpenVINO as an oracle for core ops: each op of a core module alone, in OpenVINO and in JAX.

    for row in compare_ops(module, seed=0): print(row)   # (op name, location, max_rel, error)
    kinds = op_kinds(module)                              # the core op names it uses

`single_op_module(op)` is a module whose @main takes the op's non-constant operands as
arguments (constants are copied in, so static operands stay static) and returns its results.
`compare_ops` runs each such module (one per op kind and signature) through
`backends/openvino_backend.py` and through the JAX path (`mlconv.compile`) on seeded random
inputs and reports the relative difference (max |ov - jax| / max |jax|). It backs
test/pytest/test_openvino_oracle.py.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Block, Region

import mlconv
from mlconv.dense import numpy_dtype
from mlconv.dialects import make_context
from mlconv.dialects.core_base import CoreOp
from mlconv.errors import MlconvError
from mlconv.verify.onnx_cases import as_array, collect_cases


def op_kinds(module: ModuleOp) -> set[str]:
    """The names of the core ops (not constants) in the module."""
    return {
        op.name
        for op in module.walk()
        if isinstance(op, CoreOp) and op.name not in ("core.Constant", "core.Yield")
    }


def single_op_module(op: CoreOp) -> ModuleOp:
    """@main(non-constant operands) -> op's results; constant operands are copied in."""
    arguments = [v for v in op.operands if getattr(v.owner, "name", None) != "core.Constant"]
    unique = list(dict.fromkeys(arguments))
    block = Block(arg_types=[v.type for v in unique])
    mapping = dict(zip(unique, block.args, strict=True))
    for value in op.operands:
        if value not in mapping:
            constant = value.owner.clone()
            block.add_op(constant)
            mapping[value] = constant.results[0]
    clone = op.clone(value_mapper=mapping)
    block.add_op(clone)
    block.add_op(func.ReturnOp(*clone.results))
    function = func.FuncOp(
        "main", ([a.type for a in block.args], [r.type for r in clone.results]), Region(block)
    )
    return ModuleOp([function])


def random_inputs(module: ModuleOp, seed: int = 0) -> list[np.ndarray]:
    """Seeded inputs for @main: floats in [-2, 2) (positive for Log/Sqrt-like ops is the
    caller's business), integers in [0, 4), booleans at random; dynamic dims take 3."""
    rng = np.random.default_rng(seed)
    function = next(op for op in module.ops if isinstance(op, func.FuncOp))
    arrays = []
    for arg in function.body.block.args:
        t = arg.type
        assert isinstance(t, TensorType)
        shape = [d if d >= 0 else 3 for d in t.get_shape()]
        dtype = numpy_dtype(t.get_element_type())
        if dtype == np.bool_:
            arrays.append(rng.random(shape) < 0.5)
        elif np.issubdtype(dtype, np.integer):
            arrays.append(rng.integers(0, 4, shape).astype(dtype))
        else:
            arrays.append(rng.uniform(-2, 2, shape).astype(dtype))
    return arrays


@dataclass
class OpComparison:
    name: str
    location: str | None
    max_rel: float | None
    error: str | None = None


def compare_module(module: ModuleOp, inputs: list[np.ndarray]) -> float:
    """max |openvino - jax| / max |jax| over every output (NaN/inf where both agree ignored)."""
    # lazy: loads JAX and turns on jax_enable_x64, which this module does not
    from mlconv.backends.openvino_backend import compile_module

    ov_out = compile_module(module.clone(), "cpu")(*inputs)
    jax_out = mlconv.compile(module.clone(), device="cpu", backend="xla")(*inputs)
    worst = 0.0
    for a, b in zip(ov_out, jax_out, strict=True):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape:
            raise AssertionError(f"shapes differ: openvino {a.shape}, jax {b.shape}")
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        same = (a64 == b64) | (np.isnan(a64) & np.isnan(b64))
        diff = np.where(same, 0.0, np.abs(a64 - b64))
        scale = float(np.abs(np.where(np.isfinite(b64), b64, 0)).max(initial=0)) or 1.0
        worst = max(worst, float(diff.max(initial=0)) / scale)
    return worst


def compare_ops(module: ModuleOp, seed: int = 0, kinds: set[str] | None = None):
    """One OpComparison per op kind and operand signature of @main (first occurrence)."""

    seen = set()
    for op in module.walk():
        if not isinstance(op, CoreOp) or op.name in ("core.Constant", "core.Yield"):
            continue
        if kinds is not None and op.name not in kinds:
            continue
        key = (op.name, tuple(str(v.type) for v in op.operands), str(op.attributes))
        if key in seen:
            continue
        seen.add(key)
        location = getattr(op.location, "desc", None)
        location = location.data if location is not None else None
        try:
            single = single_op_module(op)
            value = compare_module(single, random_inputs(single, seed))
            yield OpComparison(op.name, location, value)
        except (MlconvError, AssertionError, RuntimeError, ValueError) as error:
            text = str(error).strip().splitlines()
            yield OpComparison(op.name, location, None, text[0] if text else type(error).__name__)


# --- the checked table of test_openvino_oracle.py ---------------------------------------------
TOLERANCE = 1e-4  # max |openvino - jax| / max |jax|


def case_module(case):
    """The core module of an ONNX node case (import + lowering to core), or None."""
    # lazy: loads JAX and turns on jax_enable_x64, which this module does not
    from mlconv.frontends.load import load_model
    from mlconv.passes.core_infer_shapes import CoreInferShapesPass
    from mlconv.passes.pipelines import lower_to_core

    module = lower_to_core(load_model(case.model))
    CoreInferShapesPass().apply(make_context(), module)
    return module


def bind_static_inputs(module: ModuleOp, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Make the inputs that feed static operands (a TopK's k, a Reshape's shape given as
    graph inputs by ONNX cases) constants of their values, as the JAX path specializes them;
    returns the remaining inputs."""
    from xdsl.dialects.builtin import ArrayAttr
    from xdsl.rewriter import InsertPoint, Rewriter

    # lazy: loads JAX and turns on jax_enable_x64, which this module does not
    from mlconv.dialects.core_tensor import ConstantOp
    from mlconv.passes.core_infer_shapes import CoreInferShapesPass

    function = next(op for op in module.ops if isinstance(op, func.FuncOp))
    block = function.body.block
    static = set()
    for op in block.walk():
        if isinstance(op, CoreOp):
            for spec, group in zip(op.OPERANDS, op.operand_groups(), strict=True):
                if spec.lstrip("*?") in op.STATIC_OPERANDS:
                    static.update(group)
    attrs = list(function.arg_attrs.data) if function.arg_attrs else [None] * len(block.args)
    kept_inputs, kept_attrs = [], []
    for arg, array, attr in zip(list(block.args), inputs, attrs, strict=True):
        if arg not in static:
            kept_inputs.append(array)
            kept_attrs.append(attr)
            continue
        constant = ConstantOp.from_numpy(np.asarray(array))
        Rewriter.insert_op(constant, InsertPoint.at_start(block))
        arg.replace_all_uses_with(constant.results[0])
        block.erase_arg(arg)
    if len(kept_inputs) != len(inputs):
        function.update_function_type()
        if function.arg_attrs is not None:
            function.arg_attrs = ArrayAttr(kept_attrs)
        CoreInferShapesPass().apply(make_context(), module)
    return kept_inputs


def check_case(case) -> tuple[str, str]:
    """("pass" | "differs" | "unsupported", detail) of one ONNX node case's core IR run in
    OpenVINO against the JAX path on the case's first data set."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        module = case_module(case)
        inputs = bind_static_inputs(module, [as_array(v) for v in case.data_sets[0][0]])
        try:
            value = compare_module(module, inputs)
        except MlconvError as error:
            return "unsupported", str(error).strip().splitlines()[0][:200]
        except (AssertionError, RuntimeError) as error:
            # lazy: loads JAX and turns on jax_enable_x64, which this module does not
            from mlconv.backends.openvino_backend import ov_message

            return "differs", ov_message(error)[:200]
    if not value <= TOLERANCE:
        return "differs", f"max relative difference {value:.3g}"
    return "pass", ""


def _representable(module: ModuleOp) -> bool:
    """Every value's element type is one OpenVINO IR holds (no float8/int4 cases)."""
    # lazy: loads JAX and turns on jax_enable_x64, which this module does not
    from mlconv.backends.openvino_layers import ELEMENT_TYPES

    for op in module.walk():
        for value in op.results:
            if isinstance(value.type, TensorType):
                try:
                    if numpy_dtype(value.type.get_element_type()) not in ELEMENT_TYPES:
                        return False
                except (KeyError, ValueError, TypeError):
                    return False
    return True


def sample_cases(failing: set[str]) -> dict[str, str]:
    """For every core op kind the ONNX node cases produce, the case with the fewest core ops
    that produces it (cases in `failing`, the conformance table's, are skipped)."""
    import warnings

    best: dict[str, tuple[int, str]] = {}
    for case in collect_cases():
        if case.name in failing:
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                module = case_module(case)
        except Exception:  # noqa: BLE001 - cases mlconv cannot lower are not the oracle's
            continue
        if not _representable(module):
            continue
        size = sum(1 for op in module.walk() if isinstance(op, CoreOp))
        for kind in op_kinds(module):
            if kind not in best or size < best[kind][0]:
                best[kind] = (size, case.name)
    return {kind: name for kind, (_, name) in sorted(best.items())}


def main(argv: list[str] | None = None) -> int:
    """python -m mlconv.verify.openvino_oracle --write TABLE.json: sample one ONNX node case
    per core op kind, run each in OpenVINO and JAX, write the table (reasons for new entries
    are the observed messages: edit them into explanations)."""
    import argparse
    import json
    from pathlib import Path

    # lazy: loads JAX and turns on jax_enable_x64, which this module does not
    from mlconv.backends.openvino_layers import UNSUPPORTED

    parser = argparse.ArgumentParser(prog="python -m mlconv.verify.openvino_oracle")
    parser.add_argument("--write", required=True, help="the table to (re)write")
    parser.add_argument("--conformance", default="test/pytest/onnx_conformance_expected.json")
    args = parser.parse_args(argv)
    failing = {
        name for names in json.loads(Path(args.conformance).read_text()).values() for name in names
    }
    path = Path(args.write)
    old = json.loads(path.read_text()) if path.exists() else {}
    cases = sample_cases(failing)
    by_name = {c.name: c for c in collect_cases()}
    table: dict = {"cases": cases, "differs": {}, "unsupported": {}}
    for kind, name in cases.items():
        status, detail = check_case(by_name[name])
        print(f"{kind:32} {name:50} {status} {detail}", flush=True)
        if status != "pass":
            previous = old.get(status, {}).get(kind)
            table[status][kind] = previous or UNSUPPORTED.get(kind) or detail
    path.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

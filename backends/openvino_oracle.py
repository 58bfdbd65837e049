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

from mlconv.dense import numpy_dtype
from mlconv.dialects.core_base import CoreOp


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
    import mlconv
    from mlconv.backends.openvino_backend import compile_module

    ov_out = compile_module(module.clone(), "cpu")(*inputs)
    jax_out = mlconv.compile(module.clone(), device="cpu")(*inputs)
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
    from mlconv.errors import MlconvError

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

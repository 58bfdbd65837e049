"""The lowering as a dry run: every op that would fail, with its reason and location.

`dry_run(module)` works on a clone (the module is left as it is) and goes as far as it can:

1. the framework's front phase (`onnx-normalize`, `onnx-decompose`); a failure there stops;
2. the lowering to core, op by op: an op without a pattern, or whose pattern refuses it, is
   one error located at the op and left in place, and the lowering goes on with the next op
   (the one lowering driver, `lowering.driver.lower_ops`, with `keep_going`);
3. when everything reached core: the passes after it (`core-layout-nchw` for TF), then the
   core-to-tpu pipeline's inference, folding and fusion with each dynamic input dim bound to
   1 (as a call with batch 1 would), and each core op checked as core-to-tpu lowers it
   (static shapes, constant shape operands, tracing its semantics) without stopping at the
   first. Skipped when a model input's value decides a shape (it is compiled per call).

`mlconv-translate --import-onnx MODEL --check` prints the errors and exits 1 when there is any.
"""

from __future__ import annotations

from typing import Any

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation

from mlconv.errors import MlconvError, PassFailure, describe_location, render
from mlconv.passes import get_pass
from mlconv.passes.core_fuse import CoreFusePass


def _failure(op: Operation, error: BaseException) -> MlconvError:
    if isinstance(error, MlconvError):
        if error.location is None:
            error.location = describe_location(op.location)
        if f"'{op.name}' op" not in error.message:
            error = type(error)(f"'{op.name}' op {error.message}", error.location)
        return error
    lines = str(error).strip().splitlines()
    detail = f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__
    return PassFailure.at(op, f"internal error in its lowering: {detail}")


def _lower_onnx(module: ModuleOp) -> list[MlconvError]:
    # lazy: loads numpy, onnx, which this module does not
    from mlconv.passes import onnx_to_core

    failures: list[MlconvError] = []
    onnx_to_core.lower(module, keep_going=lambda op, e: failures.append(_failure(op, e)))
    return failures


def _lower_tf(module: ModuleOp) -> list[MlconvError]:
    # lazy: loads numpy, which this module does not
    from mlconv.passes import tf_to_core

    failures: list[MlconvError] = []
    tf_to_core.lower(module, keep_going=lambda op, e: failures.append(_failure(op, e)))
    return failures


def _lower_tflite(module: ModuleOp) -> list[MlconvError]:
    # lazy: loads numpy, which this module does not
    from mlconv.passes import tflite_to_core

    failures: list[MlconvError] = []
    tflite_to_core.lower(module, keep_going=lambda op, e: failures.append(_failure(op, e)))
    return failures


LOWER = {"onnx": _lower_onnx, "tf": _lower_tf, "tflite": _lower_tflite}


def _update_signatures(module: ModuleOp) -> None:
    # lazy: loads numpy, which this module does not
    from mlconv.passes.core_infer_shapes import update_signature

    for function in module.walk():
        if isinstance(function, func.FuncOp) and not function.is_declaration:
            update_signature(function)


def bind_dynamic_dims(main: func.FuncOp) -> str:
    """input-shapes binding each dynamic dim of @main's inputs to 1 ("" when all are static)."""
    # lazy: loads numpy, which this module does not
    from mlconv.passes.core_to_tpu import input_name

    specs = []
    for index, arg in enumerate(main.body.block.args):
        if isinstance(arg.type, TensorType) and any(d < 0 for d in arg.type.get_shape()):
            dims = ",".join("1" if d < 0 else str(d) for d in arg.type.get_shape())
            specs.append(f"{input_name(main, index)}:{dims}")
    return ";".join(specs)


def _check_tpu(module: ModuleOp, ctx: Context) -> list[MlconvError]:
    # lazy: loads numpy, which this module does not
    from mlconv.dialects.core_base import CoreOp
    from mlconv.dialects.core_tensor import ConstantOp
    from mlconv.passes.core_fold_constants import CoreFoldConstantsPass
    from mlconv.passes.core_infer_shapes import CoreInferShapesPass
    from mlconv.passes.core_to_tpu import check_static_inputs
    from mlconv.passes.jaxpr_to_tpu import aval_type
    from mlconv.semantics.tracing import StaticOperandMissing, static_types, trace
    from mlconv.signature.module_io import find_main, value_inputs

    main = find_main(module)
    if value_inputs(main):
        return []  # compiled per call, at the values of the inputs that decide shapes
    try:
        CoreInferShapesPass(input_shapes=bind_dynamic_dims(main)).apply(ctx, module)
        CoreFoldConstantsPass(static_shape=True).apply(ctx, module)
        CoreFusePass().apply(ctx, module)
        check_static_inputs(main)
    except MlconvError as error:
        return [error]
    failures: list[MlconvError] = []
    for op in list(main.body.block.ops)[:-1]:
        if isinstance(op, ConstantOp):
            continue
        if not isinstance(op, CoreOp):
            failures.append(PassFailure.at(op, "has no lowering to the tpu dialect"))
        elif not static_types(op.operands) or not static_types(op.results):
            failures.append(PassFailure.at(op, "has a dynamic shape; the TPU needs static shapes"))
        else:
            try:
                closed_jaxpr, _ = trace(op)
            except StaticOperandMissing as missing:
                failures.append(
                    PassFailure.at(op, f"operand '{missing.operand}' is not a constant at batch 1")
                )
                continue
            except MlconvError as error:  # located already (an op in a control-flow body)
                failures.append(error)
                continue
            except Exception as error:  # noqa: BLE001
                failures.append(PassFailure.at(op, f"cannot be lowered: {error}".splitlines()[0]))
                continue
            traced = [aval_type(v.aval) for v in closed_jaxpr.jaxpr.outvars]
            expected = [r.type for r in op.results]
            if traced != expected:
                failures.append(
                    PassFailure.at(
                        op, f"result types {expected} disagree with its semantics {traced}"
                    )
                )
    return failures


def dry_run(module: ModuleOp) -> list[MlconvError]:
    """Every error lowering `module` (any framework dialect, or core) to tpu ops would meet."""
    # lazy: loads numpy, which this module does not
    from mlconv.dialects import make_context
    from mlconv.passes.pipelines import FRONTENDS, framework_dialects

    ctx = make_context()
    module = module.clone()
    failures: list[MlconvError] = []
    for dialect in framework_dialects(module):
        front_phase, _, after_core = FRONTENDS[dialect]
        try:
            for front in front_phase:
                get_pass(front)().apply(ctx, module)
        except MlconvError as error:
            return [error]
        failures += LOWER[dialect](module)
        if failures:
            continue
        _update_signatures(module)
        try:
            for name in after_core:
                get_pass(name)().apply(ctx, module)
        except MlconvError as error:
            failures.append(error)
    if failures:
        return failures
    return _check_tpu(module, ctx)


def describe(failures: list[MlconvError], path: str) -> list[str]:
    """One `path: loc("node"): error: ...` line per failure and a count at the end."""
    lines = [render(error, path) for error in failures]
    if failures:
        lines.append(f"{path}: error: {len(failures)} op(s) would fail to lower")
    return lines


__all__: list[Any] = ["describe", "dry_run"]

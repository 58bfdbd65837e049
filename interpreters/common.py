"""What the level interpreters share: the xDSL interpreter they run in, one-line errors located
at the op, the recorder of every op's results, and `level_of`, which names a module's level
(`interpreters/run.py` runs a module by it)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    OpImplResult,
    PythonValues,
    ReturnedValues,
    TerminatorValue,
)
from xdsl.ir import Operation

from mlconv.dense import numpy_dtype
from mlconv.errors import BackendError, MlconvError, describe_location


@dataclass
class Recorder(Interpreter.Listener):
    """Keeps the results of every op interpreted, in order, with the op's location: `trace`
    holds (location, op name, results) for each op run (ops inside control-flow bodies once
    per iteration); `by_location()` gives, for each location, the results of the last op run
    there (rewrites put their location on every op they create, so that is the op that stands
    for the source node)."""

    trace: list[tuple[str | None, str, list[np.ndarray]]] = field(default_factory=list)

    def did_interpret_op(self, op: Operation, results: PythonValues) -> None:
        if results:
            where = describe_location(op.location)
            self.trace.append((where, op.name, [np.asarray(r) for r in results]))

    def by_location(self) -> dict[str, list[np.ndarray]]:
        found: dict[str, list[np.ndarray]] = {}
        for where, _, results in self.trace:
            if where is not None:
                found[where] = results
        return found


@dataclass
class ReferenceInterpreter(Interpreter):
    """xDSL's interpreter whose op failures are one line located at the op (xDSL's own
    diagnostic prints the whole enclosing module)."""

    def _run_op(self, op: Operation, inputs: PythonValues) -> OpImplResult:
        impls = self._impls._impl_dict  # noqa: SLF001 - xDSL keeps its dispatch table private
        if type(op) not in impls:
            raise BackendError.at(op, "cannot be interpreted at this level")
        for listener in self.listeners:
            listener.will_interpret_op(op, inputs)
        ft, implementation = impls[type(op)]
        try:
            result = implementation(ft, self, op, inputs)
        except MlconvError:
            raise
        except Exception as error:
            text = str(error).strip().splitlines()
            detail = text[0] if text else type(error).__name__
            raise BackendError.at(op, f"cannot be interpreted: {detail}") from error
        if len(result.values) != len(op.results):
            raise BackendError.at(
                op, f"interpreted to {len(result.values)} results, expected {len(op.results)}"
            )
        for listener in self.listeners:
            listener.did_interpret_op(op, result.values)
        return result


def check_result(op: Operation, index: int, value: Any) -> np.ndarray:
    """`value` as a numpy array, after checking it against the result's declared type (dims
    that are `?` match any size)."""
    array = np.asarray(value)
    declared = op.results[index].type
    if isinstance(declared, TensorType):
        dtype = numpy_dtype(declared.get_element_type())
        shape = tuple(declared.get_shape())
        if len(shape) != array.ndim or any(
            d >= 0 and d != s for d, s in zip(shape, array.shape, strict=True)
        ):
            raise BackendError.at(
                op, f"result {index} has shape {array.shape}, its type says {declared}"
            )
        if array.dtype != dtype:
            raise BackendError.at(
                op, f"result {index} has element type {array.dtype}, its type says {declared}"
            )
    return array


def checked(op: Operation, results: Iterable[Any]) -> tuple[np.ndarray, ...]:
    """Every result of `op` through `check_result`."""
    return tuple(check_result(op, i, r) for i, r in enumerate(results))


def yield_operands(
    ft: InterpreterFunctions, interpreter: Interpreter, op: Operation, args: PythonValues
) -> tuple[TerminatorValue, PythonValues]:
    """A region's yield: its operands are the region's results (each level registers it for
    its own yield op with `impl_terminator`)."""
    return ReturnedValues(args), ()


class LevelFunctions(InterpreterFunctions):
    """The implementations of one level's ops: each op class in `OPS` runs by `RUN_OP` unless
    the subclass (decorated with `register_impls`) has an `@impl` of its own for it."""

    OPS: ClassVar[Iterable[type[Operation]]] = ()
    RUN_OP: ClassVar[Callable[..., OpImplResult]]

    def __init__(self, module: ModuleOp | None = None):
        self.module = module

    @classmethod
    def _impls(cls) -> Iterable[tuple[type, Any]]:
        table = dict(super()._impls())
        for op_class in cls.OPS:
            table.setdefault(op_class, cls.RUN_OP)
        return table.items()


LEVELS = ("onnx", "core", "tpu")


def level_of(module: ModuleOp) -> str:
    """The level of the module's ops: `onnx`, `core` or `tpu` (one of them only)."""
    found = {op.name.split(".", 1)[0] for op in module.walk()} & {*LEVELS, "tf", "tflite"}
    if len(found) != 1 or not found <= set(LEVELS):
        what = ", ".join(sorted(found)) or "no"
        raise BackendError(
            f"cannot interpret a module of {what} ops: expected one of onnx, core, tpu"
        )
    return found.pop()

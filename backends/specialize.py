"""Compile per call shape and per value of shape-determining inputs, as jax.jit retraces.

The TPU needs static shapes. A model whose inputs have dynamic dims, or whose shape-like
operands (Reshape's target, TopK's k, Slice's starts, ...) come from model inputs rather than
constants, cannot be compiled once; `SpecializingModule` keeps the core-level module and, on each
call, binds the actual input shapes and the values of the inputs that reach a static operand,
lowers a copy to tpu ops and compiles it, caching one program per distinct key.

The cache is an LRU of `cache_size` programs (`DEFAULT_CACHE_SIZE`, 8, unless given;
`mlconv.compile(..., cache_size=N)`): the least recently called signature is dropped when a new
one would exceed it, and compiled again if it comes back. `cached` is how many are held,
`compilations` how many were compiled in all. Inputs are checked against the declared
signature (static dims, dtypes, names, count) before anything is compiled.

Where the values that reach static operands pass through a data-dependent op (NonZero,
NonMaxSuppression: a detector's post-processing), `backends/staged.py` compiles the prefix
once per input shapes and runs the tail per call instead (`plan_stages`).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import jax
import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType

from mlconv.backends.jax_backend import CompiledModule, compile_module
from mlconv.backends.module_binding import bind_module
from mlconv.backends.program_cache import DEFAULT_CACHE_SIZE
from mlconv.backends.staged import plan_stages
from mlconv.dialects import make_context
from mlconv.errors import OptionError
from mlconv.signature.inputs import InputSpec, bind_inputs
from mlconv.signature.module_io import find_main, value_inputs, value_names


def _dynamic(main: func.FuncOp) -> bool:
    return any(
        not isinstance(a.type, TensorType) or any(d < 0 for d in a.type.get_shape())
        for a in main.body.block.args
    )


def needs_specialization(module: ModuleOp) -> bool:
    main = find_main(module)
    return _dynamic(main) or bool(value_inputs(main))


class SpecializingModule:
    """Callable like CompiledModule; compiles lazily per (input shapes, bound input values)."""

    def __init__(
        self,
        module: ModuleOp,
        device: str | None = None,
        cache_size: int = DEFAULT_CACHE_SIZE,
        store: Any = None,
    ):
        if not isinstance(cache_size, int) or cache_size < 1:
            raise OptionError(f"cache_size must be a positive integer, got {cache_size!r}")
        self.module = module
        self.device = device
        self.cache_size = cache_size
        main = find_main(module)
        args = main.body.block.args
        self.input_names = value_names(main.arg_attrs, len(args), "input")
        self.output_names = value_names(main.res_attrs, len(main.function_type.outputs), "output")
        self.input_specs = InputSpec.from_main(main)
        self.bound = value_inputs(main)
        # Where each shape's program is stored for later processes (program_cache.py); not
        # for a model whose input values reach static operands (one program per value).
        self.store = None if self.bound else store
        self.compilations = 0
        self._programs: OrderedDict[Any, Any] = OrderedDict()
        self._unstaged: set[Any] = set()  # input shapes staging does not apply to

    @property
    def cached(self) -> int:
        """How many compiled programs (shape signatures) the cache holds now."""
        return len(self._programs)

    def __call__(self, *args: Any, **named: Any) -> list[np.ndarray]:
        return [np.asarray(r) for r in self.on_device(*args, **named)]

    def on_device(self, *args: Any, **named: Any) -> list[Any]:
        """As CompiledModule.on_device: JAX array inputs taken where they are, the outputs
        left where the program computed them (on the host for a staged program's host part)."""
        arrays = bind_inputs(self.input_specs, args, named)  # InputError: contradicts the model
        return self.run_bound(arrays)

    def run_bound(self, arrays: list[Any]) -> list[Any]:
        """`on_device` for inputs `bind_inputs` already checked against `input_specs`."""
        shapes = tuple((a.shape, a.dtype) for a in arrays)
        if self.bound and shapes not in self._unstaged:  # backends/staged.py
            staged = self._program(
                ("staged", shapes), lambda: plan_stages(self.module, arrays, self.device)
            )
            if staged is not None:
                return staged(arrays)
            self._unstaged.add(shapes)
        key = (shapes, tuple(np.asarray(arrays[i]).tobytes() for i in self.bound))
        compiled = self._programs.get(key)
        if compiled is None:
            compiled = self._program(key, lambda: self._specialize(arrays))
        elif len(self._programs) > 1:
            self._programs.move_to_end(key)
        return [
            jax.device_put(r, compiled.device) if type(r) is np.ndarray else r
            for r in compiled.run_bound(arrays)
        ]

    def runner(self, arrays: list[Any]) -> Any:
        """The `run_bound` of the program for inputs like `arrays` (compiled already), for a
        caller that calls it often (padding.py's plans); None where outputs need more than
        it (a staged program, host outputs to place)."""
        if self.bound:
            return None
        program = self._programs.get((tuple((a.shape, a.dtype) for a in arrays), ()))
        return getattr(program, "runner", lambda: None)() if program is not None else None

    def _program(self, key: Any, make: Any) -> Any:
        """The cached program at `key`, made (and counted) on a miss; None is not cached."""
        program = self._programs.get(key)
        if program is None:
            program = make()
            if program is None:
                return None
            self.compilations += 1
            self._programs[key] = program
            while len(self._programs) > self.cache_size:
                self._programs.popitem(last=False)
        else:
            self._programs.move_to_end(key)
        return program

    def _specialize(self, arrays: list[np.ndarray]) -> CompiledModule:
        """@main compiled at the arrays' shapes and the values of the `bound` inputs."""
        # lazy: loads 8 more modules (dialects, passes)
        from mlconv.passes.pipelines import CoreToTpuPipeline, target_device

        module = bind_module(self.module, arrays, self.bound)
        CoreToTpuPipeline(device=target_device(self.device)).apply(make_context(), module)
        compiled = compile_module(module, self.device)
        if self.store is not None:  # stored, and run as a later process will run it
            return self.store.save(arrays, compiled) or compiled
        return compiled

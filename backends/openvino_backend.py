"""Run core IR in the OpenVINO runtime (`mlconv.compile(..., backend="openvino")`).

    run = compile_module(core_module, device="cpu")
    outputs = run(x)                  # numpy arrays in (or by input name), list of arrays out

The module's @main is written as OpenVINO IR in memory (`backends.openvino_ir.to_openvino_ir`)
and compiled by `openvino.Core().compile_model` on the CPU. Dynamic dims stay dynamic: OpenVINO
takes any size at each call. It is the second, independent runtime of core IR (the oracle of
test_openvino_oracle.py).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from mlconv.errors import BackendError, InputError

DEVICES = {"cpu": "CPU", None: "CPU"}
# OpenVINO's CPU plugin runs f32 models in bf16 where the CPU has bf16 units (2e-3 relative on
# a convolution here); the backend and the oracle ask for f32 arithmetic.
PRECISE = {"INFERENCE_PRECISION_HINT": "f32"}


class OpenVinoModule:
    """A compiled OpenVINO model called like the JAX backend's callables."""

    def __init__(self, compiled, names: Sequence[str]):
        self.compiled = compiled
        self.names = list(names)

    def __call__(self, *args: np.ndarray, **kwargs: np.ndarray) -> list[np.ndarray]:
        arrays = list(args)
        for name in self.names[len(arrays) :]:
            if name not in kwargs:
                raise InputError(f"missing input '{name}'")
            arrays.append(kwargs.pop(name))
        if kwargs:
            raise InputError(f"unknown inputs: {', '.join(sorted(kwargs))}")
        if len(arrays) != len(self.names):
            raise InputError(f"the model takes {len(self.names)} inputs, got {len(arrays)}")
        request = self.compiled.create_infer_request()
        results = request.infer([np.asarray(a, order="C") for a in arrays])  # keeps 0-d
        return [np.array(results[output]) for output in self.compiled.outputs]


def ov_message(error: Exception) -> str:
    """The informative line of an OpenVINO exception (not its 'Exception from file:line')."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    useful = [line for line in lines if not line.startswith(("Exception from", "Check '"))]
    return (useful or lines or [type(error).__name__])[-1]


def read_model(module: ModuleOp, compress_to_fp16: bool = False):
    """The `openvino.Model` of a core module (written as IR in memory, then read)."""
    import openvino as ov

    from mlconv.backends.openvino_ir import to_openvino_ir

    xml, weights = to_openvino_ir(module, compress_to_fp16=compress_to_fp16)
    tensor = ov.Tensor(np.frombuffer(weights or b"\0", dtype=np.uint8).copy())
    try:
        return ov.Core().read_model(model=xml.decode(), weights=tensor)
    except RuntimeError as error:
        raise BackendError(f"OpenVINO cannot read the IR: {ov_message(error)}") from None


def compile_module(module: ModuleOp, device: str | None = None) -> OpenVinoModule:
    """A callable running the core module's @main in OpenVINO on `device` (cpu)."""
    import openvino as ov

    from mlconv.backends.module_io import find_main, value_names

    if device not in DEVICES:
        raise BackendError(f"the openvino backend runs on the cpu, not on '{device}'")
    model = read_model(module)
    try:
        compiled = ov.Core().compile_model(model, DEVICES[device], PRECISE)
    except RuntimeError as error:
        raise BackendError(f"OpenVINO cannot compile the model: {ov_message(error)}") from None
    function = find_main(module, "run in OpenVINO")
    names = value_names(function.arg_attrs, len(function.body.block.args), "input_")
    return OpenVinoModule(compiled, names)

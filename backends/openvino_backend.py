"""Run core IR in the OpenVINO runtime (`mlconv.compile(..., backend="openvino")`).

    run = compile_module(core_module, device="cpu")
    outputs = run(x)                  # numpy arrays in (or by input name), list of arrays out

The module's @main is written as OpenVINO IR in memory (`backends.openvino_ir.to_openvino_ir`)
and compiled by `openvino.Core().compile_model` on the CPU. Dynamic dims stay dynamic: OpenVINO
takes any size at each call. It is the second, independent runtime of core IR (the oracle of
test_openvino_oracle.py), and the second CPU back end `mlconv.compile` may choose
(`backends/backend_choice.py`).
"""

from __future__ import annotations

import threading

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from mlconv.errors import BackendError
from mlconv.signature.inputs import InputSpec, bind_inputs
from mlconv.signature.module_io import find_main, value_names

DEVICES = {"cpu": "CPU", None: "CPU"}
# OpenVINO's CPU plugin runs f32 models in bf16 where the CPU has bf16 units (2e-3 relative on
# a convolution here); the backend and the oracle ask for f32 arithmetic.
PRECISE = {"INFERENCE_PRECISION_HINT": "f32"}


class OpenVinoModule:
    """A compiled OpenVINO model called like the JAX backend's callables: numpy arrays in
    (positionally or by input name, checked against @main's signature), a list of numpy arrays
    out. One infer request per calling thread (a request runs one call at a time)."""

    backend = "openvino"

    def __init__(self, compiled, main):
        self.compiled = compiled
        count = len(main.body.block.args)
        self.input_names = value_names(main.arg_attrs, count, "input_")
        self.output_names = value_names(main.res_attrs, len(main.function_type.outputs), "output_")
        self.input_specs = InputSpec.from_main(main)
        self._local = threading.local()

    @property
    def names(self) -> list[str]:
        return self.input_names

    def __call__(self, *args: np.ndarray, **kwargs: np.ndarray) -> list[np.ndarray]:
        arrays = bind_inputs(self.input_specs, args, kwargs)  # InputError: contradicts the model
        request = getattr(self._local, "request", None)
        if request is None:
            request = self._local.request = self.compiled.create_infer_request()
        results = request.infer([np.asarray(a, order="C") for a in arrays])  # keeps 0-d
        return [np.array(results[output]) for output in self.compiled.outputs]


def ov_message(error: Exception) -> str:
    """The informative line of an OpenVINO exception (not its 'Exception from file:line')."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    useful = [line for line in lines if not line.startswith(("Exception from", "Check '"))]
    return (useful or lines or [type(error).__name__])[-1]


def compile_ir(xml: bytes, weights: bytes, device: str | None = None):
    """`openvino.Core().compile_model` of IR text and weights, in f32 arithmetic (`PRECISE`);
    OpenVINO's refusals as BackendError. It releases the GIL while it compiles."""
    # OpenVINO: optional (mlconv[openvino]); only this path needs it
    import openvino as ov

    if device not in DEVICES:
        raise BackendError(f"the openvino backend runs on the cpu, not on '{device}'")
    core = ov.Core()
    tensor = ov.Tensor(np.frombuffer(weights or b"\0", dtype=np.uint8).copy())
    try:
        model = core.read_model(model=xml.decode(), weights=tensor)
    except RuntimeError as error:
        raise BackendError(f"OpenVINO cannot read the IR: {ov_message(error)}") from None
    try:
        return core.compile_model(model, DEVICES[device], PRECISE)
    except RuntimeError as error:
        raise BackendError(f"OpenVINO cannot compile the model: {ov_message(error)}") from None


def compile_module(module: ModuleOp, device: str | None = None) -> OpenVinoModule:
    """A callable running the core module's @main in OpenVINO on `device` (cpu)."""
    # lazy: loads 9 more modules (backends, dialects, fileio, passes, signature)
    from mlconv.backends.openvino_ir import to_openvino_ir

    if device not in DEVICES:
        raise BackendError(f"the openvino backend runs on the cpu, not on '{device}'")
    xml, weights = to_openvino_ir(module)
    return OpenVinoModule(compile_ir(xml, weights, device), find_main(module, "run in OpenVINO"))

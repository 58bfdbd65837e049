"""The Python API: `mlconv.compile(model, device=None, **options)`.

    run = mlconv.compile("resnet50.onnx", device="cpu", input_shapes={"x": [1, 3, 224, 224]})
    (logits,) = run(image)

`model` is a path (.onnx, a TF SavedModel folder, .tflite, .mlir) or an `onnx.ModelProto`.
Whatever the source dialect, the module is lowered `<framework>-to-core`, then
core-infer-shapes / core-fold-constants{static-shape=true} / core-to-tpu, and compiled with
JAX as one XLA program per `tpu.region`.
"""

from __future__ import annotations

import functools
import gc
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mlconv.errors import OptionError


def _gc_paused(fn):
    """`fn` with Python's cyclic garbage collector off while it runs: the passes allocate
    millions of small IR objects, and the collections this triggers walk every live object of
    jax and xDSL (~25% of the passes' time on light ResNet50). Garbage is collected afterwards
    as usual."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if not gc.isenabled():
            return fn(*args, **kwargs)
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            gc.enable()

    return wrapper


@_gc_paused
def compile(  # noqa: A001 - the API the design names
    model: Any,
    device: str | None = None,
    *,
    input_shapes: str | Mapping[str, Sequence[int | None]] | None = None,
    cache_size: int | None = None,
    check_numerics: bool | tuple[float, float] = False,
    backend: str | None = None,
    quiet: bool = False,
    allow_custom: bool = False,
    compilation_cache: bool | str | os.PathLike | None = None,
    pad_dims: Mapping[str, Any] | bool | None = None,
    allow_tensorflow: bool = False,
    **frontend_options: Any,
):
    """A callable running `model` on `device` ("cpu", "gpu", "tpu"; JAX's default if None):
    numpy arrays in (positionally or by input name), a list of numpy arrays out.

    `input_shapes` fixes dynamic input dims; other keywords go to the frontend (for a
    SavedModel: `signature`, `alias`, `function`). A model with dynamic dims is compiled once
    per call signature; `cache_size` bounds how many programs are kept (default
    `specialize.DEFAULT_CACHE_SIZE`). A call whose inputs contradict the model's declared
    shapes or dtypes raises `mlconv.errors.InputError`. `check_numerics` (True, or
    (rtol, atol)) first runs the IR after every pass on seeded random inputs and raises
    `NumericsDivergence` naming the first pass and op that change the numbers.
    `backend`: "xla" (alias "jax") compiles with JAX/XLA, "openvino" runs the core IR in the
    OpenVINO runtime (cpu), "auto" (the default, or $MLCONV_BACKEND) runs on the CPU whichever of
    the two is faster, measured when compiling (a static model; the choice is cached:
    `backends/backend_choice.py`), and XLA elsewhere. The callable's `backend` says which runs,
    its `backend_choice` why.
    On a terminal a progress bar names each pass as it runs (`quiet=True`: none).
    `allow_custom=True` keeps ops nobody lowers as core.Custom, run on the host by the Python
    implementation registered for their (domain, op type) in `mlconv.custom_ops`.
    `compilation_cache`: XLA executables persist on disk across processes (on by default, in
    ~/.cache/mlconv/xla; False: off, a path: there; process-wide; `backends/compile_cache.py`,
    env MLCONV_COMPILATION_CACHE=0 turns the default off).
    `pad_dims` ({dim: mlconv.PadTo(buckets, mask, side)}) serves dynamic dims from a few
    compiled shapes, padding verified exact on the first call (`backends/padding.py`); by
    default a decoder with optimum's input names (`past_key_values.*`, `attention_mask`) pads
    its past length; `pad_dims=False`: never pad.
    `allow_tensorflow` goes with an mlconv-convert artifact, as for `load`."""
    # Imported here, not at the top: `import mlconv` (every mlconv-* command) stays ~0.2 s
    # instead of ~1.3 s with the passes and JAX loaded. These few load JAX but not xDSL, the
    # frontends or the passes, which a warm process (program_cache.py) never needs.
    from mlconv.backends import compile_cache, program_cache
    from mlconv.backends.backend_choice import BackendChoice, mark, resolve_backend

    if compilation_cache is not None:
        compile_cache.configure(compilation_cache)
    size = program_cache.DEFAULT_CACHE_SIZE if cache_size is None else cache_size
    store = None
    if not check_numerics and not allow_tensorflow:
        chosen = resolve_backend(backend, device)
        if chosen != "openvino":
            options = dict(frontend_options, input_shapes=input_shapes, allow_custom=allow_custom)
            store = program_cache.store_for(model, device, options)
        signature = store.read_module() if store is not None else None
        if signature is not None:  # a model lowered before: its programs are on disk

            def build():
                return _lowered(model, device, input_shapes, allow_custom, quiet,
                                frontend_options, chosen, size, store)  # fmt: skip

            stored = program_cache.StoredModule(store, signature, device, size, build)
            choice = BackendChoice("xla", "named" if chosen == "xla" else "dynamic")
            return mark(pad_dynamic_dims(mark(stored, choice), model, pad_dims), choice)

    # lazy: `import mlconv` stays light; JAX and the passes load on first use
    from mlconv.backends.specialize import SpecializingModule
    from mlconv.converter.artifact import is_artifact, load_artifact

    if isinstance(model, str | os.PathLike) and is_artifact(model):
        if input_shapes or frontend_options:
            raise OptionError(
                "an mlconv-convert artifact is already converted: it takes no options"
            )
        return load_artifact(model, device, allow_tensorflow=allow_tensorflow)
    if allow_tensorflow:
        raise OptionError("allow_tensorflow goes with an mlconv-convert artifact folder")
    backend = resolve_backend(backend, device)
    specialized = _lowered(model, device, input_shapes, allow_custom, quiet, frontend_options,
                           backend, size, store, check_numerics)  # fmt: skip
    if not isinstance(specialized, SpecializingModule):
        return specialized  # a static model, compiled by the chosen back end
    choice = BackendChoice("xla", "named" if backend == "xla" else "dynamic")
    return mark(pad_dynamic_dims(mark(specialized, choice), model, pad_dims), choice)


def _lowered(
    model: Any,
    device: str | None,
    input_shapes: Any,
    allow_custom: bool,
    quiet: bool,
    frontend_options: dict[str, Any],
    backend: str,
    cache_size: int,
    store: Any,
    check_numerics: bool | tuple[float, float] = False,
):
    """`model` imported and lowered to core: a SpecializingModule for a model with dynamic
    dims (its programs stored in `store`, where there is one), else the static model compiled
    by `backend` (backend_choice.compile_chosen)."""
    # lazy: `import mlconv` stays light; JAX and the passes load on first use
    from mlconv.backends.backend_choice import compile_chosen
    from mlconv.backends.program_cache import external_data_files
    from mlconv.backends.specialize import SpecializingModule, needs_specialization
    from mlconv.dialects import make_context
    from mlconv.frontends.load import format_input_shapes, load_model
    from mlconv.interpreters.check_numerics import check_pipeline_numerics
    from mlconv.passes.pipelines import CoreToTpuPipeline, lower_to_core, target_device
    from mlconv.passes.progress import PassProgress

    module = load_model(model, **frontend_options)
    if check_numerics:
        check_pipeline_numerics(module.clone(), device, input_shapes, check_numerics)
    with PassProgress(None, "mlconv.compile", quiet) as progress:
        with progress.step("lower to core"):
            lower_to_core(module, allow_custom)
        pipeline = CoreToTpuPipeline(
            input_shapes=format_input_shapes(input_shapes),
            device=target_device(device) if backend != "openvino" else "",
        )
        inference, *stages = pipeline.passes()
        with progress.step(inference.name):
            inference.apply(make_context(), module)
        if backend == "openvino" or not needs_specialization(module):
            options = dict(
                frontend_options,
                input_shapes=pipeline.input_shapes,
                device=device,
                allow_custom=allow_custom,
            )
            return compile_chosen(
                module, device, stages, backend, source=model, options=options, progress=progress
            )
    specialized = SpecializingModule(module, device, cache_size, store)
    if specialized.store is not None:
        specialized.store.write_module(
            specialized.input_specs, specialized.output_names, external_data_files(model)
        )
    return specialized


def pad_dynamic_dims(specialized, model: Any, pad_dims: Mapping[str, Any] | bool | None):
    """`specialized` wrapped to pad `pad_dims` (None: `padding.default_pad_dims`), or as it
    is where nothing is padded."""
    # lazy: `import mlconv` stays light; JAX and the passes load on first use
    from mlconv.backends import compile_cache
    from mlconv.backends.padding import PaddedModule, default_pad_dims, record_path, resolve
    from mlconv.backends.program_cache import platform_of

    if pad_dims is False:
        return specialized
    explicit = bool(pad_dims) and pad_dims is not True
    dims = pad_dims if explicit else default_pad_dims(specialized.input_names)
    if not dims:
        return specialized
    if not isinstance(dims, Mapping):
        raise OptionError("pad_dims must be a dict dim -> mlconv.PadTo, or False")
    shapes = [spec.dims for spec in specialized.input_specs]
    dim_names = None
    if any(not key.rpartition(":")[2].lstrip("-").isdigit() for key in dims):
        dim_names = onnx_dim_names(model)
    resolved = resolve(dims, specialized.input_names, shapes, dim_names)
    platform = platform_of(specialized.device)
    directory = compile_cache.directory(platform) if platform is not None else None
    record = record_path(directory, model, resolved) if directory is not None else None
    return PaddedModule(specialized, resolved, explicit, record)


def onnx_dim_names(model: Any) -> dict[str, list[str | None]]:
    """Each graph input's dim names (None where a dim has none) of an ONNX model (path or
    ModelProto), weights not read; empty for another format."""
    import onnx

    if isinstance(model, str | os.PathLike):
        if Path(model).is_dir() or Path(model).suffix.lower() in (".tflite", ".mlir"):
            return {}
        model = onnx.load(str(model), load_external_data=False)
    if not isinstance(model, onnx.ModelProto):
        return {}
    return {
        value.name: [d.dim_param or None for d in value.type.tensor_type.shape.dim]
        for value in model.graph.input
    }


def load(path: str | os.PathLike, device: str | None = None, *, allow_tensorflow: bool = False):
    """An artifact folder written by `mlconv-convert` as a callable on `device` (cpu, gpu,
    tpu): numpy arrays in, list of numpy arrays out (its TPU functions); `.signatures[name]`
    runs a signature whole, host part included, outputs as a dict by name. Needs neither the
    source model nor TensorFlow (unless a signature's host part holds ops only TensorFlow
    runs: the manifest's `signatures` records which; such a signature runs only with
    `allow_tensorflow=True`, as it executes the artifact's own TensorFlow graph).

    The folder is data (docs/artifact.md): its manifest is validated, every file checked
    against its recorded SHA-256 and every export's custom calls against an allow-list before
    anything runs; a bad artifact is a one-line `mlconv.errors.BackendError`."""
    # lazy: `import mlconv` stays light; JAX and the passes load on first use
    from mlconv.converter.artifact import load_artifact

    return load_artifact(path, device, allow_tensorflow=allow_tensorflow)

"""The request batcher behind `mlconv.load(OUTDIR)` and `mlconv-run --serve` (seed 003's
in-graph batching, as TensorFlow's BatchFunction does it).

    model = mlconv.load("converted/")        # an artifact whose @main holds a tpu.batch op
    y, = model(x)                            # x: [k, ...] rows, k from 1 up; thread-safe

Concurrent callers' requests are queued; a batch is closed when it holds `max_batch_size` rows
or `batch_timeout_micros` after its first request, then one of `num_batch_threads` threads
concatenates the rows along dimension 0, pads them up to the next of `allowed_batch_sizes`
(copies of the last row), runs the executable compiled for that size (once per size, on first
use; every allowed size at load) and gives each caller exactly its own rows. A request larger
than what is left in the open batch is split across batches and reassembled, unless
`disable_large_batch_splitting` (then it starts a new batch, and one larger than
`max_batch_size` is refused). A request that would need a batch beyond `max_enqueued_batches`
waiting ones fails at once with `QueueFullError`. Requests that break the seed's shape
requirements are refused with its messages (`Dimensions of inputs should match`, ...).

Saving: `flatten_batch_ops` lets the artifact writer see through `tpu.batch` ops, and
`export_batched` writes each one's body as one `jax.export` module with a symbolic batch
dimension (the body, written for one row, mapped over rows with `jax.vmap`).
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np
from jax import export

from mlconv.backends.export_check import PLATFORMS, deserialize_checked, export_function
from mlconv.backends.symbolic import BATCH, arg_specs, region_function, symbolic_scope
from mlconv.dense import numpy_dtype, to_numpy
from mlconv.errors import BackendError, InputError
from mlconv.signature.inputs import InputSpec, bind_inputs

DEFAULT_MAX_ENQUEUED_BATCHES = 10
"""TensorFlow's BatchFunction default, used where the options leave it 0."""

# Upper bounds of BatchOptions, checked where options are parsed (converter/options.py)
# and where an artifact's manifest is read (converter/artifact_manifest.py): each thread is an
# OS thread, each allowed batch size one executable compiled at load and a padded batch of that
# many rows in memory.
MAX_BATCH_THREADS = 256
MAX_BATCH_SIZE = 65536
MAX_BATCH_TIMEOUT_MICROS = 60_000_000
MAX_ENQUEUED_BATCHES = 100_000


LARGEST_REQUEST = 1 << 16
"""The most rows one request to the SavedModel form's BatchFunction may hold (it is split into
batches of at most max_batch_size rows)."""


class QueueFullError(BackendError):
    """A request was refused because `max_enqueued_batches` batches already wait."""


class RequestTooLargeError(InputError):
    """A request needs more batches than `max_enqueued_batches` could ever hold: unlike a full
    queue, retrying can never succeed."""


# --------------------------------------------------------------------------- options


@dataclass(frozen=True)
class BatchConfig:
    """BatchOptions as the batcher uses them (0 means the default for the count fields)."""

    max_batch_size: int
    num_batch_threads: int = 1
    batch_timeout_micros: int = 0
    allowed_batch_sizes: tuple[int, ...] = ()
    max_enqueued_batches: int = DEFAULT_MAX_ENQUEUED_BATCHES
    disable_large_batch_splitting: bool = False

    @classmethod
    def from_json(cls, options: dict[str, Any]) -> BatchConfig:
        return cls(
            max_batch_size=int(options["max_batch_size"]),
            num_batch_threads=max(1, int(options.get("num_batch_threads", 1))),
            batch_timeout_micros=int(options.get("batch_timeout_micros", 0)),
            allowed_batch_sizes=tuple(int(s) for s in options.get("allowed_batch_sizes", ())),
            max_enqueued_batches=int(options.get("max_enqueued_batches", 0))
            or DEFAULT_MAX_ENQUEUED_BATCHES,
            disable_large_batch_splitting=bool(options.get("disable_large_batch_splitting")),
        )

    def padded_size(self, rows: int) -> int:
        """The size a batch of `rows` rows runs at: the next allowed size (rows if none)."""
        for size in self.allowed_batch_sizes:
            if size >= rows:
                return size
        return rows


# --------------------------------------------------------------------------- the queue


@dataclass
class _Request:
    inputs: list[np.ndarray]
    rows: int
    future: Future
    parts: dict[int, list[np.ndarray]] = field(default_factory=dict)
    pending: int = 0


@dataclass
class _Piece:
    request: _Request
    start: int  # first row of the request in this piece
    rows: int


@dataclass
class _Batch:
    deadline: float
    pieces: list[_Piece] = field(default_factory=list)
    rows: int = 0
    closed: bool = False


@dataclass(frozen=True)
class InputSignature:
    """What every request must look like: names, dtypes, dims after the 0th."""

    names: tuple[str, ...]
    dtypes: tuple[np.dtype, ...]
    trailing: tuple[tuple[int, ...], ...]


class Batcher:
    """A thread-safe batching queue in front of `executable(size)`, which returns a callable
    running a batch of exactly `size` rows (input arrays -> output arrays)."""

    def __init__(
        self,
        executable: Callable[[int], Callable[..., Sequence[Any]]],
        config: BatchConfig,
        signature: InputSignature,
        name: str = "batch",
    ):
        self.executable = executable
        self.config = config
        self.signature = signature
        self.name = name
        self._cond = threading.Condition()
        self._queue: collections.deque[_Batch] = collections.deque()
        self._closed = False
        self.stats: collections.Counter = collections.Counter()
        """`batches@<size>` per padded size, `rows`, `padding`, `requests`, `rejected`."""
        self._threads = [
            threading.Thread(target=self._work, name=f"{name}-{i}", daemon=True)
            for i in range(config.num_batch_threads)
        ]
        for thread in self._threads:
            thread.start()

    # ---- callers

    def __call__(self, inputs: Sequence[Any]) -> list[np.ndarray]:
        return self.submit(inputs).result()

    def submit(self, inputs: Sequence[Any]) -> Future:
        """Queue one request (arrays with the batch as dimension 0); a Future of its outputs."""
        arrays = self.check(inputs)
        rows = arrays[0].shape[0]
        request = _Request(arrays, rows, Future())
        if rows == 0:
            raise InputError(f"{self.name}: a request needs at least one row (0th dimension 0)")
        config = self.config
        if rows > config.max_batch_size * config.max_enqueued_batches:
            raise RequestTooLargeError(
                f"{self.name}: request of {rows} rows needs more than max_enqueued_batches "
                f"{config.max_enqueued_batches} batches of max_batch_size "
                f"{config.max_batch_size}; send it in parts"
            )
        if config.disable_large_batch_splitting and rows > config.max_batch_size:
            raise InputError(
                f"{self.name}: request of {rows} rows is larger than max_batch_size "
                f"{config.max_batch_size} and disable_large_batch_splitting is set"
            )
        with self._cond:
            if self._closed:
                raise BackendError(f"{self.name}: the batcher is closed")
            plan = self._plan(rows)
            waiting = len(self._queue) + sum(1 for target, _ in plan if target is None)
            if waiting > config.max_enqueued_batches:
                self.stats["rejected"] += 1
                raise QueueFullError(
                    f"{self.name}: the batch queue is full ({len(self._queue)} batches waiting, "
                    f"max_enqueued_batches {config.max_enqueued_batches}); request of {rows} "
                    "rows refused, retry later"
                )
            start = 0
            wake = False  # a worker waits for a batch to close or for the head's deadline
            request.pending = len(plan)
            deadline = time.monotonic() + config.batch_timeout_micros / 1e6
            for target, count in plan:
                if target is None:
                    if self._queue:
                        self._queue[-1].closed = True
                    target = _Batch(deadline)
                    self._queue.append(target)
                    wake = True
                target.pieces.append(_Piece(request, start, count))
                target.rows += count
                if target.rows >= config.max_batch_size:
                    target.closed = wake = True
                start += count
            self.stats["requests"] += 1
            if wake:
                self._cond.notify_all()
        return request.future

    def _plan(self, rows: int) -> list[tuple[_Batch | None, int]]:
        """Where the request's rows go: (an open batch, or None for a new one, row count)."""
        size = self.config.max_batch_size
        open_batch = self._queue[-1] if self._queue and not self._queue[-1].closed else None
        plan: list[tuple[_Batch | None, int]] = []
        if open_batch is not None:
            room = size - open_batch.rows
            if rows <= room:
                return [(open_batch, rows)]
            if not self.config.disable_large_batch_splitting and room > 0:
                plan.append((open_batch, room))
                rows -= room
        while rows > 0:
            count = min(rows, size)
            plan.append((None, count))
            rows -= count
        return plan

    def check(self, inputs: Sequence[Any]) -> list[np.ndarray]:
        """The request's arrays, checked against the seed's shape requirements."""
        # lazy: loads 3 more modules (dialects)
        from mlconv.dialects.tpu import (
            DIMENSIONS_MUST_MATCH,
            EQUAL_0TH_DIMENSION,
            NEEDS_A_DIMENSION,
        )

        signature = self.signature
        if len(inputs) != len(signature.names):
            raise InputError(
                f"{self.name}: expected {len(signature.names)} input(s) "
                f"({', '.join(signature.names)}), got {len(inputs)}"
            )
        arrays = []
        for name, dtype, trailing, value in zip(
            signature.names, signature.dtypes, signature.trailing, inputs, strict=True
        ):
            array = np.asarray(value)
            if array.dtype != dtype:
                raise InputError(f"input '{name}': expected dtype {dtype}, got {array.dtype}")
            if array.ndim == 0:
                raise InputError(f"input '{name}': {NEEDS_A_DIMENSION}")
            if array.shape[1:] != trailing:
                expected = ", ".join(["?", *map(str, trailing)])
                raise InputError(
                    f"input '{name}': {DIMENSIONS_MUST_MATCH}: expected [{expected}], got "
                    f"{list(array.shape)}"
                )
            arrays.append(array)
        rows = [a.shape[0] for a in arrays]
        if len(set(rows)) > 1:
            sizes = ", ".join(f"{n}: {r}" for n, r in zip(signature.names, rows, strict=True))
            raise InputError(f"{EQUAL_0TH_DIMENSION} ({sizes})")
        return arrays

    def close(self) -> None:
        """Finish the queued batches, then stop the threads."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        for thread in self._threads:
            thread.join()

    # ---- the batch threads

    def _take(self) -> _Batch | None:
        with self._cond:
            while True:
                if self._queue:
                    head = self._queue[0]
                    wait = head.deadline - time.monotonic()
                    if head.closed or len(self._queue) > 1 or wait <= 0 or self._closed:
                        head.closed = True
                        return self._queue.popleft()
                    self._cond.wait(wait)
                elif self._closed:
                    return None
                else:
                    self._cond.wait()

    def _work(self) -> None:
        while (batch := self._take()) is not None:
            try:
                self._run(batch)
            except BaseException as error:  # every caller of the batch gets the error
                failed = error if isinstance(error, Exception) else BackendError(str(error))
                for piece in batch.pieces:
                    if not piece.request.future.done():
                        piece.request.future.set_exception(failed)

    def _run(self, batch: _Batch) -> None:
        # lazy: loads 3 more modules (dialects)
        from mlconv.dialects.tpu import OUTPUT_0TH_DIMENSION

        size = self.config.padded_size(batch.rows)
        columns = []
        for index in range(len(self.signature.names)):
            parts = [p.request.inputs[index][p.start : p.start + p.rows] for p in batch.pieces]
            if size > batch.rows:
                parts.append(np.repeat(parts[-1][-1:], size - batch.rows, axis=0))
            columns.append(np.concatenate(parts, axis=0))
        outputs = [np.asarray(o) for o in self.executable(size)(*columns)]
        for index, output in enumerate(outputs):
            if output.ndim == 0 or output.shape[0] != size:
                got = "a scalar" if output.ndim == 0 else f"0th dimension {output.shape[0]}"
                raise BackendError(
                    f"{self.name}: {OUTPUT_0TH_DIMENSION} (output {index} has {got}, the batch {size})"
                )
        with self._cond:
            self.stats[f"batches@{size}"] += 1
            self.stats["rows"] += batch.rows
            self.stats["padding"] += size - batch.rows
        offset = 0
        for piece in batch.pieces:
            request = piece.request
            request.parts[piece.start] = [o[offset : offset + piece.rows] for o in outputs]
            offset += piece.rows
            with self._cond:
                request.pending -= 1
                finished = request.pending == 0
            if finished and not request.future.done():  # done: another piece failed
                starts = sorted(request.parts)
                result = [
                    np.concatenate([request.parts[s][i] for s in starts], axis=0)
                    if len(starts) > 1
                    else request.parts[starts[0]][i]
                    for i in range(len(outputs))
                ]
                request.future.set_result(result)


# --------------------------------------------------------------------------- saving


def flatten_batch_ops(block: Any) -> tuple[list[Any], dict[Any, Any], list[Any]]:
    """The ops of `@main`'s block with each tpu.batch replaced by the ops of its body, the
    aliases that connect them (body argument -> operand, batch result -> yielded value, both
    resolved to a value outside every batch op), and the batch ops."""
    # lazy: loads 3 more modules (dialects)
    from mlconv.dialects import tpu

    ops: list[Any] = []
    aliases: dict[Any, Any] = {}
    batches: list[Any] = []
    for op in block.ops:
        if not isinstance(op, tpu.BatchOp):
            ops.append(op)
            continue
        batches.append(op)
        body = op.body.block
        for arg, operand in zip(body.args, op.inputs, strict=True):
            aliases[arg] = aliases.get(operand, operand)
        for inner in body.ops:
            if isinstance(inner, tpu.YieldOp):
                for result, value in zip(op.results, inner.values, strict=True):
                    aliases[result] = aliases.get(value, value)
            else:
                ops.append(inner)
    return ops, aliases, batches


def export_batched(batch: Any, symbolic: Any = None) -> Any:
    """The batch op's body as a `jax.export.Exported` taking any number of rows: with
    `symbolic` (backends/symbolic.Generalized, the body's 0th dimension the batch `b`) the body
    itself, exported for `b` rows; else written for one row (0th dimension 1), it is mapped
    over the rows with jax.vmap."""

    # lazy: loads 4 more modules (dialects, semantics)
    from mlconv.dialects import tpu
    from mlconv.semantics.tpu_blocks import interpret_block

    body = batch.body.block
    if symbolic is not None and any(arg in symbolic.types for arg in body.args):
        return _export_symbolic_batch(batch, symbolic)
    rows = {tuple(arg.type.get_shape())[0] for arg in body.args}
    if rows != {1}:
        raise BackendError.at(
            batch,
            f"batches calls of {sorted(rows)} rows; the batcher needs functions converted for "
            "one row (give --input-shapes with a 0th dimension of 1)",
        )
    constants = {op: to_numpy(op.value) for op in batch.walk() if isinstance(op, tpu.ConstantOp)}

    def one_row(*args: Any) -> tuple[Any, ...]:
        env = dict(zip(body.args, args, strict=True))
        for op in body.ops:
            if isinstance(op, tpu.RegionOp):
                inputs = [env[v] for v in op.inputs]
                env.update(
                    zip(op.results, interpret_block(op.body.block, constants, inputs), strict=True)
                )
            elif isinstance(op, tpu.YieldOp):
                return tuple(env[v] for v in op.values)
            else:
                raise BackendError.at(op, "cannot run in a tpu.batch body (tpu.region only)")
        raise BackendError.at(batch, "has no tpu.yield")

    def rows_of(*args: Any) -> tuple[Any, ...]:
        outputs = jax.vmap(one_row)(*[a.reshape(a.shape[0], 1, *a.shape[1:]) for a in args])
        return tuple(o.reshape(o.shape[0], *o.shape[2:]) for o in outputs)

    (count,) = export.symbolic_shape("rows")
    specs = [
        jax.ShapeDtypeStruct(
            (count, *arg.type.get_shape()[1:]), numpy_dtype(arg.type.get_element_type())
        )
        for arg in body.args
    ]
    return export_function(rows_of, specs)


def _export_symbolic_batch(batch: Any, symbolic: Any) -> Any:
    """The batch op's body, its inputs' 0th dimension the symbolic batch `b`, exported whole:
    it computes the rows of a batch together, as TensorFlow's BatchFunction does."""

    # lazy: loads 3 more modules (dialects)
    from mlconv.dialects import tpu

    body = batch.body.block
    for arg in body.args:
        template = symbolic.types.get(arg)
        lead = template[0] if template else None
        rest = template[1:] if template else ()
        if (
            template is None
            or getattr(lead, "coeffs", None) != ((BATCH, 1),)
            or lead.const != 0
            or any(not isinstance(d, int) for d in rest)
        ):
            raise BackendError.at(
                batch,
                "batches an input whose 0th dimension is not the model's dynamic batch "
                "dimension alone (give the batched function's inputs a None 0th dimension)",
            )
    dims = symbolic_scope(symbolic.symbols)
    functions = {
        op: region_function(op, symbolic, dims) for op in body.ops if isinstance(op, tpu.RegionOp)
    }

    def rows(*args: Any) -> tuple[Any, ...]:
        env = dict(zip(body.args, args, strict=True))
        for op in body.ops:
            if isinstance(op, tpu.RegionOp):
                env.update(
                    zip(op.results, functions[op](*[env[v] for v in op.inputs]), strict=True)
                )
            elif isinstance(op, tpu.YieldOp):
                return tuple(env[v] for v in op.values)
            else:
                raise BackendError.at(op, "cannot run in a tpu.batch body (tpu.region only)")
        raise BackendError.at(batch, "has no tpu.yield")

    return export_function(rows, arg_specs(body, symbolic, dims))


def describe_batch(
    batch: Any, name: str, reference: Callable[[Any], dict], functions: list[str]
) -> dict:
    """The manifest entry of one batch op."""
    return {
        "name": name,
        "component": batch.component.data,
        "component_name": batch.component_name.data if batch.component_name else "",
        "options": batch.options(),
        "functions": functions,
        "inputs": [reference(v) for v in batch.inputs],
        "outputs": [reference(v) for v in batch.results],
    }


# --------------------------------------------------------------------------- loading


class BatchingModel:
    """An artifact with batch ops as a thread-safe callable: requests of any number of rows,
    batched with other callers' by one `Batcher` per batch op. `close()` stops the threads."""

    def __init__(self, loaded: Any, files: Any):
        self.loaded = loaded
        self.manifest = loaded.manifest
        self.input_names = loaded.input_names
        self.output_names = loaded.output_names
        self.device = loaded.device
        self.batchers: dict[str, Batcher] = {}
        self.compilations: collections.Counter = collections.Counter()
        self._group: dict[str, dict] = {}
        self._any_shape: list[Any] | None = None
        for entry in self.manifest["batches"]:
            relative = f"tpu/{entry['name']}.batched.jaxexport"
            exported = deserialize_checked(files.read(relative), str(files.folder / relative))
            config = BatchConfig.from_json(entry["options"])
            signature = InputSignature(
                tuple(self._input_label(ref) for ref in entry["inputs"]),
                tuple(np.dtype(a.dtype) for a in exported.in_avals),
                tuple(tuple(int(d) for d in a.shape[1:]) for a in exported.in_avals),
            )
            executable = self._executables(entry["name"], exported, signature)
            for size in config.allowed_batch_sizes:
                executable(size)
            self.batchers[entry["name"]] = Batcher(executable, config, signature, entry["name"])
            for function in entry["functions"]:
                self._group[function] = entry

    def _input_label(self, ref: dict) -> str:
        if "input" in ref:
            return self.input_names[ref["input"]]
        return f"{ref['function']}#{ref['output']}"

    def _executables(self, name: str, exported: Any, signature: InputSignature):
        cache: dict[int, Any] = {}
        lock = threading.Lock()

        def executable(size: int) -> Callable[..., Sequence[Any]]:
            with lock:
                if size not in cache:
                    specs = [
                        jax.ShapeDtypeStruct((size, *trailing), dtype)
                        for dtype, trailing in zip(
                            signature.dtypes, signature.trailing, strict=True
                        )
                    ]
                    with jax.default_device(self.device):
                        cache[size] = jax.jit(exported.call).lower(*specs).compile()
                    self.compilations[(name, size)] += 1
                return cache[size]

        return executable

    def __call__(self, *args: Any, **named: Any) -> list[np.ndarray]:

        if self._any_shape is None:  # batched inputs take any number of rows
            self._any_shape = [InputSpec(s.name, s.dtype, None) for s in self.loaded.input_specs]
        arrays = bind_inputs(self._any_shape, args, named)
        results: dict[str, Any] = {}

        def fetch(ref: dict[str, Any]) -> Any:
            if "input" in ref:
                return arrays[ref["input"]]
            return results[ref["function"]][ref["output"]]

        for entry in self.manifest["functions"]:
            group = self._group.get(entry["name"])
            if group is None:
                with jax.default_device(self.device):
                    call = self.loaded._calls[entry["name"]]  # noqa: SLF001
                    results[entry["name"]] = call(*[fetch(ref) for ref in entry["inputs"]])
            elif entry["name"] == group["functions"][0]:
                outputs = self.batchers[group["name"]]([fetch(r) for r in group["inputs"]])
                for ref, value in zip(group["outputs"], outputs, strict=True):
                    if "function" in ref:
                        results.setdefault(ref["function"], {})[ref["output"]] = value
        return [np.asarray(fetch(output["value"])) for output in self.manifest["outputs"]]

    @property
    def stats(self) -> collections.Counter:
        total: collections.Counter = collections.Counter()
        for batcher in self.batchers.values():
            total.update(batcher.stats)
        return total

    def close(self) -> None:
        for batcher in self.batchers.values():
            batcher.close()

    def __enter__(self) -> BatchingModel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --------------------------------------------------------------------------- the SavedModel form


def tf_batch_function(entry: dict[str, Any], exported: Any) -> Callable[..., Any]:
    """The batch op `entry` (a manifest entry) as TensorFlow's own in-graph batching: a
    `BatchFunction` op carrying the same options around one XlaCallModule of the exported body
    (polymorphic in the rows), for OUTDIR/saved_model (converter/saved_model_writer.py).
    TensorFlow pads to `allowed_batch_sizes` as the batcher above does; with large batch
    splitting it splits a request of any number of rows (up to LARGEST_REQUEST) across
    batches of at most `max_batch_size`, as the batcher does; without, it refuses one above
    `max_batch_size`."""
    import tensorflow as tf  # optional and heavy: only the SavedModel form needs it
    from jax.experimental import jax2tf  # loads TensorFlow

    shapes = [
        "(rows, " + "".join(f"{int(d)}, " for d in a.shape[1:]) + ")" for a in exported.in_avals
    ]
    convert = jax2tf.convert(
        exported.call,
        native_serialization_platforms=PLATFORMS,
        with_gradient=False,
        polymorphic_shapes=shapes,
    )
    config = BatchConfig.from_json(entry["options"])
    allowed = list(config.allowed_batch_sizes) or [config.max_batch_size]
    splitting = not config.disable_large_batch_splitting
    batch = tf.nondifferentiable_batch_function(
        num_batch_threads=config.num_batch_threads,
        # with large batch splitting TensorFlow's max_batch_size bounds one request and the
        # last allowed size the batches it runs: a request of any number of rows is split
        max_batch_size=max(LARGEST_REQUEST, config.max_batch_size)
        if splitting
        else config.max_batch_size,
        batch_timeout_micros=config.batch_timeout_micros,
        allowed_batch_sizes=allowed if splitting else list(config.allowed_batch_sizes) or None,
        max_enqueued_batches=config.max_enqueued_batches,
        autograph=False,
        enable_large_batch_splitting=not config.disable_large_batch_splitting,
    )
    return batch(lambda *args: convert(*args))

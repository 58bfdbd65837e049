"""XLA sharding of the TPU functions (seed 003's `xla_sharding_options`) on a `jax.sharding.Mesh`.

    spec = MeshSpec.from_options(options.xla_sharding_options)   # at conversion
    mesh = spec.mesh()                                           # jax devices, in spec order

`num_cores_per_replica` is the number of devices one replica of the model is split over with
XLA SPMD. `topology` (a serialized `tensorflow.tpu.TopologyProto`: `mesh_shape` [x, y, z,
cores] and the `device_coordinates` of every device, four numbers each) lays the devices out;
`device_assignment` (flattened [x, y, z, core] quadruples) picks the replica's devices among
them, by default the topology's first `num_cores_per_replica`. The replica's mesh is the box its
devices span, one mesh axis per topology axis (`x`, `y`, `z`, `core`), device `i` being the
i-th device of the topology (on a CPU host, `jax.devices()[i]`).

Partitioning: each TPU function is exported for the mesh with its inputs split along their
0th dimension over every mesh axis (when the mesh size divides it; replicated otherwise). Its
weights (the constant kernels of `conv_general_dilated` and the constant operands of
`dot_general`) are not baked into the program but become arguments after the inputs, each
split over the whole mesh along the dimension that makes the op's output features (a
kernel's `out_feature` dimension, a dot operand's last free dimension) when the mesh size
divides it, replicated otherwise; `export_sharded` returns them with the program. XLA's SPMD
partitioner propagates the shardings through the function and inserts the collectives (the
all-gathers of feature-split activations), so every device holds 1/N of each split weight:
this is how a model grows past one chip. Other constants (biases, scalars) stay in the
program. The artifact stores the weights as raw bytes (`tpu/<function>.weights`, offsets in
the manifest entry's `weights`); the loader places each on the mesh with its recorded
sharding (`jax.device_put` with the export's `NamedSharding`) once and passes the placed
arrays on every call (`WeightBoundCall`). The manifest records the mesh (`{"axes", "shape",
"devices"}`) so that `mlconv.load` builds the same one without TensorFlow.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec

from mlconv.backends.export_check import export_function, region_specs
from mlconv.dense import to_numpy
from mlconv.errors import BackendError, OptionError

AXES = ("x", "y", "z", "core")


@dataclass(frozen=True)
class MeshSpec:
    """A replica's device mesh: axis names, their sizes, and the device ids laid out row-major."""

    axes: tuple[str, ...]
    shape: tuple[int, ...]
    devices: tuple[int, ...]

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @classmethod
    def from_options(cls, options: Any) -> MeshSpec | None:
        """The mesh `xla_sharding_options` describe; None for one core (nothing to shard)."""
        cores = options.num_cores_per_replica or 1
        if not options.topology:
            if cores > 1:  # converter_options.validate refuses this already
                raise OptionError("xla_sharding_options.topology: required for several cores")
            return None
        mesh_shape, coordinates = _topology(options.topology)
        where = "xla_sharding_options.device_assignment"
        if options.device_assignment:
            wanted = [
                tuple(options.device_assignment[i : i + 4])
                for i in range(0, len(options.device_assignment), 4)
            ]
            missing = [list(c) for c in wanted if c not in coordinates]
            if missing:
                raise OptionError(f"{where}: {missing} are not devices of the topology")
        else:
            wanted = coordinates[:cores]
        if len(wanted) != cores:
            raise OptionError(
                f"{where}: gives {len(wanted)} devices for num_cores_per_replica {cores}"
            )
        if cores == 1:
            return None
        spans = [sorted({c[axis] for c in wanted}) for axis in range(4)]
        shape = tuple(len(s) for s in spans)
        if math.prod(shape) != cores:
            raise OptionError(
                f"{where}: the replica's {cores} devices do not form a box of the topology "
                f"(they span {'x'.join(map(str, shape))})"
            )
        index = {c: i for i, c in enumerate(coordinates)}
        box = sorted(wanted, key=lambda c: tuple(spans[a].index(c[a]) for a in range(4)))
        del mesh_shape
        return cls(AXES, shape, tuple(index[c] for c in box))

    @classmethod
    def from_json(cls, entry: Mapping[str, Any] | None) -> MeshSpec | None:
        if not entry:
            return None
        return cls(tuple(entry["axes"]), tuple(entry["shape"]), tuple(entry["devices"]))

    def to_json(self) -> dict[str, Any]:
        return {"axes": list(self.axes), "shape": list(self.shape), "devices": list(self.devices)}

    def mesh(self) -> Any:
        """The `jax.sharding.Mesh` over this process's devices (one line of error if too few)."""
        import numpy as np

        available = jax.devices()
        if max(self.devices) >= len(available):
            raise BackendError(
                f"the sharded functions need devices {list(self.devices)}; jax sees "
                f"{len(available)} (on a CPU host, set "
                f"XLA_FLAGS=--xla_force_host_platform_device_count={max(self.devices) + 1})"
            )
        grid = np.array([available[i] for i in self.devices], dtype=object).reshape(self.shape)
        return jax.sharding.Mesh(grid, self.axes)

    def input_shardings(self, mesh: Any, shapes: Sequence[tuple[int, ...]]) -> list[Any]:
        """Each input split along its 0th dimension over the whole mesh, when it divides."""

        return [
            NamedSharding(
                mesh,
                PartitionSpec(self.axes)
                if shape and shape[0] % self.size == 0
                else PartitionSpec(),
            )
            for shape in shapes
        ]

    def weight_spec(self, shape: Sequence[int], dim: int | None) -> Any:
        """The PartitionSpec of a weight split along `dim` over the whole mesh (None: replicated)."""

        if dim is None:
            return PartitionSpec()
        return PartitionSpec(*([None] * dim), self.axes, *([None] * (len(shape) - dim - 1)))


# --------------------------------------------------------------------------- weights

WEIGHT_PRIMITIVES = ("conv_general_dilated", "dot_general")


def feature_dim(op: Any, operand: int) -> int | None:
    """The dimension of operand `operand` of `op` (a tpu conv_general_dilated or dot_general)
    that becomes the op's output features: the kernel's out_feature dimension, a dot
    operand's last free (neither contracting nor batch) dimension; None where it has none."""
    params = op.params()
    if op.PRIMITIVE == "conv_general_dilated":
        return params["dimension_numbers"].rhs_spec[0] if operand == 1 else None
    (contracting, batch) = params["dimension_numbers"]
    used = {*contracting[operand], *batch[operand]}
    rank = len(op.operands[operand].type.get_shape())
    free = [d for d in range(rank) if d not in used]
    return free[-1] if free else None


def weight_dims(region: Any, size: int) -> dict[Any, int | None]:
    """The region's weights (tpu.constant ops used as an operand of conv_general_dilated or
    dot_general) and the dimension each is split along over `size` devices: the output
    feature dimension of its first such use when `size` divides it, else None (replicated)."""
    # lazy: loads 3 more modules (dialects)
    from mlconv.dialects import tpu

    chosen: dict[Any, int | None] = {}
    for op in region.body.walk():
        if not isinstance(op, tpu.ConstantOp):
            continue
        shape = tuple(op.output.type.get_shape())
        for use in op.output.uses:
            user = use.operation
            if isinstance(user, tpu.PrimitiveOp) and user.PRIMITIVE in WEIGHT_PRIMITIVES:
                dim = feature_dim(user, use.index)
                if dim is not None or op not in chosen:
                    chosen[op] = dim if dim is not None and shape[dim] % size == 0 else None
                if chosen[op] is not None:
                    break
    return chosen


@dataclass
class ShardedExport:
    """A TPU function exported for a mesh with its weights as arguments after its inputs."""

    exported: Any
    weights: list[np.ndarray]
    dims: list[int | None]

    def manifest(self) -> list[dict[str, Any]]:
        """The manifest entry's `weights`: dtype, shape, split dimension, byte range."""
        entries, offset = [], 0
        for array, dim in zip(self.weights, self.dims, strict=True):
            entries.append(
                {
                    "dtype": array.dtype.name,
                    "shape": list(array.shape),
                    "dim": dim,
                    "offset": offset,
                    "bytes": array.nbytes,
                }
            )
            offset += array.nbytes
        return entries

    def payload(self) -> bytes:
        return b"".join(np.ascontiguousarray(a).tobytes() for a in self.weights)


def export_sharded(region: Any, spec: MeshSpec, platforms: Sequence[str]) -> ShardedExport:
    """`region` (a tpu.region with static shapes) as a `jax.export.Exported` for `spec`'s mesh:
    inputs split on dimension 0, weights as further arguments split by `weight_dims`."""

    # lazy: loads 4 more modules (dialects, semantics)
    from mlconv.dialects import tpu
    from mlconv.semantics.tpu_blocks import interpret_block

    block = region.body.block
    dims = weight_dims(region, spec.size)
    weights = list(dims)
    constants = {
        op: to_numpy(op.value)
        for op in region.body.walk()
        if isinstance(op, tpu.ConstantOp) and op not in dims
    }
    specs = region_specs(region)
    arrays = [to_numpy(op.value) for op in weights]
    count = len(specs)

    def body(*args: Any) -> tuple[Any, ...]:
        values = {**constants, **dict(zip(weights, args[count:], strict=True))}
        return tuple(interpret_block(block, values, args[:count]))

    mesh = spec.mesh()
    shardings = [
        *spec.input_shardings(mesh, [s.shape for s in specs]),
        *(
            NamedSharding(mesh, spec.weight_spec(a.shape, dims[op]))
            for op, a in zip(weights, arrays, strict=True)
        ),
    ]
    every = [*specs, *(jax.ShapeDtypeStruct(a.shape, a.dtype) for a in arrays)]
    exported = export_function(body, every, platforms, in_shardings=shardings)
    return ShardedExport(exported, arrays, [dims[op] for op in weights])


def read_weights(
    path: Path, entries: Sequence[Mapping[str, Any]], payload: bytes | None = None
) -> list[np.ndarray]:
    """The weights `ShardedExport.payload` wrote to `path` (or `payload`, its bytes), by their
    manifest entries; a missing or short file, or entries that disagree with it, a one-line
    error."""
    if payload is None:
        try:
            payload = path.read_bytes()
        except OSError as error:
            raise BackendError(f"{path}: cannot read: {error.strerror}") from None
    for entry in entries:
        dtype = np.dtype(entry["dtype"])
        if entry["bytes"] != math.prod(entry["shape"]) * dtype.itemsize:
            raise BackendError(f"{path}: a weight's byte count disagrees with its shape and dtype")
    end = max((e["offset"] + e["bytes"] for e in entries), default=0)
    if len(payload) != end:
        raise BackendError(f"{path}: holds {len(payload)} bytes; the manifest's weights need {end}")
    return [
        np.frombuffer(payload, np.dtype(e["dtype"]), math.prod(e["shape"]), e["offset"]).reshape(
            e["shape"]
        )
        for e in entries
    ]


class WeightBoundCall:
    """A sharded function whose weights were placed on the mesh once (`weights`: jax Arrays,
    each with its export's NamedSharding); called with the function's inputs only."""

    def __init__(self, call: Any, exported: Any, mesh: Any, weights: Sequence[np.ndarray]):
        self.call = call
        count = len(exported.in_avals) - len(weights)
        shardings = exported.in_shardings_jax(mesh)[count:]
        self.weights = [jax.device_put(w, s) for w, s in zip(weights, shardings, strict=True)]

    def __call__(self, *inputs: Any) -> Any:
        results = self.call(*inputs, *self.weights)
        if all(r.is_fully_addressable or r.is_fully_replicated for r in results):
            return results
        # under jax.distributed an output XLA left sharded (not replicated) spans other
        # processes' devices: gathered whole on every process (a collective, in lock step)
        from jax.experimental import multihost_utils

        return tuple(multihost_utils.process_allgather(r, tiled=True) for r in results)


def _topology(serialized: bytes) -> tuple[list[int], list[tuple[int, ...]]]:
    try:
        # TensorFlow: optional (mlconv[tf]) and seconds to load; only this path needs it
        from tensorflow.core.protobuf.tpu import topology_pb2
    except ImportError:  # pragma: no cover - TensorFlow is how a TopologyProto is made
        raise OptionError("xla_sharding_options.topology: reading it needs TensorFlow") from None
    topology = topology_pb2.TopologyProto()
    try:
        topology.ParseFromString(serialized)
    except Exception as error:
        raise OptionError(f"xla_sharding_options.topology: not a TopologyProto: {error}") from None
    mesh_shape = list(topology.mesh_shape)
    flat = list(topology.device_coordinates)
    if len(mesh_shape) != 4 or not flat or len(flat) % 4:
        raise OptionError(
            "xla_sharding_options.topology: needs mesh_shape [x, y, z, cores] and "
            "device_coordinates in quadruples"
        )
    coordinates = [tuple(flat[i : i + 4]) for i in range(0, len(flat), 4)]
    outside = [
        list(c) for c in coordinates if any(v >= s for v, s in zip(c, mesh_shape, strict=True))
    ]
    if outside or len(set(coordinates)) != len(coordinates):
        raise OptionError(
            f"xla_sharding_options.topology: device_coordinates {outside or 'repeat a device'} "
            f"do not fit mesh_shape {mesh_shape}"
        )
    return mesh_shape, coordinates

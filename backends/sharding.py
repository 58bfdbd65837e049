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
0th dimension over every mesh axis (when the mesh size divides it; replicated otherwise); XLA's
SPMD partitioner propagates the sharding through the function. The manifest records the mesh
(`{"axes", "shape", "devices"}`) so that `mlconv.load` builds the same one without TensorFlow.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

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
        import jax
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
        from jax.sharding import NamedSharding, PartitionSpec

        return [
            NamedSharding(
                mesh,
                PartitionSpec(self.axes)
                if shape and shape[0] % self.size == 0
                else PartitionSpec(),
            )
            for shape in shapes
        ]


def _topology(serialized: bytes) -> tuple[list[int], list[tuple[int, ...]]]:
    try:
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

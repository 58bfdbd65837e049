"""Per-device weight bytes of a CNN converted with xla_sharding_options, before and after
weight sharding, on 8 forced CPU host devices (converter/sharding.py).

    XLA_FLAGS=--xla_force_host_platform_device_count=8 python bench/weight_sharding.py \\
        [--models resnet18 mobilenet_v2] [--size 96] [--batch 8]

Each torchvision model (random weights, fixed seed, exported to ONNX) is converted twice with
mlconv-convert (float32, no default optimizations): for one device, and for the 8-device mesh
of the seed's df_2x2 topology. "one device" is the bytes of every constant of the TPU function
(all on one chip); "per device" is, for the sharded run, the largest per-device sum of the
weight arguments' shards plus the constants left in the program (biases, scalars), which
every device holds; "XLA args MB" is the compiled executable's own count of its per-device
argument bytes (XLA's memory analysis) less the input's. The outputs of the two runs are
compared (max abs difference, and that over the largest output magnitude; random-weight
mobilenet_v2's outputs are ~1e-9).

One run (2-core CPU host, 8 forced devices, 96x96, batch 8):

    model           one device MB  per device MB  ratio XLA args MB     split max |diff|  rel diff  convert s
    resnet18                46.74           5.86   7.97        5.84   21/21     2.86e-06  7.32e-07       10.7
    mobilenet_v2            13.95           1.81   7.72        1.73   53/53     1.55e-15  5.95e-07        3.6
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "test" / "pytest"))


def export(name: str, size: int, batch: int, path: Path) -> None:
    import torch
    import torchvision

    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(weights=None).eval()
    x = torch.randn(batch, 3, size, size)
    torch.onnx.export(model, (x,), str(path), input_names=["x"], opset_version=17, dynamo=False)


def constant_bytes(module_path: str, shape: str) -> int:
    from mlconv.dialects import tpu
    from mlconv.frontends.load import load_model
    from mlconv.passes.pipelines import lower_to_tpu

    module = lower_to_tpu(load_model(module_path), shape)
    return sum(
        int(np.prod(op.output.type.get_shape())) * 4
        for op in module.walk()
        if isinstance(op, tpu.ConstantOp)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["resnet18", "mobilenet_v2"])
    parser.add_argument("--size", type=int, default=96)
    parser.add_argument("--batch", type=int, default=8)
    args = parser.parse_args()
    import jax
    import torch  # noqa: F401 - torch and torchvision before TensorFlow, or they crash
    import torchvision  # noqa: F401

    import mlconv
    from mlconv.tools.mlconv_convert import convert

    if len(jax.devices()) < 8:
        sys.exit("needs XLA_FLAGS=--xla_force_host_platform_device_count=8")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    from test_mlconv_convert import DF_2X2, sharding_options

    options = sharding_options(8, [2, 2, 1, 2], DF_2X2)
    shape = f"x:{args.batch},3,{args.size},{args.size}"
    x = np.random.default_rng(1).standard_normal((args.batch, 3, args.size, args.size))
    x = x.astype(np.float32)
    print(
        f"{'model':14} {'one device MB':>14} {'per device MB':>14} {'ratio':>6} "
        f"{'XLA args MB':>11} {'split':>9} {'max |diff|':>10} {'rel diff':>9} {'convert s':>10}"
    )
    for name in args.models:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / f"{name}.onnx"
            export(name, args.size, args.batch, path)
            whole = constant_bytes(str(path), shape)
            convert(str(path), f"{folder}/one", "disable_default_optimizations: true", quiet=True)
            (single,) = mlconv.load(f"{folder}/one")(x)
            start = time.perf_counter()
            convert(str(path), f"{folder}/sharded", options, quiet=True)
            seconds = time.perf_counter() - start
            loaded = mlconv.load(f"{folder}/sharded")
            (got,) = loaded(x)
            (call,) = loaded._calls.values()  # noqa: SLF001
            args_whole = sum(w.nbytes for w in call.weights)
            per_device: dict[int, int] = {}
            for w in call.weights:
                for shard in w.addressable_shards:
                    per_device[shard.device.id] = (
                        per_device.get(shard.device.id, 0) + shard.data.nbytes
                    )
            device = max(per_device.values()) + (whole - args_whole)
            split = sum(1 for w in call.weights if not w.sharding.is_fully_replicated)
            # XLA's own count: the compiled executable's arguments per device, less the input
            compiled = call.call.lower(x, *call.weights).compile()
            shard = compiled.input_shardings[0][0].shard_shape(x.shape)
            xla = compiled.memory_analysis().argument_size_in_bytes - np.prod(shard) * 4
            print(
                f"{name:14} {whole / 1e6:14.2f} {device / 1e6:14.2f} {whole / device:6.2f} "
                f"{xla / 1e6:11.2f} "
                f"{split:4}/{len(call.weights):<4} {float(np.abs(got - single).max()):10.2e} "
                f"{float(np.abs(got - single).max() / np.abs(single).max()):9.2e} "
                f"{seconds:10.1f}"
            )


if __name__ == "__main__":
    main()

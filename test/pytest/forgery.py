"""Helpers that build what an attacker hands mlconv (issue 28): a small real artifact to start
from, copies of it with a forged manifest or file (hashes rewritten, as an attacker who edits
the folder would), and a `.jaxexport` that calls a host callback by an index of its choice.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SHAPE = (2, 8)


def small_onnx(path: Path, seed: int = 3) -> Path:
    """y = relu(x @ W + b), randomized weights (the output depends on x)."""
    nodes, weights = _dense_relu(seed, "y")
    graph = helper.make_graph(
        nodes,
        "small",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(SHAPE))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [SHAPE[0], 4])],
        weights,
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def _dense_relu(seed: int, output: str) -> tuple[list, list]:
    """(nodes, initializers) of `output` = relu(x @ W + b), W [8, 4] and b [4] random normal
    (generator seeded with `seed`)."""
    rng = np.random.default_rng(seed)
    w = numpy_helper.from_array(rng.standard_normal((8, 4)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "b")
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"], name="matmul"),
        helper.make_node("Add", ["h", "b"], ["z"], name="add"),
        helper.make_node("Relu", ["z"], [output], name="relu"),
    ]
    return nodes, [w, b]


def copy_artifact(source: Path, target: Path) -> Path:
    shutil.copytree(source, target, symlinks=True)
    return target


def manifest_of(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "manifest.json").read_text())


def write_manifest(folder: Path, manifest: Any, rehash: bool = True) -> None:
    """Write `manifest`; with `rehash`, its `files` recomputed from the folder, as an attacker
    who rewrites the folder would (so only the loader's other checks can refuse it)."""
    if rehash and isinstance(manifest, dict) and isinstance(manifest.get("files"), dict):
        manifest["files"] = {
            p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*"))
            if p.is_file() and p != folder / "manifest.json"
        }
    (folder / "manifest.json").write_text(json.dumps(manifest))


def forged_callback_export(shape: tuple[int, ...] = SHAPE, index: int = 977) -> bytes:
    """A serialized jax.export whose body is `custom_call @xla_ffi_python_cpu_callback` with
    the callback index `index`: jax.export refuses to serialize callbacks, so the module is
    swapped into a genuine export. Run unchecked, it crashes the process (SIGSEGV)."""
    import jax
    from jax import export
    from jax._src.export import _export
    from jax._src.interpreters import mlir
    from jax._src.lib.mlir import ir

    spec = jax.ShapeDtypeStruct(shape, np.float32)
    genuine = export.export(jax.jit(lambda x: x * 2), platforms=("cpu",))(spec)
    tensor = "tensor<" + "x".join(map(str, shape)) + "xf32>"
    layout = ", ".join(str(i) for i in reversed(range(len(shape))))
    text = f"""module @jit_f attributes {{mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32}} {{
  func.func public @main(%arg0: {tensor}) -> ({tensor} {{jax.result_info = "result"}}) {{
    %0 = stablehlo.custom_call @xla_ffi_python_cpu_callback(%arg0) {{backend_config = "", mhlo.backend_config = {{index = {index} : ui64}}, operand_layouts = [dense<[{layout}]> : tensor<{len(shape)}xindex>], result_layouts = [dense<[{layout}]> : tensor<{len(shape)}xindex>]}} : ({tensor}) -> {tensor}
    return %0 : {tensor}
  }}
}}"""
    with mlir.make_ir_context():
        module = ir.Module.parse(text)
        code = _export._module_to_bytecode(module)
    return dataclasses.replace(genuine, mlir_module_serialized=code).serialize()


def two_input_onnx(path: Path, seed: int = 4) -> Path:
    """y = relu(x @ W + b) + float(k): a float32 input x [2, 8] and an int64 input k [2, 4]."""
    nodes, weights = _dense_relu(seed, "r")
    graph = helper.make_graph(
        [
            *nodes,
            helper.make_node("Cast", ["k"], ["kf"], to=TensorProto.FLOAT, name="cast"),
            helper.make_node("Add", ["r", "kf"], ["y"], name="plus_k"),
        ],
        "two_inputs",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, list(SHAPE)),
            helper.make_tensor_value_info("k", TensorProto.INT64, [SHAPE[0], 4]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [SHAPE[0], 4])],
        weights,
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def npz_bomb(unpacked: int, name: str = "x") -> bytes:
    """An .npz whose one member, a float32 .npy of `unpacked` bytes of zeros, deflates to a
    small fraction of it (1 GiB -> about 1 MB)."""
    import io
    import zipfile

    from numpy.lib import format as npy

    header = io.BytesIO()
    npy.write_array_header_1_0(
        header, {"descr": "<f4", "fortran_order": False, "shape": (unpacked // 4,)}
    )
    buffer = io.BytesIO()
    chunk = bytes(1 << 20)
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
            member.write(header.getvalue())
            for _ in range(unpacked // len(chunk)):
                member.write(chunk)
    return buffer.getvalue()

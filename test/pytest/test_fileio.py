"""Outputs respect what their path names (mlconv.fileio): a regular file is replaced atomically,
a device node or FIFO is written into and stays what it was, a symbolic link is written through.

Replacing /dev/null with a regular file (as root) broke apt on the machine that ran the suite
(issue 34); the device-node tests make their own node with os.mknod in a temporary folder, which
needs root (CI runs as root) and are skipped with that reason elsewhere.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from mlconv.fileio import output_stream, resolve_output, write_output

BIN = Path(sys.executable).parent
GOOD_MLIR = """\
func.func @f(%a: i32) -> i32 {
  %0 = arith.addi %a, %a : i32
  func.return %0 : i32
}
"""
NEEDS_ROOT = pytest.mark.skipif(
    os.geteuid() != 0, reason="os.mknod of a character device needs root (CI runs as root)"
)


def null_device(folder: Path) -> Path:
    """A character device with /dev/null's numbers, made in `folder`."""
    node = folder / "null"
    os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    return node


class FifoReader:
    """A FIFO in `folder` with a thread that reads everything written to it."""

    def __init__(self, folder: Path, name: str = "pipe"):
        self.path = folder / name
        os.mkfifo(self.path)
        self.data = b""
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        with open(self.path, "rb") as stream:
            self.data = stream.read()

    def join(self) -> bytes:
        self.thread.join(timeout=20)
        assert not self.thread.is_alive(), "nothing closed the FIFO"
        return self.data


def tool(name: str, *args: str | os.PathLike) -> subprocess.CompletedProcess:
    command = [str(BIN / name), *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def core_module():
    """y = relu(x) * 2 on a 1x4 float tensor, at the core level."""
    from mlconv.frontends.load import load_model
    from mlconv.passes.pipelines import lower_to_core

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    two = helper.make_tensor("two", TensorProto.FLOAT, [1], [2.0])
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Mul", ["r", "two"], ["y"])],
        "g",
        [x],
        [y],
        [two],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    return lower_to_core(load_model(model))


def test_regular_file_replaced_keeps_mode_and_survives_failure(tmp_path: Path):
    target = tmp_path / "out.txt"
    target.write_text("old\n")
    os.chmod(target, 0o640)
    write_output(target, "new\n")
    assert target.read_text() == "new\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    with pytest.raises(RuntimeError), output_stream(target) as stream:
        stream.write("half")
        raise RuntimeError("the writer failed")
    assert target.read_text() == "new\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]  # no temporary left


def test_new_file_gets_umask_mode(tmp_path: Path):
    umask = os.umask(0o022)
    try:
        write_output(tmp_path / "new.bin", b"\x00\x01")
    finally:
        os.umask(umask)
    assert stat.S_IMODE((tmp_path / "new.bin").stat().st_mode) == 0o644


def test_symlink_written_through(tmp_path: Path):
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "model.mlir"
    target.write_text("old\n")
    link = tmp_path / "link.mlir"
    link.symlink_to(target)
    write_output(link, "new\n")
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() == "new\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.mlir", "real"]
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "real" / "created")
    write_output(dangling, "made\n")
    assert dangling.is_symlink() and (tmp_path / "real" / "created").read_text() == "made\n"


def test_process_files_are_written_in_place():
    for path in ("/dev/stdout", "/dev/stderr", "/dev/fd/1", "/proc/self/fd/2"):
        assert resolve_output(path) == (path, True)
    assert resolve_output("/dev/null") == ("/dev/null", True)


def test_fifo_is_written_into(tmp_path: Path):
    reader = FifoReader(tmp_path)
    write_output(reader.path, b"through the pipe")
    assert reader.join() == b"through the pipe"
    assert stat.S_ISFIFO(os.lstat(reader.path).st_mode)


@NEEDS_ROOT
def test_device_node_stays_a_device(tmp_path: Path):
    node = null_device(tmp_path)
    write_output(node, b"discarded")
    assert stat.S_ISCHR(os.lstat(node).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null"]


@NEEDS_ROOT
def test_mlconv_opt_output_to_device_node(tmp_path: Path):
    """The lit test's `mlconv-opt ... -o /dev/null`, on a node of our own."""
    node = null_device(tmp_path)
    source = tmp_path / "f.mlir"
    source.write_text(GOOD_MLIR)
    result = tool("mlconv-opt", source, "-p", "cse", "-o", node)
    assert result.returncode == 0, result.stderr
    assert stat.S_ISCHR(os.lstat(node).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.mlir", "null"]


def test_mlconv_opt_output_to_fifo(tmp_path: Path):
    source = tmp_path / "f.mlir"
    source.write_text(GOOD_MLIR)
    reader = FifoReader(tmp_path, "out.mlir")
    result = tool("mlconv-opt", source, "-p", "cse", "-o", reader.path)
    assert result.returncode == 0, result.stderr
    assert b"arith.addi" in reader.join()
    assert stat.S_ISFIFO(os.lstat(reader.path).st_mode)


def test_writers_respect_special_files_and_links(tmp_path: Path, core_module):
    """The TFLite, OpenVINO IR and StableHLO writers: a FIFO gets the same bytes a regular file
    does and stays a FIFO; a symbolic link stays a link to the written file."""
    from mlconv.backends.jax_backend import export_stablehlo
    from mlconv.backends.openvino_ir import write_openvino
    from mlconv.backends.tflite_writer import export_tflite

    plain = tmp_path / "plain"
    plain.mkdir()
    export_tflite(core_module.clone(), plain / "m.tflite")
    reader = FifoReader(tmp_path, "m.tflite")
    export_tflite(core_module.clone(), reader.path)
    assert reader.join() == (plain / "m.tflite").read_bytes()
    assert stat.S_ISFIFO(os.lstat(reader.path).st_mode)

    export_stablehlo(core_module.clone(), plain / "m.stablehlo")
    reader = FifoReader(tmp_path, "m.stablehlo")
    export_stablehlo(core_module.clone(), reader.path)
    assert reader.join().decode() == (plain / "m.stablehlo").read_text()

    (tmp_path / "real").mkdir()
    (tmp_path / "ov.xml").symlink_to(tmp_path / "real" / "ov.xml")
    write_openvino(core_module.clone(), tmp_path / "ov.xml")
    assert (tmp_path / "ov.xml").is_symlink()
    assert (tmp_path / "real" / "ov.xml").read_bytes().startswith(b"<?xml")
    assert (tmp_path / "ov.bin").stat().st_size == np.float32(2.0).nbytes


def test_artifact_through_symlink(tmp_path: Path, core_module):
    from mlconv.converter.artifact import load_artifact, save_artifact
    from mlconv.passes.pipelines import lower_to_tpu

    (tmp_path / "real").mkdir()
    link = tmp_path / "artifact"
    link.symlink_to(tmp_path / "real" / "artifact")
    save_artifact(lower_to_tpu(core_module.clone()), link, saved_model=False)
    save_artifact(lower_to_tpu(core_module.clone()), link, saved_model=False)  # replaced again
    assert link.is_symlink() and (tmp_path / "real" / "artifact" / "manifest.json").is_file()
    x = np.array([[-1.0, 0.5, 2.0, -3.0]], np.float32)
    np.testing.assert_allclose(load_artifact(link)(x)[0], np.maximum(x, 0) * 2)

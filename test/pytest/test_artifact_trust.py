"""An artifact folder is data (issue 28, docs/artifact.md): each attack of the issue refused in
one line, before anything it names runs: no file written, no import, no SIGSEGV.

The artifact is a small ONNX model converted by mlconv-convert; each case copies it and forges
the manifest or a file, rewriting the manifest's SHA-256s as an attacker who edits the folder
would, so that only the check under test can refuse it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import forgery
import numpy as np
import pytest
from seed_models import convert_file

import mlconv
from mlconv.errors import BackendError


@pytest.fixture(scope="module")
def artifact(tmp_path_factory):
    model = forgery.small_onnx(tmp_path_factory.mktemp("trust") / "small.onnx")
    return convert_file(model, "disable_default_optimizations: true\n", quiet=True)[0]


def x(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(forgery.SHAPE).astype(np.float32)


def refused(folder: Path, *fragments: str, **options) -> str:
    """mlconv.load(folder) refused with one line holding every fragment."""
    with pytest.raises(BackendError) as caught:
        mlconv.load(folder, **options)(x())
    message = caught.value.message
    assert "\n" not in message, message
    for fragment in fragments:
        assert fragment in message, message
    return message


def test_manifest_records_a_sha256_per_file(artifact):
    manifest = forgery.manifest_of(artifact)
    files = manifest["files"]
    assert "tpu/tpu_function_0.jaxexport" in files and "manifest.json" not in files
    on_disk = {
        p.relative_to(artifact).as_posix()
        for p in artifact.rglob("*")
        if p.is_file() and p.name != "manifest.json"
    }
    assert on_disk == set(files) and "conversion_report.txt" in files


def test_flipped_bytes_in_an_export_are_refused(artifact, tmp_path):
    """The issue: bytes flipped in a serialized export ran and gave numbers off by 0.2-0.44."""
    folder = forgery.copy_artifact(artifact, tmp_path / "a")
    path = folder / "tpu" / "tpu_function_0.jaxexport"
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 4] = bytes(b ^ 0x5A for b in data[middle : middle + 4])
    path.write_bytes(bytes(data))
    refused(folder, "tpu_function_0.jaxexport", "SHA-256 differs")


@pytest.mark.parametrize(
    "name",
    ["../../../outside/evil", "/tmp/evil", "..", ".hidden", "a/b", "tpu_function_0\x00"],
)
def test_function_names_that_are_paths_are_refused(artifact, tmp_path, name):
    """The issue: `../../../outside/evil` was joined into a path; an absolute path loaded and
    ran a file outside the artifact."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "evil.jaxexport").write_bytes(
        (artifact / "tpu" / "tpu_function_0.jaxexport").read_bytes()
    )
    folder = forgery.copy_artifact(artifact, tmp_path / "deep" / "er" / "a")
    manifest = forgery.manifest_of(folder)
    manifest["functions"][0]["name"] = name.replace("/tmp/evil", str(outside / "evil"))
    manifest["outputs"][0]["value"] = {"function": manifest["functions"][0]["name"], "output": 0}
    forgery.write_manifest(folder, manifest)
    message = refused(folder, "manifest.json: field '", "does not match")
    assert "functions[0].name" in message or "outputs[0].value.function" in message
    # and the file layer refuses such a path on its own (defence in depth)
    from mlconv.converter.artifact_manifest import ArtifactFiles

    if name.startswith("../"):
        with pytest.raises(BackendError, match="outside the artifact folder"):
            ArtifactFiles(folder, {"files": {}}).read(f"tpu/{manifest['functions'][0]['name']}")


def test_a_symbolic_link_out_of_the_folder_is_refused(artifact, tmp_path):
    folder = forgery.copy_artifact(artifact, tmp_path / "a")
    outside = tmp_path / "elsewhere.jaxexport"
    path = folder / "tpu" / "tpu_function_0.jaxexport"
    outside.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(outside)
    refused(folder, "outside the artifact folder")


def test_a_file_the_manifest_does_not_list_is_refused(artifact, tmp_path):
    folder = forgery.copy_artifact(artifact, tmp_path / "a")
    manifest = forgery.manifest_of(folder)
    del manifest["files"]["tpu/tpu_function_0.jaxexport"]
    forgery.write_manifest(folder, manifest, rehash=False)
    refused(folder, "not listed in the manifest's files")


def _set(path: list, value):
    def mutate(manifest):
        target = manifest
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
        return manifest

    return mutate


def _delete(key):
    def mutate(manifest):
        del manifest[key]
        return manifest

    return mutate


MUTATIONS = {
    # the raw AttributeError / KeyError / TypeError / IndexError / RecursionError
    "no functions": (_delete("functions"), "field '(top level)': 'functions' is a required"),
    "functions a dict": (_set(["functions"], {}), "field 'functions'"),
    "name a number": (_set(["functions", 0, "name"], 5), "field 'functions[0].name'"),
    "inputs a string": (_set(["inputs"], "x"), "field 'inputs'"),
    "input spec without dtype": (_set(["inputs", 0], {"name": "x"}), "field 'inputs[0]'"),
    "object dtype": (_set(["inputs", 0, "dtype"], "object"), "field 'inputs[0].dtype'"),
    "negative dim": (_set(["inputs", 0, "shape"], [-2, 8]), "field 'inputs[0].shape[0]'"),
    "input index past the end": (
        _set(["functions", 0, "inputs", 0], {"input": 7}),
        "input 7 does not exist",
    ),
    "unknown function output": (
        _set(["outputs", 0, "value"], {"function": "nope", "output": 0}),
        "function 'nope' output 0 does not exist",
    ),
    "output index past the end": (
        _set(["outputs", 0, "value"], {"function": "tpu_function_0", "output": 3}),
        "output 3 does not exist",
    ),
    "outputs count negative": (_set(["functions", 0, "outputs"], -1), "field 'functions[0]"),
    "version 1": (_set(["version"], 1), "version 1 is not 'mlconv-artifact' version 2"),
    "not an object": (lambda m: [m], "must be a JSON object"),
    "saved model outside": (
        _set(
            ["signatures"],
            {
                "serving_default": {
                    "runtime": "tensorflow",
                    "saved_model": "/tmp/elsewhere",
                    "inputs": [],
                    "outputs": [],
                }
            },
        ),
        "field 'signatures.serving_default.saved_model'",
    ),
    "a million batch threads": (
        _set(
            ["batches"],
            [
                {
                    "name": "batch_0",
                    "options": {"max_batch_size": 2, "num_batch_threads": 1000000},
                    "functions": ["tpu_function_0"],
                    "inputs": [],
                    "outputs": [],
                }
            ],
        ),
        "field 'batches[0].options.num_batch_threads'",
    ),
}


@pytest.mark.parametrize("case", sorted(MUTATIONS))
def test_manifest_mutations_are_one_line_errors_naming_the_field(artifact, tmp_path, case):
    mutate, fragment = MUTATIONS[case]
    folder = forgery.copy_artifact(artifact, tmp_path / "a")
    forgery.write_manifest(folder, mutate(forgery.manifest_of(folder)))
    refused(folder, "manifest.json", fragment)


@pytest.mark.parametrize(
    "text",
    [b"{", b"\xff\xfe{}", b"[" * 100000 + b"]" * 100000, b'{"format": "mlconv-artifact"'],
)
def test_unreadable_manifests_are_artifact_errors_not_savedmodel_errors(artifact, tmp_path, text):
    """The issue: a broken manifest was reported as "not a TensorFlow SavedModel folder"."""
    folder = forgery.copy_artifact(artifact, tmp_path / "a")
    (folder / "manifest.json").write_bytes(text)
    for load in (mlconv.load, mlconv.compile):
        with pytest.raises(BackendError) as caught:
            load(folder)
        assert "manifest.json" in caught.value.message and "SavedModel" not in str(caught.value)
        assert "\n" not in caught.value.message


def _run_cli(folder: Path, tmp_path: Path, *extra: str) -> subprocess.CompletedProcess:
    np.savez(tmp_path / "in.npz", x=x())
    argv = [str(folder), "--inputs", str(tmp_path / "in.npz")]
    argv += ["--outputs", str(tmp_path / "out.npz"), *extra]
    script = (
        "import sys\nfrom mlconv.tools import mlconv_run\nstatus = mlconv_run.main(sys.argv[1:])\n"
        "assert 'tensorflow' not in sys.modules, 'tensorflow was imported'\nsys.exit(status)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run(
        [sys.executable, "-c", script, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def test_forged_callback_export_is_refused_not_run(artifact, tmp_path):
    """The issue: a `.jaxexport` holding `custom_call @xla_ffi_python_cpu_callback` with an
    index from the file crashed mlconv-run and mlconv.load with SIGSEGV. The manifest's hashes
    are rewritten, so only the custom-call check stands between the file and XLA; the CLI runs
    in a subprocess, where a crash would show as a negative exit status."""
    folder = forgery.copy_artifact(artifact, tmp_path / "a")
    export_path = folder / "tpu" / "tpu_function_0.jaxexport"
    export_path.write_bytes(forgery.forged_callback_export(forgery.SHAPE))
    forgery.write_manifest(folder, forgery.manifest_of(folder))
    done = _run_cli(folder, tmp_path)
    assert done.returncode == 1, (done.returncode, done.stderr[-2000:])
    lines = [line for line in done.stderr.splitlines() if "error:" in line]
    assert len(lines) == 1 and "xla_ffi_python_cpu_callback" in lines[0], done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "out.npz").exists()
    refused(folder, "custom-call target(s) xla_ffi_python_cpu_callback", "refused before compiling")


def test_a_file_that_is_not_an_export_is_one_line(artifact, tmp_path):
    folder = forgery.copy_artifact(artifact, tmp_path / "a")
    (folder / "tpu" / "tpu_function_0.jaxexport").write_bytes(b"\x00" * 64 + b"garbage")
    forgery.write_manifest(folder, forgery.manifest_of(folder))
    refused(folder, "tpu_function_0.jaxexport: not a serialized jax.export")


@pytest.fixture(scope="module")
def evil_saved_model(tmp_path_factory):
    """A SavedModel whose signature writes a file (TF's WriteFile) and answers zeros: what the
    issue's manifest pointed `saved_model` at. Built in a subprocess (TensorFlow)."""
    pytest.importorskip("tensorflow")
    folder = tmp_path_factory.mktemp("evil")
    marker = folder / "pwned.txt"
    script = f"""
import tensorflow as tf
class Evil(tf.Module):
    @tf.function(input_signature=[tf.TensorSpec({list(forgery.SHAPE)}, tf.float32)])
    def serve(self, x):
        with tf.control_dependencies([tf.io.write_file({str(marker)!r}, "pwned")]):
            return {{"y": tf.zeros([{forgery.SHAPE[0]}, 4])}}
m = Evil()
tf.saved_model.save(m, {str(folder / "saved")!r}, signatures={{"serving_default": m.serve}})
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert not marker.exists()
    return folder / "saved", marker


def _tensorflow_signature(manifest: dict) -> dict:
    spec = manifest["inputs"][0]
    return {
        "serving_default": {
            "runtime": "tensorflow",
            "saved_model": "saved_model",
            "reason": "forged",
            "inputs": [spec],
            "outputs": [{"name": "y"}],
        }
    }


def test_tensorflow_host_part_needs_allow_tensorflow_and_the_artifacts_own_files(
    artifact, evil_saved_model, tmp_path
):
    """The issue: `runtime: "tensorflow"` with a `saved_model` outside the artifact made plain
    `mlconv-run OUTDIR` (and `.signatures[...]()`) run that SavedModel; its WriteFile wrote a
    file. Now: outside paths fail the schema; the artifact's own SavedModel runs only with
    allow_tensorflow (without it, TensorFlow is not even imported); a SavedModel swapped in
    fails its SHA-256s."""
    import shutil

    saved, marker = evil_saved_model
    # 1. the manifest names the evil SavedModel by an absolute or a relative path
    for where in (str(saved), os.path.relpath(saved, tmp_path / "a")):
        folder = forgery.copy_artifact(artifact, tmp_path / "a")
        manifest = forgery.manifest_of(folder)
        manifest["signatures"] = _tensorflow_signature(manifest)
        manifest["signatures"]["serving_default"]["saved_model"] = where
        forgery.write_manifest(folder, manifest)
        with pytest.raises(BackendError, match="field 'signatures.serving_default.saved_model'"):
            mlconv.load(folder, allow_tensorflow=True)
        shutil.rmtree(folder)
    # 2. the evil SavedModel copied into the artifact, the hashes left as recorded
    folder = forgery.copy_artifact(artifact, tmp_path / "b")
    shutil.rmtree(folder / "saved_model")
    shutil.copytree(saved, folder / "saved_model")
    manifest = forgery.manifest_of(folder)
    manifest["signatures"] = _tensorflow_signature(manifest)
    forgery.write_manifest(folder, manifest, rehash=False)
    signature = mlconv.load(folder, allow_tensorflow=True).signatures["serving_default"]
    with pytest.raises(BackendError, match="SHA-256 differs|not listed|missing"):
        signature(x=x())
    # 3. the same, hashes rewritten: without allow_tensorflow, refused, TensorFlow not imported
    forgery.write_manifest(folder, manifest)
    with pytest.raises(BackendError, match="allow_tensorflow=True"):
        mlconv.load(folder).signatures["serving_default"](x=x())
    done = _run_cli(folder, tmp_path)
    assert done.returncode == 1, done.stderr[-2000:]
    assert "--allow-tensorflow" in done.stderr and "Traceback" not in done.stderr
    assert not marker.exists() and not (tmp_path / "out.npz").exists()


def test_converted_artifact_still_runs(artifact):
    from onnx.reference import ReferenceEvaluator

    model = ReferenceEvaluator(str(artifact.parent / "small.onnx"))
    (expected,) = model.run(None, {"x": x(1)})
    (other,) = model.run(None, {"x": x(2)})
    assert not np.allclose(expected, other)
    loaded = mlconv.load(artifact)
    (got,) = loaded(x(1))
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    assert json.loads((artifact / "manifest.json").read_text())["version"] == 2
    # one TPU function called by its name, as a signature's host part calls it: the function
    # of a one-function artifact owns @main's inputs and outputs unprefixed
    (function,) = loaded.manifest["functions"]
    (by_name,) = loaded.call_function(function["name"], [x(1)])
    np.testing.assert_allclose(by_name, expected, rtol=1e-5, atol=1e-5)

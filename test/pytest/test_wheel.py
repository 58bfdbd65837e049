"""mlconv as a user installs it: a wheel built from the checkout, installed (not editable) into a
fresh virtual environment outside the checkout, used from another folder.

CI installs mlconv editable, which hides a package or data file the wheel leaves out (issue 34:
five subpackages were missing and `mlconv.compile` failed on every model). The fresh
environment reaches the dependencies through a folder of links to this environment's
site-packages, minus every mlconv distribution (the editable one, the example plugin), so the
only mlconv it can import is the wheel's; the checkout is neither on its path nor its cwd.
The wheel is built from a copy of the checkout's files, so building writes nothing into it.
"""

from __future__ import annotations

import configparser
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import textwrap
import zipfile
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
NOT_SHIPPED = {".sh", ".md"}  # checkout-only files inside package folders (tools/demo.sh)
OUTSIDE = ("test/", "bench/", "docs/", "examples/", ".")
TIMEOUT = 300


def checkout_files() -> list[str]:
    """The files a wheel is built from: tracked and untracked-not-ignored, as git lists them."""
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-co", "--exclude-standard"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    return [name for name in listed if (ROOT / name).is_file()]


def in_package(name: str) -> bool:
    """Whether the checkout file `name` sits in a package folder (one with an __init__.py)."""
    if name.startswith(OUTSIDE) or name in ("setup.py", "pyproject.toml"):
        return False
    folder = (ROOT / name).parent
    while folder != ROOT:
        if not (folder / "__init__.py").is_file():
            return False
        folder = folder.parent
    return True


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.fail("test_wheel needs the git checkout (it builds from `git ls-files`)")
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"
    source.mkdir()
    archive = work / "source.tar"
    with tarfile.open(archive, "w") as tar:
        for name in checkout_files():
            if not name.startswith(("test/", "bench/", "docs/")):
                tar.add(ROOT / name, arcname=name)
    with tarfile.open(archive) as tar:
        tar.extractall(source, filter="data")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"]
        + ["-w", str(work / "dist"), str(source)],
        check=True,
        timeout=TIMEOUT,
    )
    (built,) = (work / "dist").glob("mlconv-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory) -> Path:
    """A fresh venv with the wheel installed and the dependencies linked in."""
    work = tmp_path_factory.mktemp("venv")
    env = work / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    python = env / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    deps = work / "deps"
    deps.mkdir()
    ours = Path(sysconfig.get_paths()["purelib"])
    for entry in ours.iterdir():
        name = entry.name.lower()
        if name.startswith(("mlconv", "__editable__", "_mlconv")) or name.endswith(".pth"):
            continue
        (deps / entry.name).symlink_to(entry)
    (site / "dependencies.pth").write_text(f"{deps}\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps"]
        + ["--no-index", str(wheel)],
        check=True,
        timeout=TIMEOUT,
    )
    return env


def run_in(env: Path, *command: str, cwd: Path) -> subprocess.CompletedProcess:
    """Run in the fresh venv: its bin first on PATH, no PYTHONPATH (which names the checkout)."""
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MLCONV_DEBUG")}
    environ["PATH"] = f"{env / 'bin'}{os.pathsep}{environ.get('PATH', '')}"
    environ["VIRTUAL_ENV"] = str(env)
    return subprocess.run(
        list(command), capture_output=True, text=True, cwd=cwd, env=environ, timeout=TIMEOUT
    )


def check_contents(wheel: Path) -> None:
    """Every module and data file of a package folder of the checkout is in the wheel."""
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {
        f"mlconv/{name}"
        for name in checkout_files()
        if in_package(name) and Path(name).suffix not in NOT_SHIPPED
    }
    assert "mlconv/passes/core_fusions/__init__.py" in expected  # the check sees subpackages
    assert "mlconv/dialects/tf_opdefs.json" in expected
    assert sorted(expected - names) == []
    shipped = {n for n in names if n.startswith("mlconv/")}
    assert sorted(shipped - expected) == []  # nothing from test/, bench/, nor setup.py


def test_wheel_installed_elsewhere_works(wheel: Path, venv: Path, tmp_path: Path):
    """The wheel holds the checkout's modules and data files; installed, it compiles a small
    ONNX model from another folder (checked against onnxruntime), has every pass available and
    every console script answers --help. One test, so that xdist builds the wheel once."""
    check_contents(wheel)
    import onnx
    from onnx import TensorProto, helper

    rng = np.random.default_rng(0)
    weight = helper.make_tensor(
        "w", TensorProto.FLOAT, [4, 3, 3, 3], rng.standard_normal(108).astype(np.float32).ravel()
    )
    graph = helper.make_graph(
        [
            helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c"], ["r"]),
            helper.make_node("GlobalAveragePool", ["r"], ["y"]),
        ],
        "small",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 1, 1])],
        [weight],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, tmp_path / "small.onnx")
    x = rng.standard_normal((1, 3, 8, 8)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    smoke = textwrap.dedent(
        """
        import sys
        import numpy as np
        import onnxruntime
        import mlconv
        import importlib
        from pathlib import Path
        import mlconv
        import mlconv.dialects.tf, mlconv.dialects.tflite  # their JSON files, read at import
        assert mlconv.__file__.startswith(sys.prefix), mlconv.__file__
        root = Path(mlconv.__file__).parent
        marker = 'PROTO = Path(__file__).with_name("converter_options.proto")'
        (options,) = [p for p in root.rglob("*.py") if marker in p.read_text()]
        dotted = ".".join(("mlconv", *options.relative_to(root).with_suffix("").parts))
        assert importlib.import_module(dotted).PROTO.is_file()  # the .proto, beside its module
        x = np.load("x.npy")
        got = mlconv.compile("small.onnx")(x)[0]
        session = onnxruntime.InferenceSession("small.onnx", providers=["CPUExecutionProvider"])
        want = session.run(None, {"x": x})[0]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
        print("ok", mlconv.__file__)
        """
    )
    result = run_in(venv, "python", "-c", smoke, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.startswith(f"ok {venv}"), result.stdout

    result = run_in(venv, "mlconv-opt", "--list-passes", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "core-fuse" in result.stdout and "unavailable" not in result.stdout, result.stdout

    entry_points = configparser.ConfigParser()
    with zipfile.ZipFile(wheel) as z:
        (name,) = [n for n in z.namelist() if n.endswith(".dist-info/entry_points.txt")]
        entry_points.read_string(z.read(name).decode())
    scripts = list(entry_points["console_scripts"])
    assert "mlconv-opt" in scripts and len(scripts) >= 5, scripts
    for script in scripts:
        result = run_in(venv, script, "--help", cwd=tmp_path)
        assert result.returncode == 0, (script, result.stderr[-2000:])
        assert "usage:" in result.stdout, (script, result.stdout)
        assert "Traceback" not in result.stderr, (script, result.stderr)

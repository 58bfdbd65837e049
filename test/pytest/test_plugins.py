"""Plugins (mlconv.plugins): entry points of the group `mlconv.plugins` add passes, pipelines,
dialects, lowerings and host implementations; `mlconv-opt --list-plugins` shows what each added;
a broken plugin is one error line naming it. The installed example plugin has its own tests in
examples/plugin/tests."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from mlconv import custom_ops, plugins
from mlconv.dialects import DIALECTS
from mlconv.passes import PASSES, PIPELINES, get_pass

BIN = Path(sys.executable).parent


class CountOpsPass(ModulePass):
    """test-count-ops: records how many ops the module holds (a plugin's pass)."""

    name = "test-plugin-count-ops"
    seen: list[int] = []

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        CountOpsPass.seen.append(sum(1 for _ in op.walk()))


class CountTwicePipeline(ModulePass):
    """test-plugin-count-twice: the plugin's pass, twice (a plugin's named pipeline)."""

    name = "test-plugin-count-twice"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        CountOpsPass().apply(ctx, op)
        CountOpsPass().apply(ctx, op)


def register_good(r) -> None:
    r.add_pass(CountOpsPass)
    r.pipeline(CountTwicePipeline)
    r.custom_op("test.plugins", "Twice", lambda x: 2 * x)


def register_clash(r) -> None:
    r.add_pass(type("Clash", (ModulePass,), {"name": "cse", "apply": lambda s, c, o: None}))


def register_raises(r) -> None:
    raise RuntimeError("cannot find libfoo.so\nsecond line")


def _entry(name: str, function: str) -> metadata.EntryPoint:
    return metadata.EntryPoint(name=name, value=f"{__name__}:{function}", group=plugins.GROUP)


@pytest.fixture
def cleanup():
    """Take out of the registries what a test's plugins put in (the installed ones stay)."""
    plugins.load()
    before = (dict(PASSES), dict(PIPELINES), dict(DIALECTS), list(plugins.PLUGINS))
    yield
    for registry, saved in zip((PASSES, PIPELINES, DIALECTS), before[:3], strict=True):
        registry.clear()
        registry.update(saved)
    plugins.PLUGINS[:] = before[3]
    custom_ops.unregister("test.plugins", "Twice")


def test_plugin_adds_a_pass_a_pipeline_and_a_custom_op(cleanup):
    (plugin,) = plugins.load_entry_points([_entry("good", "register_good")])
    assert plugin.added == [
        "pass: test-plugin-count-ops",
        "pipeline: test-plugin-count-twice",
        "custom op: test.plugins.Twice",
    ]
    assert get_pass("test-plugin-count-ops") is CountOpsPass
    assert "test-plugin-count-twice" in PIPELINES
    from mlconv.passes.pipeline_spec import parse_pass_pipeline

    (spec,) = parse_pass_pipeline("builtin.module(test-plugin-count-twice)")
    CountOpsPass.seen.clear()
    spec.apply(Context(), ModuleOp([]))
    assert CountOpsPass.seen == [1, 1]
    x = np.arange(3.0)
    assert np.array_equal(custom_ops.IMPLEMENTATIONS[("test.plugins", "Twice")].function(x), 2 * x)
    assert "good (test_plugins:register_good)" in plugins.describe().replace(
        __name__, "test_plugins"
    )


def test_a_taken_name_is_an_error_naming_the_plugin(cleanup):
    with pytest.raises(plugins.PluginError) as caught:
        plugins.load_entry_points([_entry("clash", "register_clash")])
    assert str(caught.value) == "error: plugin 'clash': pass 'cse' is registered already"


def test_a_plugin_that_raises_is_one_line(cleanup):
    with pytest.raises(plugins.PluginError) as caught:
        plugins.load_entry_points([_entry("broken", "register_raises")])
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("error: plugin 'broken' (")
    assert message.endswith("failed to load: RuntimeError: cannot find libfoo.so")


def _installed(tmp_path: Path, name: str, module_source: str) -> dict[str, str]:
    """An environment where a distribution `name` with one `mlconv.plugins` entry point is
    installed (a .dist-info folder on PYTHONPATH), as pip would leave it."""
    dist = tmp_path / f"{name}-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[mlconv.plugins]\n{name} = {name}_mod:register\n")
    (tmp_path / f"{name}_mod.py").write_text(textwrap.dedent(module_source))
    env = {k: v for k, v in os.environ.items() if k != "MLCONV_DEBUG"}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env.get("PYTHONPATH", "")])
    return env


def test_installed_plugin_pass_listed_and_run(tmp_path):
    env = _installed(
        tmp_path,
        "sample",
        '''
        from dataclasses import dataclass
        from xdsl.dialects.builtin import TensorType
        from xdsl.ir import Dialect
        from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, result_def
        from xdsl.passes import ModulePass

        @irdl_op_definition
        class TwiceOp(IRDLOperation):
            """sample.twice: a plugin's op."""
            name = "sample.twice"
            x = operand_def(TensorType)
            y = result_def(TensorType)

        @dataclass(frozen=True)
        class DropFuncsPass(ModulePass):
            """sample-drop-funcs: erase every function (a plugin's pass)."""
            name = "sample-drop-funcs"

            def apply(self, ctx, op):
                for f in list(op.ops):
                    f.detach()
                    f.erase()

        def register(r):
            r.dialect(Dialect("sample", [TwiceOp]))
            r.add_pass(DropFuncsPass)
        ''',
    )
    listed = subprocess.run(
        [BIN / "mlconv-opt", "--list-passes"], capture_output=True, text=True, env=env, check=True
    )
    assert "sample-drop-funcs        sample-drop-funcs: erase every function" in listed.stdout
    shown = subprocess.run(
        [BIN / "mlconv-opt", "--list-plugins"], capture_output=True, text=True, env=env, check=True
    )
    assert (
        "sample (sample_mod:register)\n  dialect sample: sample.twice\n  pass: sample-drop-funcs\n"
        in shown.stdout
    )
    ir = 'func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {\n  %y = "sample.twice"(%x) : (tensor<2xf32>) -> tensor<2xf32>\n  func.return %y : tensor<2xf32>\n}\n'
    parsed = subprocess.run(
        [BIN / "mlconv-opt"], input=ir, capture_output=True, text=True, env=env, check=True
    )
    assert '%y = "sample.twice"(%x) : (tensor<2xf32>) -> tensor<2xf32>' in parsed.stdout
    ran = subprocess.run(
        [BIN / "mlconv-opt", "-p", "sample-drop-funcs"],
        input="func.func @f() {\n  func.return\n}\n",
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert ran.stdout.strip() == "builtin.module {\n}"


@pytest.mark.parametrize(
    "tool",
    [["mlconv-opt", "--list-passes"], ["mlconv-translate", "--import-onnx", "x.onnx"]],
)
def test_installed_broken_plugin_is_one_line(tmp_path, tool):
    env = _installed(tmp_path, "broken", "import no_such_module_xyz\n")
    result = subprocess.run(
        [BIN / tool[0], *tool[1:]], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "plugin 'broken' (broken_mod:register) failed to load: ModuleNotFoundError" in lines[0]


def test_installed_plugin_clashing_with_a_builtin_lowering_is_refused_at_load(tmp_path):
    # The built-in onnx patterns load lazily (on the first lookup); a plugin registering a key
    # they hold must still be refused when it loads, naming it (not later, as an internal
    # error of every ONNX import).
    env = _installed(
        tmp_path,
        "relu",
        """
        def register(r):
            r.lowering("onnx", "Relu", 14, lambda op, b: None)
        """,
    )
    result = subprocess.run(
        [BIN / "mlconv-opt", "--list-plugins"], capture_output=True, text=True, env=env
    )
    assert result.returncode == 1, result.stdout
    assert result.stderr.strip().splitlines() == [
        "mlconv-opt: error: plugin 'relu': two lowerings to core for onnx.Relu-14"
    ]

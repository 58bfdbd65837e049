"""mlconv.semantics: the code that runs core semantics is one package that dialects do not
import; importing it (not a dialect) turns on jax_enable_x64; an op in a control-flow body that
cannot run is one located line, not a traceback."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from mlconv.dialects import make_context
from mlconv.errors import PassFailure
from mlconv.interpreters import run_module
from mlconv.semantics.binding import BodyStaticOperandMissing
from mlconv.semantics.tracing import evaluate

IMPORT_DIALECTS = """
import importlib, pkgutil, sys
import jax
import mlconv.dialects
for info in pkgutil.iter_modules(mlconv.dialects.__path__):
    importlib.import_module("mlconv.dialects." + info.name)
"""


def run_python(code: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_dialects_import_neither_semantics_nor_passes_nor_x64():
    out = run_python(
        IMPORT_DIALECTS
        + """
loaded = sorted(name for name in sys.modules if name.startswith(("mlconv.semantics", "mlconv.passes")))
print(len([n for n in sys.modules if n.startswith("mlconv.dialects.")]), loaded, jax.config.jax_enable_x64)
"""
    )
    count, rest = out.split(" ", 1)
    assert int(count) >= 20  # every dialect module, core families included
    assert rest.strip() == "[] False"


@pytest.mark.parametrize(
    "module", ["mlconv.semantics", "mlconv.passes", "mlconv.backends", "mlconv.interpreters"]
)
def test_x64_comes_with_the_semantics_package(module):
    out = run_python(
        f"""
        import jax
        import mlconv.dialects.core
        before = jax.config.jax_enable_x64
        import {module}
        import jax.numpy as jnp
        print(before, jax.config.jax_enable_x64, jnp.asarray(2**40, dtype=jnp.int64).dtype)
        """
    )
    assert out.split() == ["False", "True", "int64"]


# A Loop whose body feeds a Slice a step computed from the iteration number (%k), never a
# constant. With `%f` in its place, the step is a captured constant and the loop runs.
LOOP = """
builtin.module {{
  func.func @main(%x: tensor<8xf32>) -> tensor<8xf32> {{
    %n = "core.Constant"() {{value = dense<3> : tensor<i64>}} : () -> tensor<i64>
    %t = "core.Constant"() {{value = dense<true> : tensor<i1>}} : () -> tensor<i1>
    %z = "core.Constant"() {{value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
    %e = "core.Constant"() {{value = dense<3> : tensor<1xi64>}} : () -> tensor<1xi64>
    %y = "core.Loop"(%n, %t, %x, %z, %e) <{{operandSegmentSizes = array<i32: 1, 1, 1, 2>}}> ({{
    ^bb0(%i: tensor<i64>, %c: tensor<i1>, %v: tensor<8xf32>, %b: tensor<1xi64>, %f: tensor<1xi64>):
      %one = "core.Constant"() {{value = dense<1> : tensor<1xi64>}} : () -> tensor<1xi64>
      %r = "core.Reshape"(%i, %one) : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
      %k = "core.Add"(%r, %f) : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
      %s = "core.Slice"(%v, %b, %f, {step_in_body}) : (tensor<8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1xf32> loc("slice_in_body")
      %w = "core.Multiply"(%v, %s) : (tensor<8xf32>, tensor<1xf32>) -> tensor<8xf32>
      core.Yield %c, %w : tensor<i1>, tensor<8xf32>
    }}) {{max_iterations = 3 : i64}} : (tensor<i64>, tensor<i1>, tensor<8xf32>, tensor<1xi64>, tensor<1xi64>) -> tensor<8xf32>
    func.return %y : tensor<8xf32>
  }}
}}
"""

MESSAGE = "loc(\"slice_in_body\"): error: 'core.Slice' op in a body: static operand 'step' is not a constant"


def parse(text: str):
    from xdsl.parser import Parser

    return Parser(make_context(), text).parse_module()


def constant_input(text: str) -> str:
    """The same Loop over a constant input: core-fold-constants evaluates it."""
    text = text.replace("func.func @main(%x: tensor<8xf32>)", "func.func @main()")
    return text.replace(
        '%t = "core.Constant"',
        '%x = "core.Constant"() {value = dense<1.5> : tensor<8xf32>} : () -> tensor<8xf32>\n'
        '    %t = "core.Constant"',
    )


def test_loop_body_runs_with_captured_static_operands():
    x = np.random.default_rng(3).standard_normal(8).astype(np.float32)
    (got,) = run_module(parse(LOOP.format(step_in_body="%f")), [x])
    want = x.copy()
    for _ in range(3):
        want = want * want[2:3:3]
    np.testing.assert_allclose(got, want, rtol=1e-5)


@pytest.mark.parametrize(
    "form, pipeline",
    [
        ("argument", "core-to-tpu"),
        ("constant", "core-fold-constants"),
        ("argument", "core-infer-shapes,core-to-tpu"),
    ],
)
def test_a_body_op_that_cannot_run_is_one_located_line(tmp_path, form, pipeline):
    text = LOOP.format(step_in_body="%k")
    path = tmp_path / "step.mlir"
    path.write_text(constant_input(text) if form == "constant" else text)
    done = subprocess.run(
        [sys.executable, "-m", "mlconv.tools.mlconv_opt", str(path), "-p", pipeline],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [f"{path}: {MESSAGE}"]


def test_the_body_error_is_a_pass_failure_at_the_body_op():
    module = parse(constant_input(LOOP.format(step_in_body="%k")))
    loop = next(op for op in module.walk() if op.name == "core.Loop")
    with pytest.raises(BodyStaticOperandMissing) as caught:
        evaluate(loop)
    assert isinstance(caught.value, PassFailure)
    assert caught.value.operand == "step"
    assert caught.value.render() == MESSAGE
    constant = parse(constant_input(LOOP.format(step_in_body="%f")))
    loop = next(op for op in constant.walk() if op.name == "core.Loop")
    (folded,) = evaluate(loop)
    np.testing.assert_allclose(folded, np.full(8, 1.5**8, np.float32), rtol=1e-6)

"""Numerics after every pass: run the IR after each pass of a pipeline on the same inputs and
name the first pass whose outputs diverge, and inside it the first op whose result differs.

    report = check_numerics(module, passes, inputs=None, rtol=1e-4, atol=1e-5)
    print(report.format())            # one line per pass, then the divergence found

Each level runs by its own reference interpreter (`mlconv.interpreters`: onnx ops by
onnx.reference, core ops by their semantics, tpu ops by their primitives), op by op, with a
`Recorder` keeping each op's results by location. The IR after a pass is compared with the IR
right before it (the last one that could be interpreted: tf and tflite modules are skipped), so
the pass that broke the numbers is the one named. Inside it, ops are matched by location (the
source node name every rewrite copies onto what it creates; the last op at a location stands for
the node) and visited in the order the IR after the pass runs them: the first location whose
values differ beyond `atol + rtol * max|before|` is the op named. Pipelines with stages
(`passes()`) are checked stage by stage. The module is changed in place, as by the passes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from mlconv.dialects import make_context
from mlconv.errors import MlconvError, OptionError, PassFailure
from mlconv.frontends.load import format_input_shapes
from mlconv.interpreters.common import Recorder, level_of
from mlconv.interpreters.run import run_module
from mlconv.passes.core_infer_shapes import CoreInferShapesPass
from mlconv.passes.pipelines import (
    CoreToTpuPipeline,
    framework_dialects,
    target_device,
    to_core_passes,
)
from mlconv.signature.main_inputs import main_inputs, make_inputs

DEFAULT_RTOL = 1e-4
DEFAULT_ATOL = 1e-5


class NumericsDivergence(PassFailure):
    """A pass changed what the IR computes (raised by `mlconv.compile(check_numerics=True)`)."""


@dataclass
class Step:
    """One pass: its level after it, its time, and how far its outputs moved."""

    name: str
    level: str | None
    seconds: float
    max_abs: float | None = None
    diverged: bool = False
    note: str = ""


@dataclass
class OpDivergence:
    location: str
    op_before: str
    op_after: str
    max_abs: float
    shape: tuple[int, ...]


@dataclass
class NumericsReport:
    steps: list[Step] = field(default_factory=list)
    rtol: float = DEFAULT_RTOL
    atol: float = DEFAULT_ATOL
    first_pass: str | None = None
    first_op: OpDivergence | None = None
    output_index: int | None = None

    @property
    def ok(self) -> bool:
        return self.first_pass is None

    def message(self) -> str:
        """The divergence on one line (empty when every pass kept the numbers)."""
        if self.ok:
            return ""
        step = next(s for s in self.steps if s.name == self.first_pass and s.diverged)
        text = (
            f"numerics diverge after pass '{self.first_pass}': output {self.output_index} "
            f"differs by {step.max_abs:.3g} (rtol {self.rtol:g}, atol {self.atol:g})"
        )
        if self.first_op is not None:
            op = self.first_op
            changed = (
                op.op_before if op.op_before == op.op_after else f"{op.op_before} -> {op.op_after}"
            )
            text += (
                f'; first differing op: loc("{op.location}") ({changed}, '
                f"{'x'.join(map(str, op.shape)) or 'scalar'}) by {op.max_abs:.3g}"
            )
        return text

    def format(self) -> str:
        """One line per pass (level, time, largest output change), then the verdict."""
        width = max([len(s.name) for s in self.steps] + [4])
        lines = []
        for step in self.steps:
            moved = "-" if step.max_abs is None else f"{step.max_abs:.3g}"
            status = "DIVERGED" if step.diverged else ("ok" if step.max_abs is not None else "")
            note = f"  ({step.note})" if step.note else ""
            lines.append(
                f"  {step.name:<{width}}  {step.level or '?':<6} {1e3 * step.seconds:8.1f} ms  "
                f"max |change| {moved:>9}  {status}{note}"
            )
        lines.append(self.message() or "numerics preserved by every pass")
        return "\n".join(lines) + "\n"


def parse_tolerances(text: str | None) -> tuple[float, float]:
    """`--check-numerics[=rtol,atol]`: "" or None -> the defaults; "1e-3,1e-6" -> both."""
    if not text:
        return DEFAULT_RTOL, DEFAULT_ATOL
    parts = text.split(",")
    try:
        values = [float(p) for p in parts]
    except ValueError:
        raise OptionError(
            f"bad --check-numerics tolerances '{text}' (expected RTOL,ATOL)"
        ) from None
    if len(values) != 2 or any(v < 0 for v in values):
        raise OptionError(f"bad --check-numerics tolerances '{text}' (expected RTOL,ATOL)")
    return values[0], values[1]


def expand(passes: Sequence[ModulePass]) -> list[ModulePass]:
    """The passes with every pipeline that lists its stages (`passes()`) replaced by them."""
    flat: list[ModulePass] = []
    for module_pass in passes:
        stages = module_pass.passes() if hasattr(module_pass, "passes") else None
        flat.extend(expand(stages) if stages else [module_pass])
    return flat


def _interpretable(module: ModuleOp) -> str | None:
    try:
        return level_of(module)
    except MlconvError:
        return None


def _run(module: ModuleOp, inputs: Sequence[np.ndarray]):
    recorder = Recorder()
    outputs = run_module(module, inputs, recorder)
    return outputs, recorder


def errors(ours: np.ndarray, reference: np.ndarray) -> tuple[float, float]:
    """(max |ours - reference|, that divided by max |reference|); inf where values are not
    finite on one side only."""
    a = np.asarray(ours, dtype=np.float64)
    b = np.asarray(reference, dtype=np.float64)
    if a.size == 0:
        return 0.0, 0.0
    same_nonfinite = (~np.isfinite(a) & ~np.isfinite(b)) & ((a == b) | (np.isnan(a) & np.isnan(b)))
    diff = np.where(same_nonfinite, 0.0, np.abs(a - b))
    diff = np.where(np.isnan(diff), np.inf, diff)
    max_abs = float(diff.max())
    scale = float(np.max(np.abs(np.where(np.isfinite(b), b, 0.0))))
    return max_abs, (max_abs / scale if scale > 0 else (0.0 if max_abs == 0 else np.inf))


def aligned(ours: np.ndarray, reference: np.ndarray) -> np.ndarray | None:
    """`ours` in the reference's layout: as is, or NCHW->NHWC (any rank >= 3), else None."""
    if ours.shape == reference.shape:
        return ours
    if ours.ndim >= 3 and ours.ndim == reference.ndim:
        moved = np.moveaxis(ours, 1, -1)
        if moved.shape == reference.shape:
            return moved
    if ours.size == reference.size and ours.size == 1:
        return ours.reshape(reference.shape)
    return None


def _limit(reference: np.ndarray, rtol: float, atol: float) -> float:
    finite = np.abs(np.where(np.isfinite(reference), reference, 0.0)) if reference.size else None
    return atol + rtol * (float(finite.max()) if finite is not None and finite.size else 0.0)


def _difference(after: np.ndarray, before: np.ndarray) -> float | None:
    """max |after - before| where the two line up (NCHW/NHWC moves too), else None."""
    after, before = np.asarray(after), np.asarray(before)
    if not (np.issubdtype(before.dtype, np.number) or before.dtype == np.bool_):
        return None
    lined_up = aligned(after, before)
    if lined_up is None:
        return None
    return errors(lined_up.astype(np.float64), before.astype(np.float64))[0]


def first_differing_op(before, after, rtol: float, atol: float) -> OpDivergence | None:
    """The first location (in the run order of `after`) whose values differ from `before`'s."""
    old = before.by_location()
    old_names = {where: name for where, name, _ in before.trace if where is not None}
    new = after.by_location()
    new_names = {where: name for where, name, _ in after.trace if where is not None}
    seen: set[str] = set()
    for where, _, _ in after.trace:
        if where is None or where in seen or where not in old:
            continue
        seen.add(where)
        for mine, theirs in zip(new[where], old[where], strict=False):
            difference = _difference(mine, theirs)
            if difference is not None and not difference <= _limit(
                np.asarray(theirs, np.float64), rtol, atol
            ):
                return OpDivergence(
                    where, old_names[where], new_names[where], difference, tuple(np.shape(theirs))
                )
    return None


def check_numerics(
    module: ModuleOp,
    passes: Sequence[ModulePass],
    inputs: Sequence[np.ndarray] | dict[str, np.ndarray] | None = None,
    *,
    rtol: float = DEFAULT_RTOL,
    atol: float = DEFAULT_ATOL,
    seed: int = 0,
    ctx: Any = None,
    stop_at_first: bool = True,
    on_pass: Callable[[ModulePass], Any] | None = None,
) -> NumericsReport:
    """Apply `passes` to `module` (in place), interpreting the IR before the first and after
    each on the same inputs (given, or seeded random ones of `@main`'s argument types), and
    report the first pass whose outputs move beyond `atol + rtol * max|before|` and its first
    differing op. `on_pass(pass)` is called before each pass (progress display)."""

    ctx = ctx or make_context()
    _, arrays = make_inputs(module, inputs, seed)
    report = NumericsReport(rtol=rtol, atol=atol)
    level = _interpretable(module)
    previous = _run(module, arrays) if level else None
    report.steps.append(Step("(input)", level, 0.0, note="" if level else "not interpretable"))
    for module_pass in expand(passes):
        if on_pass is not None:
            on_pass(module_pass)
        start = time.perf_counter()
        module_pass.apply(ctx, module)
        step = Step(module_pass.name, _interpretable(module), time.perf_counter() - start)
        report.steps.append(step)
        if report.first_pass is not None and stop_at_first:
            step.note = "not checked"
            continue
        if step.level is None:
            step.note = "not interpretable"
            continue
        try:
            current = _run(module, arrays)
        except MlconvError as error:
            step.note = f"not interpreted: {error.message}"
            continue
        if previous is None:
            previous = current
            continue
        step.max_abs = 0.0
        for index, (mine, theirs) in enumerate(zip(current[0], previous[0], strict=True)):
            difference = _difference(mine, theirs)
            if difference is None:
                raise PassFailure(
                    f"pass '{module_pass.name}' changed output {index} from "
                    f"{np.shape(theirs)} to {np.shape(mine)}"
                )
            step.max_abs = max(step.max_abs, difference)
            if not step.diverged and not difference <= _limit(
                np.asarray(theirs, np.float64), rtol, atol
            ):
                step.diverged = True
                if report.first_pass is None:
                    report.first_pass = module_pass.name
                    report.output_index = index
                    report.first_op = first_differing_op(previous[1], current[1], rtol, atol)
        previous = current
    return report


def check_pipeline_numerics(module: ModuleOp, device, input_shapes, tolerances) -> None:
    """The passes `mlconv.compile` runs on `module`, each checked by `check_numerics`; raises
    `NumericsDivergence` naming the first pass and op that change the numbers."""

    if not input_shapes:
        input_shapes = {name: shape for name, shape, _ in main_inputs(module)}
    shapes = format_input_shapes(input_shapes)
    passes = [stage for dialect in framework_dialects(module) for stage in to_core_passes(dialect)]
    passes += [
        CoreInferShapesPass(input_shapes=shapes),
        CoreToTpuPipeline(device=target_device(device)),
    ]
    kwargs = dict(zip(("rtol", "atol"), tolerances, strict=True)) if tolerances is not True else {}
    report = check_numerics(module, passes, **kwargs)
    if not report.ok:
        where = report.first_op.location if report.first_op else None
        raise NumericsDivergence(report.message(), where)

"""tflite-check-runtime{version="2.3.0"}: every tflite op must run on the given TFLite runtime.

(The version is quoted: xDSL's pipeline lexer does not read `2.3.0` bare.)

Input: tflite dialect with op versions set. Output: unchanged IR, or one `PassFailure` listing
every op whose (operator, version) needs a newer runtime than `version` (`RUNTIME_VERSIONS`,
from TensorFlow's runtime_version.cc), and every (operator, version) no runtime knows.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, NameLoc
from xdsl.passes import ModulePass

from mlconv.dialects.tflite import TFLiteOperation
from mlconv.dialects.tflite_versions import min_runtime, runtime_key
from mlconv.errors import OptionError, PassFailure


def _where(op: TFLiteOperation) -> str:
    loc = op.location
    return f'loc("{loc.desc.data}")' if isinstance(loc, NameLoc) else "loc(unknown)"


@dataclass(frozen=True)
class TfliteCheckRuntimePass(ModulePass):
    """Fail, listing them all, when ops need a newer TFLite runtime than `version`."""

    name = "tflite-check-runtime"
    version: str = "2.3.0"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not self.version or not all(p.isdigit() for p in self.version.split(".")):
            raise OptionError(f"tflite-check-runtime: bad runtime version '{self.version}'")
        limit = runtime_key(self.version)
        problems = []
        for child in op.walk():
            if not isinstance(child, TFLiteOperation):
                continue
            version = child.version.value.data
            needed = min_runtime(child.operator, version)
            if needed is None and version > 1:
                problems.append(
                    f"{child.operator} version {version} (no runtime supports it) at {_where(child)}"
                )
            elif needed is not None and runtime_key(needed) > limit:
                problems.append(
                    f"{child.operator} version {version} needs runtime {needed} at {_where(child)}"
                )
        if problems:
            raise PassFailure(
                f"{len(problems)} op(s) need a newer TFLite runtime than {self.version}: "
                + "; ".join(problems)
            )

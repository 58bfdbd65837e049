#!/usr/bin/env bash
# The README's main command: a virtual environment with only what the demo uses (mlconv and
# onnxruntime, the `demo` extra), then the bundled default: a seeded residual CNN converted pass
# by pass (time, numerics after each), run on three images, compared layer by layer with
# onnxruntime, and the commands that show more. Needs Python 3.11 and the package index; never
# touches the system's package manager. The full test set is .ci/setup-venv's (`bash .ci/run`).
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${MLCONV_DEMO_VENV:-.venv-demo}"
python="${PYTHON:-python3.11}"
command -v "$python" >/dev/null 2>&1 || python=python3
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
# Installed again only when pyproject.toml changed since the last install.
stamp="$venv/.mlconv-demo-installed"
wanted="$(cksum < pyproject.toml)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$wanted" ]; then
  echo "demo: installing mlconv[demo] into $venv" >&2
  # --no-compile: no bytecode for all of jax and onnx up front (half the install's CPU time);
  # the demo compiles only what it imports, at no measurable cost.
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-compile -e '.[demo]'
  echo "$wanted" > "$stamp"
fi
exec "$venv/bin/python" -m mlconv.tools.demo "$@"

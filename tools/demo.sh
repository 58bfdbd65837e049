#!/usr/bin/env bash
# The README's main job: set up the environment if needed, then run the bundled default: a
# seeded residual CNN converted pass by pass (time, numerics after each), run on three images,
# compared layer by layer with onnxruntime, and the command that opens its graph page.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/setup-venv
exec "${MLCONV_VENV:-.venv}/bin/python" -m mlconv.tools.demo "$@"

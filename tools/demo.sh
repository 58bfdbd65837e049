#!/usr/bin/env bash
# The README's main job: set up the environment if needed, then run the bundled default.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/setup-venv
exec "${MLCONV_VENV:-.venv}/bin/python" -m mlconv.tools.demo "$@"

#!/usr/bin/env bash
# Installs what xingmai needs, builds it, and runs the main job on built-in defaults.
# Extra arguments go to `xm` (e.g. scripts/run.sh topo show --json).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset default >/dev/null
cmake --build --preset default --target xm
exec build/default/src/xm "$@"

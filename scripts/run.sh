#!/usr/bin/env bash
# Installs what xingmai needs, builds it, and runs the main job on built-in defaults:
# xccl-perf, the nccl-tests of xccl, across local ranks over shared memory — an
# all-reduce sweep from 8 B to 64 MiB with every result checked.
# Arguments replace the defaults (e.g. scripts/run.sh all_gather --np 4 -b 1M -e 256M).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset default >/dev/null
cmake --build --preset default --target xccl-perf xm
if [[ $# -eq 0 ]]; then set -- all_reduce --np 2 -b 8 -e 64M -f 4 -c 1; fi
exec build/default/tools/xccl-perf "$@"

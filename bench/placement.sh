#!/usr/bin/env bash
# placement.sh: bench/placement (does a collective's speed depend on where the buffers sit?)
# for every rank count; see bench/placement.cc for what it measures and how.
#
# Build first:  cmake --build --preset default --target placement
# Knobs (env):  NPS="2 4" SIZES_MIN=64K SIZES_MAX=16M FACTOR=4 ITERS=20 WARMUP=5 ROUNDS=5
#               COLLECTIVES=all_reduce,all_gather,reduce_scatter,alltoall REGISTERED=0 BUILD_DIR=build/default
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BUILD_DIR:-$ROOT/build/default}/bench/placement
[[ -x $BIN ]] || { echo "placement.sh: missing $BIN (cmake --build --preset default --target placement)" >&2; exit 1; }
echo "# $(date -Is) on $(hostname): nproc $(nproc),$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
for n in ${NPS:-2 4}; do
  echo "#   $BIN --np $n -b ${SIZES_MIN:-64K} -e ${SIZES_MAX:-16M} -f ${FACTOR:-4} -n ${ITERS:-20} -w ${WARMUP:-5} --rounds ${ROUNDS:-5} -R ${REGISTERED:-0}"
  "$BIN" --np "$n" -b "${SIZES_MIN:-64K}" -e "${SIZES_MAX:-16M}" -f "${FACTOR:-4}" -n "${ITERS:-20}" -w "${WARMUP:-5}" \
    --rounds "${ROUNDS:-5}" -R "${REGISTERED:-0}" --collectives "${COLLECTIVES:-all_reduce,all_gather,reduce_scatter,alltoall}"
done

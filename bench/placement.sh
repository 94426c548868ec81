#!/usr/bin/env bash
# placement.sh: does xccl's speed depend on where the caller's buffers sit?
#
# A program that cuts its buffers out of large allocations gets them at whatever offset
# within a 4 KiB page the allocator left (malloc's large blocks start 16 bytes past a page
# boundary), and send and receive buffers often at the same one. This runs xccl-perf for
# each collective and rank count with the send buffer 16 bytes into a page and the receive
# buffer 0, 16, 64, 512, 2048 and 4032 bytes past the send buffer's page offset, and with
# both page-aligned ("0/0"); RUNS rounds, the placements in turn within each round so
# the machine's drift spreads over all of them. Prints, per size, the median out-of-place
# busbw (GB/s) at every placement and slowest / fastest.
#
# Build first:  cmake --build --preset default --target xccl-perf
# Knobs (env):  SIZES_MIN=64K SIZES_MAX=16M FACTOR=4 ITERS=20 WARMUP=5 RUNS=3
#               NPS="2 4" COLLECTIVES="all_reduce all_gather reduce_scatter alltoall"
#               BUILD_DIR=build/default REGISTERED=0 (1: buffers from xcclMemAlloc)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build/default}
XCCL=$BUILD_DIR/tools/xccl-perf
[[ -x $XCCL ]] || { echo "placement.sh: missing $XCCL (cmake --build --preset default --target xccl-perf)" >&2; exit 1; }
SWEEP=(-b "${SIZES_MIN:-64K}" -e "${SIZES_MAX:-16M}" -f "${FACTOR:-4}" -n "${ITERS:-20}" -w "${WARMUP:-5}")
RUNS=${RUNS:-3}
NPS=${NPS:-2 4}
COLLECTIVES=${COLLECTIVES:-all_reduce all_gather reduce_scatter alltoall}
# send:recv page offsets
PLACEMENTS="16:16 16:32 16:80 16:528 16:2064 16:4048 0:0"

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
echo "# $(date -Is) on $(hostname): nproc $(nproc), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)," \
     "median of $RUNS runs, out-of-place busbw (GB/s)"
echo "#   $XCCL <collective> --np <N> ${SWEEP[*]} -c 0 -R ${REGISTERED:-0} --send-offset S --recv-offset R"
for ((r = 1; r <= RUNS; r++)); do
  for n in $NPS; do
    for coll in $COLLECTIVES; do
      echo "run $r/$RUNS: $coll np=$n" >&2
      for pl in $PLACEMENTS; do
        "$XCCL" "$coll" --np "$n" "${SWEEP[@]}" -c 0 -R "${REGISTERED:-0}" --send-offset "${pl%:*}" --recv-offset "${pl#*:}" \
          >"$WORK/out" || { cat "$WORK/out" >&2; exit 1; }
        awk -v n="$n" -v c="$coll" -v pl="$pl" '/^ +[0-9]/ { print n, c, pl, $1, $8 }' "$WORK/out" >>"$WORK/results"
      done
    done
  done
done

awk -v nps="$NPS" -v colls="$COLLECTIVES" -v pls="$PLACEMENTS" '
  function median(list,   v, k, i, j, t) {
    k = split(list, v, " ")
    for (i = 2; i <= k; i++) for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
    return k % 2 ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2
  }
  function human(b) { return b >= 2^20 ? b / 2^20 " MiB" : b >= 2^10 ? b / 2^10 " KiB" : b " B" }
  { key = $1 SUBSEP $2 SUBSEP $3 SUBSEP $4; bw[key] = bw[key] " " $5
    if (!(($1, $2, $4) in seen)) { seen[$1, $2, $4] = 1; sizes[$1, $2] = sizes[$1, $2] " " $4 } }
  END {
    np = split(pls, pl, " "); nc = split(colls, cl, " "); nn = split(nps, nl, " ")
    for (c = 1; c <= nc; c++) for (m = 1; m <= nn; m++) {
      printf "\n### %s, %d ranks\n\n| size |", cl[c], nl[m]
      for (p = 1; p <= np; p++) { split(pl[p], so, ":"); printf " %s |", p == np ? "both page-aligned" : "recv +" (so[2] - so[1]) }
      printf " slowest / fastest |\n|---:|"; for (p = 1; p <= np; p++) printf "---:|"; print "---:|"
      ns = split(sizes[nl[m], cl[c]], sz, " ")
      for (i = 1; i <= ns; i++) {
        lo = 1e9; hi = 0; printf "| %s |", human(sz[i])
        for (p = 1; p <= np; p++) {
          v = median(bw[nl[m], cl[c], pl[p], sz[i]]); printf " %.2f |", v
          if (v < lo) lo = v; if (v > hi) hi = v
        }
        printf " %.2f |\n", (hi > 0 ? lo / hi : 0)
      }
    }
  }' "$WORK/results"

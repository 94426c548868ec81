#!/usr/bin/env bash
# launch_spread.sh: does the same command give the same speed from one launch to the next?
#
# With more ranks than cores (4 on this 2-core machine) a library whose ranks wait badly
# for each other can fall into a slow mode for a whole launch. This launches the same
# xccl-perf sweep LAUNCHES times per collective and rank count (and, with PEERS=1, Open
# MPI's the same way) and prints, per size, the median out-of-place busbw (GB/s) over the
# launches, the slowest and fastest launch, and median / slowest (how far the worst launch
# fell below the typical one).
#
# Build first:  cmake --build --preset default --target xccl-perf mpi_perf
# Knobs (env):  NPS="4 2" COLLECTIVES="all_reduce all_gather reduce_scatter alltoall"
#               SIZES_MIN=64K SIZES_MAX=256M FACTOR=4 ITERS=20 WARMUP=5 LAUNCHES=5 PEERS=1
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build/default}
XCCL=$BUILD_DIR/tools/xccl-perf MPI=$BUILD_DIR/bench/mpi_perf
SWEEP=(-b "${SIZES_MIN:-64K}" -e "${SIZES_MAX:-256M}" -f "${FACTOR:-4}" -n "${ITERS:-20}" -w "${WARMUP:-5}")
LAUNCHES=${LAUNCHES:-5} NPS=${NPS:-4 2} COLLECTIVES=${COLLECTIVES:-all_reduce all_gather reduce_scatter alltoall}
PEERS=${PEERS:-1}
[[ -x $XCCL ]] || { echo "launch_spread.sh: missing $XCCL" >&2; exit 1; }
if ((PEERS)); then [[ -x $MPI ]] && command -v mpirun >/dev/null || { echo "launch_spread.sh: need $MPI and mpirun (or PEERS=0)" >&2; exit 1; }; fi
MPIRUN=(env OMPI_MCA_btl=self,vader mpirun --allow-run-as-root --oversubscribe --bind-to none)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
echo "# $(date -Is) on $(hostname): nproc $(nproc), $LAUNCHES launches per point, out-of-place busbw (GB/s), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
echo "#   xccl:     $XCCL <collective> --np <N> ${SWEEP[*]} -c 0"
((PEERS)) && echo "#   Open MPI: ${MPIRUN[*]:1} -np <N> $MPI --collective <collective> ${SWEEP[*]}"
for ((l = 1; l <= LAUNCHES; l++)); do
  for n in $NPS; do
    for coll in $COLLECTIVES; do
      echo "launch $l/$LAUNCHES: $coll np=$n" >&2
      "$XCCL" "$coll" --np "$n" "${SWEEP[@]}" -c 0 >"$WORK/out"
      awk -v n="$n" -v c="$coll" '/^ +[0-9]/ { print "xccl", n, c, $1, $8 }' "$WORK/out" >>"$WORK/results"
      if ((PEERS)); then
        "${MPIRUN[@]}" -np "$n" "$MPI" --collective "$coll" "${SWEEP[@]}" >"$WORK/out" 2>/dev/null
        awk -v n="$n" -v c="$coll" '/^ +[0-9]/ { print "mpi", n, c, $1, $8 }' "$WORK/out" >>"$WORK/results"
      fi
    done
  done
done
awk -v nps="$NPS" -v colls="$COLLECTIVES" -v peers="$PEERS" '
  function sort(list, v,   k, i, j, t) {
    k = split(list, v, " ")
    for (i = 2; i <= k; i++) for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
    return k
  }
  function stats(key,   v, k, m) {
    if (!(key in bw)) return " - | - | - | - |"
    k = sort(bw[key], v); m = k % 2 ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2
    return sprintf(" %.2f | %.2f | %.2f | %.2fx |", m, v[1], v[k], v[1] > 0 ? m / v[1] : 0)
  }
  function human(b) { return b >= 2^20 ? b / 2^20 " MiB" : b >= 2^10 ? b / 2^10 " KiB" : b " B" }
  { key = $1 SUBSEP $2 SUBSEP $3 SUBSEP $4; bw[key] = bw[key] " " $5
    if (!(($2, $3, $4) in seen)) { seen[$2, $3, $4] = 1; sizes[$2, $3] = sizes[$2, $3] " " $4 } }
  END {
    nc = split(colls, cl, " "); nn = split(nps, nl, " ")
    for (m = 1; m <= nn; m++) for (c = 1; c <= nc; c++) {
      printf "\n### %s, %d ranks\n\n| size | xccl median | slowest | fastest | median / slowest |", cl[c], nl[m]
      if (peers) printf " MPI median | slowest | fastest | median / slowest |"
      printf "\n|---:|---:|---:|---:|---:|%s\n", peers ? "---:|---:|---:|---:|" : ""
      ns = split(sizes[nl[m], cl[c]], sz, " ")
      for (i = 1; i <= ns; i++)
        printf "| %s |%s%s\n", human(sz[i]), stats("xccl" SUBSEP nl[m] SUBSEP cl[c] SUBSEP sz[i]),
               peers ? stats("mpi" SUBSEP nl[m] SUBSEP cl[c] SUBSEP sz[i]) : ""
    }
  }' "$WORK/results"

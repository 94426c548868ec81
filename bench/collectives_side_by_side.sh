#!/usr/bin/env bash
# collectives_side_by_side.sh: xccl vs Gloo (TCP) vs Open MPI (shared memory) on this host,
# nccl-tests style. Runs xccl-perf (with malloc'd buffers, and again with registered
# buffers from xcclMemAlloc, -R 1), gloo_perf and mpi_perf over the same size sweep for
# N = 2 and 4 local ranks and all_reduce / all_gather / alltoall / reduce_scatter, RUNS
# times, and prints Markdown tables of the median out-of-place busbw (GB/s) plus the
# small-size latency. (Gloo's reduce-scatter is PyTorch's: an all-reduce keeping one
# block; see bench/peers/gloo_perf.cc.)
# For all_reduce, all_gather and alltoall it also runs memory_ceiling, the fastest such
# collective this host's memory permits (minimum traffic, no protocol), twice: with
# buffers shared by all ranks, the ceiling for registered buffers, and with --private,
# the ceiling for plain malloc'd buffers (whose data a peer can only get through a copy
# by the kernel or through shared staging). It shows xccl (malloc'd) and Open MPI as % of
# both, and private ceiling / Open MPI: what a plain-buffer library could gain over Open
# MPI on this host. The all-reduce's private ceiling runs its copy-in, reduce and
# copy-out phases one after another, so a pipelined all-reduce can reach or pass it.
#
# Build first:  cmake --build --preset default --target xccl-perf
#               cmake --build --preset default --target gloo_perf
#               cmake --build --preset default --target mpi_perf
#               cmake --build --preset default --target memory_ceiling
# Knobs (env):  SIZES_MIN=4K SIZES_MAX=256M FACTOR=4 ITERS=20 WARMUP=5 RUNS=3
#               NPS="2 4" COLLECTIVES="all_reduce all_gather alltoall reduce_scatter" BUILD_DIR=build/default
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build/default}
SIZES_MIN=${SIZES_MIN:-4K}
SIZES_MAX=${SIZES_MAX:-256M}
FACTOR=${FACTOR:-4}
ITERS=${ITERS:-20}
WARMUP=${WARMUP:-5}
RUNS=${RUNS:-3}
NPS=${NPS:-2 4}
COLLECTIVES=${COLLECTIVES:-all_reduce all_gather alltoall reduce_scatter}

XCCL=$BUILD_DIR/tools/xccl-perf
GLOO=$BUILD_DIR/bench/gloo_perf
MPI=$BUILD_DIR/bench/mpi_perf
CEIL=$BUILD_DIR/bench/memory_ceiling
BINS=("$XCCL" "$GLOO" "$MPI")
with_ceiling() { [[ $1 == all_reduce || $1 == all_gather || $1 == alltoall ]]; }
for coll in $COLLECTIVES; do if with_ceiling "$coll"; then BINS+=("$CEIL"); break; fi; done

die() { echo "collectives_side_by_side.sh: $*" >&2; exit 1; }
for bin in "${BINS[@]}"; do
  [[ -x $bin ]] || die "missing $bin (build it: cmake --build --preset default --target $(basename "$bin"))"
done
command -v mpirun >/dev/null || die "mpirun not found (apt-get install openmpi-bin)"

SWEEP=(-b "$SIZES_MIN" -e "$SIZES_MAX" -f "$FACTOR" -n "$ITERS" -w "$WARMUP")
# Open MPI over shared memory only (btl self,vader); set for mpirun alone, not for xccl-perf.
MPIRUN=(env OMPI_MCA_btl=self,vader mpirun --allow-run-as-root --oversubscribe --bind-to none)

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
RESULTS=$WORK/results  # lines: lib N collective size time_us busbw

# run LIB N COLL CMD...: runs one sweep and appends its out-of-place rows to $RESULTS.
# COLS names the size, time and busbw columns: nccl-tests' layout unless told otherwise.
run() {
  local lib=$1 n=$2 coll=$3
  shift 3
  if ! "$@" >"$WORK/out" 2>"$WORK/err"; then
    cat "$WORK/out" "$WORK/err" >&2
    die "failed: $*"
  fi
  [[ -s $WORK/err ]] && sed "s/^/[$lib np=$n $coll stderr] /" "$WORK/err" >&2
  awk -v lib="$lib" -v n="$n" -v coll="$coll" -v cols="${COLS:-1 6 8}" 'BEGIN { split(cols, c, " ") }
    /^ +[0-9]/ { print lib, n, coll, $c[1], $c[2], $c[3]; rows++ }
    END { exit rows ? 0 : 1 }' "$WORK/out" >>"$RESULTS" || die "no data rows from: $*"
}

# How busy the CPUs were over the last second: non-idle share of jiffies in /proc/stat
# (fields user nice system idle iowait irq softirq steal; guest time is already in user).
cpu_busy() {
  local a b
  a=$(head -1 /proc/stat); sleep 1; b=$(head -1 /proc/stat)
  echo "$a" "$b" | awk '{ n = (NF - 2) / 2; for (i = 2; i <= 9; i++) { d = $(i + n + 1) - $i; t += d; if (i == 5 || i == 6) idle += d }
                          printf "%.0f", t ? 100 * (t - idle) / t : 0 }'
}
busy=$(cpu_busy)

echo "# $(date -Is) on $(hostname): nproc $(nproc), CPUs ${busy}% busy before start," \
     "median of $RUNS runs, out-of-place busbw"
((busy < 20)) || echo "# WARNING: host already busy; busy-polling libraries will look slow and numbers will be noisy"
echo "#   xccl:     $XCCL <collective> --np <N> ${SWEEP[*]} -c 0 -d float -o sum   (xccl reg: the same with -R 1)"
echo "#   Gloo:     $GLOO --collective <collective> --np <N> ${SWEEP[*]}"
echo "#   Open MPI: ${MPIRUN[*]:1} -np <N> $MPI --collective <collective> ${SWEEP[*]}"
if [[ " ${BINS[*]} " == *" $CEIL "* ]]; then
  echo "#   ceiling:  $CEIL --np <N> --collective <collective> ${SWEEP[*]}   (all_reduce, all_gather, alltoall; shared:" \
       "buffers in one shared mapping, private: the same with --private, malloc'd buffers)"
fi

for ((r = 1; r <= RUNS; r++)); do
  for n in $NPS; do
    for coll in $COLLECTIVES; do
      echo "run $r/$RUNS: $coll np=$n" >&2
      run xccl "$n" "$coll" "$XCCL" "$coll" --np "$n" "${SWEEP[@]}" -c 0 -d float -o sum
      run xreg "$n" "$coll" "$XCCL" "$coll" --np "$n" "${SWEEP[@]}" -c 0 -d float -o sum -R 1
      run gloo "$n" "$coll" "$GLOO" --collective "$coll" --np "$n" "${SWEEP[@]}"
      run mpi "$n" "$coll" "${MPIRUN[@]}" -np "$n" "$MPI" --collective "$coll" "${SWEEP[@]}"
      if with_ceiling "$coll"; then  # memory_ceiling prints size, time, algbw, busbw
        COLS="1 2 4" run ceil "$n" "$coll" "$CEIL" --np "$n" --collective "$coll" "${SWEEP[@]}"
        COLS="1 2 4" run ceilp "$n" "$coll" "$CEIL" --np "$n" --collective "$coll" --private "${SWEEP[@]}"
      fi
    done
  done
done

# Median time and busbw per (lib, N, collective, size), then one table per (collective, N).
awk -v nps="$NPS" -v colls="$COLLECTIVES" '
  function median(list,   v, k, i, j, t) {
    k = split(list, v, " ")
    for (i = 2; i <= k; i++)  # insertion sort: a handful of runs
      for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
    return k % 2 ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2
  }
  function human(b) {
    return b >= 2^30 ? b / 2^30 " GiB" : b >= 2^20 ? b / 2^20 " MiB" : b >= 2^10 ? b / 2^10 " KiB" : b " B"
  }
  function bw(key) { return key in bus ? sprintf("%.2f", median(bus[key])) : "-" }
  # busbw ratio = inverse time ratio (same size and bus factor); times have more digits than busbw.
  function ratio(x, o) { return (x in time) && (o in time) ? sprintf("%.2fx", median(time[o]) / median(time[x])) : "n/a" }
  # How close x gets to the ceiling c: busbw share, over 100% if x beat it.
  function pct(x, c) { return (x in time) && (c in time) ? sprintf("%.0f%%", 100 * median(time[c]) / median(time[x])) : "n/a" }
  {
    key = $1 SUBSEP $2 SUBSEP $3 SUBSEP $4
    time[key] = time[key] " " $5; bus[key] = bus[key] " " $6
    if (!(($2, $3, $4) in seen)) { seen[$2, $3, $4] = 1; sizes[$2, $3] = sizes[$2, $3] " " $4 }
  }
  END {
    nc = split(colls, cl, " "); nn = split(nps, nl, " ")
    for (c = 1; c <= nc; c++) for (m = 1; m <= nn; m++) {
      coll = cl[c]; n = nl[m]
      ns = split(sizes[n, coll], sz, " ")
      for (i = 2; i <= ns; i++) for (j = i; j > 1 && sz[j - 1] + 0 > sz[j] + 0; j--) { t = sz[j]; sz[j] = sz[j - 1]; sz[j - 1] = t }
      ceil = coll == "all_reduce" || coll == "all_gather" || coll == "alltoall"  # those with measured ceilings
      printf "\n### %s, %d ranks (busbw GB/s)\n\n", coll, n
      print "| size | xccl | xccl reg | Gloo | Open MPI |" (ceil ? " ceiling (shared) | ceiling (private) |" : "") \
            " xccl/Gloo | xccl/MPI | xccl reg/Gloo | xccl reg/MPI |" \
            (ceil ? " xccl % of ceiling (shared) | MPI % of ceiling (shared) |" \
                    " xccl % of ceiling (private) | MPI % of ceiling (private) | ceiling (private)/MPI |" : "")
      print "|---:|---:|---:|---:|---:|---:|---:|---:|---:|" (ceil ? "---:|---:|---:|---:|---:|---:|---:|" : "")
      for (i = 1; i <= ns; i++) {
        x = "xccl" SUBSEP n SUBSEP coll SUBSEP sz[i]
        g = "gloo" SUBSEP n SUBSEP coll SUBSEP sz[i]
        p = "mpi" SUBSEP n SUBSEP coll SUBSEP sz[i]
        R = "xreg" SUBSEP n SUBSEP coll SUBSEP sz[i]
        C = "ceil" SUBSEP n SUBSEP coll SUBSEP sz[i]
        P = "ceilp" SUBSEP n SUBSEP coll SUBSEP sz[i]
        printf "| %s | %s | %s | %s | %s |%s %s | %s | %s | %s |%s\n", human(sz[i]), bw(x), bw(R), bw(g), bw(p),
               ceil ? " " bw(C) " | " bw(P) " |" : "", ratio(x, g), ratio(x, p), ratio(R, g), ratio(R, p),
               ceil ? " " pct(x, C) " | " pct(p, C) " | " pct(x, P) " | " pct(p, P) " | " ratio(P, p) " |" : ""
      }
      lat = ""
      split("xccl xreg gloo mpi ceil ceilp", libs, " ")
      split("xccl xccl_reg Gloo Open_MPI ceiling_(shared) ceiling_(private)", names, " ")
      for (l = 1; l <= (ceil ? 6 : 4); l++) {
        key = libs[l] SUBSEP n SUBSEP coll SUBSEP sz[1]
        lat = lat sprintf("%s%s %s", l > 1 ? ", " : "", names[l], key in time ? sprintf("%.1f", median(time[key])) : "-")
      }
      gsub("_", " ", lat)
      printf "\nLatency at %s (median time, us): %s\n", human(sz[1]), lat
    }
  }' "$RESULTS"

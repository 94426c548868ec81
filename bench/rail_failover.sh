#!/usr/bin/env bash
# rail_failover.sh: time to recover from a rail cut, and throughput before, during and
# after it, on the emulated cluster (`xm testbed`: 4 hosts × 2 rails at 400 Mbit/s).
#
# Each trial starts a 16 MiB collective loop (xccl-perf), cuts host 1's NIC 0 at a random
# moment 1-6 s into it, restores it 5 s later, and samples host 1's per-NIC byte counters
# every 20 ms throughout (bench/rail_counters.py). Prints a Markdown table of the trials
# with median and max (stall: the longest quiet stretch on the surviving NIC; recovered:
# from the cut to the end of it), checks every collective of every run exact (xccl-perf
# -c: each iteration checked), and plots the first
# trial's per-rail rate against time (gnuplot: $OUT/rail_failover_<coll>_<mode>.svg).
#
# Needs root. Build first (xm, xccl-perf). Knobs (env): TRIALS=5 COLLS="all_reduce"
# MODES="all" (all: one rank per host on both NICs; own+spare: two per host on their own
# NIC, the other as spare, hierarchical algorithms) RATE=400mbit NAME=rf
# BUILD_DIR=build/default OUT=bench/results ITERS= (default: enough iterations for about
# 14 s of collectives on this testbed, so every cut and restore falls inside the loop)
# LOG=WARN (XCCL_DEBUG for the ranks; each trial's log is kept as $OUT/rail_failover_*.log)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build/default}
TRIALS=${TRIALS:-5}
COLLS=${COLLS:-all_reduce}
MODES=${MODES:-all}
RATE=${RATE:-400mbit}
NAME=${NAME:-rf}
OUT=${OUT:-$ROOT/bench/results}
ITERS=${ITERS:-}
LOG=${LOG:-WARN}
XM=$BUILD_DIR/src/xm
PERF=$BUILD_DIR/tools/xccl-perf
COUNTERS=$ROOT/bench/rail_counters.py
. "$ROOT/bench/rail_modes.sh"
for b in "$XM" "$PERF"; do [ -x "$b" ] || { echo "rail_failover: $b not built" >&2; exit 2; }; done
[ "$(id -u)" = 0 ] || { echo "rail_failover: needs root (network namespaces)" >&2; exit 2; }
mkdir -p "$OUT"
work=$(mktemp -d)
sampler=""
cleanup() {
  [ -n "$sampler" ] && kill "$sampler" 2>/dev/null || true
  "$XM" testbed down --name "$NAME" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

"$XM" testbed up --name "$NAME" --hosts 4 --rails 2 --rate "$RATE" --replace >/dev/null
now() { date +%s.%N; }


for mode in $MODES; do
  for coll in $COLLS; do
    rail_mode "$mode" "$coll"
    iters=$ITERS
    if [ -z "$iters" ]; then  # measured seconds per iteration (out-of-place + in-place) here
      case "$coll/$k" in
        all_reduce/1) iters=24 ;; all_gather/1) iters=100 ;; reduce_scatter/1) iters=50 ;; alltoall/1) iters=50 ;;
        all_reduce/2) iters=20 ;; all_gather/2) iters=40 ;; reduce_scatter/2) iters=48 ;; *) iters=22 ;;
      esac
    fi
    echo "### $coll, $mode ($k rank(s) per host), $TRIALS trials"
    echo
    echo "| trial | cut after (s) | stall (ms) | recovered (ms) | failback (s) | before (MB/s) | during (MB/s) | after (MB/s) | exact |"
    echo "|---|---|---|---|---|---|---|---|---|"
    : >"$work/figures"
    for trial in $(seq 1 "$TRIALS"); do
      csv=$work/$coll-$mode-$trial.csv
      ip netns exec "xm-$NAME-h1" python3 "$COUNTERS" sample --every 0.02 --out "$csv" &
      sampler=$!
      start=$(now)
      env XCCL_DEBUG="$LOG" "$XM" testbed run --name "$NAME" --timeout 300 -k $k --rails "$mode" -- \
        env $env_algo "$PERF" "$coll" -b 16M -e 16M -n 1 -w 0 -c "$iters" >"$work/job.log" 2>&1 &
      job=$!
      # Into the collective loop: init and the warm-up take about 2.5 s here.
      delay=$(awk -v s="$RANDOM" 'BEGIN {srand(s); printf "%.2f", 2.5 + 1 + 5 * rand()}')
      sleep "$delay"
      cut=$(now)
      "$XM" testbed fault --name "$NAME" --link h1/nic0 --down >/dev/null
      sleep 5
      restore=$(now)
      "$XM" testbed fault --name "$NAME" --link h1/nic0 --up >/dev/null
      rc=0
      wait $job || rc=$?
      kill "$sampler" 2>/dev/null || true
      wait "$sampler" 2>/dev/null || true
      sampler=""
      exact=no
      [ $rc = 0 ] && grep -q "Out of bounds values : 0 OK" "$work/job.log" && exact=yes
      [ $exact = yes ] || { echo "trial $trial failed (rc $rc):" >&2; tail -5 "$work/job.log" >&2; }
      cp "$work/job.log" "$OUT/rail_failover_${coll}_${mode}_$trial.log"
      fig=$(python3 "$COUNTERS" analyze "$csv" --cut "$cut" --restore "$restore")
      eval "$fig"
      echo "$stall_ms $failback_s $before_MBps $during_MBps $after_MBps $exact $recover_ms" >>"$work/figures"
      printf '| %d | %.1f | %s | %s | %s | %s | %s | %s | %s |\n' "$trial" "$(awk -v a="$cut" -v b="$start" 'BEGIN{print a-b-2.5}')" \
        "$stall_ms" "$recover_ms" "$failback_s" "$before_MBps" "$during_MBps" "$after_MBps" "$exact"
      if [ "$trial" = 1 ]; then cp "$csv" "$OUT/rail_failover_${coll}_${mode}.csv"; echo "$cut $restore" >"$work/first_times"; fi
    done
    printf '| median / max | | %s | %s | %s | %s | %s | %s | %s of %s |\n' \
      "$(cut -d' ' -f1 "$work/figures" | median_max)" "$(cut -d' ' -f7 "$work/figures" | median_max)" "$(cut -d' ' -f2 "$work/figures" | median_max)" \
      "$(cut -d' ' -f3 "$work/figures" | median_max)" "$(cut -d' ' -f4 "$work/figures" | median_max)" \
      "$(cut -d' ' -f5 "$work/figures" | median_max)" "$(grep -c yes "$work/figures" || true)" "$TRIALS"
    echo
    if command -v gnuplot >/dev/null; then
      read -r c r <"$work/first_times"
      src=$OUT/rail_failover_${coll}_${mode}.csv plot=$OUT/rail_failover_${coll}_${mode}.svg
      awk -v c="$c" 'NR==1 {next} NR>2 {dt=$1-t; if (dt>0) printf "%.3f %.2f %.2f\n", $1-c, ($2-a)/dt/1e6, ($3-b)/dt/1e6} {t=$1; a=$2; b=$3}' \
        "$src" >"$work/plot.dat"
      gnuplot <<GP && echo "plot: $plot" >&2
set terminal svg size 800,360 font "sans,11"
set output "$plot"
set title "host 1, $coll, $mode: per-rail bytes through a cut of nic0 (t=0) and its restore" noenhanced
set xlabel "seconds from the cut"
set ylabel "MB/s (tx + rx)"
set arrow from 0, graph 0 to 0, graph 1 nohead dt 2
set arrow from $(awk -v a="$r" -v b="$c" 'BEGIN{print a-b}'), graph 0 to $(awk -v a="$r" -v b="$c" 'BEGIN{print a-b}'), graph 1 nohead dt 2
set key top left
plot "$work/plot.dat" using 1:2 with lines title "rail 0 (nic0, cut)", "$work/plot.dat" using 1:3 with lines title "rail 1 (nic1)"
GP
    fi
  done
done

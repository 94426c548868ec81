#!/usr/bin/env bash
# The fabric simulator's speed, as docs/performance.md reports it:
#  1. sim_bench's fixed scenarios, each in its own process (clean peak memory), `runs`
#     times; medians of events/s, simulated ms per wall second and peak RSS;
#  2. the standard experiment (examples/sim/websearch-{30,50}.yaml: 0.01 s of traffic on
#     the 320-host fat-tree) once per algorithm, wall time from its summary.csv.
# Usage: bench/sim_speed.sh [runs=3] [--no-standard]. Build first:
#   cmake --build build/default --target sim_bench xm
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
build=build/default
echo "# $(date -Is) on $(hostname): nproc $(nproc), load $(cut -d' ' -f1-3 /proc/loadavg), median of $runs runs"
echo "| scenario | events (M) | events/s (M) | simulated ms per wall s | peak RSS (MiB) |"
echo "|---|---:|---:|---:|---:|"
for bm in FatTree320_WebSearch30_1ms_Hpcc FatTree320_WebSearch50_1ms_Dcqcn Rail256_WebSearch90_05ms_Tita Incast16_None; do
  for _ in $(seq "$runs"); do
    "$build/bench/sim_bench" --benchmark_filter="$bm" --benchmark_format=json 2>/dev/null
  done | python3 -c '
import json, sys, statistics
text = sys.stdin.read().replace("}\n{", "}\n\x00{")
runs = [json.loads(t)["benchmarks"][0] for t in text.split("\x00") if t.strip()]
med = lambda k: statistics.median(r[k] for r in runs)
print("| %s | %.1f | %.2f | %.2f | %.0f |" % (runs[0]["name"].split("/")[0][3:], med("Mevents"),
      med("events_per_s") / 1e6, med("sim_ms_per_wall_s"), med("peak_rss_MiB")))'
done
[[ "${2:-}" == "--no-standard" ]] && exit 0
echo
echo "| standard experiment | algorithm | flows | wall s | events/s (M) | simulated ms |"
echo "|---|---|---:|---:|---:|---:|"
for load in 30 50; do
  out=$(mktemp -d)
  "$build/src/xm" sim run "examples/sim/websearch-$load.yaml" -q -o "$out" > /dev/null 2>&1
  python3 - "$out/summary.csv" "$load" <<'PY'
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    print("| WebSearch %s %% | %s | %s | %.1f | %.2f | %.2f |" % (sys.argv[2], r["cc"], r["finished"], float(r["wall_s"]),
          float(r["events_per_s"]) / 1e6, float(r["sim_s"]) * 1e3))
PY
  rm -rf "$out"
done

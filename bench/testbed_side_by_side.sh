#!/usr/bin/env bash
# testbed_side_by_side.sh: xccl, Gloo and Open MPI (TCP) on an emulated multi-rail
# cluster — `xm testbed`, 4 hosts × 2 rails, every NIC shaped to 400 Mbit/s — in one run:
#
#   A. 4 hosts × 1 rank, each rank on both NICs (XCCL_RAILS = both): all_reduce, alltoall
#   B. 4 hosts × 2 ranks, local rank l on NIC l only: all_reduce (xccl's tuner, and forced
#      ring and hierarchical); alltoall with every ToR-spine link thinned to THIN_SPINE (two per rail)
#      (xccl's tuner, forced pairwise and pxn)
#
# For every run it reads the NIC and spine byte counters (`xm testbed status --json`)
# before and after, so rail affinity shows as spine bytes. Prints Markdown tables of the
# median busbw (MB/s, computed from the median time), efficiency and ratios, writes
# $OUT/testbed.csv and, with gnuplot, $OUT/testbed_all_reduce.svg (busbw against size).
#
# Efficiency: busbw / (NICs per rank × line rate) in A. In B the ranks of a host share
# its NICs, so it is host busbw / (NICs per host × line rate), host busbw being the
# algorithm bandwidth × 2(H−1)/H (all_reduce) or × (H−1)/H (alltoall) over H hosts.
#
# Needs root (network namespaces). Build first: xm, xccl-perf, gloo_perf, mpi_perf.
# Knobs (env): SIZES_MIN=1M SIZES_MAX=64M FACTOR=4 ITERS=3 WARMUP=1 RUNS=3 RATE=400mbit
#              THIN_SPINE=100mbit NAME=sbs BUILD_DIR=build/default OUT=bench/results
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build/default}
SIZES_MIN=${SIZES_MIN:-1M}
SIZES_MAX=${SIZES_MAX:-64M}
FACTOR=${FACTOR:-4}
ITERS=${ITERS:-3}
WARMUP=${WARMUP:-1}
RUNS=${RUNS:-3}
RATE=${RATE:-400mbit}
THIN_SPINE=${THIN_SPINE:-100mbit}
NAME=${NAME:-sbs}
OUT=${OUT:-$ROOT/bench/results}
HOSTS=4
RAILS=2

XM=$BUILD_DIR/src/xm
XCCL=$BUILD_DIR/tools/xccl-perf
GLOO=$BUILD_DIR/bench/gloo_perf
MPI=$BUILD_DIR/bench/mpi_perf

die() { echo "testbed_side_by_side.sh: $*" >&2; exit 1; }
[[ $(id -u) -eq 0 ]] || die "needs root (network namespaces)"
for bin in "$XM" "$XCCL" "$GLOO" "$MPI"; do
  [[ -x $bin ]] || die "missing $bin (build it: cmake --build --preset default)"
done
command -v mpirun >/dev/null || die "mpirun not found (apt-get install openmpi-bin)"

WORK=$(mktemp -d)
cleanup() { "$XM" testbed down --name "$NAME" >/dev/null 2>&1 || true; rm -rf "$WORK"; }
trap cleanup EXIT
mkdir -p "$OUT"
RESULTS=$WORK/results  # lines: config lib collective size time_us spine_bytes nic_bytes

# mpirun reaches the hosts with this "remote shell": a host is a namespace. Open MPI
# names its shared-memory files after the host name, the same in every namespace here,
# so each namespace gets its own directory for them.
cat >"$WORK/nsagent.sh" <<'EOF'
#!/bin/sh
ns="$1"; shift
mkdir -p "/tmp/xm-vader-$ns"
exec ip netns exec "$ns" env OMPI_MCA_btl_vader_backing_directory="/tmp/xm-vader-$ns" sh -c "$*"
EOF
chmod +x "$WORK/nsagent.sh"

"$XM" testbed up --name "$NAME" --hosts "$HOSTS" --rails "$RAILS" --rate "$RATE" --replace >/dev/null
RATE_BPS=$("$XM" testbed status --name "$NAME" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["hosts"][0]["nics"][0]["rate_bps"])')
# Each ToR-spine link's own rate (non-blocking: the ToR's NICs over its uplinks), to restore after thinning.
LINK_BPS=$("$XM" testbed status --name "$NAME" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["spine"]["links"][0]["rate_bps"])')

counters() {  # prints "spine_bytes nic_bytes" (transmitted, summed)
  "$XM" testbed status --name "$NAME" --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(sum(l["tx_bytes"] for l in d["spine"]["links"]), sum(n["tx_bytes"] for h in d["hosts"] for n in h["nics"]))'
}

SWEEP=(-b "$SIZES_MIN" -e "$SIZES_MAX" -f "$FACTOR" -n "$ITERS" -w "$WARMUP")

# run CONFIG LIB COLL K RAILS_MODE [ENV=VALUE...]: one sweep; appends its rows.
run() {
  local config=$1 lib=$2 coll=$3 k=$4 mode=$5
  shift 5
  local before after cmd attempt
  case $lib in
    gloo)
      rm -rf "$WORK/store" && mkdir "$WORK/store"
      cmd=("$XM" testbed run --name "$NAME" --ranks-per-host "$k" --rails "$mode" -- sh -c
           "exec $GLOO --collective $coll ${SWEEP[*]} --addr \${XCCL_RAILS%%@*} --store $WORK/store") ;;
    mpi)
      local hostlist="" h
      for ((h = 0; h < HOSTS; h++)); do hostlist+="${hostlist:+,}xm-$NAME-h$h:$k"; done
      cmd=(ip netns exec "xm-$NAME-h0" mpirun --allow-run-as-root --oversubscribe --bind-to none --host "$hostlist"
           -np $((HOSTS * k)) --mca plm_rsh_agent "$WORK/nsagent.sh" --mca routed direct
           --mca btl self,vader,tcp --mca btl_tcp_if_include nic0,nic1 --mca oob_tcp_if_include nic0
           "$MPI" --collective "$coll" "${SWEEP[@]}") ;;
    *)  # xccl, xccl:<algorithm>
      local algo=${lib#xccl}
      algo=${algo#:}
      cmd=("$XM" testbed run --name "$NAME" --ranks-per-host "$k" --rails "$mode" -- env ${algo:+XCCL_ALGO=$coll:$algo}
           XCCL_DEBUG=INFO XCCL_DEBUG_SUBSYS=COLL "$XCCL" "$coll" "${SWEEP[@]}" -c 1) ;;
  esac
  # Open MPI's launcher now and then fails to reach a daemon in a namespace ("ORTE does
  # not know how to route a message"): a peer's start-up flake, not a result. Once more.
  for attempt in 1 2; do
    before=$(counters)
    "${cmd[@]}" >"$WORK/out" 2>"$WORK/err" && break
    [[ $lib == mpi && $attempt == 1 ]] && continue
    tail -n 20 "$WORK/out" "$WORK/err" >&2
    die "failed: ${cmd[*]}"
  done
  after=$(counters)
  read -r s0 n0 <<<"$before"
  read -r s1 n1 <<<"$after"
  awk -v c="$config" -v lib="$lib" -v coll="$coll" -v sp=$((s1 - s0)) -v nic=$((n1 - n0)) \
    '/^ +[0-9]/ { print c, lib, coll, $1, $6, sp, nic; rows++ } END { exit rows ? 0 : 1 }' "$WORK/out" >>"$RESULTS" ||
    die "no data rows from: ${cmd[*]}"
  if [[ $lib == xccl ]]; then  # what the tuner chose, per size (rank 0's log, float calls)
    grep -E ":0 \[xccl\] INFO COLL $coll count [0-9]+ float: algorithm" "$WORK/err" |
      sed -E 's/.* count ([0-9]+) float: algorithm ([a-z-]+),.*/\1 \2/' | sort -u |
      awk -v c="$config" -v coll="$coll" -v n=$((HOSTS * k)) \
        '{ size = $1 * 4 * (coll == "alltoall" ? n : 1); print c, coll, size, $2 }' >>"$WORK/chosen"
  fi
}

# What xccl's start-up calibration alone puts on the spine (the tuner's cross-rail
# measurement): a communicator that runs one 8-byte all-reduce.
calib_before=$(counters)
"$XM" testbed run --name "$NAME" --ranks-per-host 2 --rails own -- "$XCCL" all_reduce -b 8 -e 8 -n 1 -w 0 -c 0 >/dev/null
calib_after=$(counters)
read -r cs0 _ <<<"$calib_before"
read -r cs1 _ <<<"$calib_after"
echo "$((cs1 - cs0))" >"$WORK/calibration"

for ((run_no = 1; run_no <= RUNS; run_no++)); do
  echo "run $run_no/$RUNS: A (4 hosts × 1 rank × 2 rails)" >&2
  for coll in all_reduce alltoall; do
    for lib in xccl gloo mpi; do run A "$lib" "$coll" 1 all; done
  done
  echo "run $run_no/$RUNS: B (4 hosts × 2 ranks × 2 rails)" >&2
  for lib in xccl xccl:ring xccl:hierarchical gloo mpi; do run B "$lib" all_reduce 2 own; done
  for ((r = 0; r < RAILS; r++)); do "$XM" testbed fault --name "$NAME" --spine "$r" --rate "$THIN_SPINE" >/dev/null; done
  for lib in xccl xccl:pairwise xccl:pxn gloo mpi; do run B-thin "$lib" alltoall 2 own; done
  for ((r = 0; r < RAILS; r++)); do
    "$XM" testbed fault --name "$NAME" --spine "$r" --rate "${LINK_BPS}bit" >/dev/null
  done
done

python3 - "$RESULTS" "$WORK/chosen" "$OUT" "$RATE_BPS" "$HOSTS" "$RAILS" "$THIN_SPINE" "$(cat "$WORK/calibration")" <<'EOF'
import collections, statistics, sys
results, chosen_file, out, rate_bps, H, R, thin, calibration = sys.argv[1:9]
print(f"xccl start-up calibration (4 hosts × 2 ranks) puts {int(calibration) / 1e6:.1f} MB on the spine; "
      "it is part of every xccl sweep of configuration B below.")
rate, H, R = int(rate_bps) / 8 / 1e6, int(H), int(R)  # MB/s per NIC
times, spine, nic = collections.defaultdict(list), collections.defaultdict(list), collections.defaultdict(list)
for line in open(results):
    c, lib, coll, size, t, sp, n = line.split()
    times[c, lib, coll, int(size)].append(float(t))
    spine[c, lib, coll].append(int(sp))
    nic[c, lib, coll].append(int(n))
chosen = collections.defaultdict(set)
for line in open(chosen_file):
    c, coll, size, algo = line.split()
    chosen[c, coll, int(size)].add(algo)
k_of = {"A": 1, "B": 2, "B-thin": 2}

def busbw(c, coll, size, t):
    n = H * k_of[c]
    factor = 2 * (n - 1) / n if coll == "all_reduce" else (n - 1) / n
    return size / t * factor  # bytes/us = MB/s

def efficiency(c, coll, size, t):
    if k_of[c] == 1:
        return busbw(c, coll, size, t) / (R * rate)
    factor = 2 * (H - 1) / H if coll == "all_reduce" else (H - 1) / H
    return size / t * factor / (R * rate)

titles = {"A": "4 hosts × 1 rank × 2 rails (each rank on both NICs)",
          "B": "4 hosts × 2 ranks × 2 rails (local rank l on NIC l)",
          "B-thin": f"4 hosts × 2 ranks × 2 rails, every ToR-spine link thinned to {thin} (two spines)"}
csv = open(f"{out}/testbed.csv", "w")
csv.write("config,library,collective,size,time_us,busbw_MBps,efficiency\n")
for (c, coll) in [("A", "all_reduce"), ("A", "alltoall"), ("B", "all_reduce"), ("B-thin", "alltoall")]:
    libs = [l for l in ["xccl", "xccl:ring", "xccl:hierarchical", "xccl:pairwise", "xccl:pxn", "gloo", "mpi"]
            if (c, l, coll) in spine]
    sizes = sorted({s for (cc, l, co, s) in times if cc == c and co == coll})
    print(f"\n### {coll}, {titles[c]}, line rate {rate:.0f} MB/s per NIC\n")
    print("median busbw in MB/s (efficiency)\n")
    print("| size | " + " | ".join(libs) + " | xccl tuner chose | xccl/Gloo | xccl/MPI |")
    print("|---:|" + "---:|" * len(libs) + "---|---:|---:|")
    for s in sizes:
        med = {l: statistics.median(times[c, l, coll, s]) for l in libs if (c, l, coll, s) in times}
        cells = []
        for l in libs:
            if l not in med: cells.append("-"); continue
            b, e = busbw(c, coll, s, med[l]), efficiency(c, coll, s, med[l])
            cells.append(f"{b:.1f} ({100 * e:.0f} %)")
            csv.write(f"{c},{l},{coll},{s},{med[l]:.1f},{b:.2f},{e:.4f}\n")
        ratio = lambda p: f"{med[p] / med['xccl']:.2f}x" if p in med and "xccl" in med else "-"
        pick = ",".join(sorted(chosen.get((c, coll, s), []))) or "-"
        print(f"| {s >> 20} MiB | " + " | ".join(cells) + f" | {pick} | {ratio('gloo')} | {ratio('mpi')} |")
    print("\nbytes through the spine per sweep (median), and as a share of all NIC bytes:\n")
    for l in libs:
        sp, n = statistics.median(spine[c, l, coll]), statistics.median(nic[c, l, coll])
        print(f"- {l}: {sp / 1e6:.1f} MB of {n / 1e6:.1f} MB ({100 * sp / max(n, 1):.1f} %)")
csv.close()
EOF

if command -v gnuplot >/dev/null; then
  for spec in "A all_reduce" "B all_reduce" "B-thin alltoall"; do
    read -r c coll <<<"$spec"
    plot="$OUT/testbed_${c}_${coll}.svg"
    series=$(awk -F, -v c="$c" -v coll="$coll" 'NR > 1 && $1 == c && $3 == coll { print $2 }' "$OUT/testbed.csv" | sort -u)
    {
      echo "set terminal svg size 720,420 dynamic background rgb 'white'"
      echo "set output '$plot'"
      echo "set title '$coll, config $c (4 hosts, 2 rails, $RATE per NIC)'"
      echo "set logscale x 2; set xlabel 'size (MiB)'; set ylabel 'busbw (MB/s)'; set key left top; set grid"
      echo "set datafile separator ','"
      printf "plot "
      sep=""
      for s in $series; do
        printf "%s'< grep \"^%s,%s,%s,\" %s' using (\$4/1048576):6 with linespoints title '%s'" \
          "$sep" "$c" "$s" "$coll" "$OUT/testbed.csv" "$s"
        sep=", "
      done
      echo
    } | gnuplot && echo "plot: $plot" >&2
  done
fi

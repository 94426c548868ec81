#!/usr/bin/env bash
# xm sim against ns-3, side by side in one run, on the same workload: the scenario's
# fabric and flows are exported as HPCC simulator files (`xm sim hpcc-topology`,
# `xm sim hpcc-flows`) and run by bench/peers/ns3_fabric.cc (what it models and what it
# leaves out: the head of that file). Runs alternate xm, ns-3, xm, ... so drift in the
# machine's speed hits both; the table has the medians.
#
# The unit of work both do is the same: every data packet crosses the same number of
# links (shortest paths only) and is answered by one ACK, so data packets delivered and
# packet-hops (data packets x links on their path) per wall second compare like with like.
# Simulated time and median FCT show the two model the same traffic (they should agree
# within a few per cent: xm's NIC sends its ACKs ahead of its data, ns-3's queue is FIFO).
# Wall time is each simulator's run loop only (setup excluded on both sides); the
# process column is the whole command, setup and output included.
#
# Usage: bench/sim_vs_ns3.sh [runs=3] [scenario=examples/sim/permutation-ns3.yaml]
# Build first (BUILD, default build/default): cmake --build $BUILD --target xm ns3_fabric
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
scenario=${2:-examples/sim/permutation-ns3.yaml}
build=${BUILD:-build/default}
[[ -x "$build/bench/ns3_fabric" ]] || { echo "no $build/bench/ns3_fabric: install libns3-dev, re-run cmake, build it" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The scenario's fabric: a cluster spec to export, or an HPCC topology file already.
read -r kind file < <(sed -nE 's/^topology: *\{ *(spec|hpcc): *([^ }]+) *\}.*/\1 \2/p' "$scenario") ||
  { echo "$scenario: no line \"topology: {spec: ...}\" or \"topology: {hpcc: ...}\"" >&2; exit 2; }
[[ "$file" == /* ]] || file="$(dirname "$scenario")/$file"
if [[ "$kind" == spec ]]; then "$build/src/xm" sim hpcc-topology "$file" -o "$work/topology.txt"
else cp "$file" "$work/topology.txt"; fi
"$build/src/xm" sim hpcc-flows "$scenario" -o "$work/flows.txt"

echo "# $(date -Is) on $(hostname): nproc $(nproc), load $(cut -d' ' -f1-3 /proc/loadavg), median of $runs runs"
echo "# $scenario: $(head -1 "$work/topology.txt" | awk '{print $1-$2 " hosts, " $2 " switches, " $3 " links"}'), $(head -1 "$work/flows.txt") flows"
python3 - "$build" "$scenario" "$work" "$runs" <<'PY'
import json, statistics, subprocess, sys, time
from collections import deque
build, scenario, work, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])

# Links on a shortest path for each flow (what every packet of it crosses), from the files.
head, *rest = open(f"{work}/topology.txt").read().split("\n")
n = int(head.split()[0])
adj = [[] for _ in range(n)]
for line in rest[1:]:
    if line.strip():
        a, b = map(int, line.split()[:2])
        adj[a].append(b), adj[b].append(a)
def hops(src, dst):
    d = {src: 0}; todo = deque([src])
    while todo:
        u = todo.popleft()
        for v in adj[u]:
            if v not in d: d[v] = d[u] + 1; todo.append(v)
    return d[dst]
flows = [l.split() for l in open(f"{work}/flows.txt").read().split("\n")[1:] if l.strip()]
mtu = 1000  # the scenario's; ns3_fabric's default, checked below through the packet counts
packets = [-(-int(f[4]) // mtu) for f in flows]
hops_per_packet = sum(p * hops(int(f[0]), int(f[1])) for p, f in zip(packets, flows)) / sum(packets)

def timed(cmd):
    t0 = time.monotonic()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return out, time.monotonic() - t0

xm, ns3 = [], []
for i in range(runs):
    _, process = timed([f"{build}/src/xm", "sim", "run", scenario, "-q", "-o", f"{work}/xm"])
    r = json.load(open(f"{work}/xm/results.json"))[0]
    assert r["finished"] == r["flows"] and r["drops"]["data_packets"] == 0 and r["pfc"]["pause_frames"] == 0, r
    xm.append(dict(sim_ms=r["speed"]["sim_seconds"] * 1e3, wall=r["speed"]["wall_seconds"], process=process,
                   packets=r["packets"]["data_delivered"], events=r["speed"]["events"],
                   rss=r["speed"]["peak_rss_kb"] / 1024,
                   fct_us=statistics.median(int(l.split()[6]) / 1e3 for l in open(f"{work}/xm/{r['cc']}/fct.txt"))))
    out, process = timed([f"{build}/bench/ns3_fabric", f"{work}/topology.txt", f"{work}/flows.txt"])
    r = json.loads(out)
    assert r["flows_done"] == r["flows"] and r["send_errors"] == 0, r
    assert abs(r["hops_per_packet"] - hops_per_packet) < 1e-3, (r["hops_per_packet"], hops_per_packet)
    label = f'{r["simulator"]} ({r["build_profile"]})'
    ns3.append(dict(sim_ms=r["sim_ms"], wall=r["wall_s"], process=process, packets=r["data_packets_delivered"],
                    events=r["events"], rss=r["peak_rss_mib"], fct_us=r["fct_p50_us"]))
    print(f"# run {i + 1}: xm {xm[-1]['wall']:.2f} s, ns-3 {ns3[-1]['wall']:.2f} s", file=sys.stderr, flush=True)
assert xm[0]["packets"] == ns3[0]["packets"] == sum(packets), (xm[0]["packets"], ns3[0]["packets"], sum(packets))

med = lambda rows, k: statistics.median(r[k] for r in rows)
print(f"# every data packet crosses {hops_per_packet:.3f} links on average; one ACK per data packet in both")
print("| simulator | simulated ms | median FCT us | wall s | process wall s | data packets delivered | packet-hops (M) "
      "| wall s per simulated ms | data packets per wall s (k) | packet-hops per wall s (k) | events (M) | peak RSS (MiB) |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for name, rows in (("xm sim", xm), (label, ns3)):
    wall, sim_ms, pk = med(rows, "wall"), med(rows, "sim_ms"), med(rows, "packets")
    print(f"| {name} | {sim_ms:.4f} | {med(rows, 'fct_us'):.1f} | {wall:.2f} | {med(rows, 'process'):.2f} | {pk:,} | {pk * hops_per_packet / 1e6:.2f} "
          f"| {wall / sim_ms:.2f} | {pk / wall / 1e3:,.1f} | {pk * hops_per_packet / wall / 1e3:,.1f} "
          f"| {med(rows, 'events') / 1e6:.1f} | {med(rows, 'rss'):.0f} |")
print(f"\nns-3 wall / xm wall: {med(ns3, 'wall') / med(xm, 'wall'):.1f}x (run loop), "
      f"{med(ns3, 'process') / med(xm, 'process'):.1f}x (whole process). "
      "Events are not comparable units: an ns-3 event is one step of one packet at one layer.")
PY

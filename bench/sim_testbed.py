#!/usr/bin/env python3
"""The simulator's prediction of xccl on the testbed, against what xccl measured there.

The testbed (`xm testbed`, docs/testbed.md): 4 hosts x 2 NICs shaped to 400 Mbit/s by
tc tbf, MTU 9000, each rail's ToR with one link to each of 2 spines (800 Mbit/s: the
NICs' rate over the uplinks; B-thin: 100 Mbit/s). The same cluster as a spec, run by
the flow-level engine: TCP taken as an ideal fair share of each link, with its headers
(52 bytes of IP and TCP plus 14 of Ethernet per 8948-byte segment, tbf counting what the
kernel hands it) and a delayed ACK per 2 segments; shared memory as a 40 Gbit/s
intra-server fabric. Each measured series of docs/img/testbed.csv (medians of
bench/testbed_side_by_side.sh) is replayed with the algorithm xccl ran.

  python3 bench/sim_testbed.py [--measured docs/img/testbed.csv]
"""
import argparse
import csv
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
XM = os.path.join(ROOT, "build", "default", "src", "xm")

SPEC = """name: testbed-{name}
servers: 4
server:
  accelerators: 2
  nics: 2
  nic_gbps: 0.4
  intra: {{gbps: 40, latency_ns: 2000}}
fabric:
  kind: rail-optimized
  tor: {{ports: 8, servers: 4, uplinks: 2, host_latency_ns: 20000}}
  agg: {{ports: 2, tors: 2, count: 2, link: {{gbps: {spine}, latency_ns: 20000}}}}
"""

# (config, library as the CSV names it) -> (spine Gbit/s, ranks, rails, algorithm)
SERIES = {
    ("A", "xccl", "all_reduce"): (0.8, "{per_server: 1}", "all", "auto"),
    ("A", "xccl", "alltoall"): (0.8, "{per_server: 1}", "all", "auto"),
    ("B", "xccl", "all_reduce"): (0.8, "{per_server: 2}", "own", "auto"),
    ("B", "xccl:hierarchical", "all_reduce"): (0.8, "{per_server: 2}", "own", "hierarchical"),
    ("B", "xccl:ring", "all_reduce"): (0.8, "{per_server: 2}", "own", "ring"),
    ("B-thin", "xccl", "alltoall"): (0.1, "{per_server: 2}", "own", "auto"),
    ("B-thin", "xccl:pairwise", "alltoall"): (0.1, "{per_server: 2}", "own", "pairwise"),
    ("B-thin", "xccl:pxn", "alltoall"): (0.1, "{per_server: 2}", "own", "pxn"),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--measured", default=os.path.join(ROOT, "docs", "img", "testbed.csv"))
    args = ap.parse_args()
    if not os.path.exists(XM):
        sys.exit(f"{XM}: build first")
    work = tempfile.mkdtemp(prefix="xm_simtestbed_")
    rows = [r for r in csv.DictReader(open(args.measured)) if (r["config"], r["library"], r["collective"]) in SERIES]
    print("| config | xccl | collective | size | measured (ms) | predicted (ms) | algorithm | error |")
    print("|---|---|---|---|---|---|---|---|")
    errors = []
    for r in rows:
        spine, ranks, rails, algorithm = SERIES[(r["config"], r["library"], r["collective"])]
        spec = os.path.join(work, f"spec-{spine}.yaml")
        with open(spec, "w") as f:
            f.write(SPEC.format(name=str(spine).replace(".", "_"), spine=spine))
        scenario = os.path.join(work, "s.yaml")
        with open(scenario, "w") as f:
            f.write(f"name: s\ntopology: {{spec: {spec}}}\n"
                    "network: {mtu: 8948, header_bytes: 66, wire_gap_bytes: 0, ack_every: 2}\n"
                    f"stop_ms: 100000\ntraffic:\n  - collective: {{op: {r['collective']}, bytes: {r['size']}, "
                    f"algorithm: {algorithm}, ranks: {ranks}, rails: {rails}}}\n")
        out = os.path.join(work, "out")
        done = subprocess.run([XM, "sim", "run", scenario, "--engine", "flow", "-q", "-o", out], capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(done.stderr)
        result = next(csv.DictReader(open(os.path.join(out, "flow", "collectives.csv"))))
        measured, predicted = float(r["time_us"]) / 1e3, float(result["time_us"]) / 1e3
        error = (predicted - measured) / measured
        errors.append((r["config"], r["library"], error))
        print(f"| {r['config']} | {r['library']} | {r['collective']} | {int(r['size']) >> 20} MiB | {measured:.2f} "
              f"| {predicted:.2f} | {result['algorithm']} | {error * 100:+.1f} % |", flush=True)
    within = sum(abs(e) <= 0.05 for _, _, e in errors)
    print(f"\n{within} of {len(errors)} within 5 %")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The flow-level engine against the packet engine on replayed collectives.

Each case is one scenario (a cluster spec from `xm topo gen`, one or two collectives
from xccl's schedules) run by `xm sim run --engine packet --cc none,hpcc` and by
`xm sim run --engine flow`. Prints, per case, the collectives' completion times in
both engines, the flow engine's error against each packet run, and the wall time of
each (the best of --repeat runs; simulations are deterministic, only the wall time
varies). The cases stay at or below 1,024 GPUs.

  python3 bench/sim_engines.py                 # every case
  python3 bench/sim_engines.py --only ring     # cases whose name contains "ring"
"""
import argparse
import csv
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
XM = os.path.join(ROOT, "build", "default", "src", "xm")

# name, gpus, oversubscription, [collective items]
CASES = [
    ("ring all-reduce 64M, 128 GPUs", 128, 1, ["{op: all_reduce, bytes: 64M, algorithm: ring}"]),
    ("hierarchical all-reduce 64M, 128 GPUs", 128, 1, ["{op: all_reduce, bytes: 64M, algorithm: hierarchical}"]),
    ("ring all-gather 64M, 128 GPUs", 128, 1, ["{op: all_gather, bytes: 64M, algorithm: ring}"]),
    ("ring reduce-scatter 64M, 128 GPUs", 128, 1, ["{op: reduce_scatter, bytes: 64M, algorithm: ring}"]),
    ("hierarchical all-gather 64M, 128 GPUs", 128, 1, ["{op: all_gather, bytes: 64M, algorithm: hierarchical}"]),
    ("PXN all-to-all 64M, 128 GPUs", 128, 1, ["{op: alltoall, bytes: 64M, algorithm: pxn}"]),
    ("pairwise all-to-all 64M, 128 GPUs", 128, 1, ["{op: alltoall, bytes: 64M, algorithm: pairwise}"]),
    ("ring all-reduce 64M, 128 GPUs, 2:1 spine", 128, 2, ["{op: all_reduce, bytes: 64M, algorithm: ring}"]),
    ("hierarchical all-reduce 64M, 128 GPUs, 2:1 spine", 128, 2,
     ["{op: all_reduce, bytes: 64M, algorithm: hierarchical}"]),
    ("two rings sharing the spine, 2 x 64 GPUs", 128, 2,
     ["{name: a, op: all_reduce, bytes: 32M, algorithm: ring, ranks: {per_server: 4}}",
      "{name: b, op: all_reduce, bytes: 32M, algorithm: ring, ranks: {first_local: 4, per_server: 4}}"]),
    ("hierarchical all-reduce 16M, 1024 GPUs", 1024, 1, ["{op: all_reduce, bytes: 16M, algorithm: hierarchical}"]),
    ("ring all-reduce 16M, 1024 GPUs", 1024, 1, ["{op: all_reduce, bytes: 16M, algorithm: ring}"]),
]


def run(scenario, out, engine, cc=None):
    cmd = [XM, "sim", "run", scenario, "-q", "-o", out, "--engine", engine] + (["--cc", cc] if cc else [])
    t0 = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - t0
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{done.stderr}")
    return wall


def times(out, cc):
    with open(os.path.join(out, cc, "collectives.csv")) as f:
        return [float(r["time_us"]) for r in csv.DictReader(f)]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="", help="run the cases whose name contains this")
    ap.add_argument("--repeat", type=int, default=1, help="runs per engine, for the wall time")
    args = ap.parse_args()
    if not os.path.exists(XM):
        sys.exit(f"{XM}: build first (cmake --preset default && cmake --build build/default)")
    work = tempfile.mkdtemp(prefix="xm_engines_")
    print("| case | packet, none (us) | packet, hpcc (us) | flow (us) | error vs none | error vs hpcc "
          "| wall: packet hpcc / flow (s) | speed-up |")
    print("|---|---|---|---|---|---|---|---|")
    errors = {"none": [], "hpcc": []}
    for name, gpus, over, items in CASES:
        if args.only not in name:
            continue
        spec = os.path.join(work, f"spec-{gpus}-{over}.yaml")
        if not os.path.exists(spec):
            subprocess.run([XM, "topo", "gen", "--gpus", str(gpus), "--rails", "8", "--oversubscription", str(over),
                            "-o", spec], check=True, capture_output=True)
        scenario = os.path.join(work, "case.yaml")
        with open(scenario, "w") as f:
            f.write(f"name: case\ntopology: {{spec: {spec}}}\ncc: [none]\nstop_ms: 10000\ntraffic:\n")
            for k, item in enumerate(items):
                f.write(f"  - collective: {item}\n")
        out = os.path.join(work, "out")
        run(scenario, out, "packet", "none")
        none = times(out, "none")
        packet_wall = min(run(scenario, out, "packet", "hpcc") for _ in range(args.repeat))
        hpcc = times(out, "hpcc")
        flow_wall = min(run(scenario, out, "flow") for _ in range(args.repeat))
        flow = times(out, "flow")
        for cc, ref in (("none", none), ("hpcc", hpcc)):
            errors[cc] += [abs(f - r) / r for f, r in zip(flow, ref)]
        fmt = lambda v: " / ".join(f"{x:.1f}" for x in v)
        err = lambda ref: " / ".join(f"{(f - r) / r * 100:+.1f} %" for f, r in zip(flow, ref))
        print(f"| {name} | {fmt(none)} | {fmt(hpcc)} | {fmt(flow)} | {err(none)} | {err(hpcc)} "
              f"| {packet_wall:.2f} / {flow_wall:.2f} | {packet_wall / flow_wall:.1f}x |", flush=True)
    for cc, e in errors.items():
        if e:
            print(f"\nagainst packets with {cc}: mean |error| {statistics.mean(e) * 100:.1f} %, "
                  f"max {max(e) * 100:.1f} % over {len(e)} collectives")


if __name__ == "__main__":
    main()

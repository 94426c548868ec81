#!/usr/bin/env python3
"""The seed's fabric claims as ablations of one training job (docs/training.md).

  python3 bench/train_ablations.py [--xm build/default/src/xm] [--out out/train-ablations] [--gpus 1024]

The same job, GPT-3 175B on H100s (tp 8, pp 8, the rest data parallel, full recompute, the
interleaved schedule; gradients reduced after the pipeline flushes, so the fabric shows),
on fabrics that differ in one thing each; `xm train` simulates its communication on each.
"""
import argparse
import json
import pathlib
import subprocess
import sys

FABRICS = [
    ("8 rails x 400G, rail-optimized, non-blocking", []),
    # One NIC per server cannot run yet: the simulator stands each rank by its own NIC, so
    # eight ranks behind one NIC (and their intra-server traffic) are refused.
    ("8 x 400G, conventional Clos", ["--kind", "clos"]),
    ("8 rails x 400G, 2:1 oversubscribed ToRs", ["--oversubscription", "2"]),
]

JOB = """name: {name}
cluster: {cluster}
model: {{layers: 96, hidden: 12288, heads: 96, seq: 2048, vocab: 51200}}
parallel: {{tp: 8, pp: 8, global_batch: {batch}, virtual_stages: 3, recompute: full}}
gpu: {{type: h100}}
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--xm", default="build/default/src/xm")
    ap.add_argument("--out", default="out/train-ablations")
    ap.add_argument("--gpus", type=int, default=1024)
    args = ap.parse_args()
    xm = str(pathlib.Path(args.xm).resolve())
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    dp = args.gpus // 64
    rows = []
    for i, (what, flags) in enumerate(FABRICS):
        spec = out / f"fabric{i}.yaml"
        subprocess.run([xm, "topo", "gen", "--gpus", str(args.gpus), "-o", str(spec)] + flags, check=True,
                       capture_output=True)
        job = out / f"job{i}.yaml"
        job.write_text(JOB.format(name=f"gpt3-{args.gpus}-fabric{i}", cluster=spec.name, batch=dp * 96))
        r = subprocess.run([xm, "train", str(job), "-q", "-o", str(out / f"job{i}")], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"{what}: {r.stderr}")
        it = json.loads((out / f"job{i}" / "iteration.json").read_text())
        rows.append((what, it))
        print(f"{what}: {it['iteration_s']:.2f} s", file=sys.stderr)
    base = rows[0][1]["iteration_s"]
    print(f"GPT-3 175B on {args.gpus:,} H100s (tp 8, pp 8, dp {dp}):\n")
    print("| fabric | iteration s | vs rail-optimized | GPU busy | MFU | TP s | PP s | DP exposed s | DP busbw GB/s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for what, it in rows:
        b = it["breakdown_s"]
        dpc = [c for c in it["communication"] if c["kind"] == "dp"][0]
        print(f"| {what} | {it['iteration_s']:.2f} | {it['iteration_s'] / base:.2f}x | {100 * it['gpu_utilization']:.0f} % | "
              f"{100 * it['mfu']:.0f} % | {b['tp_exposed']:.2f} | {b['pp_exposed']:.2f} | {b['dp_exposed']:.2f} | "
              f"{dpc['busbw_gbs']:.1f} |")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The training model against published runs: one efficiency per GPU type fitted on one run,
the others predicted (docs/training.md).

  python3 bench/train_published.py [--xm build/default/src/xm] [--out out/train-published]

Each run: a cluster spec from `xm topo gen` (the paper's GPUs, NICs and NVLink), a job file
with the paper's model and split, then `xm train` (communication simulated in the flow
engine). Published iteration times: MT-NLG as its paper gives them; GPT-3 175B from its
140 TFLOP/s per GPU with the Megatron-LM FLOP count (full recompute); Llama 3 405B from its
TFLOP/s per GPU with 6 · parameters · tokens, as its report counts them.
"""
import argparse
import json
import pathlib
import subprocess
import sys
import time

A100 = {"type": "a100", "nic_gbps": 200, "intra_gbps": 2400}  # DGX A100: 8 x HDR 200G, NVLink 3 (300 GB/s a way)
H100 = {"type": "h100", "nic_gbps": 400, "intra_gbps": 3600}  # 8 x 400G RoCE, NVLink 4 (450 GB/s a way)

MTNLG = "{layers: 105, hidden: 20480, heads: 128, seq: 2048, vocab: 51200}"
GPT3 = "{layers: 96, hidden: 12288, heads: 96, seq: 2048, vocab: 51200}"
LLAMA = "{layers: 126, hidden: 16384, heads: 128, kv_heads: 8, ffn: 53248, swiglu: true, seq: 8192, vocab: 128256, dropout: false}"


def megatron_seconds(gpus, tflops, l, h, s, v, batch):
    return 96 * batch * s * l * h * h * (1 + s / (6 * h) + v / (16 * l * h)) / (gpus * tflops * 1e12)


def llama_seconds(gpus, tflops):
    return 6 * 405e9 * 2048 * 8192 / (gpus * tflops * 1e12)


RUNS = [
    # name, gpu, gpus, model, parallel, published seconds, source, fit?
    ("mt-nlg-530b-2240", A100, 2240, MTNLG, "{tp: 8, pp: 35, global_batch: 1920, recompute: full, zero1: true}",
     60.1, "MT-NLG paper, 60.1 s", True),
    ("mt-nlg-530b-2800", A100, 2800, MTNLG, "{tp: 8, pp: 35, global_batch: 1920, recompute: full, zero1: true}",
     50.2, "MT-NLG paper, 50.2 s", False),
    ("mt-nlg-530b-3360", A100, 3360, MTNLG, "{tp: 8, pp: 35, global_batch: 1920, recompute: full, zero1: true}",
     44.4, "MT-NLG paper, 44.4 s", False),
    ("gpt3-175b-1024", A100, 1024, GPT3,
     "{tp: 8, pp: 8, global_batch: 1536, virtual_stages: 3, recompute: full, overlap_grad_reduce: true}",
     megatron_seconds(1024, 140, 96, 12288, 2048, 51200, 1536), "Megatron-LM SC'21: 140 TFLOP/s per GPU", False),
    ("llama3-405b-8192", H100, 8192, LLAMA,
     "{tp: 8, pp: 16, global_batch: 2048, virtual_stages: 8, fewer_on_ends: 1, zero1: true, overlap_grad_reduce: true, overlap_p2p: true}",
     llama_seconds(8192, 430), "Llama 3 report: 430 TFLOP/s per GPU", True),
    ("llama3-405b-16384", H100, 16384, LLAMA,
     "{tp: 8, pp: 16, global_batch: 2048, virtual_stages: 8, fewer_on_ends: 1, zero1: true, overlap_grad_reduce: true, overlap_p2p: true}",
     llama_seconds(16384, 400), "Llama 3 report: 400 TFLOP/s per GPU", False),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--xm", default="build/default/src/xm")
    ap.add_argument("--out", default="out/train-published")
    args = ap.parse_args()
    xm = str(pathlib.Path(args.xm).resolve())
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    fitted = {}
    rows = []
    for name, gpu, gpus, model, parallel, published, source, fit in RUNS:
        spec = out / f"cluster-{gpu['type']}-{gpus}.yaml"
        subprocess.run([xm, "topo", "gen", "--gpus", str(gpus), "--nic-gbps", str(gpu["nic_gbps"]), "-o", str(spec)],
                       check=True, capture_output=True)
        text = spec.read_text().replace("intra: {gbps: 3600", f"intra: {{gbps: {gpu['intra_gbps']}")
        spec.write_text(text)
        job = out / f"{name}.yaml"
        job.write_text(f"name: {name}\ncluster: {spec.name}\nmodel: {model}\nparallel: {parallel}\n"
                       f"gpu: {{type: {gpu['type']}}}\n")
        cmd = [xm, "train", str(job), "-q", "-o", str(out / name)]
        cmd += ["--fit-iteration-s", f"{published:.6f}"] if fit else ["--efficiency", str(fitted[gpu["type"]])]
        t0 = time.time()
        r = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.time() - t0
        if r.returncode != 0:
            sys.exit(f"{name}: {r.stderr}")
        it = json.loads((out / name / "iteration.json").read_text())
        if fit:
            fitted[gpu["type"]] = it["gpu"]["efficiency"]
        rows.append((name, gpus, published, it["iteration_s"], it["model_tflops_per_gpu"], it["mfu"],
                     it["breakdown_s"], source, fit, wall))
        print(f"{name}: {it['iteration_s']:.2f} s ({wall:.0f} s wall)", file=sys.stderr)
    print("| run | GPUs | published s/iter | predicted | error | model TFLOP/s/GPU | MFU | bubble | TP | PP | DP exposed | wall |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, gpus, pub, pred, tf, mfu, b, source, fit, wall in rows:
        err = "fitted" if fit else f"{100 * (pred - pub) / pub:+.1f} %"
        print(f"| {name} | {gpus:,} | {pub:.1f} | {pred:.1f} | {err} | {tf:.0f} | {100 * mfu:.0f} % | "
              f"{b['bubble']:.2f} | {b['tp_exposed']:.2f} | {b['pp_exposed']:.2f} | {b['dp_exposed']:.2f} | {wall:.0f} s |")
    print("\nfitted efficiencies: " + ", ".join(f"{k} {v:.3f}" for k, v in fitted.items()))


if __name__ == "__main__":
    main()

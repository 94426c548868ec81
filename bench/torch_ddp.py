#!/usr/bin/python3
"""xccl through torch.distributed, side by side with gloo, in one run.

1. DDP step time. Every rank holds two copies of one MLP with GRADIENT_MB of gradients
   (6 x Linear(2048, 2048) by default: 25.2 M float32 parameters, 100.7 MB), one wrapped
   by DDP on the xccl default group, one on a gloo group over the same ranks. Rounds
   alternate xccl and gloo (A B A B ...); each round times STEPS steps (forward,
   backward with DDP's bucketed all-reduce overlapped, SGD step) after a warm-up. Batch 1
   on one thread per rank: a communication-bound step, where the backend decides. A third
   copy without DDP times the compute alone; step minus compute is the communication
   the step did not hide.
2. The binding's cost. busbw of all_reduce / all_gather / reduce_scatter / all_to_all of
   16 MiB through torch.distributed (xccl backend), alternated with xccl-perf's busbw on
   the same size and rank count (out of place, nccl-tests' definition).
Both, optionally with XCCL_TORCH_REGISTERED_MEMORY=1 (tensors from xcclMemAlloc).

    /usr/bin/python3 bench/torch_ddp.py --ranks 2 4 --rounds 5 [--xccl-perf build/default/tools/xccl-perf]

Prints medians over the rounds and their spread (min-max), and the ratios.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "tests", "torch"))


def ddp_worker(args):
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP
    import xccl_torch

    torch.set_num_threads(1)
    dist.init_process_group(xccl_torch.backend_name)
    gloo = dist.new_group(backend="gloo")

    def model():
        torch.manual_seed(0)
        return nn.Sequential(*[nn.Linear(args.width, args.width) for _ in range(args.layers)])

    # "local": the same model without DDP, the step's compute alone.
    nets = {"xccl": DDP(model()), "gloo": DDP(model(), process_group=gloo), "local": model()}
    opts = {k: torch.optim.SGD(m.parameters(), lr=1e-6) for k, m in nets.items()}
    x = torch.randn(1, args.width)
    grad_mb = sum(p.numel() * p.element_size() for p in nets["xccl"].parameters()) / 1e6

    def step(k):
        opts[k].zero_grad(set_to_none=False)
        nets[k](x).sum().backward()
        opts[k].step()

    times = {k: [] for k in nets}
    for k in nets:
        for _ in range(args.warmup):
            step(k)
    for r in range(args.rounds):
        for k in (["xccl", "gloo", "local"] if r % 2 == 0 else ["local", "gloo", "xccl"]):
            dist.barrier(group=gloo)
            start = time.perf_counter()
            for _ in range(args.steps):
                step(k)
            dist.barrier(group=gloo)  # the slowest rank's time
            times[k].append((time.perf_counter() - start) / args.steps)
    if dist.get_rank() == 0:
        print("RESULT " + json.dumps({"grad_mb": grad_mb, "times": times}), flush=True)
    dist.destroy_process_group()


def busbw_worker(args):
    import torch
    import torch.distributed as dist
    import xccl_torch

    torch.set_num_threads(1)
    dist.init_process_group(xccl_torch.backend_name)
    n, nbytes = dist.get_world_size(), args.bytes
    count = nbytes // 4
    factor = {"all_reduce": 2 * (n - 1) / n, "all_gather": (n - 1) / n, "reduce_scatter": (n - 1) / n,
              "alltoall": (n - 1) / n}
    # nccl-tests' sizes: all_gather's and reduce_scatter's size is the whole output/input.
    t = torch.ones(count)
    part = torch.ones(count // n)
    out = torch.empty(count)
    ops = {"all_reduce": lambda: dist.all_reduce(t),
           "all_gather": lambda: dist.all_gather_into_tensor(out, part),
           "reduce_scatter": lambda: dist.reduce_scatter_tensor(part, t),
           "alltoall": lambda: dist.all_to_all_single(out, t)}
    op = ops[args.op]
    for _ in range(5):
        op()
    dist.barrier()
    start = time.perf_counter()
    for _ in range(args.iters):
        op()
    dist.barrier()
    took = (time.perf_counter() - start) / args.iters
    if dist.get_rank() == 0:
        print("RESULT " + json.dumps({"busbw": nbytes / took / 1e9 * factor[args.op]}), flush=True)
    dist.destroy_process_group()


def result(results):
    for line in results[0][1].splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise SystemExit("no result:\n" + results[0][1][-2000:])


def xccl_perf_busbw(binary, op, ranks, nbytes, iters, env):
    out = subprocess.run([binary, op, "--np", str(ranks), "-b", str(nbytes), "-e", str(nbytes), "-n", str(iters),
                          "-w", "5", "-c", "0", "-R", env.get("XCCL_TORCH_REGISTERED_MEMORY", "0")],
                         capture_output=True, text=True, check=True, env=dict(os.environ, OMP_NUM_THREADS="1")).stdout
    rows = [l.split() for l in out.splitlines() if l.strip() and not l.startswith("#")]
    return float(rows[-1][7])  # out of place busbw


def spread(v):
    return f"{statistics.median(v):.3g} ({min(v):.3g}-{max(v):.3g})"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--width", type=int, default=2048)
    ap.add_argument("--bytes", type=int, default=16 << 20)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--ops", nargs="+", default=["all_reduce", "all_gather", "reduce_scatter", "alltoall"])
    ap.add_argument("--xccl-perf", default=os.path.join(here, "..", "build", "default", "tools", "xccl-perf"))
    ap.add_argument("--registered", action="store_true", help="also with XCCL_TORCH_REGISTERED_MEMORY=1")
    ap.add_argument("--skip-ddp", action="store_true")
    ap.add_argument("--skip-busbw", action="store_true")
    ap.add_argument("--worker", choices=["ddp", "busbw"])
    ap.add_argument("--op")
    args = ap.parse_args()
    if args.worker == "ddp":
        return ddp_worker(args)
    if args.worker == "busbw":
        return busbw_worker(args)

    from world import check_world
    me = os.path.abspath(__file__)
    common = ["--rounds", str(args.rounds), "--steps", str(args.steps), "--warmup", str(args.warmup), "--layers",
              str(args.layers), "--width", str(args.width), "--bytes", str(args.bytes), "--iters", str(args.iters)]
    memories = [{}] + ([{"XCCL_TORCH_REGISTERED_MEMORY": "1"}] if args.registered else [])
    for env in memories:
        label = "registered memory" if env else "plain memory"
        if not args.skip_ddp:
            print(f"\nDDP step time, {label} (median over {args.rounds} alternating rounds of {args.steps} steps, min-max)")
            print("| ranks | gradients | xccl step (ms) | gloo step (ms) | gloo / xccl | compute alone (ms) |"
                  " communication not hidden, xccl / gloo (ms) | gloo / xccl |")
            print("|---|---|---|---|---|---|---|---|")
            for n in args.ranks:
                r = result(check_world(me, n, ["--worker", "ddp", *common], env=env, timeout=1800))
                x = [t * 1e3 for t in r["times"]["xccl"]]
                g = [t * 1e3 for t in r["times"]["gloo"]]
                c = [t * 1e3 for t in r["times"]["local"]]
                cx, cg = statistics.median(x) - statistics.median(c), statistics.median(g) - statistics.median(c)
                print(f"| {n} | {r['grad_mb']:.1f} MB | {spread(x)} | {spread(g)} | "
                      f"{statistics.median(g) / statistics.median(x):.2f}x | {spread(c)} | {cx:.0f} / {cg:.0f} | "
                      f"{cg / cx:.2f}x |", flush=True)
        if not args.skip_busbw:
            print(f"\nbusbw at {args.bytes >> 20} MiB, {label}: torch.distributed (xccl backend) against xccl-perf "
                  f"(median over {args.rounds} alternating launches, min-max)")
            print("| collective | ranks | torch.distributed (GB/s) | xccl-perf (GB/s) | torch / xccl-perf |")
            print("|---|---|---|---|---|")
            for op in args.ops:
                for n in args.ranks:
                    via_torch, direct = [], []
                    for i in range(args.rounds):
                        for which in (["torch", "perf"] if i % 2 == 0 else ["perf", "torch"]):
                            if which == "torch":
                                via_torch.append(result(check_world(me, n, ["--worker", "busbw", "--op", op, *common],
                                                                    env=env, timeout=600))["busbw"])
                            else:
                                direct.append(xccl_perf_busbw(args.xccl_perf, op, n, args.bytes, args.iters, env))
                    print(f"| {op} | {n} | {spread(via_torch)} | {spread(direct)} | "
                          f"{statistics.median(via_torch) / statistics.median(direct):.2f} |", flush=True)


if __name__ == "__main__":
    main()

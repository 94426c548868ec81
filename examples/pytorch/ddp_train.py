#!/usr/bin/python3
"""Data-parallel training on xccl: a small MLP learns a fixed random teacher's labels
from synthetic data, with DistributedDataParallel on the "xccl" backend.

One host, two ranks (torchrun as Debian's Python 3.11 needs it: see docs/pytorch.md):

    /usr/bin/python3 -m torch.distributed.run --standalone --nproc_per_node 2 \\
        --redirects 2 --tee 2 --log_dir /tmp/ddp-logs examples/pytorch/ddp_train.py

Across the testbed's hosts (one rank per host; xm testbed run sets RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT and XCCL_RAILS):

    xm testbed up && xm testbed run -k 1 -- /usr/bin/python3 examples/pytorch/ddp_train.py

Every rank prints its loss every --log-every steps; rank 0 prints the step time and
checks at the end that every rank holds the same parameters.
"""
import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import xccl_torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--log-every", type=int, default=20)
    args = ap.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    dist.init_process_group(xccl_torch.backend_name)  # env://: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT
    rank, world = dist.get_rank(), dist.get_world_size()

    torch.manual_seed(0)  # the same initial model everywhere (DDP broadcasts rank 0's anyway)
    model = DDP(nn.Sequential(nn.Linear(64, args.width), nn.ReLU(), nn.Linear(args.width, args.width), nn.ReLU(),
                              nn.Linear(args.width, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    teacher = torch.randn(64, 10, generator=torch.Generator().manual_seed(7))
    data = torch.Generator().manual_seed(100 + rank)  # each rank its own shard of the data

    start = time.perf_counter()
    for step in range(1, args.steps + 1):
        x = torch.randn(args.batch, 64, generator=data)
        loss = nn.functional.cross_entropy(model(x), (x @ teacher).argmax(1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % args.log_every == 0 or step == 1:
            print(f"rank {rank}/{world} step {step}: loss {loss.item():.4f}", flush=True)
    took = (time.perf_counter() - start) / args.steps

    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    parts = [torch.empty_like(flat) for _ in range(world)]
    dist.all_gather(parts, flat)
    same = all(torch.equal(parts[0], p) for p in parts)
    if rank == 0:
        print(f"{world} ranks on {dist.get_backend()}: {took * 1e3:.2f} ms a step; "
              f"parameters {'identical on every rank' if same else 'DIFFER between ranks'}", flush=True)
    dist.destroy_process_group()
    if not same:
        raise SystemExit(1)


if __name__ == "__main__":
    main()

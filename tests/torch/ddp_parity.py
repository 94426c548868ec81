#!/usr/bin/python3
"""DDP on xccl against DDP on gloo, step by step, launched by torchrun.

Each rank trains two copies of one seeded MLP (with a BatchNorm, whose buffers DDP
broadcasts) on the same data: one wrapped by DDP on the xccl default group, one by DDP
on a gloo group. After every step:
  - every rank's xccl-trained parameters are bit-identical across ranks;
  - on 2 ranks they are bit-identical to the gloo-trained ones (a + b is b + a);
  - on 3 and 4 ranks (sums in another order) within --rtol (1e-5; 1e-3 for the float16
    compression hook), and the losses too.
Then (on 2 ranks; --variants: on any) the same with find_unused_parameters,
gradient_as_bucket_view and the fp16 compression hook; ZeroRedundancyOptimizer on both
backends; and a two-stage pipeline
whose activations and gradients travel by isend/irecv, against the same model run on
one process.

    /usr/bin/python3 -m torch.distributed.run --standalone --nproc_per_node 2 \\
        --redirects 2 --tee 2 --log_dir /tmp/ddp-logs tests/torch/ddp_parity.py
"""
import argparse
import copy
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.nn.parallel import DistributedDataParallel as DDP

import xccl_torch


def mlp():
    torch.manual_seed(1234)
    return nn.Sequential(nn.Linear(32, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                         nn.Linear(64, 10))


def batches(rank, steps, size=16):
    """A learnable task: labels from a fixed random linear teacher; each rank its own inputs."""
    teacher = torch.randn(32, 10, generator=torch.Generator().manual_seed(7))
    g = torch.Generator().manual_seed(99 + rank)
    for _ in range(steps):
        x = torch.randn(size, 32, generator=g)
        yield x, (x @ teacher).argmax(1)


def flat(model):
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


class Checker:
    def __init__(self, rtol, gloo):
        self.rtol, self.gloo, self.failures = rtol, gloo, []
        self.rank, self.n = dist.get_rank(), dist.get_world_size()

    def fail(self, what):
        self.failures.append(what)

    def step(self, name, step, a, b, loss_a, loss_b, rtol=None):
        """a trained on xccl, b on gloo."""
        rtol = rtol or self.rtol
        mine = flat(a)
        parts = [torch.empty_like(mine) for _ in range(self.n)]
        dist.all_gather(parts, mine, group=self.gloo)
        if not all(torch.equal(parts[0], p) for p in parts):
            self.fail(f"{name} step {step}: ranks hold different parameters")
        other = flat(b)
        if self.n == 2:
            if not torch.equal(mine, other):
                self.fail(f"{name} step {step}: parameters differ from gloo's by up to "
                          f"{(mine - other).abs().max().item():.3g}")
        elif not torch.allclose(mine, other, rtol=rtol, atol=rtol):
            self.fail(f"{name} step {step}: parameters differ from gloo's by {(mine - other).abs().max().item():.3g}")
        if abs(loss_a - loss_b) > rtol * max(abs(loss_b), 1.0):
            self.fail(f"{name} step {step}: loss {loss_a} against gloo's {loss_b}")


def train_pair(check, name, steps, ddp_args=None, hook=None, zero=False, rtol=None):
    rank = dist.get_rank()
    a, b = mlp(), mlp()
    da = DDP(a, **(ddp_args or {}))
    db = DDP(b, process_group=check.gloo, **(ddp_args or {}))
    if hook:
        da.register_comm_hook(None, hook)
        db.register_comm_hook(check.gloo, hook)
    if zero:
        oa = ZeroRedundancyOptimizer(a.parameters(), optimizer_class=torch.optim.SGD, lr=0.05, momentum=0.9)
        ob = ZeroRedundancyOptimizer(b.parameters(), optimizer_class=torch.optim.SGD, lr=0.05, momentum=0.9,
                                     process_group=check.gloo)
    else:
        oa = torch.optim.SGD(a.parameters(), lr=0.05, momentum=0.9)
        ob = torch.optim.SGD(b.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for step, (x, y) in enumerate(batches(rank, steps)):
        la = nn.functional.cross_entropy(da(x), y)
        lb = nn.functional.cross_entropy(db(x), y)
        oa.zero_grad()
        ob.zero_grad()
        la.backward()
        lb.backward()
        oa.step()
        ob.step()
        check.step(name, step, a, b, la.item(), lb.item(), rtol)
        losses.append(la.item())
    return losses


def pipeline(check, steps):
    """Stage 0 (rank 0) runs the first half, stage 1 (rank 1) the second; activations go
    forward and their gradients back by isend/irecv, four micro-batches in flight. Every
    rank also runs the whole model alone: the parameters must match bit for bit."""
    rank = dist.get_rank()
    if rank > 1:
        return
    whole = mlp()
    ref = copy.deepcopy(whole)
    first, second = whole[:3], whole[3:]
    mine = first if rank == 0 else second
    opt = torch.optim.SGD(mine.parameters(), lr=0.05)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.05)
    for step, (x, y) in enumerate(batches(0, steps, size=32)):
        micro = list(zip(x.chunk(4), y.chunk(4)))
        opt.zero_grad()
        if rank == 0:
            outs = [first(mx) for mx, _ in micro]
            sends = [dist.isend(o.detach(), 1) for o in outs]
            grads = [torch.empty_like(o) for o in outs]
            recvs = [dist.irecv(g, 1) for g in grads]
            for q in sends + recvs:
                q.wait()
            for o, g in zip(outs, grads):
                o.backward(g)
        else:
            acts = [torch.empty(8, 64) for _ in micro]
            for q in [dist.irecv(a, 0) for a in acts]:
                q.wait()
            grads = []
            for a, (_, my) in zip(acts, micro):
                a.requires_grad_(True)
                (nn.functional.cross_entropy(second(a), my) / len(micro)).backward()
                grads.append(a.grad)
            for q in [dist.isend(g, 0) for g in grads]:
                q.wait()
        opt.step()
        ref_opt.zero_grad()
        for mx, my in micro:
            (nn.functional.cross_entropy(ref(mx), my) / len(micro)).backward()
        ref_opt.step()
        ref_part = ref[:3] if rank == 0 else ref[3:]
        # The same arithmetic in the same order: bit-identical, BatchNorm statistics too.
        for p, q in zip(mine.parameters(), ref_part.parameters()):
            if not torch.equal(p, q):
                check.fail(f"pipeline step {step}: stage {rank} differs from one process by "
                           f"{(p - q).abs().max().item():.3g}")
                return


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--rtol", type=float, default=1e-5)
    ap.add_argument("--variants", action="store_true", help="the DDP variants on 3 and 4 ranks too")
    args = ap.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group(xccl_torch.backend_name)
    gloo = dist.new_group(backend="gloo")
    check = Checker(args.rtol, gloo)
    losses = train_pair(check, "DDP", args.steps)
    if dist.get_world_size() == 2 or args.variants:  # the variants' bit-for-bit check is on 2 ranks
        train_pair(check, "DDP find_unused_parameters", 10, {"find_unused_parameters": True})
        train_pair(check, "DDP gradient_as_bucket_view", 10, {"gradient_as_bucket_view": True})
        # Gradients summed in float16: on 3 and 4 ranks another order differs by float16's rounding.
        train_pair(check, "DDP fp16_compress_hook", 10, hook=default_hooks.fp16_compress_hook, rtol=1e-3)
    train_pair(check, "ZeroRedundancyOptimizer", 10, zero=True)
    pipeline(check, 10)
    dist.barrier()
    rank = dist.get_rank()
    if check.failures:
        print(f"rank {rank}: {len(check.failures)} failures, first: " + "; ".join(check.failures[:5]), flush=True)
        sys.exit(1)
    print(f"rank {rank}: {args.steps} DDP steps on {dist.get_world_size()} ranks "
          f"({'bit-identical to gloo' if dist.get_world_size() == 2 else f'within {args.rtol} of gloo'}), "
          f"loss {losses[0]:.4f} -> {losses[-1]:.4f}; variants, ZeRO and the isend/irecv pipeline match", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Every torch.distributed operation on the xccl backend against gloo, bit for bit.

Each rank holds an xccl default group and a gloo group over the same ranks. For every
operation, dtype and size the same integer-valued inputs (sums and products exact in
every dtype) go through both; results must be torch.equal. Where gloo 1.13 lacks the
operation or the dtype (reduce_scatter, all_gather_into_tensor, all_to_all of lists,
bfloat16 and bool, ReduceOp.AVG) the reference is computed from every rank's inputs,
gathered over gloo as float64. Run without RANK it launches worlds of 2, 3 and 4 ranks.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# Elements; 1 << 20 float64 is 8 MiB. Above 2 ranks (4 processes on 2 cores take
# minutes at 8 MiB; the schedules are the same) every type goes to 65537 and float32 to
# 262147 (1 MiB).
SIZES = [0, 1, 7, 1000, 65537, 1 << 20]
SIZES_ABOVE_2_RANKS = [0, 1, 7, 1000, 65537]


def worker():
    import torch
    import torch.distributed as dist
    import xccl_torch  # noqa: F401  registers the backend

    torch.set_num_threads(1)
    dist.init_process_group(xccl_torch.backend_name)
    rank, n = dist.get_rank(), dist.get_world_size()
    gloo = dist.new_group(backend="gloo")
    R = dist.ReduceOp
    dtypes = [torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int8, torch.uint8, torch.int32,
              torch.int64, torch.bool]
    failures, checked = [], {"gloo": 0, "computed": 0}

    def data(dtype, numel, seed, low=0, high=4, who=None):
        """Rank `who`'s (default: this rank's) inputs for `seed`: any rank can make them."""
        g = torch.Generator().manual_seed(seed * 1000 + (rank if who is None else who))
        if dtype == torch.bool:
            return torch.randint(0, 2, (numel,), generator=g).bool()
        return torch.randint(low, high, (numel,), generator=g).to(dtype)

    def same(got, want, what):
        if got.dtype != want.dtype or got.shape != want.shape or not torch.equal(got, want):
            failures.append(what)

    def everyone(x):
        """Every rank's x as float64, over gloo (exact: the values are small integers)."""
        if x.numel() == 0:  # gloo 1.13 dies of SIGFPE gathering empty tensors
            return [torch.empty(x.shape, dtype=torch.float64) for _ in range(n)]
        parts = [torch.empty(x.shape, dtype=torch.float64) for _ in range(n)]
        dist.all_gather(parts, x.to(torch.float64), group=gloo)
        return parts

    def reduced(parts, op, dtype):
        stack = torch.stack(parts)
        if dtype == torch.bool:  # SUM is a logical or, PRODUCT a logical and
            op = {R.SUM: R.MAX, R.PRODUCT: R.MIN}.get(op, op)
        if op == R.SUM:
            v = stack.sum(0)
        elif op == R.PRODUCT:
            v = stack.prod(0)
        elif op == R.MIN:
            v = stack.min(0).values if len(parts) else stack
        elif op == R.MAX:
            v = stack.max(0).values
        else:  # AVG
            v = stack.sum(0) / len(parts)
        return v.to(dtype)

    def gloo_or(compute, run_gloo):
        """gloo's answer where gloo has the operation and dtype, else the computed one."""
        if empty[0]:  # gloo 1.13 dies of SIGFPE on empty tensors
            checked["computed"] += 1
            return compute()
        try:
            want = run_gloo()
            checked["gloo"] += 1
            return want
        except (RuntimeError, ValueError):
            checked["computed"] += 1
            return compute()

    seed = 0
    empty = [False]
    for dtype in dtypes:
        for numel in SIZES if n == 2 else SIZES_ABOVE_2_RANKS + ([262147] if dtype == torch.float32 else []):
            seed += 1
            empty[0] = numel == 0
            tag = f"{dtype} x{numel}"
            # all_reduce, every op gloo has (AVG: computed, floating types only)
            ops = [R.SUM, R.PRODUCT, R.MIN, R.MAX] + ([R.AVG] if dtype.is_floating_point else [])
            for op in ops:
                x = data(dtype, numel, seed, *((1, 3) if op == R.PRODUCT else (0, 4)))
                got = x.clone()
                dist.all_reduce(got, op=op)
                want = gloo_or(lambda: reduced(everyone(x), op, dtype),
                               lambda: (lambda y: (dist.all_reduce(y, op=op, group=gloo), y)[1])(x.clone())
                               if op != R.AVG else (_ for _ in ()).throw(RuntimeError("gloo has no AVG")))
                same(got, want, f"all_reduce {op} {tag}")
            x = data(dtype, numel, seed)
            roots = range(n) if numel < 65537 else [n - 1]  # every root; the last alone at large sizes
            for root in roots:
                got = x.clone()
                dist.broadcast(got, root)
                want = gloo_or(lambda: everyone(x)[root].to(dtype),
                               lambda: (lambda y: (dist.broadcast(y, root, group=gloo), y)[1])(x.clone()))
                same(got, want, f"broadcast root {root} {tag}")
                got = x.clone()
                dist.reduce(got, root, op=R.SUM)
                if rank == root:
                    want = gloo_or(lambda: reduced(everyone(x), R.SUM, dtype),
                                   lambda: (lambda y: (dist.reduce(y, root, group=gloo), y)[1])(x.clone()))
                    same(got, want, f"reduce root {root} {tag}")
                else:  # gloo's reduce is collective: the other ranks take part too
                    gloo_or(lambda: everyone(x), lambda: dist.reduce(x.clone(), root, group=gloo))
            # all_gather (lists), all_gather_into_tensor
            got = [torch.empty_like(x) for _ in range(n)]
            dist.all_gather(got, x)
            want = gloo_or(lambda: [p.to(dtype) for p in everyone(x)],
                           lambda: (lambda ys: (dist.all_gather(ys, x, group=gloo), ys)[1])([torch.empty_like(x) for _ in range(n)]))
            for r in range(n):
                same(got[r], want[r], f"all_gather part {r} {tag}")
            flat = torch.empty(n * numel, dtype=dtype)
            dist.all_gather_into_tensor(flat, x)
            same(flat, torch.cat([p.to(dtype) for p in everyone(x)]), f"all_gather_into_tensor {tag}")
            # reduce_scatter (lists and one tensor): computed
            big = data(dtype, n * numel, seed + 7)
            out = torch.empty(numel, dtype=dtype)
            dist.reduce_scatter_tensor(out, big)
            want = reduced(everyone(big), R.SUM, dtype)[rank * numel:(rank + 1) * numel]
            same(out, want, f"reduce_scatter_tensor {tag}")
            out2 = torch.empty(numel, dtype=dtype)
            dist.reduce_scatter(out2, list(big.chunk(n)) if numel else [torch.empty(0, dtype=dtype)] * n)
            same(out2, want, f"reduce_scatter {tag}")
            # all_to_all_single, equal and uneven splits (rows of a 2-D tensor)
            rows = data(dtype, n * 3 * max(numel // 1000, 1), seed + 3).view(n * max(numel // 1000, 1), 3) \
                if numel else torch.empty(0, 3, dtype=dtype)
            got = torch.empty_like(rows)
            dist.all_to_all_single(got, rows)
            want = gloo_or(lambda: None, lambda: (lambda y: (dist.all_to_all_single(y, rows, group=gloo), y)[1])(torch.empty_like(rows)))
            if want is not None:
                same(got, want, f"all_to_all_single equal {tag}")
            k = max(numel // 1000, 1) if numel else 0
            in_splits = [(rank + p) % 3 * k for p in range(n)]  # rank s sends rank d ((s + d) % 3) * k rows
            out_splits = [(p + rank) % 3 * k for p in range(n)]
            src = data(dtype, sum(in_splits) * 3, seed + 5).view(sum(in_splits), 3)
            got = torch.empty(sum(out_splits), 3, dtype=dtype)
            dist.all_to_all_single(got, src, out_splits, in_splits)
            want = gloo_or(lambda: None,
                           lambda: (lambda y: (dist.all_to_all_single(y, src, out_splits, in_splits, group=gloo), y)[1])(torch.empty_like(got)))
            if want is not None:
                same(got, want, f"all_to_all_single uneven {tag}")
            # all_to_all of lists: computed (each rank's part p of its list goes to rank p)
            ins = [data(dtype, (rank + p) % 3 + numel // 1000, seed + 11 + p) for p in range(n)]
            outs = [torch.empty((p + rank) % 3 + numel // 1000, dtype=dtype) for p in range(n)]
            dist.all_to_all(outs, ins)
            for p in range(n):  # what rank p put in its list for this rank
                sent = data(dtype, (p + rank) % 3 + numel // 1000, seed + 11 + rank, who=p)
                same(outs[p], sent, f"all_to_all list from {p} {tag}")
            # gather and scatter from every root
            for root in roots:
                got = [torch.empty_like(x) for _ in range(n)] if rank == root else None
                dist.gather(x, got, dst=root)
                want = gloo_or(lambda: [p.to(dtype) for p in everyone(x)],
                               lambda: (lambda ys: (dist.gather(x, ys, dst=root, group=gloo), ys)[1])(
                                   [torch.empty_like(x) for _ in range(n)] if rank == root else None))
                if rank == root:
                    for r in range(n):
                        same(got[r], want[r], f"gather root {root} part {r} {tag}")
                parts = [data(dtype, numel, seed + 20 + r) for r in range(n)] if rank == root else None
                got = torch.empty_like(x)
                dist.scatter(got, parts, src=root)
                want = gloo_or(lambda: None,
                               lambda: (lambda y: (dist.scatter(y, parts, src=root, group=gloo), y)[1])(torch.empty_like(x)))
                if want is not None:
                    same(got, want, f"scatter root {root} {tag}")
            # send/recv around a ring (blocking: even ranks send first), isend/irecv, batched
            to, frm = (rank + 1) % n, (rank - 1) % n
            got = torch.empty_like(x)
            if rank % 2 == 0:
                dist.send(x, to)
                dist.recv(got, frm)
            else:
                dist.recv(got, frm)
                dist.send(x, to)
            want = everyone(x)[frm].to(dtype)
            same(got, want, f"send/recv {tag}")
            got = torch.empty_like(x)
            reqs = [dist.isend(x, to), dist.irecv(got, frm)]
            for q in reqs:
                q.wait()
            same(got, want, f"isend/irecv {tag}")
            got = torch.empty_like(x)
            for q in dist.batch_isend_irecv([dist.P2POp(dist.irecv, got, frm), dist.P2POp(dist.isend, x, to)]):
                q.wait()
            same(got, want, f"batch_isend_irecv {tag}")
        empty[0] = False
        # all_reduce_coalesced of a few tensors of this dtype
        xs = [data(dtype, m, seed + 30 + i) for i, m in enumerate([1, 1000, 7])]
        got = [t.clone() for t in xs]
        dist.all_reduce_coalesced(got)
        want = gloo_or(lambda: [reduced(everyone(t), R.SUM, dtype) for t in xs],
                       lambda: (lambda ys: (dist.all_reduce_coalesced(ys, group=gloo), ys)[1])([t.clone() for t in xs]))
        for i in range(len(xs)):
            same(got[i], want[i], f"all_reduce_coalesced {i} {dtype}")
        # non-contiguous tensors: a transposed matrix and every other element
        m = data(dtype, 64 * 48, seed + 40).view(64, 48).t()
        got = m.clone(memory_format=torch.preserve_format)
        got = torch.empty_strided(m.shape, m.stride(), dtype=dtype).copy_(m)
        dist.all_reduce(got)
        same(got, reduced(everyone(m.contiguous()), R.SUM, dtype).view(m.shape), f"all_reduce non-contiguous {dtype}")
        base = data(dtype, 2000, seed + 41)
        strided = base[::2]
        dist.broadcast(strided, 0)
        same(strided.contiguous(), everyone(base)[0][::2].to(dtype), f"broadcast strided {dtype}")
    dist.barrier()
    print(f"rank {rank}: {checked['gloo']} checks against gloo, {checked['computed']} against computed references")
    if failures:
        print(f"rank {rank}: {len(failures)} mismatches, first: " + "; ".join(failures[:10]))
        sys.exit(1)
    dist.destroy_process_group()


if __name__ == "__main__":
    if "RANK" in os.environ:
        worker()
    else:
        from world import check_world
        for ranks in [int(a) for a in sys.argv[1:]] or [2, 3, 4]:
            results = check_world(os.path.abspath(__file__), ranks, timeout=900)
            print(f"{ranks} ranks: " + results[0][1].strip().splitlines()[-1])

#!/usr/bin/python3
"""Bad input through torch.distributed on xccl: a Python exception with xccl's message,
within the timeout, and a clean exit — never a hang.

Run without RANK: launches the cases below as 2-rank jobs and checks each rank's exit
code and wall time.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

TIMEOUT_MS = 3000  # XCCL_TIMEOUT_MS for these jobs


def expect_error(fn, *needles):
    try:
        fn()
    except RuntimeError as e:
        text = str(e)
        missing = [n for n in needles if n not in text]
        if missing:
            print(f"error without {missing}: {text}")
            sys.exit(3)
        return text
    print(f"no error; expected one mentioning {needles}")
    sys.exit(2)


def worker(case):
    import torch
    import torch.distributed as dist
    import xccl_torch

    dist.init_process_group(xccl_torch.backend_name)
    rank, n = dist.get_rank(), dist.get_world_size()
    if case == "arguments":  # refused on the calling rank, before anything moves
        expect_error(lambda: dist.all_reduce(torch.ones(4, dtype=torch.int16)), "xccl allreduce", "Short")
        expect_error(lambda: dist.all_reduce(torch.ones(4, dtype=torch.int32), op=dist.ReduceOp.BAND), "bitwise")
        expect_error(lambda: dist.all_gather_into_tensor(torch.empty(5), torch.ones(3)), "output has 5 elements, not 2 x 3")
        expect_error(lambda: dist.all_gather([torch.empty(3)], torch.ones(3)), "1 outputs for 2 ranks")
        expect_error(lambda: dist.all_gather([torch.empty(3), torch.empty(4)], torch.ones(3)), "tensor 1 has 4 elements")
        expect_error(lambda: dist.all_to_all_single(torch.empty(4), torch.ones(4), [1, 1], [2, 1]), "input splits add up to 3")
        expect_error(lambda: dist.send(torch.ones(2), (rank + 1) % n, tag=5), "no tags")
        expect_error(lambda: dist.broadcast(torch.ones(2).to_sparse(), 0), "sparse")
        # The communicator still works: every refusal happened before anything was queued.
        t = torch.full((3,), float(rank + 1))
        dist.all_reduce(t)
        if t.tolist() != [3.0] * 3:
            sys.exit(4)
    elif case == "mismatch":  # TORCH_DISTRIBUTED_DEBUG=DETAIL: ranks that disagree learn it, both
        dist.all_reduce(torch.ones(10))
        expect_error(lambda: dist.all_reduce(torch.ones(1000 if rank == 0 else 3000)), "xccl allreduce", "disagree",
                     "rank 0 (", "1000", "3000")
        expect_error(lambda: dist.broadcast(torch.ones(4), rank), "xccl broadcast", "disagree")
        t = torch.ones(5)  # and the communicator goes on working
        dist.all_reduce(t)
        if t.tolist() != [2.0] * 5:
            sys.exit(5)
    elif case in ("dead-peer", "dead-peer-no-destroy"):
        dist.all_reduce(torch.ones(8))
        if rank == 1:
            os._exit(0)  # dies without a word
        start = time.monotonic()
        text = expect_error(lambda: dist.all_reduce(torch.ones(1 << 20)), "xccl allreduce")
        took = time.monotonic() - start
        print(f"rank 0: failed after {took:.1f} s: {text.splitlines()[0][:200]}")
        if took > 3 * TIMEOUT_MS / 1000:
            sys.exit(6)
        # Later calls fail at once, with the reason.
        expect_error(lambda: dist.all_reduce(torch.ones(4)), "already failed")
        if case == "dead-peer":
            dist.destroy_process_group()
        sys.exit(0)  # interpreter exit with the group alive in the second case: must not hang
    dist.destroy_process_group()


if __name__ == "__main__":
    if "RANK" in os.environ:
        worker(sys.argv[1])
    else:
        from world import run_world
        bad = 0
        for case in ["arguments", "mismatch", "dead-peer", "dead-peer-no-destroy"]:
            start = time.monotonic()
            env = {"XCCL_TIMEOUT_MS": str(TIMEOUT_MS)}
            if case == "mismatch":
                env["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"
            results = run_world(os.path.abspath(__file__), 2, [case], env=env, timeout=60)
            took = time.monotonic() - start
            codes = [c for c, _ in results]
            ok = codes == [0, 0] and took < 30
            bad += not ok
            print(f"{case}: exit codes {codes}, {took:.1f} s {'ok' if ok else 'FAILED'}")
            if not ok:
                for r, (c, out) in enumerate(results):
                    print(f"--- rank {r}\n" + "\n".join(out.strip().splitlines()[-15:]))
        sys.exit(1 if bad else 0)

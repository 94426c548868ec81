"""Runs a test script as the ranks of one torch.distributed job on this host.

The parent picks a free port and starts `ranks` copies of the script with RANK,
WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT set (what torchrun sets), waits for
them all, kills the rest once one fails or the deadline passes, and reports each rank's
exit code and last output lines.
"""
import os
import socket
import subprocess
import sys
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_world(script, ranks, args=(), env=None, timeout=300):
    """Returns a list of (exit code, output) by rank; exit code None: killed at the deadline."""
    port = str(free_port())
    procs = []
    for r in range(ranks):
        e = dict(os.environ, RANK=str(r), WORLD_SIZE=str(ranks), LOCAL_RANK=str(r), LOCAL_WORLD_SIZE=str(ranks),
                 MASTER_ADDR="127.0.0.1", MASTER_PORT=port, OMP_NUM_THREADS="1")
        e.update(env or {})
        procs.append(subprocess.Popen([sys.executable, script, *args], env=e, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
    deadline = time.monotonic() + timeout
    codes = [None] * ranks
    while any(c is None for c in codes) and time.monotonic() < deadline:
        for r, p in enumerate(procs):
            if codes[r] is None:
                codes[r] = p.poll()
        if any(c not in (None, 0) for c in codes):  # one failed: the others would wait for it
            time.sleep(2)
            break
        time.sleep(0.05)
    results = []
    for r, p in enumerate(procs):
        codes[r] = p.poll()
        if codes[r] is None:
            p.kill()
        out = p.communicate()[0]
        results.append((codes[r], out))
    return results


def check_world(script, ranks, args=(), env=None, timeout=300):
    """run_world, then exits with a report unless every rank exited 0."""
    results = run_world(script, ranks, args, env, timeout)
    bad = [(r, c, out) for r, (c, out) in enumerate(results) if c != 0]
    for r, c, out in bad:
        tail = "\n".join(out.strip().splitlines()[-25:])
        print(f"--- rank {r} of {ranks}: exit {c if c is not None else 'killed at the deadline'}\n{tail}", file=sys.stderr)
    if bad:
        sys.exit(1)
    return results

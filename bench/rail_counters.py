#!/usr/bin/env python3
"""Per-rail byte counters of one testbed host, sampled through a rail cut, and what they say.

  rail_counters.py sample --every 0.02 --out FILE      (run inside the host's namespace:
                                                        ip netns exec xm-NAME-hK ...; until killed)
  rail_counters.py analyze FILE --cut T --restore T    (T: wall-clock seconds, as `date +%s.%N`)
  rail_counters.py window FILE --from T --to T          (the host's mean MB/s, every NIC, tx + rx)

`sample` writes "time nic0_bytes nic1_bytes ..." (tx + rx of each NIC) every interval.
`analyze` prints one line of key=value figures:
  stall_ms     the longest stretch between the cut and the restore (or the end of the
               traffic, if sooner) in which the host's surviving NICs together moved less
               than 10 % of their median rate before the cut: a job that waits for the
               rail to come back shows the whole wait
  recover_ms   from the cut to the end of that stretch: traffic flowing on the survivors
  failback_s   from the restore until the cut NIC carries 10 % of its pre-cut rate again
  before/during/after_MBps   the host's rate in the 2 s before the cut, between the cut
               (+0.5 s) and the restore, and from failback to the end of the traffic
"""
import argparse
import os
import statistics
import sys
import time


def nics():
    return sorted(n for n in os.listdir("/sys/class/net") if n.startswith("nic"))


def read(nic):
    total = 0
    for way in ("tx_bytes", "rx_bytes"):
        with open(f"/sys/class/net/{nic}/statistics/{way}") as f:
            total += int(f.read())
    return total


def sample(args):
    names = nics()
    with open(args.out, "w", buffering=1) as out:
        out.write("time " + " ".join(names) + "\n")
        next_at = time.time()
        while True:
            out.write(f"{time.time():.4f} " + " ".join(str(read(n)) for n in names) + "\n")
            next_at += args.every
            time.sleep(max(0.0, next_at - time.time()))


def rates(path):
    """(t, [bytes/s per NIC]) for each interval, and the NIC names."""
    with open(path) as f:
        names = f.readline().split()[1:]
        rows = [list(map(float, line.split())) for line in f if line.strip()]
    out = []
    for a, b in zip(rows, rows[1:]):
        dt = b[0] - a[0]
        if dt > 0:
            out.append((b[0], [(y - x) / dt for x, y in zip(a[1:], b[1:])]))
    return out, names


def analyze(args):
    series, names = rates(args.file)
    cut_nic = names.index(args.nic)
    survivors = [i for i in range(len(names)) if i != cut_nic]
    before = [r for t, r in series if args.cut - 2 <= t < args.cut]
    if not before:
        sys.exit(f"{args.file}: no samples in the 2 s before the cut")
    surv_before = statistics.median(sum(r[i] for i in survivors) for r in before)
    cut_before = statistics.median(r[cut_nic] for r in before) or 1.0
    busy = [t for t, r in series if sum(r) > 0.1 * (surv_before + cut_before)]
    end = busy[-1] if busy else args.restore
    # Stall: longest run of quiet samples on the survivors after the cut.
    stall = longest = 0.0
    prev_t = quiet_until = args.cut
    for t, r in series:
        if t <= args.cut or t > min(args.restore, end):
            continue
        quiet = sum(r[i] for i in survivors) < 0.1 * surv_before
        stall = stall + (t - prev_t) if quiet else 0.0
        if stall > longest:
            longest, quiet_until = stall, t
        prev_t = t
    # Failback: the cut NIC carries traffic again after the restore.
    failback = None
    for t, r in series:
        if t > args.restore and r[cut_nic] >= 0.1 * cut_before:
            failback = t - args.restore
            break

    def mean_rate(lo, hi):
        window = [sum(r) for t, r in series if lo <= t < hi]
        return statistics.mean(window) / 1e6 if window else float("nan")

    after_from = args.restore + (failback if failback is not None else 0)
    print(f"stall_ms={longest * 1000:.0f} recover_ms={(quiet_until - args.cut) * 1000:.0f} failback_s={'nan' if failback is None else f'{failback:.2f}'} "
          f"before_MBps={mean_rate(args.cut - 2, args.cut):.1f} during_MBps={mean_rate(args.cut + 0.5, args.restore):.1f} "
          f"after_MBps={mean_rate(after_from, end):.1f}")


def window(args):
    series, _ = rates(args.file)
    inside = [sum(r) for t, r in series if args.start <= t < args.end]
    print(f"{statistics.mean(inside) / 1e6:.1f}" if inside else "nan")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("sample")
    s.add_argument("--every", type=float, default=0.02)
    s.add_argument("--out", required=True)
    a = sub.add_parser("analyze")
    a.add_argument("file")
    a.add_argument("--cut", type=float, required=True)
    a.add_argument("--restore", type=float, required=True)
    a.add_argument("--nic", default="nic0")
    w = sub.add_parser("window")
    w.add_argument("file")
    w.add_argument("--from", dest="start", type=float, required=True)
    w.add_argument("--to", dest="end", type=float, required=True)
    args = p.parse_args()
    {"sample": sample, "analyze": analyze, "window": window}[args.cmd](args)


if __name__ == "__main__":
    main()

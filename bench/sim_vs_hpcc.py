#!/usr/bin/env python3
"""xm sim's HPCC-compatible mode against the HPCC simulator, flow by flow, side by side.

The peer is the HPCC simulator as SimAI ships it (ns-3-alibabacloud, branch dev/qp, its
scratch/NormalNetwork driver), built by hand outside this project; pass its program with
--peer. For each workload the fabric (the HPCC paper's 320-host fat-tree) and the flows
are exported once (`xm sim hpcc-topology --dialect simai`, `xm sim hpcc-flows`), and the
very same config file, written as HPCC's run.py writes it at 100 Gbit/s, is given to both
programs: `xm sim hpcc config_<id>.txt` and `<peer> config_<id>.txt`. Runs alternate
xm, peer, peer, xm, ... so that drift in the machine's speed hits both.

Flows are matched by source, destination, size and start time. Slowdown is FCT over the
peer's standalone FCT for both (one denominator); xm's own standalone column is checked
to be the same number. Reported per size bucket: p50/p95/p99 for both and xm's error,
and the error xm makes against itself under another seed (other ECMP hashes, other ECN
draws: the two simulators' hashes differ, so this is the agreement the paths allow),
the per-flow FCT ratio (xm / peer) distribution, wall time and peak memory (medians).

    bench/sim_vs_hpcc.py --peer ~/ns-3-alibabacloud/simulation/build/scratch/ns3.36.1-NormalNetwork-optimized
    bench/sim_vs_hpcc.py --peer P --workloads websearch-30 --cc dcqcn --duration-ms 10 --runs 3   # speed
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "examples" / "hpcc-fat-tree-320.yaml"
CDF = ROOT / "examples" / "sim" / "cdf"
BUCKETS = [10_000, 20_000, 30_000, 50_000, 80_000, 200_000, 1_000_000, 2_000_000, 5_000_000, 10_000_000]


def poisson(cdf, load):
    return lambda ms: f"  - poisson: {{cdf: {CDF / cdf}, load: {load}, duration_ms: {ms}}}"


WORKLOADS = {
    "websearch-30": poisson("WebSearch_distribution.txt", 0.3),
    "websearch-50": poisson("WebSearch_distribution.txt", 0.5),
    "fbhadoop-30": poisson("FbHdp_distribution.txt", 0.3),
    "fbhadoop-50": poisson("FbHdp_distribution.txt", 0.5),
    # 16 senders, 2 MB each to one host, every 3 ms (rounds as long as the duration).
    "incast": lambda ms: f"  - incast: {{receiver: 0, senders: 16, bytes: 2000000, rounds: {max(1, int(ms // 3))}, interval_us: 3000}}",
}

COMMON = """SIMULATOR_STOP_TIME 4.00
ERROR_RATE_PER_LINK 0.0000
L2_CHUNK_SIZE 4000
L2_ACK_INTERVAL 1
L2_BACK_TO_ZERO 0
GLOBAL_T 1
FAST_REACT 1
U_TARGET 0.95
MI_THRESH 0
MULTI_RATE 0
SAMPLE_FEEDBACK 0
PINT_LOG_BASE 1.05
PINT_PROB 1.0
RATE_BOUND 1
LINK_DOWN 0 0 0
ENABLE_TRACE 0
KMAX_MAP 2 100000000000 1600 400000000000 6400
KMIN_MAP 2 100000000000 400 400000000000 1600
PMAX_MAP 2 100000000000 0.2 400000000000 0.2
BUFFER_SIZE 32
PACKET_PAYLOAD_SIZE 1000
ENABLE_QCN 1
USE_DYNAMIC_PFC_THRESHOLD 1
ALPHA_RESUME_INTERVAL 1
RATE_DECREASE_INTERVAL 4
CLAMP_TARGET_RATE 0
RP_TIMER 300
EWMA_GAIN 0.00390625
FAST_RECOVERY_TIMES 1
MIN_RATE 1000Mb/s
DCTCP_RATE_AI 1000Mb/s
"""
# What run.py sets per algorithm at 100 Gbit/s.
CC = {
    "dcqcn": "CC_MODE 1\nRATE_AI 20Mb/s\nRATE_HAI 200Mb/s\nHAS_WIN 0\nVAR_WIN 0\nINT_MULTI 1\nACK_HIGH_PRIO 1\n",
    "hpcc": "CC_MODE 3\nRATE_AI 40Mb/s\nRATE_HAI 160Mb/s\nHAS_WIN 1\nVAR_WIN 1\nINT_MULTI 4\nACK_HIGH_PRIO 0\n",
}


def run(cmd, cwd, log):
    """Wall seconds and peak RSS (MiB) of one command, its output to `log`."""
    with open(log, "w") as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(map(str, cmd))} failed (exit {os.waitstatus_to_exitcode(status)}); see {log}")
    return wall, usage.ru_maxrss / 1024


def read_fct(path):
    """(sip, dip, size) -> [(start_ns, fct_ns, standalone_ns), ...] by start."""
    flows = {}
    for line in open(path):
        f = line.split()
        if len(f) != 8:
            continue
        flows.setdefault((f[0], f[1], int(f[4])), []).append((int(f[5]), int(f[6]), int(f[7])))
    for runs in flows.values():
        runs.sort()
    return flows


def percentile(values, q):
    """Nearest rank, as xm sim reports."""
    v = sorted(values)
    return v[max(0, min(len(v) - 1, int(-(-q * len(v) // 100)) - 1))]


def bucket_name(i):
    def size(b):
        return f"{b // 1_000_000}M" if b >= 1_000_000 else f"{b // 1000}K"
    if i == 0:
        return f"<={size(BUCKETS[0])}"
    if i == len(BUCKETS):
        return f">{size(BUCKETS[-1])}"
    return f"{size(BUCKETS[i - 1])}-{size(BUCKETS[i])}"


def compare(xm_file, peer_file):
    """Flows of both files paired by source, destination, size and start (the two
    simulators round a start given in seconds to their clocks differently: within 5 ns)."""
    xm, peer = read_fct(xm_file), read_fct(peer_file)
    matched, same_ideal = [], 0
    for key, theirs in peer.items():
        ours = xm.get(key, [])
        i = 0
        for start, fct, ideal in theirs:
            while i < len(ours) and ours[i][0] < start - 5:
                i += 1
            if i < len(ours) and abs(ours[i][0] - start) <= 5:
                _, x_fct, x_ideal = ours[i]
                i += 1
                same_ideal += abs(x_ideal - ideal) <= 2
                matched.append((key[2], x_fct / ideal, fct / ideal, x_fct / fct))
    return {
        "xm_flows": sum(map(len, xm.values())),
        "peer_flows": sum(map(len, peer.values())),
        "matched": matched,
        "same_ideal": same_ideal,
    }


def bucket_rows(matched):
    rows = []
    for i in range(len(BUCKETS) + 1):
        lo = BUCKETS[i - 1] if i > 0 else 0
        hi = BUCKETS[i] if i < len(BUCKETS) else float("inf")
        sel = [m for m in matched if lo < m[0] <= hi]
        if sel:
            rows.append((bucket_name(i), sel))
    rows.append(("all", matched))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--peer", required=True, help="the HPCC simulator's NormalNetwork program")
    ap.add_argument("--xm", default=str(ROOT / "build" / "default" / "src" / "xm"))
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--cc", default="dcqcn,hpcc")
    ap.add_argument("--duration-ms", type=float, default=10, help="arrivals for this long (the standard experiment: 10)")
    ap.add_argument("--runs", type=int, default=1, help="runs of each program (fidelity needs one: both are deterministic)")
    ap.add_argument("--keep", help="keep the files in this directory")
    ap.add_argument("--reuse-peer", action="store_true",
                    help="with --keep: take the peer's FCT files a previous run left there instead of running it "
                         "again (it is deterministic); wall times then come from xm only")
    ap.add_argument("--noise-seed", type=int, default=2,
                    help="also run xm with this seed (other ECMP hashes and ECN draws) and report how far that moves "
                         "each percentile: the agreement path choices alone allow (0: skip)")
    args = ap.parse_args()
    peer = Path(args.peer).expanduser()
    if not (peer.is_file() and os.access(peer, os.X_OK)):
        sys.exit(f"--peer {peer}: not an executable. Build the HPCC simulator (ns-3-alibabacloud, dev/qp) by hand "
                 "outside this project and pass its scratch/NormalNetwork program; see docs/simulator.md.")
    xm = Path(args.xm)
    if not xm.is_file():
        sys.exit(f"--xm {xm}: not found; build it: cmake --build build/default --target xm")
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="sim_vs_hpcc_"))
    work.mkdir(parents=True, exist_ok=True)
    (work / "trace.txt").write_text("0\n")
    subprocess.run([xm, "sim", "hpcc-topology", SPEC, "--dialect", "simai", "-o", work / "topology.txt"], check=True)

    cases = []
    for w in args.workloads.split(","):
        scenario = work / f"{w}.yaml"
        scenario.write_text(f"name: {w}\nseed: 1\ntopology: {{spec: {SPEC}}}\nnetwork: {{mtu: 1000}}\ntraffic:\n"
                            f"{WORKLOADS[w](args.duration_ms)}\nstop_ms: 4000\n")
        subprocess.run([xm, "sim", "hpcc-flows", scenario, "-o", work / f"flows_{w}.txt"], check=True)
        for cc in args.cc.split(","):
            case = f"{w}_{cc}"
            d = work / case
            d.mkdir(exist_ok=True)
            (d / f"config_{case}.txt").write_text(
                f"TOPOLOGY_FILE {work / 'topology.txt'}\nFLOW_FILE {work / f'flows_{w}.txt'}\n"
                f"TRACE_FILE {work / 'trace.txt'}\nTRACE_OUTPUT_FILE {d / 'mix.tr'}\n"
                f"FCT_OUTPUT_FILE {d / 'fct.txt'}\nPFC_OUTPUT_FILE {d / 'pfc.txt'}\n"
                f"QLEN_MON_FILE {d / 'qlen.txt'}\nBW_MON_FILE {d / 'bw.txt'}\nRATE_MON_FILE {d / 'rate.txt'}\n"
                f"CNP_MON_FILE {d / 'cnp.txt'}\nMON_START 0\nMON_END 0\nQP_MON_INTERVAL 100000000\n"
                f"QLEN_MON_INTERVAL 100000000\nBW_MON_INTERVAL 100000000\n" + COMMON + CC[cc])
            config = (d / f"config_{case}.txt").read_text()
            (d / f"config_noise_{case}.txt").write_text(config.replace(f"FCT_OUTPUT_FILE {d / 'fct.txt'}",
                                                                        f"FCT_OUTPUT_FILE {d / 'fct_noise.txt'}"))
            cases.append((w, cc, case, d))

    flows_count = {w: int(open(work / f"flows_{w}.txt").readline()) for w in args.workloads.split(",")}
    timing = {case: {"xm": [], "peer": []} for _, _, case, _ in cases}
    if args.noise_seed:
        for w, cc, case, d in cases:
            run([xm, "sim", "hpcc", f"config_noise_{case}.txt", "-q", "--seed", str(args.noise_seed), "-o", d / "xm-noise"],
                d, d / "xm-noise.log")
    for r in range(args.runs):
        for w, cc, case, d in cases:
            config = f"config_{case}.txt"
            order = ["xm", "peer"] if r % 2 == 0 else ["peer", "xm"]
            for who in order:
                if who == "peer" and args.reuse_peer and (d / f"fct_{case}.txt").exists():
                    continue
                cmd = [xm, "sim", "hpcc", config, "-q", "-o", d / "xm-report"] if who == "xm" else [peer, config]
                wall, rss = run(cmd, d, d / f"{who}.log")
                timing[case][who].append((wall, rss))
                print(f"# run {r + 1} {case} {who}: {wall:.1f} s, {rss:.0f} MiB", file=sys.stderr, flush=True)

    print(f"# {time.strftime('%Y-%m-%d %H:%M')} on {os.uname().nodename}: nproc {os.cpu_count()}, "
          f"load {open('/proc/loadavg').read().split()[0]}; arrivals for {args.duration_ms:g} ms; "
          f"{args.runs} run(s) of each program, alternating")
    print(f"# peer: {peer}\n")
    summary = []
    for w, cc, case, d in cases:
        c = compare(d / "fct.txt", d / f"fct_{case}.txt")
        m = c["matched"]
        # xm against itself with other hashes: the same flows, matched the same way.
        noise = bucket_rows(compare(d / "fct_noise.txt", d / "fct.txt")["matched"]) if args.noise_seed else None
        print(f"### {w}, {cc}: {flows_count[w]} flows; matched {len(m)} "
              f"(xm finished {c['xm_flows']}, peer {c['peer_flows']}); standalone FCT equal on "
              f"{c['same_ideal']} of {len(m)}\n")
        seed_col = f" seed {args.noise_seed} |" if noise else ""
        print("| flow size | flows |" + "".join(f" peer p{q} | xm p{q} | err |{seed_col}" for q in (50, 95, 99)))
        print("|---|---:|" + "---:|---:|---:|" * 3 + ("---:|" * 3 if noise else ""))
        noisy = {name: sel for name, sel in noise} if noise else {}
        worst = 0.0
        for name, sel in bucket_rows(m):
            cells = []
            for q in (50, 95, 99):
                p = percentile([s[2] for s in sel], q)
                x = percentile([s[1] for s in sel], q)
                err = x / p - 1
                if name != "all":
                    worst = max(worst, abs(err))
                cells += [f"{p:.2f}", f"{x:.2f}", f"{err * 100:+.0f}%"]
                if noise:  # the same percentile of xm under seed N against seed 1
                    other = noisy.get(name)
                    cells.append(f"{(percentile([s[1] for s in other], q) / percentile([s[2] for s in other], q) - 1) * 100:+.0f}%"
                                 if other else "")
            print(f"| {name} | {len(sel)} | " + " | ".join(cells) + " |")
        ratios = [s[3] for s in m]
        qs = [1, 10, 50, 90, 99]
        print(f"\nper-flow FCT ratio xm/peer: " + ", ".join(f"p{q} {percentile(ratios, q):.2f}" for q in qs)
              + f"; within 10 %: {sum(abs(x - 1) <= 0.1 for x in ratios) / len(ratios) * 100:.0f} % of flows\n")
        t = timing[case]
        if not t["peer"]:  # reused
            t["peer"] = [(float("nan"), float("nan"))]
        xw = statistics.median(x[0] for x in t["xm"])
        pw = statistics.median(x[0] for x in t["peer"])
        spread = lambda v: f"{min(v):.1f}-{max(v):.1f}" if len(v) > 1 else f"{v[0]:.1f}"
        summary.append((case, flows_count[w], pw, spread([x[0] for x in t["peer"]]), xw, spread([x[0] for x in t["xm"]]),
                        statistics.median(x[1] for x in t["peer"]), statistics.median(x[1] for x in t["xm"]), worst))
    print("| case | flows | peer wall s | (range) | xm wall s | (range) | speed-up | peer RSS MiB | xm RSS MiB | worst bucket error |")
    print("|---|---:|---:|---|---:|---|---:|---:|---:|---:|")
    for case, n, pw, pr, xw, xr, prss, xrss, worst in summary:
        print(f"| {case} | {n} | {pw:.1f} | {pr} | {xw:.2f} | {xr} | {pw / xw:.1f}x | {prss:.0f} | {xrss:.0f} | {worst * 100:.0f}% |")
    if not args.keep:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""clean_run.py: does the controller stay quiet on a healthy fabric that is working hard?

Deploys the HOSTS x RAILS routed testbed locate_accuracy.py uses, starts `xm ops monitor`
(agents, Prometheus, the controller, healing on), then for MINUTES keeps both cores busy
the way a training host is: an xccl job on every host, all-reduces and all-to-alls in
turn (each rank on every rail, every iteration checked), back to back, and HOGS busy
loops beside it. Nothing is injected: every incident the controller opens is a false
alarm. Prints Markdown: the load (the NICs' and the spine links' transmit rates against
their line rates, from Prometheus; the jobs run and their result checks; the hosts' CPU),
the agents' probes and their loss, the agents' CPU, and every incident, network and host.
Needs root, FRR, lldpd and Prometheus; xccl-perf beside xm's build.

  sudo bench/clean_run.py [--minutes 30] [--hosts 16] [--rails 8] [--rate 20mbit]
                          [--hogs 2] [--xm build/default/src/xm] [--perf build/default/tools/xccl-perf]
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

from locate_accuracy import deploy_and_monitor, incidents, run, spec_text

JOBS = "all_reduce:64M,alltoall:16M"


def promql(port, query):
    url = f"http://127.0.0.1:{port}/api/v1/query?query={urllib.parse.quote(query)}"
    try:
        return json.load(urllib.request.urlopen(url, timeout=10))["data"]["result"]
    except (OSError, ValueError, KeyError):
        return []


def scalar(port, query):
    r = promql(port, query)
    return float(r[0]["value"][1]) if r else float("nan")


def cpu_seconds():
    """Busy and total jiffies of the whole machine, from /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return sum(v) - v[3] - v[4], sum(v)


def backlog_drops():
    """Packets the kernel dropped for a full per-CPU input backlog (every veth delivers
    through it), summed over the CPUs: /proc/net/softnet_stat's second column."""
    with open("/proc/net/softnet_stat") as f:
        return sum(int(line.split()[1], 16) for line in f)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--hosts", type=int, default=16)
    ap.add_argument("--rails", type=int, default=8)
    ap.add_argument("--spines", type=int, default=2)
    ap.add_argument("--rate", default="20mbit", help="every NIC's line rate (tc units): what the job fills on 2 cores")
    ap.add_argument("--hogs", type=int, default=2, help="busy loops beside the job")
    ap.add_argument("--name", default="clean")
    ap.add_argument("--jobs", default=JOBS, help="the collectives run in turn, OP:SIZE,...")
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--xm", default=os.path.join(here, "..", "build", "default", "src", "xm"))
    ap.add_argument("--perf", default=os.path.join(here, "..", "build", "default", "tools", "xccl-perf"))
    a = ap.parse_args()
    # Stopped by a signal, it still tears the testbed down (a background job ignores SIGINT).
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: sys.exit(1))
    xm, perf = os.path.abspath(a.xm), os.path.abspath(a.perf)
    jobs_in_turn = [tuple(j.split(":")) for j in a.jobs.split(",")]

    work = tempfile.mkdtemp(prefix="xm-clean-")
    spec = os.path.join(work, "cluster.yaml")
    with open(spec, "w") as f:
        f.write(spec_text("clean", a.hosts, a.rails, a.spines))
    run(xm, ["testbed", "down", "--name", a.name])
    hogs, job = [], None
    jobs = {"started": 0, "exact": 0, "failed": []}
    try:
        deploy_and_monitor(xm, spec, a.name, deploy_args=["--rate", a.rate])
        with open(f"/run/xm-testbed/{a.name}/monitor/prometheus.port") as f:
            port = f.read().strip()
        time.sleep(5)
        for _ in range(a.hogs):
            hogs.append(subprocess.Popen([sys.executable, "-c", "while True: pass"]))
        start, busy0, backlog0 = time.monotonic(), cpu_seconds(), backlog_drops()
        end = start + 60 * a.minutes
        seen, rates, backlog_seen = set(), [], backlog0
        log = os.path.join(work, "job.log")
        while time.monotonic() < end:
            if job is None or job.poll() is not None:
                if job is not None:
                    out = open(log).read()
                    if job.returncode == 0 and "Out of bounds values : 0 OK" in out:
                        jobs["exact"] += 1
                    else:
                        jobs["failed"].append(f"rc {job.returncode}: " + " / ".join(out.strip().splitlines()[-3:]))
                op, size = jobs_in_turn[jobs["started"] % len(jobs_in_turn)]
                jobs["started"] += 1
                job = subprocess.Popen(
                    [xm, "testbed", "run", "--name", a.name, "--timeout", "600", "--rails", "all", "--",
                     "env", "XCCL_DEBUG=WARN", perf, op, "-b", size, "-e", size, "-n", "20", "-w", "1", "-c", "20"],
                    stdout=open(log, "w"), stderr=subprocess.STDOUT)
            # What the load is: the hosts' NICs and the spine links, against their line rates.
            nic = scalar(port, 'sum(rate(node_network_transmit_bytes_total{host=~"h[0-9]+",device=~"nic[0-9]+"}[10s])) * 8')
            up = scalar(port, 'sum(rate(node_network_transmit_bytes_total{host=~"tor[0-9]+",device=~".*spine.*"}[10s])) * 8')
            busiest = scalar(port, 'max(rate(node_network_transmit_bytes_total{host=~"h[0-9]+",device=~"nic[0-9]+"}[10s])) * 8')
            rates.append((nic, up, busiest))
            backlog_now = backlog_drops()
            backlog_recent, backlog_seen = backlog_now - backlog_seen, backlog_now
            for i in incidents(xm, a.name):
                if i["id"] not in seen:
                    seen.add(i["id"])
                    print(f"{time.monotonic() - start:7.0f} s  incident: {i['component']} {i['fault']} "
                          f"(network {i['network']}; backlog drops in the last 10 s: {backlog_recent}): {i['evidence']}", file=sys.stderr, flush=True)
            time.sleep(10)
        busy1, backlog1 = cpu_seconds(), backlog_drops()
        span = f"[{int(60 * a.minutes)}s]"
        drops = {what: scalar(port, f"sum(increase({metric}{span}))") for what, metric in (
            ("queues", "node_qdisc_drops_total"),
            ("devices", "node_network_receive_drop_total"), ("devices sending", "node_network_transmit_drop_total"))}
        drops["devices"] += drops.pop("devices sending")
        probes = scalar(port, f"sum(increase(xm_probe_sent_total[{int(60 * a.minutes)}s]))")
        lost = scalar(port, f"sum(increase(xm_probe_lost_total[{int(60 * a.minutes)}s]))")
        late = scalar(port, f"sum(increase(xm_probe_late_total[{int(60 * a.minutes)}s]))")
        agent_cpu = [float(s["value"][1]) for s in promql(port, f'rate(process_cpu_seconds_total{{host=~"h[0-9]+"}}[{int(60 * a.minutes)}s])')]
        every = incidents(xm, a.name)
    finally:
        for h in hogs:
            h.kill()
        if job is not None and job.poll() is None:
            job.terminate()
            job.wait()
        run(xm, ["testbed", "down", "--name", a.name])

    samples = [r for r in rates[3:] if r[0] == r[0]]  # after the first job's start-up
    med = lambda xs: sorted(xs)[len(xs) // 2] if xs else float("nan")
    network = [i for i in every if i["network"]]
    print(f"## {a.minutes:g} minutes, {a.hosts} hosts x {a.rails} rails at {a.rate}, {a.spines} spines, "
          f"{a.hogs} busy loops beside the job, nothing injected\n")
    print("| what | figure |")
    print("|---|---:|")
    print(f"| machine CPU busy | {100 * (busy1[0] - busy0[0]) / max(1, busy1[1] - busy0[1]):.0f} % of both cores |")
    print(f"| hosts' NICs transmitting, median of 10 s samples | {med([s[0] for s in samples]) / 1e6:.0f} Mbit/s |")
    print(f"| busiest NIC, median | {med([s[2] for s in samples]) / 1e6:.1f} Mbit/s (line {a.rate}) |")
    print(f"| ToR-to-spine links transmitting, median | {med([s[1] for s in samples]) / 1e6:.0f} Mbit/s |")
    print(f"| xccl jobs run / exact / failed | {jobs['started'] - 1} / {jobs['exact']} / {len(jobs['failed'])} |")
    print(f"| packets dropped by full queues (qdiscs) / by devices / backlog | {drops['queues']:.0f} / "
          f"{drops['devices']:.0f} / {backlog1 - backlog0} |")
    print(f"| probes sent / lost | {probes:.0f} / {lost:.0f} ({100 * lost / max(1, probes):.3f} %) |")
    print(f"| of the lost, answered after the timeout (late) | {late:.0f} |")
    if agent_cpu:
        print(f"| agent CPU, median / max | {100 * med(agent_cpu):.2f} / {100 * max(agent_cpu):.2f} % of a core |")
    print(f"| **network incidents** | **{len(network)}** |")
    print(f"| host incidents | {len(every) - len(network)} |\n")
    for i in every:
        print(f"- {i['component']} {i['fault']} (network {i['network']}, "
              f"{'open' if i['closed_at'] is None else 'closed'}): {i['evidence']}")
    for f in jobs["failed"]:
        print(f"- job failed: {f}")


if __name__ == "__main__":
    main()

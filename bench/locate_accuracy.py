#!/usr/bin/env python3
"""locate_accuracy.py: how fast and how well the controller names injected faults.

Deploys a HOSTS x RAILS routed testbed, starts `xm ops monitor` (agents, Prometheus, the
controller), then runs ROUNDS randomized injections with `xm testbed fault`, one at a time,
every class in turn on a random component: random loss (0.1-5 %) on a host or spine cable,
a black hole for half the 5-tuples on a spine cable, a cable degraded to 10 %, a flapping
cable, a switch port down, a NIC down, a switch down, a wrong MTU. Each round injects,
polls `xm ops locate --json` until the right incident (component and class) is open, undoes
the fault, waits until every incident has closed and undrains what healing drained. Prints
Markdown: per class the injections, how many were located right, exactly, median and
slowest time from the start of the injection command; and precision (right incidents over
every network incident the controller opened) and recall. Needs root, FRR, lldpd and Prometheus.

With --peers DIR the controller runs without healing (a drain moves the flows the
evidence is about) and every evaluation's probe evidence (GET /api/probes) is recorded
in DIR/probes.jsonl; afterwards 007 and NetBouncer (bench/peers/locate_peers.cc) are run
on the same snapshots and compared with the controller, round by round: which cables each
blamed from one injection to the next, the first time each blamed the right one.

  sudo bench/locate_accuracy.py [--hosts 16] [--rails 8] [--rounds 100] [--seed 1]
                                [--xm build/default/src/xm] [--name loc] [--timeout 45]
                                [--classes loss,blackhole,flap] [--peers DIR]
                                [--peer-binary build/default/bench/locate_peers]
"""
import argparse
import json
import os
import signal
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

CLASSES = ["loss", "blackhole", "degraded", "flap", "port-down", "nic-down", "switch-down", "mtu"]


def run(xm, args):
    return subprocess.run([xm] + args, capture_output=True, text=True)


def incidents(xm, name):
    p = run(xm, ["ops", "locate", "--json", "--all", "--name", name])
    try:
        return json.loads(p.stdout)["incidents"]
    except (ValueError, KeyError):
        return []


def spec_text(name, hosts, rails, spines):
    """A rail-optimized cluster: one ToR per rail, every ToR on every spine."""
    return (f"name: {name}\nservers: {hosts}\nserver:\n  accelerators: {rails}\n  nics: {rails}\n  nic_gbps: 400\n"
            f"fabric:\n  kind: rail-optimized\n  tor: {{ports: {hosts + spines}, servers: {hosts}, uplinks: {spines}}}\n"
            f"  agg: {{ports: {rails}, tors: {rails}, count: {spines}}}\n")


def deploy_and_monitor(xm, spec, name, deploy_args=(), monitor_args=()):
    """`xm ops deploy` then `xm ops monitor`; exits with their output if either fails."""
    for args in (["ops", "deploy", spec, "--name", name, *deploy_args], ["ops", "monitor", "--name", name, *monitor_args]):
        p = run(xm, args)
        if p.returncode != 0:
            sys.exit(p.stdout + p.stderr)


def make_round(kind, rng, hosts, rails, spines):
    """The fault's xm arguments and the incident it must raise: (component, fault)."""
    h, r, s = rng.randrange(hosts), rng.randrange(rails), rng.randrange(spines)
    host_cable = (f"h{h}/nic{r}", f"tor{r}:h{h}-nic{r}", f"h{h}/nic{r} - tor{r}:h{h}-nic{r}")
    spine_cable = (f"tor{r}:spine{s}", f"spine{s}:tor{r}", f"tor{r}:spine{s} - spine{s}:tor{r}")
    if kind == "loss":
        ends = rng.choice([host_cable, spine_cable])
        rate = rng.choice(["0.1%", "0.5%", "1%", "2%", "5%"])
        return ["--inject", "loss", "--at", rng.choice(ends[:2]), "--value", rate], (ends[2], "loss"), rate
    if kind == "blackhole":
        return ["--inject", "blackhole", "--at", rng.choice(spine_cable[:2]), "--value", "50%"], (spine_cable[2], "blackhole"), ""
    if kind == "degraded":
        ends = rng.choice([host_cable, spine_cable])
        return ["--inject", "degraded", "--at", rng.choice(ends[:2]), "--value", "10%"], (ends[2], "degraded"), ""
    if kind == "flap":
        ends = rng.choice([host_cable, spine_cable])
        return ["--inject", "flap", "--at", rng.choice(ends[:2]), "--value", "4"], (ends[2], "flapping"), ""
    if kind == "port-down":
        port = rng.choice([host_cable[1], spine_cable[0], spine_cable[1]])
        return ["--inject", "link-down", "--at", port], (port, "port-down"), ""
    if kind == "nic-down":
        return ["--inject", "nic-down", "--at", host_cable[0]], (host_cable[0], "nic-down"), ""
    if kind == "switch-down":
        sw = rng.choice([f"tor{r}", f"spine{s}"])
        return ["--inject", "switch-down", "--at", sw], (sw, "switch-down"), ""
    if kind == "mtu":
        return ["--miswire", "mtu", "--at", host_cable[0], "--value", "1500"], (host_cable[0], "mtu"), ""
    raise ValueError(kind)


def wait_all_closed(xm, name, seconds, heal=True):
    """Until every incident has closed; then what healing drained is put back, as the
    operator does once the fault is repaired: a fault injected on a cable still drained
    (its restore waits 60 s or more) crosses no probe and cannot be found."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if all(i["closed_at"] is not None for i in incidents(xm, name)):
            if heal and run(xm, ["ops", "undrain", "--all", "--name", name]).returncode == 0:
                time.sleep(3)  # BGP converging on the sessions reopened
            return True
        time.sleep(0.5)
    return False


class ProbeRecorder(threading.Thread):
    """Appends every new evaluation's /api/probes document to a JSON-lines file."""

    def __init__(self, port, path):
        super().__init__(daemon=True)
        self.url, self.out, self.stop = f"http://127.0.0.1:{port}/api/probes", open(path, "w"), threading.Event()

    def run(self):
        last = None
        while not self.stop.wait(0.5):
            try:
                body = urllib.request.urlopen(self.url, timeout=5).read().decode()
            except OSError:
                continue
            at = body[body.find('"evaluated_at":'):][:40]
            if at != last:
                last = at
                self.out.write(body.strip() + "\n")
        self.out.close()


def side_by_side(records, every, peer_lines):
    """Round by round, from one injection to the next: the cables each method blamed, and
    the first time (from the injection) it blamed the right one before the undo."""
    methods = {"controller": [], "007": [], "netbouncer": []}
    for n, r in enumerate(records):
        until = records[n + 1]["injected"] if n + 1 < len(records) else float("inf")
        ours = [i for i in every if i["network"] and r["injected"] <= i["opened_at"] < until]
        blamed = {"controller": {}}
        for i in ours:
            blamed["controller"].setdefault(i["component"], i["opened_at"])
        for m in ("007", "netbouncer"):
            blamed[m] = {}
            for p in peer_lines:
                if r["injected"] <= p["at"] < until:
                    for c in p[m]:
                        blamed[m].setdefault(c, p["at"])
        for m, found in blamed.items():
            t = found.get(r["component"])
            right = t is not None and t <= r["undone"]
            methods[m].append((right, t - r["injected"] if right else None, len([c for c in found if c != r["component"] or not right])))
    return methods


def print_side_by_side(methods, records):
    print(f"\n## Side by side on the same probe evidence ({len(records)} rounds: "
          f"{', '.join(sorted(set(r['kind'] for r in records)))}; healing off)\n")
    print("| method | located right | wrong cables blamed | precision | median time (s) | slowest (s) |")
    print("|---|---:|---:|---:|---:|---:|")
    for m, rows in methods.items():
        right = sum(1 for ok, _, _ in rows if ok)
        wrong = sum(w for _, _, w in rows)
        t = sorted(s for ok, s, _ in rows if ok)
        med = f"{statistics.median(t):.1f}" if t else "-"
        slow = f"{t[-1]:.1f}" if t else "-"
        print(f"| {m} | {right}/{len(rows)} | {wrong} | {100 * right / max(1, right + wrong):.1f} % | {med} | {slow} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hosts", type=int, default=16)
    ap.add_argument("--rails", type=int, default=8)
    ap.add_argument("--spines", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--name", default="loc")
    ap.add_argument("--timeout", type=float, default=45)
    ap.add_argument("--xm", default=os.path.join(os.path.dirname(__file__), "..", "build", "default", "src", "xm"))
    ap.add_argument("--classes", default=",".join(CLASSES), help="comma-separated, of " + ",".join(CLASSES))
    ap.add_argument("--peers", metavar="DIR", help="record the probe evidence here and run 007 and NetBouncer on it")
    ap.add_argument("--peer-binary", default=os.path.join(os.path.dirname(__file__), "..", "build", "default", "bench", "locate_peers"))
    a = ap.parse_args()
    # Stopped by a signal, it still tears the testbed down (a background job ignores SIGINT).
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: sys.exit(1))
    classes = a.classes.split(",")
    if not classes or any(k not in CLASSES for k in classes):
        sys.exit(f"--classes: each of {','.join(CLASSES)}")
    if a.peers and not os.access(a.peer_binary, os.X_OK):
        sys.exit(f"--peers needs {a.peer_binary} (cmake --build --preset default --target locate_peers)")
    rng = random.Random(a.seed)
    xm = os.path.abspath(a.xm)

    work = tempfile.mkdtemp(prefix="xm-loc-")
    spec = os.path.join(work, "cluster.yaml")
    with open(spec, "w") as f:
        f.write(spec_text("loc", a.hosts, a.rails, a.spines))
    run(xm, ["testbed", "down", "--name", a.name])
    controller, recorder, records = None, None, []
    heal = not a.peers
    try:
        deploy_and_monitor(xm, spec, a.name, monitor_args=[] if heal else ["--no-controller"])
        if a.peers:
            os.makedirs(a.peers, exist_ok=True)
            port_file = f"/run/xm-testbed/{a.name}/monitor/controller.port"
            controller = subprocess.Popen([xm, "ops", "controller", "--name", a.name, "--no-heal", "--listen", "127.0.0.1:0",
                                           "--port-file", port_file], stderr=open(os.path.join(a.peers, "controller.log"), "w"))
            for _ in range(100):
                if os.path.exists(port_file) and open(port_file).read().strip():
                    break
                time.sleep(0.1)
            recorder = ProbeRecorder(open(port_file).read().strip(), os.path.join(a.peers, "probes.jsonl"))
            recorder.start()
        time.sleep(5)
        kinds = []
        while len(kinds) < a.rounds:
            batch = classes[:]
            rng.shuffle(batch)
            kinds += batch
        rows = {k: [] for k in CLASSES}  # (found right, exact, seconds)
        right_ids, stale = set(), 0
        for n, kind in enumerate(kinds[: a.rounds]):
            if not wait_all_closed(xm, a.name, 90, heal):
                stale += 1
            args, (component, fault), note = make_round(kind, rng, a.hosts, a.rails, a.spines)
            t0, injected = time.monotonic(), time.time()
            inj = run(xm, ["testbed", "fault", "--name", a.name] + args)
            if inj.returncode != 0:
                sys.exit(f"round {n}: xm testbed fault {' '.join(args)}: {inj.stdout}{inj.stderr}")
            found, exact, seconds = False, False, None
            while time.monotonic() - t0 < a.timeout:
                for i in incidents(xm, a.name):
                    if i["closed_at"] is None and i["fault"] == fault and component in i["component"]:
                        found, exact, seconds = True, i["component"] == component, time.monotonic() - t0
                        right_ids.add(i["id"])
                if found:
                    break
                time.sleep(0.2)
            time.sleep(2)  # anything else it raises meanwhile counts against precision
            undo = run(xm, ["testbed", "fault", "--name", a.name, "--undo"])
            if undo.returncode != 0:
                sys.exit(f"round {n}: undo: {undo.stdout}{undo.stderr}")
            records.append({"kind": kind, "component": component, "injected": injected, "undone": time.time()})
            rows[kind].append((found, exact, seconds))
            print(f"round {n}: {kind} {' '.join(args)} -> {'found' if found else 'MISSED'}"
                  f"{'' if exact or not found else ' (not exact)'} {'' if seconds is None else f'{seconds:.1f} s'}",
                  file=sys.stderr, flush=True)
        wait_all_closed(xm, a.name, 90, heal)
        every = incidents(xm, a.name)
    finally:
        if recorder:
            recorder.stop.set()
            recorder.join()
        if controller:
            controller.terminate()
            controller.wait()
        run(xm, ["testbed", "down", "--name", a.name])

    network = [i for i in every if i["network"]]
    right = [i for i in network if i["id"] in right_ids]
    wrong = [i for i in network if i["id"] not in right_ids]
    print(f"## {a.rounds} randomized injections, {a.hosts} hosts x {a.rails} rails, {a.spines} spines (seed {a.seed})\n")
    print("| class | injected | located right | exact component | median time (s) | slowest (s) |")
    print("|---|---:|---:|---:|---:|---:|")
    times = []
    for k in CLASSES:
        r = rows[k]
        if not r:
            continue
        t = [s for f, e, s in r if f]
        times += t
        med = f"{statistics.median(t):.1f}" if t else "-"
        slow = f"{max(t):.1f}" if t else "-"
        print(f"| {k} | {len(r)} | {sum(f for f, _, _ in r)} | {sum(e for _, e, _ in r)} | {med} | {slow} |")
    found = sum(f for r in rows.values() for f, _, _ in r)
    exact = sum(e for r in rows.values() for _, e, _ in r)
    times.sort()
    p99 = times[min(len(times) - 1, int(round(0.99 * (len(times) - 1))))] if times else float("nan")
    print(f"| **all** | **{a.rounds}** | **{found}** | **{exact}** | **{statistics.median(times):.1f}** | **{times[-1]:.1f}** |\n")
    print(f"Recall {found}/{a.rounds} = {100 * found / a.rounds:.1f} %; exact component {exact}/{a.rounds} = "
          f"{100 * exact / a.rounds:.1f} %; p99 time {p99:.1f} s.")
    print(f"Precision: {len(right)} right of {len(network)} network incidents = "
          f"{100 * len(right) / max(1, len(network)):.1f} %; host incidents {len(every) - len(network)}; "
          f"rounds that started with an incident still open: {stale}.")
    for i in wrong:
        print(f"- extra: {i['component']} {i['fault']}: {i['evidence']}")
    if a.peers:
        with open(os.path.join(a.peers, "probes.jsonl")) as f, open(os.path.join(a.peers, "peers.jsonl"), "w") as out:
            p = subprocess.run([a.peer_binary], stdin=f, stdout=out, stderr=subprocess.PIPE, text=True)
        if p.returncode != 0:
            sys.exit(f"{a.peer_binary}: {p.stderr}")
        with open(os.path.join(a.peers, "peers.jsonl")) as f:
            peer_lines = [json.loads(line) for line in f]
        with open(os.path.join(a.peers, "rounds.json"), "w") as f:
            json.dump({"rounds": records, "incidents": every}, f)
        print_side_by_side(side_by_side(records, every, peer_lines), records)


if __name__ == "__main__":
    main()

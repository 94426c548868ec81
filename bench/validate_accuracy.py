#!/usr/bin/env python3
"""validate_accuracy.py: plan, deploy and validate a cluster on the testbed, then inject
randomized miswires and misconfigurations (one and two at a time) with `xm testbed fault
--miswire` and check that `xm ops validate` finds every one at exactly the ports it
touches, and that the clean validations between them raise no alarm.

Prints Markdown: the stage times of plan + deploy + validate, and a table of kinds ×
injected / found / exact ports / time to detection. Needs root, FRR and lldpd.

  sudo bench/validate_accuracy.py [--hosts 16] [--rails 8] [--rounds 40] [--seed 1]
                                  [--xm build/default/src/xm] [--name acc]
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

KINDS = ["swap", "swap-across", "swap-nics", "unplug", "extra", "wrong-switch", "mtu", "address", "bgp-down", "ecmp"]


def run(xm, args, check=True):
    p = subprocess.run([xm] + args, capture_output=True, text=True)
    if check and p.returncode not in (0, 1):
        sys.exit(f"xm {' '.join(args)} failed ({p.returncode}): {p.stdout}{p.stderr}")
    return p


def failures(xm, name):
    p = run(xm, ["ops", "validate", "--json", "--name", name])
    report = json.loads(p.stdout)
    return {f"{x['device']}:{x['port']}" for x in report["ports"] if x["cbl status"] == "fail"}


class Fault:
    """One injection: its xm arguments, the devices it touches, and a test of the failed ports."""

    def __init__(self, kind, args, touches, expected, any_of=None):
        self.kind, self.args, self.touches, self.expected, self.any_of = kind, args, touches, expected, any_of

    def matches(self, failed):
        """The ports this fault must fail are all there (an ecmp fault: some of its ToR's uplinks)."""
        if self.any_of is not None:
            return bool(failed & self.any_of)
        return self.expected <= failed

    def explain(self, failed):
        return (failed & self.any_of) if self.any_of is not None else self.expected


def make_fault(kind, rng, hosts, rails, spines, serial):
    h = lambda: rng.randrange(hosts)
    r = lambda: rng.randrange(rails)
    if kind == "swap":
        rail, a, b = r(), *rng.sample(range(hosts), 2)
        return Fault(kind, ["swap", "--at", f"tor{rail}:h{a}-nic{rail}", "--with", f"tor{rail}:h{b}-nic{rail}"],
                     {f"h{a}", f"h{b}", f"tor{rail}"},
                     {f"tor{rail}:h{a}-nic{rail}", f"tor{rail}:h{b}-nic{rail}", f"h{a}:nic{rail}", f"h{b}:nic{rail}"})
    if kind == "swap-across":
        (ra, rb), (a, b) = rng.sample(range(rails), 2), rng.sample(range(hosts), 2)
        return Fault(kind, ["swap", "--at", f"tor{ra}:h{a}-nic{ra}", "--with", f"tor{rb}:h{b}-nic{rb}"],
                     {f"h{a}", f"h{b}", f"tor{ra}", f"tor{rb}"},
                     {f"tor{ra}:h{a}-nic{ra}", f"tor{rb}:h{b}-nic{rb}", f"h{a}:nic{ra}", f"h{b}:nic{rb}"})
    if kind == "swap-nics":
        host, (ra, rb) = h(), rng.sample(range(rails), 2)
        return Fault(kind, ["swap-nics", "--at", f"h{host}/nic{ra}", "--with", f"h{host}/nic{rb}"],
                     {f"h{host}", f"tor{ra}", f"tor{rb}"},
                     {f"h{host}:nic{ra}", f"h{host}:nic{rb}", f"tor{ra}:h{host}-nic{ra}", f"tor{rb}:h{host}-nic{rb}"})
    if kind == "unplug":
        host, rail = h(), r()
        return Fault(kind, ["unplug", "--at", f"h{host}/nic{rail}"], {f"h{host}", f"tor{rail}"},
                     {f"h{host}:nic{rail}", f"tor{rail}:h{host}-nic{rail}"})
    if kind == "extra":
        a, b = rng.sample(range(rails), 2)
        return Fault(kind, ["extra", "--at", f"tor{a}", "--with", f"tor{b}"], {f"tor{a}", f"tor{b}"},
                     {f"tor{a}:extra{serial}", f"tor{b}:extra{serial}"})
    if kind == "wrong-switch":
        host, (ra, rb) = h(), rng.sample(range(rails), 2)
        return Fault(kind, ["wrong-switch", "--at", f"h{host}/nic{ra}", "--with", f"tor{rb}"],
                     {f"h{host}", f"tor{ra}", f"tor{rb}"},
                     {f"h{host}:nic{ra}", f"tor{ra}:h{host}-nic{ra}", f"tor{rb}:spare{serial}"})
    if kind == "mtu":
        host, rail = h(), r()
        return Fault(kind, ["mtu", "--at", f"h{host}/nic{rail}", "--value", "1500"], {f"h{host}"}, {f"h{host}:nic{rail}"})
    if kind == "address":
        host, rail = h(), r()
        wrong = rng.choice([f"10.77.{rail}.{100 + host}/24", f"10.77.{rail}.{host + 1}/16"])
        return Fault(kind, ["address", "--at", f"h{host}/nic{rail}", "--value", wrong], {f"h{host}"}, {f"h{host}:nic{rail}"})
    if kind == "bgp-down":
        rail, spine = r(), rng.randrange(spines)
        return Fault(kind, ["bgp-down", "--at", f"tor{rail}:spine{spine}"], {f"tor{rail}", "routing"},
                     {f"tor{rail}:spine{spine}", f"spine{spine}:tor{rail}"})
    if kind == "ecmp":
        rail = r()
        return Fault(kind, ["ecmp", "--at", f"tor{rail}"], {f"tor{rail}", "routing"}, set(),
                     any_of={f"tor{rail}:spine{k}" for k in range(spines)})
    raise ValueError(kind)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hosts", type=int, default=16)
    ap.add_argument("--rails", type=int, default=8)
    ap.add_argument("--spines", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--name", default="acc")
    ap.add_argument("--xm", default=os.path.join(os.path.dirname(__file__), "..", "build", "default", "src", "xm"))
    ap.add_argument("--timeout", type=float, default=12)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    xm = os.path.abspath(a.xm)

    work = tempfile.mkdtemp(prefix="xm-acc-")
    spec = os.path.join(work, "cluster.yaml")
    with open(spec, "w") as f:
        f.write(f"name: acc\nservers: {a.hosts}\nserver:\n  accelerators: {a.rails}\n  nics: {a.rails}\n  nic_gbps: 400\n"
                f"fabric:\n  kind: rail-optimized\n  tor: {{ports: {a.hosts + a.spines}, servers: {a.hosts}, uplinks: {a.spines}}}\n"
                f"  agg: {{ports: {a.rails}, tors: {a.rails}, count: {a.spines}}}\n")
    run(xm, ["testbed", "down", "--name", a.name])
    t0 = time.monotonic()
    p = run(xm, ["ops", "plan", spec, "-o", os.path.join(work, "plan")])
    t_plan = time.monotonic() - t0
    t1 = time.monotonic()
    d = run(xm, ["ops", "deploy", os.path.join(work, "plan"), "--name", a.name])
    t_deploy = time.monotonic() - t1
    if d.returncode != 0:
        sys.exit(d.stdout + d.stderr)
    t2 = time.monotonic()
    clean = failures(xm, a.name)
    t_validate = time.monotonic() - t2
    print(f"## plan + deploy + validate, {a.hosts} hosts × {a.rails} rails ({a.rails} ToRs, {a.spines} spines)\n")
    print("| stage | seconds |\n|---|---:|")
    print(f"| plan (`xm ops plan`) | {t_plan:.2f} |")
    for line in d.stdout.splitlines()[1:]:
        parts = line.split()
        if len(parts) >= 3 and parts[2] == "s" and parts[0] != "total":
            print(f"| deploy: {parts[0]} | {float(parts[1]):.2f} |")
    print(f"| deploy (whole command) | {t_deploy:.2f} |")
    print(f"| validate (`xm ops validate`, {'clean' if not clean else 'NOT clean: ' + ' '.join(sorted(clean))}) | {t_validate:.2f} |")
    print(f"| **total** | **{t_plan + t_deploy + t_validate:.2f}** |\n")

    stats = {k: {"injected": 0, "found": 0, "exact": 0, "times": []} for k in KINDS}
    clean_runs, false_alarms, misses = 0, 0, []
    for round_no in range(a.rounds):
        print(f"round {round_no + 1}/{a.rounds}", file=sys.stderr, flush=True)
        count = 1 if round_no % 2 == 0 else 2
        faults, touched = [], set()
        while len(faults) < count:
            f = make_fault(rng.choice(KINDS), rng, a.hosts, a.rails, a.spines, len(faults))
            if f.touches & touched:
                continue
            faults.append(f)
            touched |= f.touches
        start = time.monotonic()
        for f in faults:
            r = run(xm, ["testbed", "fault", "--name", a.name, "--miswire"] + f.args)
            if r.returncode != 0:
                sys.exit(r.stdout + r.stderr)
        found_at = {}
        failed = set()
        while time.monotonic() - start < a.timeout:
            failed = failures(xm, a.name)
            for f in faults:
                if id(f) not in found_at and f.matches(failed):
                    found_at[id(f)] = time.monotonic() - start
            if len(found_at) == len(faults):
                break
            time.sleep(0.2)
        expected = set().union(*(f.explain(failed) for f in faults))
        for f in faults:
            s = stats[f.kind]
            s["injected"] += 1
            if id(f) in found_at:
                s["found"] += 1
                s["times"].append(found_at[id(f)])
                if failed == expected:
                    s["exact"] += 1
            else:
                misses.append((f.kind, f.args, sorted(failed)))
        if failed != expected:
            misses.append(("exact ports", [x.args for x in faults], sorted(failed ^ expected)))
        u = run(xm, ["testbed", "fault", "--name", a.name, "--undo"])
        if u.returncode != 0:
            sys.exit(f"undo failed: {u.stdout}{u.stderr}")
        end = time.monotonic() + a.timeout
        after = failures(xm, a.name)
        while after and time.monotonic() < end:
            time.sleep(0.3)
            after = failures(xm, a.name)
        clean_runs += 1
        if after:
            false_alarms += 1
            misses.append(("clean run", [x.args for x in faults], sorted(after)))

    print(f"## {a.rounds} rounds of randomized faults (one, then two at a time; seed {a.seed})\n")
    print("| kind | injected | found | exact ports | median time to detection (s) | slowest (s) |")
    print("|---|---:|---:|---:|---:|---:|")
    total = {"injected": 0, "found": 0, "exact": 0}
    for k in KINDS:
        s = stats[k]
        for key in total:
            total[key] += s["injected" if key == "injected" else key]
        t = sorted(s["times"])
        med = f"{t[len(t) // 2]:.1f}" if t else "-"
        slow = f"{t[-1]:.1f}" if t else "-"
        print(f"| {k} | {s['injected']} | {s['found']} | {s['exact']} | {med} | {slow} |")
    print(f"| **all** | **{total['injected']}** | **{total['found']}** | **{total['exact']}** | | |\n")
    print(f"Clean validations after undoing each round: {clean_runs}, with an alarm: {false_alarms}.")
    for m in misses:
        print(f"- missed or inexact: {m}")
    run(xm, ["testbed", "down", "--name", a.name])


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The peer for bench/topo_scale.sh: the same fabric graph built with networkx.

Reads a cluster spec in xm's JSON form (as `xm topo gen -o spec.json` writes it),
wires it exactly as xm's builder does (accelerators, NICs, intra-server switch, ToR /
agg / core, parallel links as separate edges), counts the equal-cost paths between the
farthest pair on one rail, and prints one JSON line: nodes, links, paths, seconds.
Supports what `xm topo gen` writes: uniform NICs, one plane or several.
"""
import json
import sys
import time

import networkx as nx


def build(spec):
    s, f = spec["server"], spec["fabric"]
    servers, acc = spec["servers"], s["accelerators"]
    nics, ports, planes = s["nics"], s["nic_ports"], f["planes"]
    nic_gbps = s["nic_gbps"]
    rail_opt = f["kind"] == "rail-optimized"
    tor, agg, core = f["tor"], f.get("agg"), f.get("core")
    ppp = ports // planes
    tors_per_seg = (nics if rail_opt else 1) * ppp
    segments = -(-servers // tor["servers"])
    tors_per_plane = segments * tors_per_seg

    g = nx.MultiGraph()
    for srv in range(servers):
        nvs = ("nvs", srv)
        for a in range(acc):
            g.add_edge(("gpu", srv, a), nvs, gbps=s["intra"]["gbps"])
        for n in range(nics):
            g.add_edge(("gpu", srv, n * acc // nics if nics >= acc else n), ("nic", srv, n), gbps=s["pcie"]["gbps"])
            for p in range(ports):
                slot = (n * ppp if rail_opt else 0) + p // planes
                g.add_edge(("nic", srv, n), ("tor", p % planes, srv // tor["servers"], slot),
                           gbps=nic_gbps / ports)
    if agg:
        pods = -(-tors_per_plane // agg["tors"])
        per = tor["uplinks"] // agg["count"]
        for plane in range(planes):
            for t in range(tors_per_plane):
                for i in range(agg["count"]):
                    for _ in range(per):
                        g.add_edge(("tor", plane, t // tors_per_seg, t % tors_per_seg),
                                   ("agg", plane, t // agg["tors"], i), gbps=agg["link"]["gbps"])
        if core:
            cpg = core["count"] // agg["count"]
            per = agg["uplinks"] // cpg
            for plane in range(planes):
                for pod in range(pods):
                    for i in range(agg["count"]):
                        for k in range(cpg):
                            for _ in range(per):
                                g.add_edge(("agg", plane, pod, i), ("core", plane, i, k),
                                           gbps=core["link"]["gbps"])
    return g


def farthest_paths(g, spec):
    a, b = ("gpu", 0, 0), ("gpu", spec["servers"] - 1, 0)
    # Routes between servers leave through NICs, never another server's intra switch.
    view = nx.subgraph_view(g, filter_node=lambda n: n[0] not in ("nvs",) and (n[0] != "gpu" or n in (a, b)))
    return sum(1 for _ in nx.all_shortest_paths(nx.Graph(view), a, b))


def main():
    spec = json.load(open(sys.argv[1]))
    t0 = time.perf_counter()
    g = build(spec)
    paths = farthest_paths(g, spec) if spec["servers"] > 1 else 0
    print(json.dumps({"nodes": g.number_of_nodes(), "links": g.number_of_edges(), "paths": paths,
                      "seconds": time.perf_counter() - t0}))


if __name__ == "__main__":
    main()

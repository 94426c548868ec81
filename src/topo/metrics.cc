#include "topo/metrics.h"

#include <algorithm>

#include "topo/paths.h"

namespace xm::topo {
namespace {

// Tier of a node: 0 below the fabric (NICs), 1 ToR, 2 agg, 3 core.
int tier(NodeKind kind) {
  switch (kind) {
    case NodeKind::kTor: return 1;
    case NodeKind::kAgg: return 2;
    case NodeKind::kCore: return 3;
    default: return 0;
  }
}

TierSummary tier_summary(const Fabric& f, NodeKind kind, const char* name, uint32_t ports) {
  TierSummary t{name, f.count(kind), ports};
  const int level = tier(kind);
  for (NodeId id = f.first(kind); id < f.first(kind) + f.count(kind); ++id) {
    double down = 0, up = 0;
    for (LinkId l : f.links_of(id)) {
      NodeKind peer = f.node(f.other_end(l, id)).kind;
      bool above = tier(peer) > level;
      (above ? up : down) += f.link(l).gbps;
      t.links_up += above;
    }
    t.down_gbps += down;
    t.up_gbps += up;
    if (up > 0) t.oversubscription = std::max(t.oversubscription, down / up);
  }
  return t;
}

// The farthest pair of accelerators on one rail: first and last server, local index 0.
void measure_ecmp(const Fabric& f, Summary& s) {
  if (s.servers < 2) return;
  NodeId a = f.accelerator(0, 0), b = f.accelerator(s.servers - 1, 0);
  Result<PathSet> p = equal_cost_paths(f, a, b, 0);
  if (!p) return;
  s.ecmp_paths = p->paths;
  s.ecmp_link_paths = p->link_paths;
  // The example list was not asked for, so count switches from the path length:
  // accelerator, NIC, switches..., NIC, accelerator.
  s.ecmp_switches = p->links >= 4 ? p->links - 3 : 0;
}

}  // namespace

Summary summarize(const Fabric& f) {
  const ClusterSpec& spec = f.spec();
  const Derived& d = f.derived();
  Summary s;
  s.name = spec.name;
  s.kind = spec.fabric.kind;
  s.tiers = d.tiers;
  s.planes = spec.fabric.planes;
  s.servers = spec.servers;
  s.accelerators = f.count(NodeKind::kAccelerator);
  s.nics = f.count(NodeKind::kNic);
  s.nic_ports = spec.server.nic_ports;
  s.rails = uint32_t(d.rails.size());
  for (const NicSpec& nic : spec.server.nics) s.server_gbps += nic.gbps;
  s.nodes = f.node_count();
  s.links = f.link_count();

  s.tiers_detail.push_back(tier_summary(f, NodeKind::kTor, "tor", spec.fabric.tor.ports));
  if (spec.fabric.agg) s.tiers_detail.push_back(tier_summary(f, NodeKind::kAgg, "agg", spec.fabric.agg->ports));
  if (spec.fabric.core) s.tiers_detail.push_back(tier_summary(f, NodeKind::kCore, "core", spec.fabric.core->ports));
  s.host_gbps = s.tiers_detail.front().down_gbps;
  for (NodeId id = f.first(NodeKind::kTor); id < f.first(NodeKind::kTor) + f.count(NodeKind::kTor); ++id)
    for (LinkId l : f.links_of(id)) s.host_links += f.node(f.other_end(l, id)).kind == NodeKind::kNic;

  // Half the servers talking to the other half cross every tier's uplinks at most once
  // each way, so each tier's uplink total caps the bisection as the hosts' bandwidth does.
  // (Uplinks of a tier that holds every ToR or pod in one piece never carry that traffic.)
  double cap = s.host_gbps;
  if (spec.fabric.agg && d.tors_per_plane > 1) cap = std::min(cap, s.tiers_detail[0].up_gbps);
  if (spec.fabric.core && d.pods > 1) cap = std::min(cap, s.tiers_detail[1].up_gbps);
  s.bisection_gbps = cap / 2;

  measure_ecmp(f, s);
  s.front_tors = f.count(NodeKind::kFrontTor);
  if (spec.frontend) s.front_server_gbps = spec.frontend->nic_gbps;
  return s;
}

TrafficShare classify_traffic(const Fabric& f, const std::vector<Demand>& demands) {
  TrafficShare share;
  const uint32_t n = f.count(NodeKind::kAccelerator);
  const NodeId base = f.first(NodeKind::kAccelerator);
  for (const Demand& d : demands) {
    if (d.src >= n || d.dst >= n || d.src == d.dst) continue;
    NodeId a = base + d.src, b = base + d.dst;
    if (f.node(a).group == f.node(b).group) share.intra_server += d.bytes;
    else if (one_tor_hop(f, a, b)) share.one_tor_hop += d.bytes;
    else share.cross += d.bytes;
  }
  return share;
}

}  // namespace xm::topo

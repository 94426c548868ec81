#include "sim/topology.h"

#include <algorithm>
#include <queue>

namespace xm::sim {

const char* to_string(Tier tier) {
  switch (tier) {
    case Tier::kHost: return "host";
    case Tier::kTor: return "tor";
    case Tier::kAgg: return "agg";
    case Tier::kCore: return "core";
    case Tier::kOther: return "switch";
    case Tier::kIntra: return "intra";
  }
  return "?";
}

Result<SimTopology> topology_from_fabric(const topo::Fabric& fabric, bool intra) {
  using topo::NodeKind;
  SimTopology t;
  t.name = fabric.spec().name;
  // Fabric ids -> simulator ids: NICs first, then ToR, agg, core (their id order).
  std::vector<uint32_t> index(fabric.node_count(), UINT32_MAX);
  auto add_kind = [&](NodeKind kind, Tier tier) {
    for (topo::NodeId id = fabric.first(kind); id < fabric.first(kind) + fabric.count(kind); ++id) {
      index[id] = t.node_count();
      t.tier.push_back(tier);
      t.names.push_back(fabric.name(id));
      if (tier == Tier::kHost) {
        t.server.push_back(fabric.node(id).group);
        t.rail.push_back(fabric.rail_of(id));
      }
    }
  };
  add_kind(NodeKind::kNic, Tier::kHost);
  t.hosts = t.node_count();
  add_kind(NodeKind::kTor, Tier::kTor);
  add_kind(NodeKind::kAgg, Tier::kAgg);
  add_kind(NodeKind::kCore, Tier::kCore);
  if (intra) add_kind(NodeKind::kIntraSwitch, Tier::kIntra);
  t.intra = intra;
  if (t.hosts == 0) return Error{"the fabric has no NIC to simulate"};
  if (t.switch_count() == 0) return Error{"the fabric has no switch to simulate"};
  for (topo::LinkId l = 0; l < fabric.link_count(); ++l) {
    const topo::Link& link = fabric.link(l);
    if (index[link.a] == UINT32_MAX || index[link.b] == UINT32_MAX) continue;
    t.links.push_back(SimLink{index[link.a], index[link.b], Rate::gbps(link.gbps),
                              Time::ns(double(link.latency_ns))});
  }
  const topo::ClusterSpec& spec = fabric.spec();
  t.accelerator_nic.resize(spec.servers);
  for (uint32_t srv = 0; srv < spec.servers; ++srv) {
    for (uint32_t a = 0; a < spec.server.accelerators; ++a)
      t.accelerator_nic[srv].push_back(index[fabric.nic_of(fabric.accelerator(srv, a))]);
    if (!intra) continue;
    // The fabric joins accelerators to the switch; here each NIC stands for its own.
    const NodeIndex sw = index[fabric.intra_switch(srv)];
    for (uint32_t n = 0; n < spec.server.nics.size(); ++n)
      t.links.push_back(SimLink{index[fabric.nic(srv, n)], sw, Rate::gbps(spec.server.intra.gbps),
                                Time::ns(double(spec.server.intra.latency_ns))});
  }
  if (Status s = check_topology(t); !s) return Error{s.message()};
  return t;
}

Rate line_rate(const SimTopology& t) {
  Rate line;
  for (const SimLink& l : t.links)
    if ((t.is_host(l.a) || t.is_host(l.b)) && t.tier[std::max(l.a, l.b)] != Tier::kIntra) line = max(line, l.rate);
  return line;
}

Status check_topology(const SimTopology& t) {
  const uint32_t n = t.node_count();
  if (t.hosts == 0 || t.hosts >= n) return Error{"a topology needs hosts and switches"};
  if (t.names.size() != n) return Error{"one name per node is required"};
  std::vector<std::vector<uint32_t>> adj(n);
  for (size_t i = 0; i < t.links.size(); ++i) {
    const SimLink& l = t.links[i];
    if (l.a >= n || l.b >= n) return Error{"link " + std::to_string(i) + " names a node out of range"};
    if (l.a == l.b) return Error{"link " + std::to_string(i) + " joins node " + std::to_string(l.a) + " to itself"};
    if (t.is_host(l.a) && t.is_host(l.b))
      return Error{"link " + std::to_string(i) + " joins two hosts; hosts attach to switches"};
    if (!(l.rate.bps() > 0)) return Error{"link " + std::to_string(i) + " has no positive rate"};
    if (l.delay < Time()) return Error{"link " + std::to_string(i) + " has a negative delay"};
    adj[l.a].push_back(l.b);
    adj[l.b].push_back(l.a);
  }
  // Every host reaches host 0 through switches (hosts do not forward).
  std::vector<char> seen(n, 0);
  std::queue<uint32_t> todo;
  todo.push(0);
  seen[0] = 1;
  while (!todo.empty()) {
    uint32_t u = todo.front();
    todo.pop();
    if (t.is_host(u) && u != 0) continue;
    for (uint32_t v : adj[u])
      if (!seen[v]) seen[v] = 1, todo.push(v);
  }
  for (uint32_t h = 0; h < t.hosts; ++h) {
    if (adj[h].empty()) return Error{"host " + t.names[h] + " has no link"};
    if (!seen[h]) return Error{"host " + t.names[h] + " cannot reach host " + t.names[0]};
  }
  return Status::Ok();
}

}  // namespace xm::sim

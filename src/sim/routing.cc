#include "sim/routing.h"

#include <cassert>
#include <map>
#include <queue>

namespace xm::sim {

Wiring wire(const SimTopology& t) {
  const uint32_t n = t.node_count();
  Wiring w;
  std::vector<uint32_t> degree(n, 0);
  for (const SimLink& l : t.links) ++degree[l.a], ++degree[l.b];
  w.first_port.assign(n + 1, 0);
  for (uint32_t i = 0; i < n; ++i) w.first_port[i + 1] = w.first_port[i] + degree[i];
  const size_t ports = w.first_port[n];
  w.owner.resize(ports);
  w.peer_node.resize(ports);
  w.peer_port.resize(ports);
  w.link.resize(ports);
  std::vector<uint32_t> next(w.first_port.begin(), w.first_port.end() - 1);
  for (uint32_t i = 0; i < t.links.size(); ++i) {
    const SimLink& l = t.links[i];
    PortId pa = next[l.a]++, pb = next[l.b]++;
    w.owner[pa] = l.a, w.peer_node[pa] = l.b, w.peer_port[pa] = pb, w.link[pa] = i;
    w.owner[pb] = l.b, w.peer_node[pb] = l.a, w.peer_port[pb] = pa, w.link[pb] = i;
  }
  return w;
}

Routing::Routing(const SimTopology& t, const Wiring& w, const std::vector<char>* excluded)
    : wiring_(&w), hosts_(t.hosts) {
  auto usable = [&](PortId p) { return !excluded || !(*excluded)[w.link[p]]; };
  const uint32_t n = t.node_count(), switches = n - t.hosts;
  intra_.assign(n, 0);
  for (NodeIndex i = t.hosts; i < n; ++i) intra_[i] = t.tier[i] == Tier::kIntra;
  group_.assign(size_t(switches) * hosts_, 0);
  std::map<std::vector<uint16_t>, uint16_t> sets;
  std::vector<std::vector<uint16_t>> by_id;
  std::vector<uint32_t> dist(n);
  std::vector<uint16_t> row;
  for (uint32_t dst = 0; dst < hosts_; ++dst) {
    std::fill(dist.begin(), dist.end(), UINT32_MAX);
    std::queue<NodeIndex> todo;
    dist[dst] = 0;
    todo.push(dst);
    while (!todo.empty()) {
      NodeIndex u = todo.front();
      todo.pop();
      if (t.is_host(u) && u != dst) continue;  // hosts do not forward
      for (PortId p = w.first_port[u]; p < w.first_port[u + 1]; ++p) {
        NodeIndex v = w.peer_node[p];
        if (usable(p) && dist[v] == UINT32_MAX) dist[v] = dist[u] + 1, todo.push(v);
      }
    }
    for (NodeIndex s = hosts_; s < n; ++s) {
      row.clear();
      if (dist[s] != UINT32_MAX)
        for (PortId p = w.first_port[s]; p < w.first_port[s + 1]; ++p) {
          NodeIndex v = w.peer_node[p];
          if (usable(p) && dist[v] + 1 == dist[s] && (!t.is_host(v) || v == dst))
            row.push_back(uint16_t(p - w.first_port[s]));
        }
      auto [it, added] = sets.emplace(row, uint16_t(by_id.size()));
      if (added) by_id.push_back(row);
      // Clos fabrics have a few hundred distinct sets (about one per ToR and tier).
      assert(by_id.size() <= UINT16_MAX);
      group_[size_t(s - hosts_) * hosts_ + dst] = it->second;
    }
  }
  group_begin_.push_back(0);
  for (const std::vector<uint16_t>& set : by_id) {
    hops_.insert(hops_.end(), set.begin(), set.end());
    group_begin_.push_back(uint32_t(hops_.size()));
  }
}

uint32_t Routing::hops_to(NodeIndex sw, uint32_t dst) const {
  const Wiring& w = *wiring_;
  for (uint32_t hops = 1; hops <= 64; ++hops) {
    auto next = next_hops(sw, dst);
    if (next.empty()) return UINT32_MAX;
    const NodeIndex v = w.peer_node[w.first_port[sw] + next[0]];
    if (v == dst) return hops;
    sw = v;
  }
  return UINT32_MAX;
}

std::vector<PortId> Routing::host_ports(uint32_t src, uint32_t dst) const {
  const Wiring& w = *wiring_;
  if (w.ports_of(src) == 1) return {w.first_port[src]};
  std::vector<PortId> best;
  uint32_t fewest = UINT32_MAX;
  for (PortId p = w.first_port[src]; p < w.first_port[src + 1]; ++p) {
    const uint32_t hops = hops_to(w.peer_node[p], dst);
    if (hops < fewest) fewest = hops, best.clear();
    if (hops == fewest && hops != UINT32_MAX) best.push_back(p);
  }
  for (PortId p : best)
    if (intra_[w.peer_node[p]]) return {p};
  return best;
}

std::vector<uint32_t> Routing::path_links(uint32_t src, uint32_t dst) const {
  const Wiring& w = *wiring_;
  std::vector<uint32_t> links;
  const std::vector<PortId> first = host_ports(src, dst);
  if (first.empty()) return {};
  PortId p = first[0];
  for (;;) {
    links.push_back(w.link[p]);
    NodeIndex at = w.peer_node[p];
    if (at == dst) return links;
    assert(at >= hosts_);
    auto hops = next_hops(at, dst);
    if (hops.empty() || links.size() > 64) return {};
    p = w.first_port[at] + hops[0];
  }
}

}  // namespace xm::sim

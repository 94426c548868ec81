#include "sim/routing.h"

#include <cassert>
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

Routing::Routing(const SimTopology& t, const Wiring& w) : wiring_(&w), hosts_(t.hosts) {
  const uint32_t n = t.node_count(), switches = n - t.hosts;
  begin_.assign(size_t(switches) * (hosts_ + 1) + 1, 0);
  std::vector<std::vector<uint16_t>> rows(size_t(switches) * (hosts_ + 1));
  std::vector<uint32_t> dist(n);
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
        if (dist[v] == UINT32_MAX) dist[v] = dist[u] + 1, todo.push(v);
      }
    }
    for (NodeIndex s = hosts_; s < n; ++s) {
      if (dist[s] == UINT32_MAX) continue;
      auto& row = rows[size_t(s - hosts_) * (hosts_ + 1) + dst];
      for (PortId p = w.first_port[s]; p < w.first_port[s + 1]; ++p) {
        NodeIndex v = w.peer_node[p];
        if (dist[v] + 1 == dist[s] && (!t.is_host(v) || v == dst))
          row.push_back(uint16_t(p - w.first_port[s]));
      }
    }
  }
  // Flatten: row r's hops are hops_[begin_[r], begin_[r + 1]).
  for (size_t r = 0; r < rows.size(); ++r) {
    begin_[r] = uint32_t(hops_.size());
    hops_.insert(hops_.end(), rows[r].begin(), rows[r].end());
  }
  begin_[rows.size()] = uint32_t(hops_.size());
  // Row (s, hosts_) is a padding row so that row + 1 is always valid; its range is empty.
}

std::vector<uint32_t> Routing::path_links(uint32_t src, uint32_t dst) const {
  const Wiring& w = *wiring_;
  std::vector<uint32_t> links;
  PortId p = w.first_port[src];  // a host's first port
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

#include "topo/paths.h"

#include <algorithm>
#include <deque>
#include <limits>

namespace xm::topo {
namespace {

constexpr uint32_t kUnseen = std::numeric_limits<uint32_t>::max();

uint64_t saturating_add(uint64_t x, uint64_t y) {
  return x > std::numeric_limits<uint64_t>::max() - y ? std::numeric_limits<uint64_t>::max() : x + y;
}
uint64_t saturating_mul(uint64_t x, uint64_t y) {
  return y && x > std::numeric_limits<uint64_t>::max() / y ? std::numeric_limits<uint64_t>::max() : x * y;
}

// The nodes a path between two servers may cross: their NICs and the fabric switches.
bool transit(NodeKind kind) { return kind == NodeKind::kNic || is_fabric_switch(kind); }

// Breadth-first search from `a` over transit nodes, counting paths as it goes; stops
// after the layer that reaches `b`.
struct Search {
  std::vector<uint32_t> dist;
  std::vector<uint64_t> paths, link_paths;
};

Search search(const Fabric& f, NodeId a, NodeId b) {
  Search s;
  s.dist.assign(f.node_count(), kUnseen);
  s.paths.assign(f.node_count(), 0);
  s.link_paths.assign(f.node_count(), 0);
  s.dist[a] = 0;
  s.paths[a] = s.link_paths[a] = 1;
  std::deque<NodeId> queue{a};
  while (!queue.empty()) {
    NodeId u = queue.front();
    queue.pop_front();
    if (s.dist[b] != kUnseen && s.dist[u] >= s.dist[b]) break;
    auto links = f.links_of(u);
    for (size_t i = 0; i < links.size(); ++i) {
      NodeId v = f.other_end(links[i], u);
      if (v != b && !transit(f.node(v).kind)) continue;
      uint64_t parallel = 1;  // links to one neighbour are adjacent: take them together
      while (i + 1 < links.size() && f.other_end(links[i + 1], u) == v) ++i, ++parallel;
      if (s.dist[v] == kUnseen) {
        s.dist[v] = s.dist[u] + 1;
        queue.push_back(v);
      }
      if (s.dist[v] == s.dist[u] + 1) {
        s.paths[v] = saturating_add(s.paths[v], s.paths[u]);
        s.link_paths[v] = saturating_add(s.link_paths[v], saturating_mul(s.link_paths[u], parallel));
      }
    }
  }
  return s;
}

// Walks back from `b` along predecessors, collecting up to `max` whole paths.
void collect(const Fabric& f, const Search& s, NodeId a, std::vector<NodeId>& suffix, size_t max,
             std::vector<std::vector<NodeId>>& out) {
  NodeId u = suffix.back();
  if (u == a) {
    out.emplace_back(suffix.rbegin(), suffix.rend());
    return;
  }
  NodeId last = kUnseen;
  for (LinkId l : f.links_of(u)) {
    NodeId v = f.other_end(l, u);
    if (v == last || s.dist[v] == kUnseen || s.dist[v] + 1 != s.dist[u]) continue;
    if (v != a && !transit(f.node(v).kind)) continue;
    last = v;
    suffix.push_back(v);
    collect(f, s, a, suffix, max, out);
    suffix.pop_back();
    if (out.size() >= max) return;
  }
}

// The link from u to v with the lowest id (the first of any parallel bundle).
const Link& link_between(const Fabric& f, NodeId u, NodeId v) {
  for (LinkId l : f.links_of(u))
    if (f.other_end(l, u) == v) return f.link(l);
  return f.link(f.links_of(u).front());  // unreachable on a path the search produced
}

void describe_first(const Fabric& f, PathSet& p) {
  if (p.examples.empty()) return;
  const std::vector<NodeId>& path = p.examples.front();
  p.bottleneck_gbps = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i + 1 < path.size(); ++i) {
    const Link& l = link_between(f, path[i], path[i + 1]);
    p.latency_ns += l.latency_ns;
    p.bottleneck_gbps = std::min<double>(p.bottleneck_gbps, l.gbps);
  }
  for (NodeId n : path) p.switches += is_fabric_switch(f.node(n).kind);
}

}  // namespace

Result<PathSet> equal_cost_paths(const Fabric& f, NodeId a, NodeId b, size_t max_examples) {
  for (NodeId id : {a, b}) {
    if (id >= f.node_count()) return Error{"node id " + std::to_string(id) + " is out of range"};
    if (f.node(id).kind != NodeKind::kAccelerator) return Error{f.name(id) + " is not an accelerator"};
  }
  if (a == b) return Error{"a path needs two different accelerators (both are " + f.name(a) + ")"};

  PathSet p;
  if (f.node(a).group == f.node(b).group) {  // one server: across its intra-server switch
    p.links = 2;
    p.paths = p.link_paths = 1;
    p.examples.push_back({a, f.intra_switch(f.node(a).group), b});
    describe_first(f, p);
    p.examples.resize(std::min<size_t>(1, max_examples));
    return p;
  }
  Search s = search(f, a, b);
  if (s.dist[b] == kUnseen)
    return Error{"no network path from " + f.name(a) + " to " + f.name(b) +
                 ": their NICs' switches are not connected (a rail-only fabric without an upper tier?)"};
  p.links = s.dist[b];
  p.paths = s.paths[b];
  p.link_paths = s.link_paths[b];
  std::vector<NodeId> suffix{b};
  collect(f, s, a, suffix, std::max<size_t>(1, max_examples), p.examples);
  describe_first(f, p);  // from the first path, so it needs one even when none were asked for
  p.examples.resize(std::min(p.examples.size(), max_examples));
  return p;
}

bool one_tor_hop(const Fabric& f, NodeId a, NodeId b) {
  if (f.node(a).group == f.node(b).group) return false;
  NodeId na = f.nic_of(a), nb = f.nic_of(b);
  for (LinkId la : f.links_of(na)) {
    NodeId ta = f.other_end(la, na);
    if (f.node(ta).kind != NodeKind::kTor) continue;
    for (LinkId lb : f.links_of(nb))
      if (f.other_end(lb, nb) == ta) return true;
  }
  return false;
}

}  // namespace xm::topo

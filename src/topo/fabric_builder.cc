// build_fabric: a validated spec -> the fabric graph, tier by tier.
#include <algorithm>

#include "topo/fabric.h"

namespace xm::topo {

class FabricBuilder {
 public:
  explicit FabricBuilder(const ClusterSpec& spec) {
    f_.spec_ = spec;
    f_.derived_ = derive(spec);
  }

  Fabric build() {
    add_nodes();
    attach_servers();
    attach_tors();
    attach_aggs();
    attach_frontend();
    index_adjacency();
    return std::move(f_);
  }

 private:
  const ClusterSpec& spec() const { return f_.spec_; }
  const Derived& d() const { return f_.derived_; }

  void add_kind(NodeKind kind, uint32_t n, auto&& make) {
    f_.kind_begin_[size_t(kind)] = NodeId(f_.nodes_.size());
    for (uint32_t i = 0; i < n; ++i) f_.nodes_.push_back(make(i));
    f_.kind_begin_[size_t(kind) + 1] = NodeId(f_.nodes_.size());
  }

  void add_nodes() {
    const ClusterSpec& s = spec();
    const uint32_t servers = s.servers, acc = s.server.accelerators;
    const uint32_t nics = uint32_t(s.server.nics.size()), planes = s.fabric.planes;
    const bool fe = s.frontend.has_value();
    uint32_t aggs = s.fabric.agg ? s.fabric.agg->count : 0;
    uint32_t cores = s.fabric.core ? s.fabric.core->count : 0;
    uint32_t front_tors = fe ? (servers + s.frontend->servers_per_tor - 1) / s.frontend->servers_per_tor : 0;

    size_t estimate = size_t(servers) * (acc + nics + 1 + 2 * fe) +
                      size_t(planes) * (d().tors_per_plane + d().pods * aggs + cores) + front_tors + fe;
    f_.nodes_.reserve(estimate);
    add_kind(NodeKind::kAccelerator, servers * acc,
             [&](uint32_t i) { return Node{NodeKind::kAccelerator, 0, uint16_t(i % acc), i / acc}; });
    add_kind(NodeKind::kNic, servers * nics,
             [&](uint32_t i) { return Node{NodeKind::kNic, 0, uint16_t(i % nics), i / nics}; });
    add_kind(NodeKind::kIntraSwitch, servers, [](uint32_t i) { return Node{NodeKind::kIntraSwitch, 0, 0, i}; });
    add_kind(NodeKind::kHost, fe ? servers : 0, [](uint32_t i) { return Node{NodeKind::kHost, 0, 0, i}; });
    add_kind(NodeKind::kFrontNic, fe ? servers : 0, [](uint32_t i) { return Node{NodeKind::kFrontNic, 0, 0, i}; });
    uint32_t tpp = d().tors_per_plane, tps = d().tors_per_segment;
    add_kind(NodeKind::kTor, planes * tpp, [&](uint32_t i) {
      uint32_t t = i % tpp;
      return Node{NodeKind::kTor, uint8_t(i / tpp), uint16_t(t % tps), t / tps};
    });
    uint32_t app = d().pods * aggs;  // aggs per plane
    add_kind(NodeKind::kAgg, planes * app, [&](uint32_t i) {
      uint32_t a = i % app;
      return Node{NodeKind::kAgg, uint8_t(i / app), uint16_t(a % aggs), a / aggs};
    });
    uint32_t cpg = std::max(1u, d().cores_per_group);
    add_kind(NodeKind::kCore, planes * cores, [&](uint32_t i) {
      uint32_t c = i % std::max(1u, cores);
      return Node{NodeKind::kCore, uint8_t(i / std::max(1u, cores)), uint16_t(c % cpg), c / cpg};
    });
    add_kind(NodeKind::kFrontTor, front_tors, [](uint32_t i) { return Node{NodeKind::kFrontTor, 0, 0, i}; });
    add_kind(NodeKind::kFrontSpine, fe ? 1 : 0, [](uint32_t) { return Node{NodeKind::kFrontSpine, 0, 0, 0}; });
  }

  void link(NodeId a, NodeId b, double gbps, uint32_t latency_ns, uint32_t copies = 1) {
    for (uint32_t i = 0; i < copies; ++i) f_.links_.push_back(Link{a, b, float(gbps), latency_ns});
  }

  // Accelerators to their intra-server switch and to their NIC(s) over PCIe.
  void attach_servers() {
    const ServerSpec& s = spec().server;
    const uint32_t acc = s.accelerators, nics = uint32_t(s.nics.size());
    for (uint32_t srv = 0; srv < spec().servers; ++srv) {
      for (uint32_t g = 0; g < acc; ++g)
        link(f_.accelerator(srv, g), f_.intra_switch(srv), s.intra.gbps, s.intra.latency_ns);
      // With as many NICs as accelerators this pairs accelerator i with NIC i; otherwise
      // the NICs are spread evenly over the accelerators (or the other way round).
      if (nics >= acc) {
        for (uint32_t n = 0; n < nics; ++n)
          link(f_.accelerator(srv, n * acc / nics), f_.nic(srv, n), s.pcie.gbps, s.pcie.latency_ns);
      } else {
        for (uint32_t g = 0; g < acc; ++g)
          link(f_.accelerator(srv, g), f_.nic(srv, g * nics / acc), s.pcie.gbps, s.pcie.latency_ns);
      }
    }
  }

  NodeId tor(uint32_t plane, uint32_t segment, uint32_t slot) const {
    return f_.first(NodeKind::kTor) + plane * d().tors_per_plane + segment * d().tors_per_segment + slot;
  }

  // NIC port p lands in plane p % planes on ToR slot (rail, p / planes) of its segment.
  void attach_tors() {
    const ClusterSpec& s = spec();
    const uint32_t planes = s.fabric.planes, ppp = d().ports_per_plane;
    const bool rail = s.fabric.kind == FabricKind::kRailOptimized;
    for (uint32_t srv = 0; srv < s.servers; ++srv) {
      uint32_t segment = srv / s.fabric.tor.servers;
      for (uint32_t n = 0; n < s.server.nics.size(); ++n) {
        const NicSpec& nic = s.server.nics[n];
        uint32_t rail_index =
            uint32_t(std::lower_bound(d().rails.begin(), d().rails.end(), nic.rail) - d().rails.begin());
        for (uint32_t p = 0; p < s.server.nic_ports; ++p) {
          uint32_t slot = (rail ? rail_index * ppp : 0) + p / planes;
          link(f_.nic(srv, n), tor(p % planes, segment, slot), nic.gbps / s.server.nic_ports,
               s.fabric.tor.host_latency_ns);
        }
      }
    }
  }

  NodeId agg(uint32_t plane, uint32_t pod, uint32_t index) const {
    uint32_t count = spec().fabric.agg->count;
    return f_.first(NodeKind::kAgg) + (plane * d().pods + pod) * count + index;
  }

  // Each ToR to every agg of its pod; agg i of every pod to every core of group i.
  void attach_aggs() {
    const FabricSpec& f = spec().fabric;
    if (!f.agg) return;
    const AggTier& a = *f.agg;
    for (uint32_t plane = 0; plane < f.planes; ++plane)
      for (uint32_t t = 0; t < d().tors_per_plane; ++t) {
        NodeId from = tor(plane, t / d().tors_per_segment, t % d().tors_per_segment);
        for (uint32_t i = 0; i < a.count; ++i)
          link(from, agg(plane, t / a.tors, i), a.link.gbps, a.link.latency_ns, d().links_tor_agg);
      }
    if (!f.core) return;
    const CoreTier& c = *f.core;
    for (uint32_t plane = 0; plane < f.planes; ++plane)
      for (uint32_t pod = 0; pod < d().pods; ++pod)
        for (uint32_t i = 0; i < a.count; ++i)
          for (uint32_t k = 0; k < d().cores_per_group; ++k) {
            NodeId core = f_.first(NodeKind::kCore) + plane * c.count + i * d().cores_per_group + k;
            link(agg(plane, pod, i), core, c.link.gbps, c.link.latency_ns, d().links_agg_core);
          }
  }

  void attach_frontend() {
    if (!spec().frontend) return;
    const FrontendSpec& fe = *spec().frontend;
    for (uint32_t srv = 0; srv < spec().servers; ++srv) {
      NodeId host = f_.first(NodeKind::kHost) + srv, nic = f_.first(NodeKind::kFrontNic) + srv;
      link(host, nic, spec().server.pcie.gbps, spec().server.pcie.latency_ns);
      link(nic, f_.first(NodeKind::kFrontTor) + srv / fe.servers_per_tor, fe.nic_gbps, fe.host_latency_ns);
    }
    for (uint32_t t = 0; t < f_.count(NodeKind::kFrontTor); ++t)
      link(f_.first(NodeKind::kFrontTor) + t, f_.first(NodeKind::kFrontSpine), fe.uplink.gbps,
           fe.uplink.latency_ns);
  }

  // Compressed adjacency, each node's links sorted by the node at the other end.
  void index_adjacency() {
    const size_t n = f_.nodes_.size();
    std::vector<uint32_t>& begin = f_.adjacency_begin_;
    begin.assign(n + 1, 0);
    for (const Link& l : f_.links_) ++begin[l.a + 1], ++begin[l.b + 1];
    for (size_t i = 0; i < n; ++i) begin[i + 1] += begin[i];
    f_.adjacency_.resize(begin[n]);
    std::vector<uint32_t> fill(begin.begin(), begin.end() - 1);
    for (LinkId id = 0; id < f_.links_.size(); ++id) {
      f_.adjacency_[fill[f_.links_[id].a]++] = id;
      f_.adjacency_[fill[f_.links_[id].b]++] = id;
    }
    for (NodeId id = 0; id < n; ++id) {
      auto first = f_.adjacency_.begin() + begin[id], last = f_.adjacency_.begin() + begin[id + 1];
      std::sort(first, last, [&](LinkId x, LinkId y) {
        NodeId px = f_.other_end(x, id), py = f_.other_end(y, id);
        return px != py ? px < py : x < y;
      });
    }
  }

  Fabric f_;
};

Result<Fabric> build_fabric(const ClusterSpec& spec) {
  std::vector<SpecIssue> issues = validate(spec);
  if (!issues.empty()) return Error{issues.front().field + ": " + issues.front().message};
  return FabricBuilder(spec).build();
}

}  // namespace xm::topo

// make_plan: the fabric graph of the spec, walked cable by cable, named and addressed.
#include "ops/fabric_plan.h"

#include <algorithm>
#include <bit>

#include "topo/fabric.h"

namespace xm::ops {
namespace {

using topo::Fabric;
using topo::NodeId;
using topo::NodeKind;

constexpr uint32_t kHostPoolEnd = 11u << 24;             // host subnets stay inside 10/8
constexpr Prefix kLinkPool{Ipv4{172u << 24 | 16u << 16}, 12};
constexpr Prefix kLoopbackPool{Ipv4{192u << 24 | 168u << 16}, 16};
// RFC 6996 private 4-byte ASNs run to 4294967294: room for 94 million switches, more
// than the spec's limits allow.
constexpr uint32_t kFirstAsn = 4200000000u;

uint32_t pool_size(Prefix p) { return uint32_t{1} << (32 - p.length); }

class Planner {
 public:
  Planner(const Fabric& f, const PlanOptions& options, FabricPlan& plan) : f_(f), o_(options), plan_(plan) {}

  Status run() {
    const topo::Derived& d = f_.derived();
    host_block_ = std::max<uint32_t>(256, std::bit_ceil(d.tor_down_ports + 3));
    uint32_t tors = f_.count(NodeKind::kTor);
    uint64_t slots = uint64_t{plan_.spec.fabric.planes} * d.segments * labels_per_segment();
    uint64_t host_pool = slots * host_block_;
    uint32_t host_base = 10u << 24 | o_.subnet << 16;
    if (host_base + host_pool > kHostPoolEnd)
      return Error{"fabric: " + std::to_string(tors) + " ToRs need " + std::to_string(host_pool >> 8) +
                   " /24s of host subnets from 10." + std::to_string(o_.subnet) +
                   ".0.0, past 10.255.255.255; choose a lower subnet octet"};
    uint32_t switches = tors + f_.count(NodeKind::kAgg) + f_.count(NodeKind::kCore);
    if (switches > pool_size(kLoopbackPool) - 2)
      return Error{"fabric: " + std::to_string(switches) + " switches need more loopbacks than " +
                   to_string(kLoopbackPool) + " holds"};
    add_devices(host_base);
    return add_cables();
  }

 private:
  // A switch's name without its plane prefix: how its neighbours in the plane name ports.
  std::string local_name(NodeId id) const {
    const topo::Node& n = f_.node(id);
    const topo::Derived& d = f_.derived();
    switch (n.kind) {
      case NodeKind::kTor: return (d.segments > 1 ? "s" + std::to_string(n.group) + "-" : "") + "tor" + std::to_string(tor_label(n));
      case NodeKind::kAgg: return (d.pods > 1 ? "pod" + std::to_string(n.group) + "-" : "") + "spine" + std::to_string(n.local);
      case NodeKind::kCore: return "core" + std::to_string(n.group * std::max(1u, d.cores_per_group) + n.local);
      default: return {};
    }
  }

  // A ToR's number in its segment: on a rail-optimized fabric its rail's number (times
  // the ToRs each rail has per segment), so rail r's ToR is tor<r> even when the spec
  // skips rail numbers; else its slot.
  uint32_t tor_label(const topo::Node& n) const {
    const topo::Derived& d = f_.derived();
    if (plan_.spec.fabric.kind != topo::FabricKind::kRailOptimized) return n.local;
    return d.rails[n.local / d.ports_per_plane] * d.ports_per_plane + n.local % d.ports_per_plane;
  }
  uint32_t labels_per_segment() const {
    const topo::Derived& d = f_.derived();
    if (plan_.spec.fabric.kind != topo::FabricKind::kRailOptimized) return d.tors_per_segment;
    return (d.rails.back() + 1) * d.ports_per_plane;
  }
  // Where a ToR's host subnet sits in the pool: by plane, segment and label, so rail r's
  // ToR of a one-segment fabric routes 10.S.r.0/24.
  uint32_t subnet_slot(const topo::Node& n) const {
    return (n.plane * f_.derived().segments + n.group) * labels_per_segment() + tor_label(n);
  }

  std::string switch_name(NodeId id) const {
    std::string plane = plan_.spec.fabric.planes > 1 ? "p" + std::to_string(f_.node(id).plane) + "-" : "";
    return plane + local_name(id);
  }

  static Device make_device(std::string name, Role role, uint32_t plane, uint32_t group) {
    Device d;
    d.name = std::move(name);
    d.role = role;
    d.plane = plane;
    d.group = group;
    return d;
  }

  Device& device_of(NodeId id) { return plan_.devices[device_index_.at(id)]; }

  void add_device(NodeId id, Device device) {
    device_index_[id] = plan_.devices.size();
    plan_.devices.push_back(std::move(device));
  }

  void add_devices(uint32_t host_base) {
    const topo::ClusterSpec& s = plan_.spec;
    const topo::Derived& d = f_.derived();
    for (uint32_t srv = 0; srv < s.servers; ++srv) {
      Device h = make_device("h" + std::to_string(srv), Role::kHost, 0, srv / s.fabric.tor.servers);
      for (uint32_t n = 0; n < s.server.nics.size(); ++n) device_index_[f_.nic(srv, n)] = plan_.devices.size();
      plan_.devices.push_back(std::move(h));
    }
    uint32_t loopback = kLoopbackPool.base.value + 1;
    const uint32_t pods = s.fabric.agg ? d.pods : 0;
    for (NodeId id = f_.first(NodeKind::kTor), t = 0; t < f_.count(NodeKind::kTor); ++id, ++t) {
      const topo::Node& n = f_.node(id);
      Device tor = make_device(switch_name(id), Role::kTor, n.plane, n.group);
      bool rail = s.fabric.kind == topo::FabricKind::kRailOptimized;
      if (rail) tor.rail = d.rails[n.local / d.ports_per_plane];
      tor.asn = kFirstAsn + 1 + s.fabric.planes * pods + t;
      tor.loopback = Ipv4{loopback++};
      Prefix prefix{Ipv4{host_base + subnet_slot(n) * host_block_}, uint8_t(32 - std::countr_zero(host_block_))};
      tor.subnet = HostSubnet{prefix, Ipv4{prefix.base.value + host_block_ - 2},
                              rail ? "rail" + std::to_string(tor.rail) : "hosts"};
      add_device(id, std::move(tor));
    }
    for (NodeId id = f_.first(NodeKind::kAgg), a = 0; a < f_.count(NodeKind::kAgg); ++id, ++a) {
      const topo::Node& n = f_.node(id);
      Device spine = make_device(switch_name(id), Role::kSpine, n.plane, n.group);
      spine.asn = kFirstAsn + 1 + n.plane * pods + n.group;
      spine.loopback = Ipv4{loopback++};
      add_device(id, std::move(spine));
    }
    for (NodeId id = f_.first(NodeKind::kCore), c = 0; c < f_.count(NodeKind::kCore); ++id, ++c) {
      const topo::Node& n = f_.node(id);
      Device core = make_device(switch_name(id), Role::kCore, n.plane, n.group);
      core.asn = kFirstAsn;
      core.loopback = Ipv4{loopback++};
      add_device(id, std::move(core));
    }
  }

  static uint32_t tier_of(NodeKind a, NodeKind b) {
    if (a == NodeKind::kNic && b == NodeKind::kTor) return 0;
    if (a == NodeKind::kTor && b == NodeKind::kAgg) return 1;
    if (a == NodeKind::kAgg && b == NodeKind::kCore) return 2;
    return UINT32_MAX;  // inside a server, or the front-end network: not cabled here
  }

  Status add_cables() {
    const topo::ClusterSpec& s = plan_.spec;
    std::map<NodeId, uint32_t> nic_ports_used, tor_down_used;
    std::map<std::pair<NodeId, NodeId>, uint32_t> parallel;
    uint32_t links = 0;
    for (topo::LinkId l = 0; l < f_.link_count(); ++l) {
      const topo::Link& link = f_.link(l);
      const topo::Node& lower = f_.node(link.a);
      const uint32_t tier = tier_of(lower.kind, f_.node(link.b).kind);
      if (tier == UINT32_MAX) continue;
      Device& down = device_of(link.a);
      Device& up = device_of(link.b);
      Cable cable;
      cable.id = uint32_t(plan_.cables.size());
      cable.tier = tier;
      cable.gbps = link.gbps;
      Port low, high;
      low.gbps = high.gbps = link.gbps;
      if (tier == 0) {
        const topo::NicSpec& nic = s.server.nics[lower.local];
        uint32_t port = nic_ports_used[link.a]++;
        low.name = nic.name + (s.server.nic_ports > 1 ? "p" + std::to_string(port) : "");
        low.rail = high.rail = cable.rail = nic.rail;
        high.name = down.name + "-" + low.name;
        uint32_t k = tor_down_used[link.b]++;
        const HostSubnet& subnet = *up.subnet;
        low.address = Prefix{Ipv4{subnet.prefix.base.value + 1 + k}, subnet.prefix.length};
      } else {
        uint32_t copy = parallel[{link.a, link.b}]++;
        std::string suffix = copy > 0 ? "-" + std::to_string(copy) : "";
        low.name = local_name(link.b) + suffix;
        high.name = local_name(link.a) + suffix;
        if (links >= pool_size(kLinkPool) / 2)
          return Error{"fabric: more than " + std::to_string(pool_size(kLinkPool) / 2) +
                       " switch-to-switch cables; " + to_string(kLinkPool) + " has no /31 left"};
        uint32_t base = kLinkPool.base.value + 2 * links++;
        low.address = Prefix{Ipv4{base}, 31};
        high.address = Prefix{Ipv4{base + 1}, 31};
      }
      low.peer_device = up.name, low.peer_port = high.name;
      high.peer_device = down.name, high.peer_port = low.name;
      cable.a = {down.name, low.name};
      cable.b = {up.name, high.name};
      down.ports.push_back(std::move(low));
      up.ports.push_back(std::move(high));
      plan_.cables.push_back(std::move(cable));
    }
    return Status::Ok();
  }

  const Fabric& f_;
  const PlanOptions& o_;
  FabricPlan& plan_;
  uint32_t host_block_ = 256;
  std::map<NodeId, size_t> device_index_;
};

}  // namespace

const char* to_string(Role role) {
  switch (role) {
    case Role::kHost: return "host";
    case Role::kTor: return "tor";
    case Role::kSpine: return "spine";
    case Role::kCore: return "core";
  }
  return "?";
}

std::optional<Role> parse_role(std::string_view text) {
  for (Role r : {Role::kHost, Role::kTor, Role::kSpine, Role::kCore})
    if (text == to_string(r)) return r;
  return std::nullopt;
}

const char* tier_name(uint32_t tier) {
  static const char* const kNames[] = {"host-tor", "tor-spine", "spine-core"};
  return tier < 3 ? kNames[tier] : "?";
}

const Port* Device::find_port(std::string_view port) const {
  for (const Port& p : ports)
    if (p.name == port) return &p;
  return nullptr;
}

const Device* FabricPlan::find(std::string_view device) const {
  auto it = index_.find(device);
  return it == index_.end() ? nullptr : &devices[it->second];
}

std::vector<const Device*> FabricPlan::of_role(Role role) const {
  std::vector<const Device*> out;
  for (const Device& d : devices)
    if (d.role == role) out.push_back(&d);
  return out;
}

Result<FabricPlan> make_plan(const topo::ClusterSpec& spec, const PlanOptions& options) {
  if (options.subnet < 1 || options.subnet > 254)
    return Error{"--subnet " + std::to_string(options.subnet) + ": expected 1 to 254 (host subnets 10.S.0.0 up)"};
  if (options.mtu < 1280 || options.mtu > 9216)
    return Error{"--mtu " + std::to_string(options.mtu) + ": expected 1280 to 9216"};
  if (options.qos.pfc_priority > 7)
    return Error{"--pfc-priority " + std::to_string(options.qos.pfc_priority) + ": expected 0 to 7"};
  if (options.qos.dscp > 63) return Error{"--dscp " + std::to_string(options.qos.dscp) + ": expected 0 to 63"};
  if (options.bfd_interval_ms < 10 || options.bfd_interval_ms > 60000)
    return Error{"--bfd-interval " + std::to_string(options.bfd_interval_ms) + ": expected 10 to 60000 ms"};
  Result<topo::Fabric> fabric = topo::build_fabric(spec);
  if (!fabric) return fabric.error();
  FabricPlan plan;
  plan.spec = spec;
  plan.options = options;
  if (Status s = Planner(*fabric, options, plan).run(); !s) return Error{s.message()};
  for (size_t i = 0; i < plan.devices.size(); ++i) plan.index_.emplace(plan.devices[i].name, i);
  return plan;
}

}  // namespace xm::ops

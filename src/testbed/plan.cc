#include "testbed/plan.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <map>

#include "util/format.h"

namespace xm::testbed {
namespace {

std::string mac(uint32_t rail, uint32_t host_byte) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "02:78:6d:%02x:%02x:00", rail, host_byte);
  return buf;
}

// "h12" -> 12; false for anything else.
bool parse_indexed(std::string_view text, std::string_view prefix, uint32_t& value) {
  if (!text.starts_with(prefix) || text.size() == prefix.size()) return false;
  const char* begin = text.data() + prefix.size();
  const char* end = text.data() + text.size();
  if (end - begin > 1 && *begin == '0') return false;
  auto [ptr, ec] = std::from_chars(begin, end, value);
  return ec == std::errc() && ptr == end;
}

}  // namespace

Status check_name(std::string_view name) {
  bool ok = !name.empty() && name.size() <= kMaxNameLength && std::islower(static_cast<unsigned char>(name[0])) &&
            std::all_of(name.begin(), name.end(), [](char c) {
              return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c));
            });
  if (ok) return Status::Ok();
  return Error{"testbed name \"" + std::string(name) + "\": expected 1 to " + std::to_string(kMaxNameLength) +
               " lower-case letters or digits, starting with a letter"};
}

std::string netns_prefix(std::string_view name) { return "xm-" + std::string(name) + "-"; }

topo::ClusterSpec simple_spec(uint32_t hosts, uint32_t rails) {
  topo::ClusterSpec spec;
  spec.name = "testbed";
  spec.servers = hosts;
  spec.server.accelerators = std::max<uint32_t>(rails, 1);
  spec.server.nics = topo::uniform_nics(rails, 400);
  spec.fabric.tor.servers = std::max<uint32_t>(hosts, 1);
  spec.fabric.tor.ports = std::max<uint32_t>(hosts, 2);
  return spec;
}

Result<topo::ClusterSpec> testbed_spec(const topo::ClusterSpec& spec, const std::string& source,
                                       const PlanOptions& options) {
  if (spec.fabric.kind != topo::FabricKind::kRailOptimized)
    return Error{source + ": the testbed emulates rail-optimized fabrics; this spec is a " +
                 topo::to_string(spec.fabric.kind) + " fabric"};
  if (spec.servers < 1 || spec.servers > kMaxHosts)
    return Error{source + ": " + std::to_string(spec.servers) + " servers; the testbed holds 1 to " +
                 std::to_string(kMaxHosts)};
  if (spec.server.nics.empty()) return Error{source + ": servers have no NICs"};
  if (spec.fabric.planes != 1 || spec.server.nic_ports != 1)
    return Error{source + ": fabric.planes: the testbed emulates one plane of single-port NICs"};
  if (spec.fabric.tor.servers < spec.servers)
    return Error{source + ": fabric.tor.servers: the testbed emulates one segment (every server on every rail's ToR)"};
  if (spec.fabric.core) return Error{source + ": fabric.core: the testbed emulates two tiers (ToRs and spines)"};
  std::map<uint32_t, const topo::NicSpec*> by_rail;
  for (const topo::NicSpec& nic : spec.server.nics) {
    if (nic.rail > kMaxRail)
      return Error{source + ": NIC " + nic.name + " is on rail " + std::to_string(nic.rail) +
                   "; the testbed numbers rails 0 to " + std::to_string(kMaxRail)};
    if (!by_rail.emplace(nic.rail, &nic).second)
      return Error{source + ": NICs " + by_rail[nic.rail]->name + " and " + nic.name + " share rail " +
                   std::to_string(nic.rail) + "; the testbed gives each server one NIC per rail"};
    if (2 + std::to_string(spec.servers - 1).size() + nic.name.size() > 15)
      return Error{source + ": NIC name " + nic.name + " is too long for the ToR's port name h<i>-" + nic.name +
                   " (15 characters)"};
  }
  topo::ClusterSpec out = spec;
  if (!out.fabric.agg) {
    if (options.spines < 1 || options.spines > 16)
      return Error{"--spines " + std::to_string(options.spines) + ": expected 1 to 16"};
    topo::AggTier agg;
    agg.count = options.spines;
    agg.tors = uint32_t(by_rail.size());
    agg.ports = agg.tors;
    out.fabric.agg = agg;
    out.fabric.tor.uplinks = options.spines;
    out.fabric.tor.ports = std::max(out.fabric.tor.ports, out.fabric.tor.servers + options.spines);
  }
  return out;
}

Result<Layout> make_layout(const topo::ClusterSpec& spec, const std::string& source, const PlanOptions& options) {
  if (Status s = check_name(options.name); !s) return Error{s.message()};
  if (options.subnet < 1 || options.subnet > 254)
    return Error{"subnet octet " + std::to_string(options.subnet) + ": expected 1 to 254 (addresses 10.S.r.h)"};
  if (options.mtu < 1280 || options.mtu > 9216)
    return Error{"MTU " + std::to_string(options.mtu) + ": expected 1280 to 9216"};
  Result<topo::ClusterSpec> deployed = testbed_spec(spec, source, options);
  if (!deployed) return deployed.error();
  ops::PlanOptions fabric_options;
  fabric_options.subnet = options.subnet;
  fabric_options.mtu = options.mtu;
  Result<ops::FabricPlan> fabric = ops::make_plan(*deployed, fabric_options);
  if (!fabric) return Error{source + ": " + fabric.error().message};

  Layout layout{Plan{}, std::move(fabric).value()};
  Plan& plan = layout.plan;
  plan.name = options.name;
  plan.source = source;
  plan.subnet = options.subnet;
  plan.mtu = options.mtu;
  const std::string prefix = netns_prefix(options.name);
  std::map<std::string, uint64_t> tor_down_bps;
  for (const ops::Device* h : layout.fabric.of_role(ops::Role::kHost)) {
    HostPlan host;
    host.index = uint32_t(plan.hosts.size());
    host.name = h->name;
    host.netns = prefix + h->name;
    for (size_t k = 0; k < h->ports.size(); ++k) {
      const ops::Port& port = h->ports[k];
      const topo::NicSpec& nic = spec.server.nics[k];
      NicPlan n;
      n.rail = port.rail;
      n.device = nic.name;
      n.ifname = port.name;
      n.tor = port.peer_device;
      n.fabric_port = port.peer_port;
      n.address = ops::to_string(port.address->base);
      n.prefix = port.address->length;
      n.mac = mac(port.rail, host.index);
      n.rate_bps = options.rate_bps ? options.rate_bps : static_cast<uint64_t>(nic.gbps * 1e6 + 0.5);
      if (n.rate_bps < 8000) return Error{source + ": NIC " + nic.name + " is too slow to shape (" +
                                          trimmed(nic.gbps) + " Gbit/s scales to under 8kbit)"};
      tor_down_bps[n.tor] += n.rate_bps;
      host.nics.push_back(std::move(n));
    }
    std::sort(host.nics.begin(), host.nics.end(), [](const NicPlan& a, const NicPlan& b) { return a.rail < b.rail; });
    plan.hosts.push_back(std::move(host));
  }
  for (ops::Role role : {ops::Role::kTor, ops::Role::kSpine})
    for (const ops::Device* d : layout.fabric.of_role(role))
      plan.switches.push_back(SwitchPlan{d->name, ops::to_string(role), prefix + d->name});
  std::vector<const ops::Device*> tors = layout.fabric.of_role(ops::Role::kTor);
  std::sort(tors.begin(), tors.end(), [](const ops::Device* a, const ops::Device* b) { return a->rail < b->rail; });
  for (const ops::Device* t : tors) {
    plan.rails.push_back(RailPlan{t->rail, t->name, t->subnet->bridge, ops::to_string(t->subnet->gateway)});
    size_t up = 0;
    for (const ops::Port& p : t->ports) up += p.address.has_value();
    for (const ops::Port& p : t->ports) {
      if (!p.address) continue;
      UplinkPlan u;
      u.rail = t->rail;
      u.tor = t->name;
      u.tor_port = p.name;
      u.spine = p.peer_device;
      u.spine_port = p.peer_port;
      u.address = ops::to_string(p.address->base);
      u.rate_bps = options.spine_rate_bps ? options.spine_rate_bps : tor_down_bps[t->name] / up;
      plan.uplinks.push_back(std::move(u));
    }
  }
  return layout;
}

Result<Plan> make_plan(const topo::ClusterSpec& spec, const std::string& source, const PlanOptions& options) {
  Result<Layout> layout = make_layout(spec, source, options);
  if (!layout) return layout.error();
  return std::move(layout->plan);
}

const NicPlan* Plan::find_nic(std::string_view link, const HostPlan** host_out) const {
  size_t slash = link.find('/');
  if (slash == std::string_view::npos) return nullptr;
  uint32_t index = 0;
  if (!parse_indexed(link.substr(0, slash), "h", index) || index >= hosts.size()) return nullptr;
  const HostPlan& host = hosts[index];
  std::string_view nic = link.substr(slash + 1);
  for (const NicPlan& n : host.nics)
    if (n.ifname == nic || n.device == nic) {
      if (host_out) *host_out = &host;
      return &n;
    }
  return nullptr;
}

NicPlan* Plan::find_nic(std::string_view link, const HostPlan** host) {
  return const_cast<NicPlan*>(static_cast<const Plan*>(this)->find_nic(link, host));
}

const RailPlan* Plan::find_rail(uint32_t rail) const {
  for (const RailPlan& r : rails)
    if (r.rail == rail) return &r;
  return nullptr;
}

const SwitchPlan* Plan::find_switch(std::string_view name) const {
  for (const SwitchPlan& s : switches)
    if (s.name == name) return &s;
  return nullptr;
}

std::vector<UplinkPlan*> Plan::uplinks_of_rail(uint32_t rail) {
  std::vector<UplinkPlan*> out;
  for (UplinkPlan& u : uplinks)
    if (u.rail == rail) out.push_back(&u);
  return out;
}

std::vector<std::string> Plan::namespaces() const {
  std::vector<std::string> out;
  for (const SwitchPlan& s : switches) out.push_back(s.netns);
  for (const HostPlan& h : hosts) out.push_back(h.netns);
  return out;
}

std::string Plan::netns_of(std::string_view device) const {
  return netns_prefix(name) + std::string(device);
}

Tbf tbf_for(uint64_t rate_bps, uint32_t mtu) {
  uint64_t bytes_per_ms = rate_bps / 8 / 1000;
  Tbf t;
  t.burst_bytes = std::max<uint64_t>(bytes_per_ms, 65536 + 2 * uint64_t{mtu});
  // A deep port buffer (kQueueMs of line rate, 2.5 MB at 400 Mbit/s): the incast of a
  // collective (several senders into one NIC) queues as in a lossless fabric instead of
  // dropping into TCP's retransmission timers, which are not what a run should measure.
  constexpr uint64_t kQueueMs = 50;
  t.limit_bytes = std::max<uint64_t>(t.burst_bytes + kQueueMs * bytes_per_ms, 4 * t.burst_bytes);
  return t;
}

}  // namespace xm::testbed

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

std::string address(uint32_t subnet, uint32_t rail, uint32_t host_octet) {
  return "10." + std::to_string(subnet) + "." + std::to_string(rail) + "." + std::to_string(host_octet);
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

Result<Plan> make_plan(const topo::ClusterSpec& spec, const std::string& source, const PlanOptions& options) {
  if (Status s = check_name(options.name); !s) return Error{s.message()};
  if (options.subnet < 1 || options.subnet > 254)
    return Error{"subnet octet " + std::to_string(options.subnet) + ": expected 1 to 254 (addresses 10.S.r.h)"};
  if (options.mtu < 576 || options.mtu > 65000)
    return Error{"MTU " + std::to_string(options.mtu) + ": expected 576 to 65000"};
  if (spec.fabric.kind != topo::FabricKind::kRailOptimized)
    return Error{source + ": the testbed emulates rail-optimized fabrics; this spec is a " +
                 topo::to_string(spec.fabric.kind) + " fabric"};
  if (spec.servers < 1 || spec.servers > kMaxHosts)
    return Error{source + ": " + std::to_string(spec.servers) + " servers; the testbed holds 1 to " +
                 std::to_string(kMaxHosts)};
  if (spec.server.nics.empty()) return Error{source + ": servers have no NICs"};
  std::map<uint32_t, const topo::NicSpec*> by_rail;
  for (const topo::NicSpec& nic : spec.server.nics) {
    if (nic.rail > kMaxRail)
      return Error{source + ": NIC " + nic.name + " is on rail " + std::to_string(nic.rail) +
                   "; the testbed numbers rails 0 to " + std::to_string(kMaxRail)};
    if (!by_rail.emplace(nic.rail, &nic).second)
      return Error{source + ": NICs " + by_rail[nic.rail]->name + " and " + nic.name + " share rail " +
                   std::to_string(nic.rail) + "; the testbed gives each server one NIC per rail"};
  }

  Plan plan;
  plan.name = options.name;
  plan.source = source;
  plan.subnet = options.subnet;
  plan.mtu = options.mtu;
  std::string prefix = netns_prefix(options.name);
  plan.fabric_netns = prefix + "fab";
  plan.spine_netns = prefix + "spine";
  for (uint32_t i = 0; i < spec.servers; ++i) {
    HostPlan host;
    host.index = i;
    host.name = "h" + std::to_string(i);
    host.netns = prefix + host.name;
    for (auto [rail, nic] : by_rail) {
      NicPlan n;
      n.rail = rail;
      n.device = nic->name;
      n.ifname = "nic" + std::to_string(rail);
      n.fabric_port = host.name + "-" + n.ifname;
      n.address = address(options.subnet, rail, i + 1);
      n.mac = mac(rail, i);
      n.rate_bps = options.rate_bps ? options.rate_bps : static_cast<uint64_t>(nic->gbps * 1e6 + 0.5);
      if (n.rate_bps < 8000) return Error{source + ": NIC " + nic->name + " is too slow to shape (" +
                                          trimmed(nic->gbps) + " Gbit/s scales to under 8kbit)"};
      host.nics.push_back(std::move(n));
    }
    plan.hosts.push_back(std::move(host));
  }
  size_t position = 0;  // of the rail in every host's NIC list
  for (auto [rail, nic] : by_rail) {
    RailPlan r;
    r.rail = rail;
    r.bridge = "tor" + std::to_string(rail);
    r.uplink = r.bridge + "-spine";
    r.spine_ifname = r.bridge;
    r.address = address(options.subnet, rail, 254);
    r.mac = mac(rail, 0xfe);
    if (options.spine_rate_bps) {
      r.rate_bps = options.spine_rate_bps;
    } else {
      for (const HostPlan& h : plan.hosts) r.rate_bps += h.nics[position].rate_bps;
    }
    plan.rails.push_back(std::move(r));
    ++position;
  }
  return plan;
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

RailPlan* Plan::find_rail(uint32_t rail) {
  return const_cast<RailPlan*>(static_cast<const Plan*>(this)->find_rail(rail));
}

std::vector<std::string> Plan::namespaces() const {
  std::vector<std::string> out{fabric_netns, spine_netns};
  for (const HostPlan& h : hosts) out.push_back(h.netns);
  return out;
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

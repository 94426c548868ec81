#include "topo/generate.h"

#include <algorithm>
#include <cmath>

namespace xm::topo {
namespace {

std::string n(uint64_t v) { return std::to_string(v); }

// The smallest divisor k of `total` with need(k) true, or 0.
template <typename Need>
uint32_t smallest_divisor(uint32_t total, Need need) {
  for (uint32_t k = 1; k <= total; ++k)
    if (total % k == 0 && need(k)) return k;
  return 0;
}

// What the options asked for, if it can be built; else why not, in the spec's words.
Result<ClusterSpec> checked(const ClusterSpec& spec) {
  std::vector<SpecIssue> issues = validate(spec);
  if (issues.empty()) return spec;
  return Error{"cannot build that (" + issues.front().field + ": " + issues.front().message + ")"};
}

}  // namespace

Result<ClusterSpec> generate(const GenOptions& o) {
  if (o.gpus_per_server == 0 || o.gpus == 0 || o.gpus % o.gpus_per_server != 0)
    return Error{"--gpus " + n(o.gpus) + " is not a positive multiple of --gpus-per-server " + n(o.gpus_per_server)};
  if (!(o.oversubscription >= 1)) return Error{"--oversubscription must be at least 1 (1 = non-blocking)"};
  if (o.tiers > 3) return Error{"--tiers must be 1, 2 or 3"};
  if (o.radix < 2 || o.radix > kMaxSwitchPorts) return Error{"--radix must be 2 to " + n(kMaxSwitchPorts)};
  if (o.rails == 0 || o.rails > kMaxNicsPerServer) return Error{"--rails must be 1 to " + n(kMaxNicsPerServer)};
  if (o.gpus_per_server > kMaxAcceleratorsPerServer)
    return Error{"--gpus-per-server must be at most " + n(kMaxAcceleratorsPerServer)};
  if (o.gpus / o.gpus_per_server > kMaxServers) return Error{"more than " + n(kMaxServers) + " servers"};
  if (!(o.nic_gbps > 0) || !std::isfinite(o.nic_gbps)) return Error{"--nic-gbps must be above 0"};
  if (o.planes == 0 || o.nic_ports == 0 || o.nic_ports % o.planes != 0)
    return Error{"--nic-ports " + n(o.nic_ports) + " must be a positive multiple of --planes " + n(o.planes)};

  ClusterSpec spec;
  spec.name = o.name;
  spec.servers = o.gpus / o.gpus_per_server;
  spec.server.accelerators = o.gpus_per_server;
  spec.server.nics = uniform_nics(o.rails, o.nic_gbps);
  spec.server.nic_ports = o.nic_ports;
  spec.fabric.kind = o.kind;
  spec.fabric.planes = o.planes;
  if (o.frontend) spec.frontend = FrontendSpec{};

  const double port_gbps = o.nic_gbps / o.nic_ports;
  const bool rail = o.kind == FabricKind::kRailOptimized;
  // NIC ports one server puts on each ToR of its segment.
  const uint32_t per_server = rail ? 1 : o.rails;
  // A ToR gives ratio/(1+ratio) of its ports to NICs, rounded to whole servers.
  uint32_t max_servers = uint32_t(std::floor(o.radix * o.oversubscription / (1 + o.oversubscription))) / per_server;
  if (max_servers == 0) return Error{"--radix " + n(o.radix) + " leaves no ToR port for a server's " + n(per_server) + " NIC ports"};
  TorTier& tor = spec.fabric.tor;
  tor.ports = o.radix;
  tor.servers = std::min(spec.servers, max_servers);
  Derived d = derive(spec);

  uint32_t tiers = o.tiers;
  if (tiers == 0) tiers = d.tors_per_plane == 1 ? 1 : d.tors_per_plane <= o.radix ? 2 : 3;
  if (tiers == 1) return checked(spec);

  uint32_t uplinks = uplinks_for_ratio(tor_down_gbps(spec), port_gbps, o.oversubscription, 1);
  AggTier agg;
  agg.ports = o.radix;
  agg.link = {port_gbps, 1000};
  if (tiers == 2) {  // one pod holds every ToR; the fewest aggs whose ports reach them all
    agg.tors = d.tors_per_plane;
    agg.count = smallest_divisor(uplinks, [&](uint32_t k) { return uint64_t{agg.tors} * (uplinks / k) <= o.radix; });
    if (agg.count == 0)
      return Error{n(agg.tors) + " ToRs per plane exceed what one aggregation layer of radix " + n(o.radix) +
                   " reaches: use --tiers 3, a larger --radix or more --planes"};
  } else {  // pods of as many ToRs as half an agg's ports reach (whole segments), one link each
    agg.count = uplinks;
    agg.tors = std::max(d.tors_per_segment, (o.radix / 2) / d.tors_per_segment * d.tors_per_segment);
    agg.tors = std::min(agg.tors, d.tors_per_plane);
    agg.uplinks = agg.tors;  // non-blocking at the agg
    if (agg.tors + agg.uplinks > o.radix)
      return Error{"--radix " + n(o.radix) + " cannot hold one segment's " + n(d.tors_per_segment) + " ToRs and as many uplinks"};
  }
  tor.uplinks = uplinks;
  spec.fabric.agg = agg;

  if (tiers == 3) {
    uint32_t pods = (d.tors_per_plane + agg.tors - 1) / agg.tors;
    uint32_t per_group = smallest_divisor(agg.uplinks, [&](uint32_t k) {
      return uint64_t{pods} * (agg.uplinks / k) <= o.radix;
    });
    if (per_group == 0)
      return Error{n(pods) + " pods exceed what a core of radix " + n(o.radix) +
                   " reaches: use a larger --radix or more --planes"};
    spec.fabric.core = CoreTier{o.radix, per_group * agg.count, {port_gbps, 1000}};
  }
  return checked(spec);
}

ClusterSpec default_spec() { return generate(GenOptions{}).value(); }

}  // namespace xm::topo

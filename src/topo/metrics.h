// What a network engineer reads off a fabric at a glance: counts, bandwidths,
// oversubscription per tier, bisection, ECMP width; and how much of a traffic matrix
// stays inside a rail. All figures come from the built graph, not from the spec's
// arithmetic, so they check the builder as much as they describe the cluster.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "topo/fabric.h"

namespace xm::topo {

struct TierSummary {
  std::string name;           // "tor", "agg", "core"
  uint32_t switches = 0;      // over all planes
  uint32_t ports = 0;         // radix of one switch
  uint64_t links_up = 0;      // links from this tier to the one above
  double down_gbps = 0;       // over all switches of the tier
  double up_gbps = 0;
  double oversubscription = 0;  // worst switch's down:up bandwidth; 0 at the top tier
};

struct Summary {
  std::string name;
  FabricKind kind = FabricKind::kRailOptimized;
  uint32_t tiers = 0, planes = 0;
  uint32_t servers = 0, accelerators = 0, nics = 0, nic_ports = 0, rails = 0;
  double server_gbps = 0;       // back-end NIC bandwidth of one server
  uint64_t nodes = 0, links = 0, host_links = 0;
  std::vector<TierSummary> tiers_detail;  // bottom (ToR) first
  double host_gbps = 0;         // all back-end NIC bandwidth
  double bisection_gbps = 0;
  uint64_t ecmp_paths = 0;      // equal-cost paths between the farthest pair on one rail
  uint64_t ecmp_link_paths = 0;
  uint32_t ecmp_switches = 0;   // switches on those paths
  uint32_t front_tors = 0;      // 0 without a front-end network
  double front_server_gbps = 0;
};

// Precondition: `fabric` came from build_fabric.
Summary summarize(const Fabric& fabric);

// Bytes from one accelerator to another (global accelerator indices).
struct Demand {
  uint32_t src = 0, dst = 0;
  double bytes = 0;
};

struct TrafficShare {
  double intra_server = 0;  // bytes that never leave a server
  double one_tor_hop = 0;   // bytes between servers whose NICs share a ToR: inside a rail
  double cross = 0;         // bytes that climb above the ToRs
  // The share of network bytes (leaving a server) that stays inside a rail.
  double rail_share() const {
    double network = one_tor_hop + cross;
    return network > 0 ? one_tor_hop / network : 1.0;
  }
};

// Classifies every demand by the route its bytes take. Demands naming an accelerator
// out of range are ignored.
TrafficShare classify_traffic(const Fabric& fabric, const std::vector<Demand>& demands);

}  // namespace xm::topo

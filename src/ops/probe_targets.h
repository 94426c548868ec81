// Who a host's agent probes, from the plan alone (Pingmesh's full mesh, cut to what a
// rail fabric needs):
//
//   rail pairs        every NIC probes the NIC on the same rail of every other host: one
//                     ToR hop. A bad host cable or ToR port shows as loss on every pair of
//                     that one NIC; a bad ToR on every pair of its rail.
//   cross-rail pairs  every NIC probes `cross_rail_peers` NICs of other hosts on other
//                     rails, through the spines. The prober sends each over several
//                     5-tuples (source ports), so ECMP spreads them over every uplink: a
//                     bad ToR-spine link shows as loss on the flows hashed onto it only.
//
// Same plan, same host, same options: the same targets in the same order.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ops/fabric_plan.h"
#include "util/result.h"

namespace xm::ops {

struct ProbeTarget {
  std::string src_port;  // the local NIC: its interface name
  Ipv4 src;
  uint32_t src_rail = kNoRail;
  std::string dst_host, dst_port;
  Ipv4 dst;
  uint32_t dst_rail = kNoRail;
  bool cross_rail = false;
};

struct ProbeMeshOptions {
  uint32_t cross_rail_peers = 2;  // per NIC
};

// Errors when `host` is not a host of the plan or has no addressed NIC.
Result<std::vector<ProbeTarget>> probe_targets(const FabricPlan& plan, std::string_view host,
                                               const ProbeMeshOptions& options = {});

}  // namespace xm::ops

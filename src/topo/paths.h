// Path queries on the fabric graph: the equal-cost (shortest) paths between two
// accelerators through the back-end network, and how far apart two accelerators are.
//
// Paths between accelerators of different servers leave through the source's NIC and
// arrive through the destination's NIC: they never cross another server's intra-server
// fabric or the front-end network. (Forwarding over the intra-server fabric to a NIC on
// another rail is an algorithm's choice, PXN, not a route.) Accelerators of one server
// meet at their intra-server switch. Queries are read-only and thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "topo/fabric.h"
#include "util/result.h"

namespace xm::topo {

struct PathSet {
  uint32_t links = 0;        // length of every path, in links
  uint32_t switches = 0;     // fabric switches (ToR, agg, core) on every path
  uint64_t paths = 0;        // distinct node sequences (saturates at UINT64_MAX)
  uint64_t link_paths = 0;   // distinct link sequences: counts parallel links apart
  uint64_t latency_ns = 0;   // propagation along any one path (equal for built fabrics)
  double bottleneck_gbps = 0;  // slowest link of the first path
  std::vector<std::vector<NodeId>> examples;  // up to the number asked for, in id order
};

// Equal-cost paths from accelerator `a` to accelerator `b`. Error if either id is not an
// accelerator, they are the same, or the network joins them nowhere (e.g. two rails of a
// rail-only fabric).
Result<PathSet> equal_cost_paths(const Fabric& fabric, NodeId a, NodeId b, size_t max_examples = 4);

// True when the accelerators sit on different servers whose NICs share a ToR: one switch
// hop, as two accelerators with the same local index in one segment of a
// rail-optimized fabric are.
bool one_tor_hop(const Fabric& fabric, NodeId a, NodeId b);

}  // namespace xm::topo

// The graph the simulator runs on: hosts (NICs, the ends of flows), switches, and the
// links between them with their speed and propagation delay.
//
// Built from a cluster spec's fabric (back-end network only: a NIC is a host; ToR,
// aggregation and core switches forward; accelerators, PCIe and the front-end network
// are not part of packet simulation), or from an HPCC simulator topology file
// (hpcc_io.h). Hosts are nodes [0, hosts); switches follow.
//
// With the intra-server fabric (collectives replayed on the fabric), each server's
// NVSwitch-like switch is a switch too, linked to every NIC of the server at the spec's
// intra speed and latency: a NIC host then stands for the accelerators behind it, and
// traffic between two of a server's accelerators crosses that switch, never a ToR.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/units.h"
#include "topo/fabric.h"
#include "util/result.h"

namespace xm::sim {

using NodeIndex = uint32_t;

struct SimLink {
  NodeIndex a = 0;
  NodeIndex b = 0;
  Rate rate;
  Time delay;
};

// Where a node sits, for per-tier statistics.
enum class Tier : uint8_t { kHost, kTor, kAgg, kCore, kOther, kIntra };
const char* to_string(Tier tier);

struct SimTopology {
  std::string name;
  uint32_t hosts = 0;
  std::vector<Tier> tier;           // per node
  std::vector<std::string> names;   // per node
  std::vector<uint32_t> server;     // per host: the server it belongs to
  std::vector<uint32_t> rail;       // per host: its rail (0 when the fabric has none)
  std::vector<SimLink> links;
  // Per server, per accelerator: the host (NIC) it sends through. Empty for topologies
  // that do not come from a cluster spec (an HPCC topology file has no accelerators).
  std::vector<std::vector<uint32_t>> accelerator_nic;
  bool intra = false;  // the intra-server switches are part of the graph
  // Per node: its id in the file it came from (an HPCC topology's node ids), used for
  // addresses in HPCC-format output. Empty: the simulator's own index.
  std::vector<uint32_t> external_id;

  uint32_t node_count() const { return uint32_t(tier.size()); }
  uint32_t switch_count() const { return node_count() - hosts; }
  bool is_host(NodeIndex n) const { return n < hosts; }
  uint32_t external(NodeIndex n) const { return external_id.empty() ? n : external_id[n]; }
};

// The back-end fabric of a built cluster, and with `intra` each server's intra-server
// switch. Error if it has no NIC or no switch.
Result<SimTopology> topology_from_fabric(const topo::Fabric& fabric, bool intra = false);

// The fastest NIC port into the fabric (intra-server links left out): the line rate that
// congestion control scales by.
Rate line_rate(const SimTopology& topology);

// Checks the invariants the network relies on: every link joins two distinct nodes in
// range with a positive rate; every host has a link and reaches every other host through
// switches; no link joins two hosts. Returns the first violation.
Status check_topology(const SimTopology& topology);

}  // namespace xm::sim

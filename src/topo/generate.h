// Writing a spec from a few numbers: `xm topo gen` and the built-in default cluster.
//
// The generator sizes a Clos from the switch radix: a ToR splits its ports between NIC
// ports and uplinks at the requested oversubscription; the fabric grows to the fewest
// tiers that hold every ToR (two while one aggregation layer reaches all of them, else
// three); parallel links fill ports that would otherwise idle. All links in the fabric
// run at the NIC port speed.
#pragma once

#include <cstdint>
#include <string>

#include "topo/spec.h"
#include "util/result.h"

namespace xm::topo {

struct GenOptions {
  std::string name = "xingmai";
  uint32_t gpus = 1024;
  uint32_t gpus_per_server = 8;
  uint32_t rails = 8;             // NICs per server, NIC i on rail i
  double nic_gbps = 400;
  uint32_t nic_ports = 1;         // 2: dual-homed, or dual-plane with planes = 2
  uint32_t planes = 1;
  FabricKind kind = FabricKind::kRailOptimized;
  uint32_t radix = 128;           // ports per switch (51.2 Tbit/s at 400 Gbit/s)
  double oversubscription = 1.0;  // at the ToR: NIC-facing : uplink bandwidth
  uint32_t tiers = 0;             // 0: as few as fit
  bool frontend = false;
};

Result<ClusterSpec> generate(const GenOptions& options);

// The built-in cluster: generate(GenOptions{}) — 128 servers of the seed's kind
// (8 accelerators, 8 × 400 Gbit/s NICs), rail-optimized, two tiers, non-blocking.
ClusterSpec default_spec();

}  // namespace xm::topo

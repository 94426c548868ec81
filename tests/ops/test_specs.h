// Cluster specs the ops tests plan.
#pragma once

#include <string>

#include "topo/spec.h"
#include "topo/spec_io.h"

namespace ops_test {

// `hosts` servers with `rails` NICs, one ToR per rail, `spines` spines, each ToR one
// cable to every spine: the routed testbed's shape.
inline xm::topo::ClusterSpec rail_spec(uint32_t hosts, uint32_t rails, uint32_t spines) {
  xm::topo::ClusterSpec s;
  s.name = "rails";
  s.servers = hosts;
  s.server.accelerators = rails;
  s.server.nics = xm::topo::uniform_nics(rails, 400);
  s.fabric.tor.servers = hosts;
  s.fabric.tor.uplinks = spines;
  s.fabric.tor.ports = hosts + spines;
  if (spines > 0) {
    xm::topo::AggTier agg;
    agg.ports = rails;
    agg.tors = rails;
    agg.count = spines;
    s.fabric.agg = agg;
  }
  return s;
}

}  // namespace ops_test

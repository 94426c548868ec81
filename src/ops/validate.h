// Validation: the cluster as observed (observation.h) against its plan, port by port,
// as Cumulus PTM checks cabling against topology.dot — and also MTU, addresses, BGP
// sessions and ECMP. Pure: the same plan and observation give the same report.
#pragma once

#include <string>
#include <vector>

#include "ops/fabric_plan.h"
#include "ops/observation.h"

namespace xm::ops {

struct PortReport {
  std::string device, port;
  std::string expected;  // "tor1:h3-nic1"; empty for a port the plan does not have
  std::string actual;    // the LLDP neighbour, "tor1:h3-nic1"; empty when none
  std::vector<std::string> problems;  // in words; empty: the port passes
  bool pass() const { return problems.empty(); }
};

struct Report {
  std::vector<PortReport> ports;  // every planned port, then every unplanned one in use
  size_t failed() const;
};

Report validate(const FabricPlan& plan, const Observation& observed);

// A table of the failed ports (every port with `all`) and a summary line.
std::string report_text(const Report& report, bool all);
// Every port, with PTM's `ptmctl -j` field names where they fit ("port", "cbl status",
// "exp nbr", "act nbr", "sysname", "portID", "match on") and "device" and "problems".
std::string report_json(const Report& report);

}  // namespace xm::ops

// Reachability of a whole testbed at once: from every NIC to every NIC of every other
// host, a TCP connection opened from the source NIC's address inside its host's
// namespace, so the testbed's routing decides the path (same rail: one ToR hop; across
// rails: ToR, spine, ToR). A handshake is enough: it proves both directions route.
#pragma once

#include <string>
#include <vector>

#include "testbed/plan.h"
#include "util/result.h"

namespace xm::testbed {

struct ReachReport {
  size_t pairs = 0, same_rail = 0;
  std::vector<std::string> failures;  // "h0/nic0 (10.77.0.1) -> h3/nic2 (10.77.2.4): No route to host"
};

// Error only when the check itself cannot run (no root, a namespace missing).
Result<ReachReport> check_reach(const Plan& plan, double timeout_s);

}  // namespace xm::testbed

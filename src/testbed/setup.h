// From a plan to the commands that build it: pure functions, so the exact commands can
// be read (and tested) without root. lifecycle.h runs them; daemons.h starts the
// routers and LLDP agents on top.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ops/fabric_plan.h"
#include "testbed/plan.h"
#include "testbed/system.h"

namespace xm::testbed {

using Sysctls = std::vector<std::pair<std::string, std::string>>;

// Hosts: the fabric plan's host sysctls, no IPv6 (its chatter would show up on the
// counters) and a loss-based TCP congestion control (see setup.cc).
Sysctls host_sysctls();
// Switches: IPv4 routers without redirects, ECMP hashed on ports as well as addresses
// (so the flows between two hosts spread over the spines), no route over a port without
// carrier, no IPv6.
Sysctls switch_sysctls();

// `netns add` for every namespace of the plan.
Batch create_namespaces(const Plan& plan);

// Everything else, in order, once the namespaces exist and carry their sysctls: every
// cable as a veth pair (host NICs into their ToR, ToR uplinks into their spine), then
// what the fabric plan says each host and switch configures, then the tbf qdiscs on
// both ends of every cable.
std::vector<Batch> setup_batches(const Plan& plan, const ops::FabricPlan& fabric);

// "qdisc replace dev DEV root tbf rate R burst B limit L" for tc.
std::string tbf_line(const std::string& dev, uint64_t rate_bps, uint32_t mtu);

}  // namespace xm::testbed

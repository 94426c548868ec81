// From a plan to the commands that build it: pure functions, so the exact commands can
// be read (and tested) without root. lifecycle.h runs them.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "testbed/plan.h"
#include "testbed/system.h"

namespace xm::testbed {

using Sysctls = std::vector<std::pair<std::string, std::string>>;

// Hosts: no IPv6 (its chatter would show up on the counters), loose source routing
// (rp_filter 0), ARP answered only on the NIC that holds the address, and routes over
// a NIC without carrier ignored, so a cut link fails fast instead of blackholing.
Sysctls host_sysctls();
// The ToRs: bridges only; no IPv6.
Sysctls fabric_sysctls();
// The spine: an IPv4 router between the rail subnets, without redirects.
Sysctls spine_sysctls();

// `netns add` for every namespace of the plan.
Batch create_namespaces(const Plan& plan);

// Everything else, in order, once the namespaces exist and carry their sysctls:
// host links, addresses, policy routes and neighbours; the ToR bridges and spine links;
// the spine's addresses; static forwarding entries; the tbf qdiscs. Neighbours and
// bridge entries are static, so no ARP broadcast or unknown-unicast flood ever reaches
// the spine: its counters carry cross-rail traffic only.
std::vector<Batch> setup_batches(const Plan& plan);

// "qdisc replace dev DEV root tbf rate R burst B limit L" for tc.
std::string tbf_line(const std::string& dev, uint64_t rate_bps, uint32_t mtu);

// Routing table of rail r in every host: 100 + r; its rule's priority 1000 + r.
inline uint32_t rail_table(uint32_t rail) { return 100 + rail; }

}  // namespace xm::testbed

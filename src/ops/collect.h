// Gathering an observation (observation.h) from a live testbed: in every host's and
// switch's namespace `ip -j address` and `lldpcli -f json show neighbors`, and on the
// switches also `ip -j route` and FRR's `show bgp summary json` — what an operator's
// tools would fetch from real devices over their management network.
#pragma once

#include "ops/observation.h"
#include "testbed/plan.h"
#include "util/result.h"

namespace xm::ops {

Result<Observation> collect_testbed(const testbed::Plan& plan);

}  // namespace xm::ops

// Watching a testbed against its plan: validate again on every link change (netlink
// link events from every namespace) and, for the few seconds after one, as LLDP catches
// up — and every couple of seconds regardless; report each time the findings change.
#pragma once

#include <functional>

#include "ops/fabric_plan.h"
#include "ops/validate.h"
#include "testbed/plan.h"
#include "util/result.h"

namespace xm::ops {

struct WatchOptions {
  double seconds = 0;          // stop after this long; 0: until on_change returns false
  double settle_s = 4;         // re-validate this long after a link change
  double interval_s = 0.25;    // while settling
  double idle_interval_s = 2;  // otherwise
};

// Calls `on_change(report, seconds since start)` with the first report and each one
// whose failed ports differ from the last; stops when it returns false or time is up.
Status watch(const testbed::Plan& testbed, const FabricPlan& plan, const WatchOptions& options,
             const std::function<bool(const Report&, double)>& on_change);

}  // namespace xm::ops

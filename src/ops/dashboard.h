// The controller's dashboard: one page (dashboard.html, compiled in) that draws the
// fabric from the plan — spines, ToRs, hosts and their NICs, every cable — coloured by
// what the controller knows (an open incident on it, a drain), the incidents and heal
// actions on a timeline, and each rail's probe loss and round-trip time as plots. The
// page reads the controller's JSON; these render what only the server can:
//
//   GET /               the page
//   GET /api/fabric     devices and cables of the plan, each with its health
//   GET /api/rails      per rail, probe loss and RTT over the last minutes (?seconds=300),
//                       read from Prometheus (a range query)
#pragma once

#include <string>

#include "ops/controller.h"
#include "ops/fabric_plan.h"
#include "ops/prometheus_client.h"
#include "util/result.h"

namespace xm::ops {

const std::string& dashboard_page();

std::string fabric_json(const FabricPlan& plan, const FabricHealth& health);

// Loss (lost / sent) and mean RTT of the probes each rail's NICs sent, at about 150
// points over the `seconds` before `now` (unix seconds).
Result<std::string> rails_json(const FabricPlan& plan, PrometheusClient& prometheus, double now, double seconds);

}  // namespace xm::ops

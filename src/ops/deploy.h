// Deploying a plan: on the testbed (every device a namespace, FRR and lldpd running the
// plan's configuration), checked until every BGP session is up, every route in, and
// every NIC reaches every NIC of every other host; each stage timed. A deploy that
// fails removes what it built.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "testbed/plan.h"
#include "testbed/reach.h"
#include "topo/spec.h"
#include "util/result.h"

namespace xm::ops {

struct DeployOptions {
  testbed::PlanOptions testbed;
  bool replace = false;
  double reach_timeout_s = 20;
};

struct Deployed {
  testbed::Plan plan;
  std::vector<std::pair<std::string, double>> stages;  // name, seconds, in order
  testbed::ReachReport reach;
};

Result<Deployed> deploy_testbed(const topo::ClusterSpec& spec, const std::string& source, const DeployOptions& options);

}  // namespace xm::ops

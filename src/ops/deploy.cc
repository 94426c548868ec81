#include "ops/deploy.h"

#include <chrono>

#include "testbed/lifecycle.h"

namespace xm::ops {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

Result<Deployed> deploy_testbed(const topo::ClusterSpec& spec, const std::string& source, const DeployOptions& options) {
  Deployed d;
  auto start = std::chrono::steady_clock::now();
  Result<testbed::Layout> layout = testbed::make_layout(spec, source, options.testbed);
  if (!layout) return layout.error();
  d.stages.push_back({"plan", seconds_since(start)});
  testbed::UpStages up;
  if (Status s = testbed::up(*layout, options.replace, &up); !s) return Error{s.message()};
  d.stages.push_back({"cables", up.cables_s});
  d.stages.push_back({"daemons", up.daemons_s});
  d.stages.push_back({"bgp", up.bgp_s});
  start = std::chrono::steady_clock::now();
  Result<testbed::ReachReport> reach = testbed::check_reach(layout->plan, options.reach_timeout_s);
  d.stages.push_back({"reach", seconds_since(start)});
  if (!reach || !reach->failures.empty()) {
    std::string why = !reach ? reach.error().message
                             : std::to_string(reach->failures.size()) + " of " + std::to_string(reach->pairs) +
                                   " NIC pairs unreachable, e.g. " + reach->failures.front();
    Result<testbed::Removed> removed = testbed::down(layout->plan.name);
    return Error{"deploy: " + why + (removed ? " (what was built has been removed)" : "")};
  }
  d.reach = std::move(reach).value();
  d.plan = std::move(layout->plan);
  return d;
}

}  // namespace xm::ops

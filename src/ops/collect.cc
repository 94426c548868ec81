#include "ops/collect.h"

#include <future>

#include "testbed/daemons.h"
#include "testbed/system.h"

namespace xm::ops {
namespace {

using testbed::run_command;

Result<DeviceView> collect_device(const testbed::Plan& plan, const std::string& device, bool is_switch) {
  const std::string netns = plan.netns_of(device), dir = testbed::daemon_dir(plan.name, device);
  DeviceView v;
  Result<std::string> addresses = run_command({"ip", "-n", netns, "-j", "address", "show"});
  if (!addresses) return addresses.error();
  Result<std::map<std::string, Interface>> interfaces = parse_ip_addresses(*addresses, device + ": ip address");
  if (!interfaces) return interfaces.error();
  v.interfaces = std::move(interfaces).value();
  // An agent that does not answer (stopped, restarting) is a finding about the device,
  // not a reason to give up on the rest.
  Result<std::string> lldp = run_command({"lldpcli", "-u", dir + "/lldpd.socket", "-f", "json", "show", "neighbors"});
  Result<std::map<std::string, Neighbour>> neighbours =
      lldp ? parse_lldp_neighbours(*lldp, device + ": lldpcli") : Result<std::map<std::string, Neighbour>>(lldp.error());
  if (neighbours) v.lldp = std::move(neighbours).value();
  else v.lldp_error = neighbours.error().message;
  if (!is_switch) return v;
  Result<std::string> bgp = run_command({"vtysh", "--vty_socket", dir, "-c", "show bgp summary json"});
  if (!bgp) return Error{device + ": " + bgp.error().message};
  Result<std::map<std::string, std::string>> sessions = parse_bgp_summary(*bgp, device + ": show bgp summary");
  if (!sessions) return sessions.error();
  v.bgp = std::move(sessions).value();
  Result<std::string> routes = run_command({"ip", "-n", netns, "-j", "route", "show"});
  if (!routes) return routes.error();
  Result<std::map<std::string, std::vector<std::string>>> parsed = parse_routes(*routes, device + ": ip route");
  if (!parsed) return parsed.error();
  v.routes = std::move(parsed).value();
  return v;
}

}  // namespace

Result<Observation> collect_testbed(const testbed::Plan& plan) {
  std::vector<std::pair<std::string, std::future<Result<DeviceView>>>> pending;
  for (const testbed::SwitchPlan& s : plan.switches)
    pending.emplace_back(s.name, std::async(std::launch::async, collect_device, std::cref(plan), s.name, true));
  for (const testbed::HostPlan& h : plan.hosts)
    pending.emplace_back(h.name, std::async(std::launch::async, collect_device, std::cref(plan), h.name, false));
  Observation out;
  std::string errors;
  for (auto& [device, f] : pending) {
    Result<DeviceView> v = f.get();
    if (v) out[device] = std::move(v).value();
    else errors += (errors.empty() ? "" : "; ") + v.error().message;
  }
  if (!errors.empty()) return Error{errors};
  return out;
}

}  // namespace xm::ops

#include "testbed/lifecycle.h"

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "testbed/setup.h"
#include "testbed/state.h"
#include "testbed/status.h"
#include "testbed/system.h"
#include "testbed/units.h"

namespace xm::testbed {
namespace {

std::vector<std::string> namespaces_of(const std::string& name) {
  std::vector<std::string> out;
  std::string prefix = netns_prefix(name);
  for (const std::string& ns : list_netns())
    if (ns.starts_with(prefix)) out.push_back(ns);
  return out;
}

// down() without taking the lock.
Result<Removed> remove_testbed(const std::string& name) {
  Removed removed;
  removed.state_file = std::filesystem::exists(state_path(name));
  removed.namespaces = namespaces_of(name);
  for (const std::string& ns : removed.namespaces) {
    // A rank left behind would keep the namespace (and its links) alive after delete.
    Result<std::string> pids = run_command({"ip", "netns", "pids", ns});
    if (!pids) continue;
    std::istringstream in(*pids);
    for (long pid = 0; in >> pid;)
      if (pid > 1 && ::kill(static_cast<pid_t>(pid), SIGKILL) == 0) ++removed.processes_killed;
  }
  Batch del{"ip", "", {}};
  for (const std::string& ns : removed.namespaces) del.lines.push_back("netns del " + ns);
  if (Status s = run_batch(del); !s) return Error{"removing testbed " + name + ": " + s.message()};
  remove_state(name);
  return removed;
}

// Waits until every (namespace, interface) in `links` reports operstate UP (or, for
// !up, anything else). The kernel applies carrier changes in its linkwatch work, up to a
// second later, and only then attaches the qdisc or marks routes dead: until then a
// new link drops everything and a cut one still carries traffic.
Status wait_links(const std::vector<std::pair<std::string, std::string>>& links, bool up) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    std::string pending;
    std::map<std::string, std::map<std::string, LinkCounters>> seen;
    for (const auto& [ns, dev] : links) {
      if (!seen.count(ns)) {
        std::vector<std::string> argv{"ip", "-n", ns, "-s", "-j", "link", "show"};
        Result<std::string> out = run_command(argv);
        if (!out) return Error{out.error().message};
        Result<std::map<std::string, LinkCounters>> parsed = parse_link_stats(*out, command_line(argv));
        if (!parsed) return Error{parsed.error().message};
        seen[ns] = std::move(parsed).value();
      }
      auto it = seen[ns].find(dev);
      if (it == seen[ns].end() || it->second.up != up) pending = dev + " in " + ns;
    }
    if (pending.empty()) return Status::Ok();
    if (std::chrono::steady_clock::now() > deadline)
      return Error{"timed out waiting for " + pending + " to go " + (up ? "up" : "down")};
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

Status build(const Plan& plan) {
  if (Status s = save_state(plan); !s) return s;
  if (Status s = run_batch(create_namespaces(plan)); !s) return s;
  if (Status s = write_sysctls(plan.fabric_netns, fabric_sysctls()); !s) return s;
  if (Status s = write_sysctls(plan.spine_netns, spine_sysctls()); !s) return s;
  for (const HostPlan& h : plan.hosts)
    if (Status s = write_sysctls(h.netns, host_sysctls()); !s) return s;
  for (const Batch& b : setup_batches(plan))
    if (Status s = run_batch(b); !s) return s;
  std::vector<std::pair<std::string, std::string>> links;
  for (const HostPlan& h : plan.hosts)
    for (const NicPlan& n : h.nics) links.push_back({h.netns, n.ifname}), links.push_back({plan.fabric_netns, n.fabric_port});
  for (const RailPlan& r : plan.rails)
    links.push_back({plan.fabric_netns, r.uplink}), links.push_back({plan.spine_netns, r.spine_ifname});
  return wait_links(links, true);
}

}  // namespace

std::vector<std::string> existing_testbeds() {
  std::set<std::string> names;
  for (const std::string& n : state_names()) names.insert(n);
  static const std::regex ours("xm-([a-z][a-z0-9]{0,7})-(fab|spine|h[0-9]+)");
  std::smatch m;
  for (const std::string& ns : list_netns())
    if (std::regex_match(ns, m, ours)) names.insert(m[1].str());
  return {names.begin(), names.end()};
}

Status up(const Plan& plan, bool replace) {
  if (!is_root()) return root_required();
  Result<StateLock> lock = StateLock::acquire();
  if (!lock) return Error{lock.error().message};
  std::vector<std::string> existing = namespaces_of(plan.name);
  bool has_state = std::filesystem::exists(state_path(plan.name));
  if (!existing.empty() || has_state) {
    if (!replace)
      return Error{"testbed \"" + plan.name + "\" already exists (" + std::to_string(existing.size()) +
                   " namespaces" + (has_state ? ", state file " + state_path(plan.name) : "") +
                   "); remove it with `xm testbed down --name " + plan.name + "` or pass --replace"};
    if (Result<Removed> r = remove_testbed(plan.name); !r) return Error{r.error().message};
  }
  if (Status s = build(plan); !s) {
    Result<Removed> r = remove_testbed(plan.name);
    return Error{s.message() + (r ? " (what was built has been removed)" : "; removing what was built also failed: " +
                                                                             r.error().message)};
  }
  return Status::Ok();
}

Result<Removed> down(const std::string& name) {
  if (Status s = check_name(name); !s) return Error{s.message()};
  if (!is_root()) return root_required();
  Result<StateLock> lock = StateLock::acquire();
  if (!lock) return Error{lock.error().message};
  return remove_testbed(name);
}

Result<std::vector<std::string>> down_all() {
  if (!is_root()) return root_required();
  Result<StateLock> lock = StateLock::acquire();
  if (!lock) return Error{lock.error().message};
  std::vector<std::string> names = existing_testbeds();
  for (const std::string& name : names)
    if (Result<Removed> r = remove_testbed(name); !r) return Error{r.error().message};
  return names;
}

Result<std::string> apply_fault(const std::string& name, const Fault& fault) {
  if (Status s = check_name(name); !s) return Error{s.message()};
  if (!is_root()) return root_required();
  Result<StateLock> lock = StateLock::acquire();
  if (!lock) return Error{lock.error().message};
  Result<Plan> loaded = load_state(name);
  if (!loaded) return Error{loaded.error().message};
  Plan& plan = *loaded;

  // The link's two ends: (namespace, device) on the host or spine side and on the ToR.
  std::string near_ns, near_dev, what;
  std::string tor_dev;
  uint64_t* rate = nullptr;
  if (fault.spine) {
    RailPlan* r = plan.find_rail(*fault.spine);
    if (!r) {
      std::string rails;
      for (const RailPlan& x : plan.rails) rails += (rails.empty() ? "" : ", ") + std::to_string(x.rail);
      return Error{"testbed " + name + " has no rail " + std::to_string(*fault.spine) + " (rails: " + rails + ")"};
    }
    near_ns = plan.spine_netns, near_dev = r->spine_ifname, tor_dev = r->uplink, rate = &r->rate_bps;
    what = "spine link of rail " + std::to_string(r->rail);
  } else {
    const HostPlan* host = nullptr;
    NicPlan* n = plan.find_nic(fault.link, &host);
    if (!n)
      return Error{"testbed " + name + " has no link \"" + fault.link + "\": expected h<0.." +
                   std::to_string(plan.hosts.size() - 1) + ">/nic<rail>, e.g. h0/" + plan.hosts[0].nics[0].ifname};
    near_ns = host->netns, near_dev = n->ifname, tor_dev = n->fabric_port, rate = &n->rate_bps;
    what = host->name + "/" + n->ifname;
  }

  switch (fault.action) {
    case FaultAction::kDown:
    case FaultAction::kUp: {
      bool up = fault.action == FaultAction::kUp;
      Result<std::string> r =
          run_command({"ip", "-n", plan.fabric_netns, "link", "set", tor_dev, up ? "up" : "down"});
      if (!r) return Error{r.error().message};
      // The near end (NIC or spine port) follows the ToR port once the kernel noticed.
      if (Status s = wait_links({{near_ns, near_dev}, {plan.fabric_netns, tor_dev}}, up); !s) return Error{s.message()};
      return what + (up ? " restored" : " cut (ToR port " + tor_dev + " down)");
    }
    case FaultAction::kRate:
      break;
  }
  // Rate: both directions, then the record.
  Batch near{"tc", near_ns, {tbf_line(near_dev, fault.rate_bps, plan.mtu)}};
  Batch far{"tc", plan.fabric_netns, {tbf_line(tor_dev, fault.rate_bps, plan.mtu)}};
  if (Status s = run_batch(near); !s) return Error{s.message()};
  if (Status s = run_batch(far); !s) return Error{s.message()};
  uint64_t before = *rate;
  *rate = fault.rate_bps;
  if (Status s = save_state(plan); !s) return Error{s.message()};
  return what + " rate " + rate_string(before) + " -> " + rate_string(fault.rate_bps);
}

}  // namespace xm::testbed

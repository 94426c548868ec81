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

#include "ops/plan_dir.h"
#include "testbed/daemons.h"
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
  // Daemons outside the namespaces (a monitor's Prometheus) keep pid files here.
  removed.processes_killed += size_t(stop_daemons_under(runtime_dir(name)));
  Batch del{"ip", "", {}};
  for (const std::string& ns : removed.namespaces) del.lines.push_back("netns del " + ns);
  if (Status s = run_batch(del); !s) return Error{"removing testbed " + name + ": " + s.message()};
  remove_state(name);
  std::error_code ec;
  std::filesystem::remove_all(runtime_dir(name), ec);  // the plan, daemon sockets and logs
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

// Every cable's two ends: (namespace, interface).
std::vector<std::pair<std::string, std::string>> cable_ends(const Plan& plan) {
  std::vector<std::pair<std::string, std::string>> ends;
  for (const HostPlan& h : plan.hosts)
    for (const NicPlan& n : h.nics) ends.push_back({h.netns, n.ifname}), ends.push_back({plan.netns_of(n.tor), n.fabric_port});
  for (const UplinkPlan& u : plan.uplinks)
    ends.push_back({plan.netns_of(u.tor), u.tor_port}), ends.push_back({plan.netns_of(u.spine), u.spine_port});
  return ends;
}

double seconds_since(std::chrono::steady_clock::time_point& mark) {
  auto now = std::chrono::steady_clock::now();
  double s = std::chrono::duration<double>(now - mark).count();
  mark = now;
  return s;
}

Status build(const Layout& layout, UpStages& stages) {
  const Plan& plan = layout.plan;
  auto mark = std::chrono::steady_clock::now();
  if (Status s = save_state(plan); !s) return s;
  if (Status s = ops::write_plan_dir(layout.fabric, plan_dir(plan.name)); !s) return s;
  if (Status s = run_batch(create_namespaces(plan)); !s) return s;
  for (const SwitchPlan& sw : plan.switches)
    if (Status s = write_sysctls(sw.netns, switch_sysctls()); !s) return s;
  for (const HostPlan& h : plan.hosts)
    if (Status s = write_sysctls(h.netns, host_sysctls()); !s) return s;
  for (const Batch& b : setup_batches(plan, layout.fabric))
    if (Status s = run_batch(b); !s) return s;
  if (Status s = wait_links(cable_ends(plan), true); !s) return s;
  stages.cables_s = seconds_since(mark);
  if (Status s = start_daemons(plan); !s) return s;
  stages.daemons_s = seconds_since(mark);
  Status converged = wait_for_routes(plan, std::chrono::seconds(60));
  stages.bgp_s = seconds_since(mark);
  return converged;
}

}  // namespace

std::vector<std::string> existing_testbeds() {
  std::set<std::string> names;
  for (const std::string& n : state_names()) names.insert(n);
  static const std::regex ours("xm-([a-z][a-z0-9]{0,7})-(fab|spine|spare|spine[0-9]+|tor[0-9]+|h[0-9]+)");
  std::smatch m;
  for (const std::string& ns : list_netns())
    if (std::regex_match(ns, m, ours)) names.insert(m[1].str());
  return {names.begin(), names.end()};
}

Status up(const Layout& layout, bool replace, UpStages* stages) {
  UpStages ignored;
  const Plan& plan = layout.plan;
  if (!is_root()) return root_required();
  if (Status s = check_daemons_installed(); !s) return s;
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
  if (Status s = build(layout, stages ? *stages : ignored); !s) {
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

  // The cables: their ToR ends (what a fault acts on) and far ends, and their rates.
  struct End {
    std::string tor_ns, tor_dev, far_ns, far_dev;
    uint64_t* rate;
  };
  std::vector<End> ends;
  std::string what;
  if (fault.spine) {
    if (!plan.find_rail(*fault.spine)) {
      std::string rails;
      for (const RailPlan& x : plan.rails) rails += (rails.empty() ? "" : ", ") + std::to_string(x.rail);
      return Error{"testbed " + name + " has no rail " + std::to_string(*fault.spine) + " (rails: " + rails + ")"};
    }
    for (UplinkPlan* u : plan.uplinks_of_rail(*fault.spine))
      ends.push_back({plan.netns_of(u->tor), u->tor_port, plan.netns_of(u->spine), u->spine_port, &u->rate_bps});
    what = "spine links of rail " + std::to_string(*fault.spine) + " (" + std::to_string(ends.size()) + ")";
  } else {
    const HostPlan* host = nullptr;
    NicPlan* n = plan.find_nic(fault.link, &host);
    if (!n)
      return Error{"testbed " + name + " has no link \"" + fault.link + "\": expected h<0.." +
                   std::to_string(plan.hosts.size() - 1) + ">/nic<rail>, e.g. h0/" + plan.hosts[0].nics[0].ifname};
    ends.push_back({plan.netns_of(n->tor), n->fabric_port, host->netns, n->ifname, &n->rate_bps});
    what = host->name + "/" + n->ifname;
  }

  switch (fault.action) {
    case FaultAction::kDown:
    case FaultAction::kUp: {
      bool up = fault.action == FaultAction::kUp;
      std::vector<std::pair<std::string, std::string>> both;
      for (const End& e : ends) {
        Result<std::string> r = run_command({"ip", "-n", e.tor_ns, "link", "set", e.tor_dev, up ? "up" : "down"});
        if (!r) return Error{r.error().message};
        both.push_back({e.tor_ns, e.tor_dev}), both.push_back({e.far_ns, e.far_dev});
      }
      // The far end (NIC or spine port) follows the ToR port once the kernel noticed.
      if (Status s = wait_links(both, up); !s) return Error{s.message()};
      // A restored uplink is back when BGP is: its sessions up and its routes in again.
      if (up && fault.spine)
        if (Status s = wait_for_routes(plan, std::chrono::seconds(60)); !s) return Error{s.message()};
      return what + (up ? " restored" : " cut (ToR port " + ends[0].tor_dev + (ends.size() > 1 ? " …" : "") + " down)");
    }
    case FaultAction::kRate:
      break;
  }
  // Rate: both directions, then the record.
  uint64_t before = *ends[0].rate;
  for (End& e : ends) {
    if (Status s = run_batch(Batch{"tc", e.far_ns, {tbf_line(e.far_dev, fault.rate_bps, plan.mtu)}}); !s)
      return Error{s.message()};
    if (Status s = run_batch(Batch{"tc", e.tor_ns, {tbf_line(e.tor_dev, fault.rate_bps, plan.mtu)}}); !s)
      return Error{s.message()};
    *e.rate = fault.rate_bps;
  }
  if (Status s = save_state(plan); !s) return Error{s.message()};
  return what + " rate " + rate_string(before) + " -> " + rate_string(fault.rate_bps);
}

}  // namespace xm::testbed

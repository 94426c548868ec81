#include "testbed/daemons.h"

#include <pwd.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "ops/observation.h"
#include "testbed/state.h"
#include "testbed/system.h"

namespace xm::testbed {
namespace {

namespace fs = std::filesystem;

constexpr const char* kFrrDir = "/usr/lib/frr";

Status make_dir(const std::string& dir, bool for_frr) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Error{"cannot create " + dir + ": " + ec.message()};
  if (for_frr) {
    // The FRR daemons drop to user frr and create their sockets here.
    const passwd* frr = ::getpwnam("frr");
    if (!frr || ::chown(dir.c_str(), frr->pw_uid, frr->pw_gid) != 0) return Error{"cannot give " + dir + " to user frr"};
  }
  return Status::Ok();
}

Status start_frr(const Plan& plan, const SwitchPlan& s) {
  const std::string dir = daemon_dir(plan.name, s.name);
  if (Status st = make_dir(dir, true); !st) return st;
  const std::string log = "file:" + dir + "/frr.log";
  for (const char* daemon : {"zebra", "bfdd", "bgpd"}) {
    std::vector<std::string> argv{"ip", "netns", "exec", s.netns, std::string(kFrrDir) + "/" + daemon, "-d",
                                  "-f", "/dev/null", "-i", dir + "/" + daemon + ".pid", "-z", dir + "/zserv.api",
                                  "--vty_socket", dir, "-P", "0", "--log", log};
    if (std::string(daemon) == "bfdd") argv.insert(argv.end(), {"--bfdctl", dir + "/bfdd.sock"});
    if (Result<std::string> r = run_command(argv); !r) return Error{s.name + ": " + r.error().message};
  }
  // The integrated configuration, as `vtysh -b` would load it at boot.
  const std::string conf = plan_dir(plan.name) + "/switches/" + s.name + "/frr.conf";
  Result<std::string> r = run_command({"vtysh", "--vty_socket", dir, "-f", conf});
  if (!r) return Error{s.name + ": loading " + conf + ": " + r.error().message};
  return Status::Ok();
}

// On every interface, as on a real switch: a cable the plan does not have shows up too.
Status start_lldpd(const Plan& plan, const std::string& device, const std::string& netns) {
  const std::string dir = daemon_dir(plan.name, device);
  if (Status st = make_dir(dir, false); !st) return st;
  const std::string conf = dir + "/lldpd.conf";
  {
    // A one-second interval and a TTL of three, so a re-cable shows within seconds.
    std::ofstream out(conf);
    out << "configure system hostname " << device << "\n"
        << "configure lldp portidsubtype ifname\n"
        << "configure lldp tx-interval 1\n"
        << "configure lldp tx-hold 3\n";
    if (!out) return Error{"cannot write " + conf};
  }
  // lldpd's privilege-separated child chroots here (Debian's default); it must exist.
  fs::create_directories("/run/lldpd");
  Result<std::string> r = run_command({"ip", "netns", "exec", netns, "lldpd", "-u", dir + "/lldpd.socket", "-p",
                                       dir + "/lldpd.pid", "-O", conf});
  if (!r) return Error{device + ": " + r.error().message};
  return Status::Ok();
}

// The ToR-spine cables whose BGP session is shut at either end (`neighbor ... shutdown`:
// an operator's or the controller's drain), as (ToR, its port): FRR's `desc` of a
// session is the port it runs over.
std::set<std::pair<std::string, std::string>> drained_uplinks(const Plan& plan) {
  std::map<std::string, std::set<std::string>> shut;  // device -> ports whose session is shut
  for (const SwitchPlan& s : plan.switches) {
    Result<std::string> out = run_command({"vtysh", "--vty_socket", daemon_dir(plan.name, s.name), "-c", "show bgp summary json"});
    nlohmann::json j = out ? nlohmann::json::parse(*out, nullptr, false) : nlohmann::json();
    if (!j.is_object() || !j.contains("ipv4Unicast") || !j["ipv4Unicast"].contains("peers")) continue;
    for (const auto& [address, peer] : j["ipv4Unicast"]["peers"].items())
      if (peer.value("peerState", "") == "Admin") shut[s.name].insert(peer.value("desc", ""));
  }
  std::set<std::pair<std::string, std::string>> out;
  for (const UplinkPlan& u : plan.uplinks)
    if (shut[u.tor].count(u.tor_port) || shut[u.spine].count(u.spine_port)) out.insert({u.tor, u.tor_port});
  return out;
}

size_t uplinks_of(const Plan& plan, const std::string& tor) {
  size_t n = 0;
  for (const UplinkPlan& u : plan.uplinks) n += u.tor == tor;
  return n;
}

// The ECMP paths `from` should have to `to`'s subnet: its open uplinks to a spine that
// has an open one to `to`.
size_t paths_between(const Plan& plan, const std::string& from, const std::string& to,
                     const std::set<std::pair<std::string, std::string>>& drained) {
  auto open = [&](const UplinkPlan& u) { return !drained.count({u.tor, u.tor_port}); };
  size_t n = 0;
  for (const UplinkPlan& up : plan.uplinks)
    if (up.tor == from && open(up))
      n += std::any_of(plan.uplinks.begin(), plan.uplinks.end(),
                       [&](const UplinkPlan& down) { return down.tor == to && down.spine == up.spine && open(down); });
  return n;
}

}  // namespace

std::string runtime_dir(const std::string& name) { return state_dir() + "/" + name; }
std::string plan_dir(const std::string& name) { return runtime_dir(name) + "/plan"; }
std::string daemon_dir(const std::string& name, const std::string& device) { return runtime_dir(name) + "/" + device; }
std::string rail_advice_path(const std::string& name) { return runtime_dir(name) + "/monitor/rail-advice"; }

Status check_daemons_installed() {
  for (const char* d : {"zebra", "bgpd", "bfdd"})
    if (::access((std::string(kFrrDir) + "/" + d).c_str(), X_OK) != 0)
      return Error{std::string(kFrrDir) + "/" + d + " not found: the testbed's switches run FRR (apt-get install frr)"};
  if (Result<std::string> r = run_command({"vtysh", "--help"}); !r)
    return Error{"vtysh not found: the testbed's switches run FRR (apt-get install frr)"};
  if (Result<std::string> r = run_command({"lldpd", "-v"}); !r)
    return Error{"lldpd not found: every testbed host and switch runs it (apt-get install lldpd)"};
  return Status::Ok();
}

Status start_daemons(const Plan& plan) {
  for (const SwitchPlan& s : plan.switches)
    if (Status st = start_frr(plan, s); !st) return st;
  for (const SwitchPlan& s : plan.switches)
    if (Status st = start_lldpd(plan, s.name, s.netns); !st) return st;
  for (const HostPlan& h : plan.hosts)
    if (Status st = start_lldpd(plan, h.name, h.netns); !st) return st;
  return Status::Ok();
}

Status restart_lldpd(const Plan& plan, const std::string& device) {
  const std::string netns = plan.netns_of(device);
  Result<std::string> pids = run_command({"ip", "netns", "pids", netns});
  if (!pids) return Error{pids.error().message};
  std::vector<pid_t> ours;
  std::istringstream in(*pids);
  for (long pid = 0; in >> pid;) {
    std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
    std::string name;
    if (std::getline(comm, name) && name == "lldpd") ours.push_back(pid_t(pid));
  }
  // SIGKILL, not SIGTERM: a clean stop sends every neighbour a shutdown LLDPDU, which
  // would blank the device's other ports for a second, and waits for it.
  for (pid_t pid : ours) ::kill(pid, SIGKILL);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  for (pid_t pid : ours)
    while (process_running(pid) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
  std::error_code ec;
  fs::remove(daemon_dir(plan.name, device) + "/lldpd.socket", ec);
  fs::remove(daemon_dir(plan.name, device) + "/lldpd.pid", ec);
  return start_lldpd(plan, device, netns);
}

Status wait_for_routes(const Plan& plan, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::map<std::string, std::string> subnet_of;  // ToR -> its rail subnet
  for (const HostPlan& h : plan.hosts)
    for (const NicPlan& n : h.nics) {
      uint32_t mask = n.prefix == 0 ? 0 : ~uint32_t{0} << (32 - n.prefix);
      std::optional<ops::Ipv4> a = ops::parse_ipv4(n.address);
      subnet_of[n.tor] = ops::to_string(ops::Prefix{ops::Ipv4{a->value & mask}, uint8_t(n.prefix)});
    }
  for (;;) {
    std::string missing;
    std::optional<std::set<std::pair<std::string, std::string>>> drained;  // read once a path is missing
    for (const RailPlan& r : plan.rails) {
      Result<std::string> out = run_command({"ip", "-n", plan.netns_of(r.tor), "-j", "route", "show"});
      if (!out) return Error{out.error().message};
      // The same reading of `ip -j route` validation uses.
      Result<std::map<std::string, std::vector<std::string>>> routes =
          ops::parse_routes(*out, r.tor + ": ip -j route");
      if (!routes) return Error{routes.error().message};
      for (const RailPlan& other : plan.rails) {
        if (other.tor == r.tor) continue;
        const std::string& dst = subnet_of[other.tor];
        auto via = routes->find(dst);
        size_t paths = via == routes->end() ? 0 : via->second.size();
        if (paths >= uplinks_of(plan, r.tor)) continue;
        if (!drained) drained = drained_uplinks(plan);
        const size_t expected = paths_between(plan, r.tor, other.tor, *drained);
        if (paths < expected)
          missing = r.tor + " has " + std::to_string(paths) + " of " + std::to_string(expected) + " paths to " + dst;
      }
    }
    if (missing.empty()) return Status::Ok();
    if (std::chrono::steady_clock::now() > deadline)
      return Error{"the fabric did not converge in " + std::to_string(timeout.count()) + " ms: " + missing};
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace xm::testbed

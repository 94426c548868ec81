#include "testbed/state.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace xm::testbed {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json nic_json(const NicPlan& n) {
  return {{"rail", n.rail},       {"device", n.device}, {"ifname", n.ifname}, {"tor", n.tor},
          {"fabric_port", n.fabric_port}, {"address", n.address}, {"prefix", n.prefix}, {"mac", n.mac},
          {"rate_bps", n.rate_bps}};
}

}  // namespace

std::string state_dir() {
  const char* dir = std::getenv("XM_TESTBED_STATE_DIR");
  return dir && *dir ? dir : "/run/xm-testbed";
}

std::string state_path(const std::string& name) { return state_dir() + "/" + name + ".json"; }

std::string plan_to_json(const Plan& plan) {
  json hosts = json::array(), switches = json::array(), rails = json::array(), uplinks = json::array();
  for (const HostPlan& h : plan.hosts) {
    json nics = json::array();
    for (const NicPlan& n : h.nics) nics.push_back(nic_json(n));
    hosts.push_back({{"index", h.index}, {"name", h.name}, {"netns", h.netns}, {"nics", nics}});
  }
  for (const SwitchPlan& s : plan.switches) switches.push_back({{"name", s.name}, {"role", s.role}, {"netns", s.netns}});
  for (const RailPlan& r : plan.rails)
    rails.push_back({{"rail", r.rail}, {"tor", r.tor}, {"bridge", r.bridge}, {"address", r.address}});
  for (const UplinkPlan& u : plan.uplinks)
    uplinks.push_back({{"rail", u.rail}, {"tor", u.tor}, {"tor_port", u.tor_port}, {"spine", u.spine},
                       {"spine_port", u.spine_port}, {"address", u.address}, {"rate_bps", u.rate_bps}});
  json j = {{"name", plan.name}, {"source", plan.source}, {"subnet", plan.subnet}, {"mtu", plan.mtu},
            {"hosts", hosts},    {"switches", switches},  {"rails", rails},       {"uplinks", uplinks}};
  return j.dump(2) + "\n";
}

Result<Plan> plan_from_json(const std::string& text, const std::string& source) {
  try {
    json j = json::parse(text);
    Plan plan;
    plan.name = j.at("name").get<std::string>();
    plan.source = j.at("source").get<std::string>();
    plan.subnet = j.at("subnet").get<uint32_t>();
    plan.mtu = j.at("mtu").get<uint32_t>();
    for (const json& h : j.at("hosts")) {
      HostPlan host;
      host.index = h.at("index").get<uint32_t>();
      host.name = h.at("name").get<std::string>();
      host.netns = h.at("netns").get<std::string>();
      for (const json& n : h.at("nics")) {
        NicPlan nic;
        nic.rail = n.at("rail").get<uint32_t>();
        nic.device = n.at("device").get<std::string>();
        nic.ifname = n.at("ifname").get<std::string>();
        nic.tor = n.at("tor").get<std::string>();
        nic.fabric_port = n.at("fabric_port").get<std::string>();
        nic.address = n.at("address").get<std::string>();
        nic.prefix = n.at("prefix").get<uint32_t>();
        nic.mac = n.at("mac").get<std::string>();
        nic.rate_bps = n.at("rate_bps").get<uint64_t>();
        host.nics.push_back(std::move(nic));
      }
      plan.hosts.push_back(std::move(host));
    }
    for (const json& s : j.at("switches"))
      plan.switches.push_back(
          SwitchPlan{s.at("name").get<std::string>(), s.at("role").get<std::string>(), s.at("netns").get<std::string>()});
    for (const json& r : j.at("rails"))
      plan.rails.push_back(RailPlan{r.at("rail").get<uint32_t>(), r.at("tor").get<std::string>(),
                                    r.at("bridge").get<std::string>(), r.at("address").get<std::string>()});
    for (const json& u : j.at("uplinks")) {
      UplinkPlan up;
      up.rail = u.at("rail").get<uint32_t>();
      up.tor = u.at("tor").get<std::string>();
      up.tor_port = u.at("tor_port").get<std::string>();
      up.spine = u.at("spine").get<std::string>();
      up.spine_port = u.at("spine_port").get<std::string>();
      up.address = u.at("address").get<std::string>();
      up.rate_bps = u.at("rate_bps").get<uint64_t>();
      plan.uplinks.push_back(std::move(up));
    }
    if (Status s = check_name(plan.name); !s) return Error{source + ": " + s.message()};
    if (plan.hosts.empty() || plan.rails.empty()) return Error{source + ": no hosts or no rails"};
    for (const HostPlan& h : plan.hosts)
      if (h.nics.size() != plan.rails.size()) return Error{source + ": host " + h.name + " does not have one NIC per rail"};
    return plan;
  } catch (const json::exception& e) {
    return Error{source + ": not a testbed state file: " + e.what()};
  }
}

Status save_state(const Plan& plan) {
  std::error_code ec;
  fs::create_directories(state_dir(), ec);
  if (ec) return Error{"cannot create " + state_dir() + ": " + ec.message()};
  std::string path = state_path(plan.name), tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << plan_to_json(plan);
    if (!out) return Error{"cannot write " + tmp};
  }
  fs::rename(tmp, path, ec);
  if (ec) return Error{"cannot rename " + tmp + " to " + path + ": " + ec.message()};
  return Status::Ok();
}

Result<Plan> load_state(const std::string& name) {
  if (Status s = check_name(name); !s) return Error{s.message()};
  std::string path = state_path(name);
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Error{"no testbed named \"" + name + "\" (no " + path + "); start one with: xm testbed up --name " + name};
  }
  std::stringstream text;
  text << in.rdbuf();
  return plan_from_json(text.str(), path);
}

void remove_state(const std::string& name) {
  std::error_code ec;
  fs::remove(state_path(name), ec);
}

std::vector<std::string> state_names() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(state_dir(), ec)) {
    fs::path p = e.path();
    if (p.extension() == ".json" && check_name(p.stem().string())) names.push_back(p.stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

Result<StateLock> StateLock::acquire() {
  std::error_code ec;
  fs::create_directories(state_dir(), ec);
  if (ec) return Error{"cannot create " + state_dir() + ": " + ec.message()};
  std::string path = state_dir() + "/.lock";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return Error{"cannot open " + path + ": " + std::strerror(errno)};
  if (::flock(fd, LOCK_EX) != 0) {
    int err = errno;
    ::close(fd);
    return Error{"cannot lock " + path + ": " + std::strerror(err)};
  }
  return StateLock(fd);
}

StateLock::~StateLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace xm::testbed

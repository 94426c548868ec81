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
  return {{"rail", n.rail},       {"device", n.device}, {"ifname", n.ifname}, {"fabric_port", n.fabric_port},
          {"address", n.address}, {"mac", n.mac},       {"rate_bps", n.rate_bps}};
}

json rail_json(const RailPlan& r) {
  return {{"rail", r.rail},       {"bridge", r.bridge}, {"uplink", r.uplink}, {"spine_ifname", r.spine_ifname},
          {"address", r.address}, {"mac", r.mac},       {"rate_bps", r.rate_bps}};
}

}  // namespace

std::string state_dir() {
  const char* dir = std::getenv("XM_TESTBED_STATE_DIR");
  return dir && *dir ? dir : "/run/xm-testbed";
}

std::string state_path(const std::string& name) { return state_dir() + "/" + name + ".json"; }

std::string plan_to_json(const Plan& plan) {
  json hosts = json::array(), rails = json::array();
  for (const HostPlan& h : plan.hosts) {
    json nics = json::array();
    for (const NicPlan& n : h.nics) nics.push_back(nic_json(n));
    hosts.push_back({{"index", h.index}, {"name", h.name}, {"netns", h.netns}, {"nics", nics}});
  }
  for (const RailPlan& r : plan.rails) rails.push_back(rail_json(r));
  json j = {{"name", plan.name},
            {"source", plan.source},
            {"subnet", plan.subnet},
            {"mtu", plan.mtu},
            {"fabric_netns", plan.fabric_netns},
            {"spine_netns", plan.spine_netns},
            {"hosts", hosts},
            {"rails", rails}};
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
    plan.fabric_netns = j.at("fabric_netns").get<std::string>();
    plan.spine_netns = j.at("spine_netns").get<std::string>();
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
        nic.fabric_port = n.at("fabric_port").get<std::string>();
        nic.address = n.at("address").get<std::string>();
        nic.mac = n.at("mac").get<std::string>();
        nic.rate_bps = n.at("rate_bps").get<uint64_t>();
        host.nics.push_back(std::move(nic));
      }
      plan.hosts.push_back(std::move(host));
    }
    for (const json& r : j.at("rails")) {
      RailPlan rail;
      rail.rail = r.at("rail").get<uint32_t>();
      rail.bridge = r.at("bridge").get<std::string>();
      rail.uplink = r.at("uplink").get<std::string>();
      rail.spine_ifname = r.at("spine_ifname").get<std::string>();
      rail.address = r.at("address").get<std::string>();
      rail.mac = r.at("mac").get<std::string>();
      rail.rate_bps = r.at("rate_bps").get<uint64_t>();
      plan.rails.push_back(std::move(rail));
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

#include "ops/dashboard.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "ops/probe_paths.h"

namespace xm::ops {

extern const unsigned char kDashboardPage[];  // dashboard.html, as the build embeds it (0-terminated)

namespace {

void put_health(nlohmann::json& j, const Health* h) {
  j["state"] = h ? h->state : "ok";
  if (h && !h->fault.empty()) j["fault"] = h->fault;
  if (h && h->incident) j["incident"] = h->incident;
}

template <typename Map, typename Key>
const Health* find(const Map& map, const Key& key) {
  auto it = map.find(key);
  return it == map.end() ? nullptr : &it->second;
}

}  // namespace

const std::string& dashboard_page() {
  static const std::string page(reinterpret_cast<const char*>(kDashboardPage));
  return page;
}

std::string fabric_json(const FabricPlan& plan, const FabricHealth& health) {
  nlohmann::json devices = nlohmann::json::array(), cables = nlohmann::json::array();
  for (const Device& d : plan.devices) {
    nlohmann::json j{{"name", d.name}, {"role", to_string(d.role)}, {"group", d.group}, {"plane", d.plane}};
    if (d.rail != kNoRail) j["rail"] = d.rail;
    if (d.role == Role::kHost) {
      nlohmann::json nics = nlohmann::json::array();
      for (const Port& p : d.ports) nics.push_back({{"port", p.name}, {"rail", p.rail}});
      j["nics"] = nics;
    }
    put_health(j, find(health.devices, d.name));
    devices.push_back(std::move(j));
  }
  CableIndex names(plan);
  for (const Cable& c : plan.cables) {
    nlohmann::json j{{"id", c.id}, {"name", names.name(c.id)}, {"tier", tier_name(c.tier)},
                     {"a", {{"device", c.a.device}, {"port", c.a.port}}}, {"b", {{"device", c.b.device}, {"port", c.b.port}}},
                     {"gbps", c.gbps}};
    if (c.rail != kNoRail) j["rail"] = c.rail;
    put_health(j, find(health.cables, c.id));
    cables.push_back(std::move(j));
  }
  return nlohmann::json{{"cluster", plan.spec.name}, {"devices", devices}, {"cables", cables}}.dump() + "\n";
}

Result<std::string> rails_json(const FabricPlan& plan, PrometheusClient& prometheus, double now, double seconds) {
  seconds = std::clamp(seconds, 10.0, 3600.0);
  const double step = std::max(1.0, std::round(seconds / 150));
  const std::string window = "[" + std::to_string(int(std::max(3.0, 2 * step))) + "s]";
  auto per_nic = [&](const std::string& numerator, const std::string& denominator) {
    return "sum by (nic) (increase(" + numerator + window + ")) / sum by (nic) (increase(" + denominator + window + "))";
  };
  Result<std::vector<PromSeries>> loss =
      prometheus.query_range(per_nic("xm_probe_lost_total", "xm_probe_sent_total"), now - seconds, now, step);
  if (!loss) return loss.error();
  Result<std::vector<PromSeries>> rtt = prometheus.query_range(
      per_nic("xm_probe_rtt_seconds_sum", "xm_probe_rtt_seconds_count"), now - seconds, now, step);
  if (!rtt) return rtt.error();

  // Every host names its NICs alike: the first one's ports say which rail each is on.
  std::map<std::string, uint32_t> rail_of;
  if (std::vector<const Device*> hosts = plan.of_role(Role::kHost); !hosts.empty())
    for (const Port& p : hosts.front()->ports) rail_of[p.name] = p.rail;
  std::map<std::string, nlohmann::json> by_nic;
  auto add = [&](const std::vector<PromSeries>& series, const char* key, double scale) {
    for (const PromSeries& s : series) {
      const std::string& nic = s.label("nic");
      nlohmann::json& r = by_nic[nic];
      if (r.is_null()) r = {{"nic", nic}, {"loss", nlohmann::json::array()}, {"rtt_ms", nlohmann::json::array()}};
      if (auto it = rail_of.find(nic); it != rail_of.end()) r["rail"] = it->second;
      for (const auto& [t, v] : s.points)
        if (std::isfinite(v)) r[key].push_back({t, v * scale});
    }
  };
  add(*loss, "loss", 1);
  add(*rtt, "rtt_ms", 1e3);
  nlohmann::json rails = nlohmann::json::array();
  for (auto& [nic, r] : by_nic) rails.push_back(std::move(r));
  return nlohmann::json{{"now", now}, {"seconds", seconds}, {"step", step}, {"rails", rails}}.dump() + "\n";
}

}  // namespace xm::ops

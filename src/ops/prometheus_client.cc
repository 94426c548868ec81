#include "ops/prometheus_client.h"

#include <httplib.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

namespace xm::ops {

const std::string& PromSample::label(const std::string& name) const {
  static const std::string kNone;
  auto it = labels.find(name);
  return it == labels.end() ? kNone : it->second;
}

PrometheusClient::PrometheusClient(const std::string& host, int port, double timeout_s)
    : client_(std::make_unique<httplib::Client>(host, port)), where_(host + ":" + std::to_string(port)) {
  const auto us = std::chrono::microseconds(int64_t(timeout_s * 1e6));
  client_->set_connection_timeout(us);
  client_->set_read_timeout(us);
  client_->set_keep_alive(true);
}

PrometheusClient::~PrometheusClient() = default;

Result<std::vector<PromSample>> PrometheusClient::query(const std::string& promql) {
  auto r = client_->Get("/api/v1/query", httplib::Params{{"query", promql}}, httplib::Headers{});
  if (!r) return Error{"prometheus at " + where_ + ": " + httplib::to_string(r.error())};
  nlohmann::json j = nlohmann::json::parse(r->body, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return Error{"prometheus at " + where_ + ": HTTP " + std::to_string(r->status) + ", not JSON"};
  if (j.value("status", "") != "success")
    return Error{"prometheus at " + where_ + ": " + promql + ": " + j.value("error", "HTTP " + std::to_string(r->status))};
  const nlohmann::json& data = j["data"];
  if (data.value("resultType", "") != "vector") return Error{"prometheus: " + promql + ": not an instant vector"};
  std::vector<PromSample> out;
  out.reserve(data["result"].size());
  for (const nlohmann::json& s : data["result"]) {
    PromSample p;
    for (const auto& [k, v] : s["metric"].items()) p.labels[k] = v.get<std::string>();
    p.value = std::strtod(s["value"][1].get<std::string>().c_str(), nullptr);  // "NaN", "+Inf" too
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace xm::ops

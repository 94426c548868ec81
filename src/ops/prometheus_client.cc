#include "ops/prometheus_client.h"

#include <httplib.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

namespace xm::ops {
namespace {

const std::string& label_of(const std::map<std::string, std::string>& labels, const std::string& name) {
  static const std::string kNone;
  auto it = labels.find(name);
  return it == labels.end() ? kNone : it->second;
}

// The `data` of Prometheus's answer to GET `path` with `params` (`promql` among them),
// when it is a success whose result is of `type`.
Result<nlohmann::json> answer(httplib::Client& client, const std::string& where, const std::string& path,
                              const httplib::Params& params, const std::string& promql, const std::string& type) {
  auto r = client.Get(path, params, httplib::Headers{});
  if (!r) return Error{"prometheus at " + where + ": " + httplib::to_string(r.error())};
  nlohmann::json j = nlohmann::json::parse(r->body, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return Error{"prometheus at " + where + ": HTTP " + std::to_string(r->status) + ", not JSON"};
  if (j.value("status", "") != "success")
    return Error{"prometheus at " + where + ": " + promql + ": " + j.value("error", "HTTP " + std::to_string(r->status))};
  if (j["data"].value("resultType", "") != type) return Error{"prometheus: " + promql + ": not a " + type};
  return std::move(j["data"]);
}

std::map<std::string, std::string> labels_of(const nlohmann::json& metric) {
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : metric.items()) out[k] = v.get<std::string>();
  return out;
}

double value_of(const nlohmann::json& point) {  // [ time, "value" ]; "NaN", "+Inf" too
  return std::strtod(point[1].get<std::string>().c_str(), nullptr);
}

}  // namespace

const std::string& PromSample::label(const std::string& name) const { return label_of(labels, name); }
const std::string& PromSeries::label(const std::string& name) const { return label_of(labels, name); }

PrometheusClient::PrometheusClient(const std::string& host, int port, double timeout_s)
    : client_(std::make_unique<httplib::Client>(host, port)), where_(host + ":" + std::to_string(port)) {
  const auto us = std::chrono::microseconds(int64_t(timeout_s * 1e6));
  client_->set_connection_timeout(us);
  client_->set_read_timeout(us);
  client_->set_keep_alive(true);
}

PrometheusClient::~PrometheusClient() = default;

Result<std::vector<PromSample>> PrometheusClient::query(const std::string& promql) {
  Result<nlohmann::json> data = answer(*client_, where_, "/api/v1/query", {{"query", promql}}, promql, "vector");
  if (!data) return data.error();
  std::vector<PromSample> out;
  out.reserve((*data)["result"].size());
  for (const nlohmann::json& s : (*data)["result"]) out.push_back({labels_of(s["metric"]), value_of(s["value"])});
  return out;
}

Result<std::vector<PromSeries>> PrometheusClient::query_range(const std::string& promql, double start, double end,
                                                              double step_s) {
  const httplib::Params params{{"query", promql}, {"start", std::to_string(start)}, {"end", std::to_string(end)},
                               {"step", std::to_string(step_s)}};
  Result<nlohmann::json> data = answer(*client_, where_, "/api/v1/query_range", params, promql, "matrix");
  if (!data) return data.error();
  std::vector<PromSeries> out;
  for (const nlohmann::json& s : (*data)["result"]) {
    PromSeries series{labels_of(s["metric"]), {}};
    for (const nlohmann::json& p : s["values"]) series.points.emplace_back(p[0].get<double>(), value_of(p));
    out.push_back(std::move(series));
  }
  return out;
}

}  // namespace xm::ops

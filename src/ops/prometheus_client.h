// Reading Prometheus through its HTTP API: an instant PromQL query and its vector result
// (GET /api/v1/query), a range query and its matrix (GET /api/v1/query_range). The controller reads everything it knows this way, so a site
// that outgrows one Prometheus (federation, remote storage, Thanos) serves it unchanged.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "util/result.h"

namespace httplib {
class Client;
}

namespace xm::ops {

struct PromSample {
  std::map<std::string, std::string> labels;  // __name__ among them, when kept
  double value = 0;

  const std::string& label(const std::string& name) const;  // "" when absent
};

struct PromSeries {
  std::map<std::string, std::string> labels;
  std::vector<std::pair<double, double>> points;  // (unix seconds, value), oldest first

  const std::string& label(const std::string& name) const;  // "" when absent
};

class PrometheusClient {
 public:
  PrometheusClient(const std::string& host, int port, double timeout_s = 2);
  ~PrometheusClient();
  PrometheusClient(const PrometheusClient&) = delete;
  PrometheusClient& operator=(const PrometheusClient&) = delete;

  // The instant vector `promql` evaluates to now. A scalar or string result, an HTTP
  // error or Prometheus's own ("bad_data") is an error with its message.
  Result<std::vector<PromSample>> query(const std::string& promql);
  // The range vector `promql` evaluates to at every `step_s` from `start` to `end` (unix seconds).
  Result<std::vector<PromSeries>> query_range(const std::string& promql, double start, double end, double step_s);

 private:
  std::unique_ptr<httplib::Client> client_;
  std::string where_;
};

}  // namespace xm::ops

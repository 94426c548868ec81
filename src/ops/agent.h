// The host agent (`xm ops agent`): probes the host's NICs' peers (probe_targets.h,
// prober.h), reads every interface's counters (link_counters.h) and renders both, with
// its own CPU and memory, as Prometheus metrics:
//
//   xm_probe_sent_total, _received_total, _lost_total, _send_errors_total, _late_total,
//   xm_probe_rtt_seconds (summary), xm_probe_fast,   per flow: labels host, nic, peer_host,
//   xm_probe_lost_in_a_row                           peer_nic, pair ("rail" | "cross-rail"), flow
//   xm_probe_echoed_total                            peers' probes this host answered
//   xm_agent_schedule_lag_seconds (summary)          how late probes leave: a starved host
//   node_network_*                                   node_exporter's names, label device
//   process_cpu_seconds_total, process_resident_memory_bytes, process_start_time_seconds
//
// One process, two threads: the probe loop and the HTTP server (http_server.h).
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "ops/exposition.h"
#include "ops/fabric_plan.h"
#include "ops/link_counters.h"
#include "ops/prober.h"
#include "util/result.h"

namespace xm::ops {

struct AgentOptions {
  std::string host;  // the plan's name of this host
  ProberOptions prober;
  ProbeMeshOptions mesh;
};

class Agent {
 public:
  // Opens the probe sockets and the counter reader in the calling thread's network
  // namespace.
  static Result<std::unique_ptr<Agent>> open(const FabricPlan& plan, const AgentOptions& options);

  // The probe loop, until `stop` is set.
  void run(const std::atomic<bool>& stop) { prober_->run(stop); }
  // The exposition text, from any thread.
  std::string metrics();
  const Prober& prober() const { return *prober_; }

 private:
  Agent(std::string host, std::unique_ptr<Prober> prober, LinkCounterReader links);
  std::string host_;
  std::unique_ptr<Prober> prober_;
  LinkCounterReader links_;
  double start_time_;
  std::vector<Labels> flow_labels_;  // by the prober's flow index
};

}  // namespace xm::ops

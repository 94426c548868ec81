// The controller (`xm ops controller`): every second it reads the agents' probe counts
// and link counters from Prometheus (PromQL over the HTTP API), traces the probes' paths
// (probe_paths.h: again every few seconds, since routing changes them), names the faulty
// components (localize.h) and keeps incidents: one opens when a finding first appears
// and closes once it has been absent for `clear_after_s`. Incidents go to the
// inventory's incidents table and are served as JSON:
//
//   GET /api/incidents        open ones and those closed in the last 10 minutes
//   GET /api/incidents?all=1  every one since the controller started
//   GET /api/actions          what healing did (drains, rail advice, restores), newest last
//   GET /api/status           evaluations, flows and paths traced, the last error
//   GET /api/probes           the last evaluation's probe evidence: every flow's traced
//                             links and its counts per window (what another localization
//                             algorithm is run on, side by side: bench/locate_accuracy.py)
//   POST /api/undrain         restores a drained component now (?component=..., none: all)
//
// Healing (heal.h): a network incident's component is drained, or its rail advised
// against, in the evaluation that opens it (and again if its class changes to one that
// needs more). A drain lasts until its incident has been closed for `restore_after_s`,
// doubled for each earlier drain of the same component within the hour: a link drained
// for loss carries no probes, so its restoring is a probation, and a fault that is still
// there is found and drained again, for longer. Every action goes to the inventory's
// heal_actions table with its reason.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "ops/fabric_plan.h"
#include "ops/heal.h"
#include "ops/incidents.h"
#include "ops/inventory.h"
#include "ops/localize.h"
#include "ops/prometheus_client.h"
#include "testbed/plan.h"
#include "util/result.h"

namespace xm::ops {

struct ControllerOptions {
  int prometheus_port = 0;  // on 127.0.0.1
  double tick_s = 1;
  double window_s = 10;       // probe losses: the fast window ...
  double long_window_s = 30;  // ... and the one for low loss rates
  double flap_window_s = 60;
  double clear_after_s = 15;
  double retrace_s = 5;
  double settle_s = 5;  // after a fault the counters named, while routing converges
  uint16_t probe_port = 7947;
  LocalizeOptions localize;
  std::string database;  // the inventory SQLite file; empty: none
  bool heal = true;
  double restore_after_s = 60;
  // A loss that may yet be a black hole's first second (Finding::may_sharpen) waits this
  // long, for a scrape more, for its class before it is drained: once drained it carries
  // no probes and its class is fixed. The wait ends sooner when it sharpens; when it ends,
  // an evaluation decides, not the next tick's (with a drain's vtysh calls, within 1 s).
  double sharpen_s = 0.6;
  std::string rail_advice;  // the file xccl reads (XCCL_RAIL_ADVICE); empty: none
  // Seconds without a complete evaluation (Prometheus unreachable, an evaluation stuck)
  // after which the controller calls its own incidents stale: "no incident" is then not
  // "a healthy fabric", and `xm ops locate` says so instead of reporting all clear.
  double stale_after_s = 10;
};

// What the dashboard colours: per cable and per device, the open incident on it (a
// network one before a host's) or the drain that holds it.
struct Health {
  std::string state;  // "fault" (an open network incident), "host" (a host problem), "drained"
  std::string fault;  // the incident's class
  int64_t incident = 0;
};
struct FabricHealth {
  std::map<uint32_t, Health> cables;  // by the plan's cable id; absent: healthy
  std::map<std::string, Health> devices;
};

struct HealAction {
  double at = 0;
  int64_t incident = 0;
  std::string action, component, by, reason;  // as in the heal_actions table (inventory.h)
  bool ok = true;
};

class Controller {
 public:
  static Result<std::unique_ptr<Controller>> open(testbed::Plan testbed, FabricPlan plan, const ControllerOptions& options);
  ~Controller();

  // Evaluates every tick until `stop` is set.
  void run(const std::atomic<bool>& stop);
  // One evaluation now.
  Status evaluate();

  // Restores what is drained for `component` ("": everything) now, as the operator.
  std::string undrain(const std::string& component);

  std::string incidents_json(bool all) const;
  std::string actions_json() const;
  std::string status_json() const;
  std::string probes_json() const;
  std::vector<Incident> incidents() const;
  FabricHealth health() const;
  const FabricPlan& plan() const { return plan_; }

 private:
  Controller(testbed::Plan testbed, FabricPlan plan, const ControllerOptions& options);
  // The devices' and ports' state (rates over `window_s`), without the probes.
  Result<Evidence> gather_state(double window_s);
  // The probes' counts and the queues' drops over `window_s` into `e`, tracing the
  // probes' paths when due.
  // `totals` caches the probes' counters as they are now, asked of Prometheus once per
  // evaluation and only when some settled flow needs them.
  Status count_probes(double window_s, std::optional<std::vector<FlowCount>>& totals, Evidence& e);
  // Of the flows settle() named: which are no evidence yet, and the counts of those whose
  // window still reaches back to it.
  Status count_since_settled(double window_s, std::optional<std::vector<FlowCount>>& totals, Evidence& e);
  // Every flow's probe counters now (sent, lost, late), by flow.
  Result<std::vector<FlowCount>> probe_totals();
  Status trace();
  // Seconds until the earliest held loss (ControllerOptions::sharpen_s) must be healed;
  // infinity when none is held.
  double hold_left_s() const;
  void update(const std::vector<Finding>& findings, double now);
  // Marks the flows whose paths cross `cables` settled from now.
  void settle(const std::vector<uint32_t>& cables);
  // Notes the cables whose flows `plan`'s sessions move as they are shut or reopened
  // (`restoring`), for the next evaluation to settle (under mu_).
  void reroute(const HealPlan& plan, bool restoring);
  // Drains or advises for incidents that need it, restores drains whose time is up.
  void heal(double now);

  struct Drain {
    uint64_t id = 0;
    int64_t incident = 0;
    std::string component;
    HealPlan plan;
    double hold_s = 0;
    double orphaned_at = 0;  // when its incident was found folded into another
  };
  // Reopens the drain's sessions no other drain holds; records it. Takes mu_.
  void restore(const Drain& drain, const std::string& by, const std::string& reason);
  void record(HealAction action);  // under mu_
  void write_advice();             // under mu_
  testbed::Plan testbed_;
  FabricPlan plan_;
  ControllerOptions options_;
  PrometheusClient prometheus_;
  std::unique_ptr<IncidentLog> log_;

  // The evaluating thread's own (run): flows, their paths, when each was settled.
  std::vector<ProbeFlow> flows_;
  std::map<std::string, size_t> flow_index_;  // by the flow's labels
  std::vector<ProbePath> paths_;
  std::chrono::steady_clock::time_point traced_at_{};
  std::chrono::steady_clock::time_point started_at_ = std::chrono::steady_clock::now();
  std::map<uint32_t, double> planned_bps_;
  // By flow: when routing last moved it (its path changed, or crossed a cable the
  // counters named or healing rerouted), and its counters once that had settled, noted at
  // the first evaluation past settle_s: while a window still reaches back into the
  // settling, the flow's counts are those since, not none.
  struct Settling {
    double at = 0;  // unix seconds
    bool noted = false;
    FlowCount totals;
  };
  std::vector<Settling> settling_;
  void settle_flow(size_t flow, double now);

  std::mutex heal_mu_;     // one healing at a time: the evaluations' and an operator's
  mutable std::mutex mu_;  // guards what follows
  std::vector<Incident> incidents_;
  std::vector<Drain> drains_;
  std::vector<HealAction> actions_;
  std::vector<uint32_t> rerouted_;  // cables whose routing healing changed; see evaluate()
  bool restored_ = false;            // ... by reopening sessions
  std::map<std::string, std::vector<double>> drained_at_;  // by component: when, for the doubling
  uint64_t next_drain_ = 1;
  BgpControl bgp_;
  uint64_t evaluations_ = 0;
  size_t flows_seen_ = 0, paths_complete_ = 0;
  std::string last_error_;
  double last_evaluation_s_ = 0, slowest_evaluation_s_ = 0, last_trace_s_ = 0, last_heal_s_ = 0;
  double started_unix_ = 0, evaluated_at_ = 0;  // unix seconds: start, the last complete evaluation

  // The evidence the last complete evaluation decided on, for /api/probes. Under mu_.
  struct ProbeSnapshot {
    double at = 0;  // unix seconds
    std::vector<double> windows_s;
    std::vector<ProbeFlow> flows;
    std::vector<ProbePath> paths;                // by flow
    std::vector<std::vector<FlowCount>> counts;  // by window, by flow
    std::vector<bool> settled;                   // by flow
  };
  std::shared_ptr<const ProbeSnapshot> probes_;  // replaced whole: served without holding mu_

  // Why the incidents cannot be trusted now ("" when they can). Under mu_.
  std::string staleness(double now) const;
};

}  // namespace xm::ops

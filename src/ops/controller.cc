#include "ops/controller.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <thread>

#include "util/clock.h"
#include "util/format.h"

namespace xm::ops {
namespace {

using Clock = std::chrono::steady_clock;

std::string flow_key(const PromSample& s) {
  return s.label("host") + "/" + s.label("nic") + ">" + s.label("peer_host") + "/" + s.label("peer_nic") + "#" + s.label("flow");
}

std::string range(double seconds) { return "[" + std::to_string(std::max<long long>(1, std::llround(seconds * 1000))) + "ms]"; }

nlohmann::json to_json(const Incident& i, double now) {
  return {{"id", i.id},
          {"heal", i.heal},
          {"healed_at", i.healed_at > 0 ? nlohmann::json(i.healed_at) : nlohmann::json(nullptr)},
          {"opened_at", i.opened_at},
          {"closed_at", i.closed_at > 0 ? nlohmann::json(i.closed_at) : nlohmann::json(nullptr)},
          {"seconds", (i.closed_at > 0 ? i.closed_at : now) - i.opened_at},
          {"component", i.finding.component},
          {"fault", i.finding.fault},
          {"network", i.finding.network},
          {"evidence", i.finding.evidence}};
}

// An open network incident not yet healed whose loss may yet sharpen into a black hole:
// healing waits up to sharpen_s for its class (ControllerOptions::sharpen_s).
bool awaits_class(const Incident& i) {
  return i.closed_at == 0 && i.finding.network && i.finding.may_sharpen && i.healed_fault.empty();
}

}  // namespace

Controller::Controller(testbed::Plan testbed, FabricPlan plan, const ControllerOptions& options)
    : testbed_(std::move(testbed)),
      plan_(std::move(plan)),
      options_(options),
      prometheus_("127.0.0.1", options.prometheus_port),
      bgp_(testbed_bgp(testbed_)) {
  started_unix_ = unix_seconds();
  // The rate each cable should run at: what the testbed shaped it to when it came up.
  CableIndex cables(plan_);
  for (const testbed::HostPlan& h : testbed_.hosts)
    for (const testbed::NicPlan& n : h.nics)
      if (const Cable* c = cables.at(h.name, n.ifname)) planned_bps_[c->id] = double(n.rate_bps);
  for (const testbed::UplinkPlan& u : testbed_.uplinks)
    if (const Cable* c = cables.at(u.tor, u.tor_port)) planned_bps_[c->id] = double(u.rate_bps);
}

Controller::~Controller() = default;

Result<std::unique_ptr<Controller>> Controller::open(testbed::Plan testbed, FabricPlan plan, const ControllerOptions& options) {
  std::unique_ptr<Controller> c(new Controller(std::move(testbed), std::move(plan), options));
  if (!options.database.empty()) {
    Result<IncidentLog> log = IncidentLog::open(options.database);
    if (!log) return log.error();
    c->log_ = std::make_unique<IncidentLog>(std::move(log).value());
  }
  return c;
}

Status Controller::trace() {
  const auto started = Clock::now();
  Result<std::vector<ProbePath>> p = trace_probe_paths(plan_, flows_, options_.probe_port, testbed_route_lookup(testbed_));
  if (!p) return Error{"tracing probe paths: " + p.error().message};
  // A probe lost while routing moved its flow is no evidence about either path: flows
  // whose path changed are settled as after a fault the counters named.
  const double now = unix_seconds();
  for (size_t i = 0; i < p->size() && i < paths_.size(); ++i)
    if ((*p)[i].request != paths_[i].request || (*p)[i].reply != paths_[i].reply) settle_flow(i, now);
  paths_ = std::move(p).value();
  traced_at_ = Clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  last_trace_s_ = std::chrono::duration<double>(traced_at_ - started).count();
  return Status::Ok();
}

Status Controller::count_probes(double window_s, std::optional<std::vector<FlowCount>>& totals, Evidence& e) {
  Result<std::vector<PromSample>> sent = prometheus_.query("increase(xm_probe_sent_total" + range(window_s) + ")");
  if (!sent) return Error{sent.error().message};
  Result<std::vector<PromSample>> lost = prometheus_.query("increase(xm_probe_lost_total" + range(window_s) + ")");
  if (!lost) return Error{lost.error().message};
  Result<std::vector<PromSample>> late = prometheus_.query("increase(xm_probe_late_total" + range(window_s) + ")");
  if (!late) return Error{late.error().message};
  Result<std::vector<PromSample>> in_a_row = prometheus_.query("xm_probe_lost_in_a_row");
  if (!in_a_row) return Error{in_a_row.error().message};
  // The flows: new ones (an agent restarted, the first evaluation) mean tracing again.
  bool fresh = false;
  for (const PromSample& s : *sent) {
    auto [it, added] = flow_index_.try_emplace(flow_key(s), flows_.size());
    if (!added) continue;
    fresh = true;
    ProbeFlow f{s.label("host"), s.label("nic"), s.label("peer_host"), s.label("peer_nic"),
                uint32_t(std::strtoul(s.label("flow").c_str(), nullptr, 10))};
    flows_.push_back(std::move(f));
  }
  const bool retrace = fresh || Clock::now() - traced_at_ > std::chrono::duration<double>(options_.retrace_s);
  if (retrace)
    if (Status st = trace(); !st) return st;
  if (retrace || e.flows.size() != flows_.size()) e.flows = flows_, e.paths = paths_;  // once per evaluation
  e.counts.assign(flows_.size(), FlowCount{});
  for (const PromSample& s : *sent) e.counts[flow_index_[flow_key(s)]].sent = s.value;
  for (const PromSample& s : *lost)
    if (auto it = flow_index_.find(flow_key(s)); it != flow_index_.end()) e.counts[it->second].lost = s.value;
  for (const PromSample& s : *late)
    if (auto it = flow_index_.find(flow_key(s)); it != flow_index_.end()) e.counts[it->second].late = s.value;
  for (const PromSample& s : *in_a_row)
    if (auto it = flow_index_.find(flow_key(s)); it != flow_index_.end()) e.counts[it->second].lost_in_a_row = s.value;
  // The queues' drops over the same window: losses while a sender's queue overflowed are
  // congestion's (localize.h).
  Result<std::vector<PromSample>> drops = prometheus_.query("increase(node_qdisc_drops_total" + range(window_s) + ")");
  if (!drops) return Error{drops.error().message};
  for (auto& [end, port] : e.ports) port.queue_drops = 0;
  for (const PromSample& s : *drops)
    if (auto it = e.ports.find(Endpoint{s.label("host"), s.label("device")}); it != e.ports.end()) it->second.queue_drops = s.value;
  return count_since_settled(window_s, totals, e);
}

Status Controller::count_since_settled(double window_s, std::optional<std::vector<FlowCount>>& totals, Evidence& e) {
  // A flow whose routing changed (settle()) is no evidence while it settles; after that,
  // until the window has slid past the settling, its counts are those since it settled:
  // the controller's own note of its counters then, against their value now.
  const double now = unix_seconds();
  settling_.resize(flows_.size());
  e.settled.assign(flows_.size(), false);
  std::vector<size_t> since;  // settled, and the window reaches back into it
  for (size_t i = 0; i < flows_.size(); ++i) {
    const double age = now - settling_[i].at;
    if (age < options_.settle_s) e.settled[i] = true;
    else if (age < window_s + options_.settle_s) since.push_back(i);
  }
  if (since.empty()) return Status::Ok();
  if (!totals) {
    Result<std::vector<FlowCount>> t = probe_totals();
    if (!t) return t.error();
    totals = std::move(t).value();
  }
  auto after = [](double total, double then) { return total >= then ? total - then : total; };  // an agent restarted
  for (size_t i : since) {
    Settling& s = settling_[i];
    if (!s.noted) s.noted = true, s.totals = (*totals)[i];  // settled just now: counting starts
    FlowCount& c = e.counts[i];
    c.sent = after((*totals)[i].sent, s.totals.sent);
    c.lost = after((*totals)[i].lost, s.totals.lost);
    c.late = after((*totals)[i].late, s.totals.late);
  }
  return Status::Ok();
}

Result<std::vector<FlowCount>> Controller::probe_totals() {
  std::vector<FlowCount> totals(flows_.size());
  for (auto [metric, field] : {std::pair{"xm_probe_sent_total", &FlowCount::sent},
                               std::pair{"xm_probe_lost_total", &FlowCount::lost},
                               std::pair{"xm_probe_late_total", &FlowCount::late}}) {
    Result<std::vector<PromSample>> now = prometheus_.query(metric);
    if (!now) return Error{now.error().message};
    for (const PromSample& s : *now)
      if (auto it = flow_index_.find(flow_key(s)); it != flow_index_.end()) totals[it->second].*field = s.value;
  }
  return totals;
}

Result<Evidence> Controller::gather_state(double window_s) {
  Evidence e;
  e.planned_bps = planned_bps_;
  Result<std::vector<PromSample>> up = prometheus_.query("max by (host) (up{job=\"xm-agent\"})");
  if (!up) return up.error();
  for (const PromSample& s : *up) e.devices[s.label("host")].scraped = s.value == 1;
  const std::string w = range(window_s);
  Result<std::vector<PromSample>> lag = prometheus_.query("rate(xm_agent_schedule_lag_seconds_sum" + w +
                                                          ") / rate(xm_agent_schedule_lag_seconds_count" + w + ")");
  if (!lag) return lag.error();
  for (const PromSample& s : *lag)
    if (s.value == s.value) e.devices[s.label("host")].lag_s = s.value;  // NaN: no probes sent

  // Ports: state now, carrier changes over the flap window.
  Result<std::vector<PromSample>> state = prometheus_.query("{__name__=~\"node_network_(flags|up|mtu_bytes|speed_bytes)\"}");
  if (!state) return state.error();
  Result<std::vector<PromSample>> changes =
      prometheus_.query("increase(node_network_carrier_changes_total" + range(options_.flap_window_s) + ")");
  if (!changes) return changes.error();
  for (const PromSample& s : *state) {
    if (!e.devices[s.label("host")].scraped) continue;
    PortHealth& p = e.ports[Endpoint{s.label("host"), s.label("device")}];
    const std::string& name = s.label("__name__");
    if (name == "node_network_flags") p.admin_up = (uint64_t(s.value) & 1) != 0;  // IFF_UP
    else if (name == "node_network_up") p.oper_up = s.value == 1;
    else if (name == "node_network_mtu_bytes") p.mtu = uint32_t(s.value);
    else if (name == "node_network_speed_bytes") p.speed_bps = s.value * 8;
  }
  for (const PromSample& s : *changes)
    if (auto it = e.ports.find(Endpoint{s.label("host"), s.label("device")}); it != e.ports.end()) it->second.carrier_changes = s.value;
  return e;
}

Status Controller::evaluate() {
  const auto started = Clock::now();
  std::vector<Finding> findings;
  Status result = Status::Ok();
  // Routing this controller changed since the last evaluation (a drain, a restore, an
  // operator's undrain): while it converges, the 5-tuples it moves lose probes, which is
  // no evidence of a fault (seen: a restore's losses blamed as a black hole on the cable
  // its flows left).
  std::vector<uint32_t> rerouted;
  bool restored = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    rerouted.swap(rerouted_);
    std::swap(restored, restored_);
  }
  settle(rerouted);
  if (restored) traced_at_ = {};  // the restored cables carry flows again: trace now
  // Windows reach back no further than the controller's start: probes lost before it
  // (agents starting one after another, a fault being set up) are none of its business.
  const double up_s = std::max(2.0, std::chrono::duration<double>(started - started_at_).count());
  // Devices and ports once; the probes' counts over each window.
  const double short_window = std::min(options_.window_s, up_s);
  Result<Evidence> e = gather_state(short_window);
  if (!e) result = Error{e.error().message};
  ProbeSnapshot snapshot;
  std::optional<std::vector<FlowCount>> totals;  // both windows' settled flows count from the same
  for (double window : {short_window, std::min(options_.long_window_s, up_s)}) {
    if (!result) break;
    if (Status st = count_probes(window, totals, *e); !st) {
      result = st;
      break;
    }
    snapshot.windows_s.push_back(window);
    snapshot.counts.push_back(e->counts);
    for (Finding& f : localize(plan_, *e, options_.localize)) {
      if (f.from_counters) settle(f.cables);
      auto same = [&](const Finding& g) { return g.component == f.component && g.fault == f.fault; };
      if (std::none_of(findings.begin(), findings.end(), same)) findings.push_back(std::move(f));
    }
  }
  // A failed read is no evidence that faults went away: incidents stay as they were.
  if (result) {
    const double now = unix_seconds();
    snapshot.at = now;
    snapshot.flows = std::move(e->flows);
    snapshot.paths = std::move(e->paths);
    snapshot.settled = std::move(e->settled);
    auto served = std::make_shared<const ProbeSnapshot>(std::move(snapshot));
    {
      std::lock_guard<std::mutex> lock(mu_);
      probes_.swap(served);
    }
    update(findings, now);
    const auto healing = Clock::now();
    heal(now);
    std::lock_guard<std::mutex> lock(mu_);
    last_heal_s_ = std::chrono::duration<double>(Clock::now() - healing).count();
  }
  size_t complete = 0;
  for (const ProbePath& p : paths_) complete += p.complete ? 1 : 0;
  std::lock_guard<std::mutex> lock(mu_);
  flows_seen_ = flows_.size(), paths_complete_ = complete;  // for status_json's threads
  ++evaluations_;
  if (result) evaluated_at_ = unix_seconds();
  last_error_ = result ? "" : result.message();
  last_evaluation_s_ = std::chrono::duration<double>(Clock::now() - started).count();
  slowest_evaluation_s_ = std::max(slowest_evaluation_s_, last_evaluation_s_);
  return result;
}

void Controller::reroute(const HealPlan& plan, bool restoring) {
  // A session shut or reopened moves the 5-tuples that crossed the cable, or will, and
  // only those can be caught mid-move: they all cross one of the uplinks, at the cable's
  // tier, of the device at its lower end (every ECMP choice the change alters is one of
  // them). A drained cable's own flows stay evidence: losses reported in the seconds
  // after its drain are what sharpens its class (a black hole's first second looks like
  // loss), until the next trace moves them off it.
  restored_ = restored_ || restoring;
  for (const DrainedCable& d : plan.drained) {
    const Cable& drained = plan_.cables[d.cable];
    for (const Cable& c : plan_.cables)
      if (c.tier == drained.tier && c.a.device == drained.a.device && (restoring || c.id != drained.id)) rerouted_.push_back(c.id);
  }
}

void Controller::settle(const std::vector<uint32_t>& cables) {
  if (cables.empty()) return;
  const double now = unix_seconds();
  for (size_t i = 0; i < paths_.size() && i < flows_.size(); ++i)
    for (const auto* links : {&paths_[i].request, &paths_[i].reply})
      for (DirectedLink l : *links)
        if (std::find(cables.begin(), cables.end(), cable_of(l)) != cables.end()) settle_flow(i, now);
}

void Controller::settle_flow(size_t flow, double now) {
  if (settling_.size() <= flow) settling_.resize(flow + 1);
  settling_[flow] = Settling{now, false, {}};
}

void Controller::update(const std::vector<Finding>& findings, double now) {
  std::lock_guard<std::mutex> lock(mu_);
  track(incidents_, findings, now, options_.clear_after_s, log_.get());
}

void Controller::heal(double now) {
  if (!options_.heal) return;
  std::lock_guard<std::mutex> healing(heal_mu_);
  // Decided under the lock, done outside it: vtysh takes tens of milliseconds a device.
  struct Todo {
    int64_t incident;
    std::string component, fault;
    HealPlan plan;
  };
  std::vector<Todo> todo;
  std::vector<Drain> due;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<BgpSession> shut;
    std::vector<std::string> advised;
    for (const Drain& d : drains_) {
      for (const BgpSession& b : d.plan.sessions()) shut.push_back(b);
      for (const RailAdvice& r : d.plan.avoid) advised.push_back(r.address);
    }
    for (Incident& i : incidents_) {
      if (i.closed_at != 0 || !i.finding.network || i.healed_fault == i.finding.fault) continue;
      if (awaits_class(i) && now - i.opened_at < options_.sharpen_s) continue;
      i.healed_fault = i.finding.fault;
      HealPlan p = plan_heal(plan_, i.finding, shut);
      std::erase_if(p.avoid, [&](const RailAdvice& r) { return std::count(advised.begin(), advised.end(), r.address) > 0; });
      if (p.empty() && p.kept.empty()) continue;
      for (const BgpSession& b : p.sessions()) shut.push_back(b);
      for (const RailAdvice& r : p.avoid) advised.push_back(r.address);
      todo.push_back({i.id, i.finding.component, i.finding.fault, std::move(p)});
    }
    for (Drain& d : drains_) {
      auto it = std::find_if(incidents_.begin(), incidents_.end(), [&](const Incident& i) { return i.id == d.incident; });
      if (it == incidents_.end() && d.orphaned_at == 0) d.orphaned_at = now;
      const double closed = it == incidents_.end() ? d.orphaned_at : it->closed_at;
      if (closed > 0 && now - closed >= d.hold_s) due.push_back(d);
    }
  }
  for (Todo& t : todo) {
    const std::string why = "xm-drain incident " + std::to_string(t.incident) + " " + t.fault;
    const std::vector<BgpSession> sessions = t.plan.sessions();
    Status done = sessions.empty() ? Status::Ok() : bgp_(sessions, true, why);
    std::lock_guard<std::mutex> lock(mu_);
    const std::string reason = t.fault + " on " + t.component + " (incident " + std::to_string(t.incident) + ")";
    std::string words;
    for (const DrainedCable& cable : t.plan.drained) {
      record({now, t.incident, "drain", cable.name, "controller", reason + (done ? "" : ": " + done.message()), bool(done)});
      words += (words.empty() ? "" : "; ") + std::string(done ? "drained " : "could not drain ") + cable.name;
    }
    for (const RailAdvice& r : t.plan.avoid) {
      record({now, t.incident, "advise", r.nic, "controller", "avoid rail " + r.address + ": " + reason, true});
      words += (words.empty() ? "" : "; ") + std::string("rail ") + r.nic + " (" + r.address + ") advised against";
    }
    if (!t.plan.kept.empty()) {
      record({now, t.incident, "keep", t.component, "controller", "not drained: " + t.plan.kept, true});
      words += (words.empty() ? "" : "; ") + std::string("not drained: ") + t.plan.kept;
    }
    if (done) reroute(t.plan, false);
    if (done && !t.plan.empty()) {
      std::vector<double>& before = drained_at_[t.component];
      std::erase_if(before, [&](double at) { return now - at > 3600; });
      drains_.push_back({next_drain_++, t.incident, t.component, t.plan, options_.restore_after_s * std::pow(2.0, double(before.size())), 0});
      before.push_back(now);
      if (!t.plan.avoid.empty()) write_advice();
    }
    for (Incident& i : incidents_)
      if (i.id == t.incident) {
        if (i.healed_at == 0) i.healed_at = unix_seconds();
        i.heal += (i.heal.empty() ? "" : "; ") + words;
      }
  }
  for (const Drain& d : due)
    restore(d, "controller", "incident " + std::to_string(d.incident) + " closed for " + trimmed(d.hold_s, 3) + " s");
}

void Controller::restore(const Drain& part, const std::string& by, const std::string& reason) {
  std::vector<BgpSession> reopen;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const BgpSession& s : part.plan.sessions()) {
      bool held = false;  // by another drain still in force
      for (const Drain& other : drains_)
        if (other.id != part.id)
          for (const BgpSession& o : other.plan.sessions()) held = held || o == s;
      if (!held) reopen.push_back(s);
    }
  }
  Status done = reopen.empty() ? Status::Ok() : bgp_(reopen, false, "");
  const double now = unix_seconds();
  std::lock_guard<std::mutex> lock(mu_);
  const std::string action = by == "operator" ? "undrain" : "restore";
  for (const DrainedCable& cable : part.plan.drained)
    record({now, part.incident, action, cable.name, by, reason + (done ? "" : ": " + done.message()), bool(done)});
  for (const RailAdvice& r : part.plan.avoid) record({now, part.incident, action, r.nic, by, reason, true});
  if (!done) return;  // still drained: tried again at the next evaluation
  reroute(part.plan, true);
  // What was restored leaves its drain, and an empty drain goes.
  for (Drain& d : drains_) {
    if (d.id != part.id) continue;
    std::erase_if(d.plan.drained, [&](const DrainedCable& c) {
      return std::any_of(part.plan.drained.begin(), part.plan.drained.end(), [&](const DrainedCable& r) { return r.name == c.name; });
    });
    std::erase_if(d.plan.avoid, [&](const RailAdvice& a) { return std::count(part.plan.avoid.begin(), part.plan.avoid.end(), a) > 0; });
  }
  std::erase_if(drains_, [&](const Drain& d) { return d.id == part.id && d.plan.empty(); });
  if (!part.plan.avoid.empty()) write_advice();
}

std::string Controller::undrain(const std::string& component) {
  std::lock_guard<std::mutex> healing(heal_mu_);
  std::vector<Drain> chosen;  // whole drains, or the part of one that `component` names
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const Drain& d : drains_) {
      if (component.empty() || d.component == component) {
        chosen.push_back(d);
        continue;
      }
      Drain part = d;
      std::erase_if(part.plan.drained, [&](const DrainedCable& c) { return c.name != component; });
      std::erase_if(part.plan.avoid, [&](const RailAdvice& r) { return r.nic != component; });
      if (!part.plan.empty()) chosen.push_back(std::move(part));
    }
  }
  nlohmann::json restored = nlohmann::json::array();
  for (const Drain& d : chosen) {
    restore(d, "operator", "xm ops undrain");
    for (const DrainedCable& c : d.plan.drained) restored.push_back(c.name);
    for (const RailAdvice& r : d.plan.avoid) restored.push_back("rail " + r.nic);
  }
  std::lock_guard<std::mutex> lock(mu_);
  return nlohmann::json{{"restored", restored}, {"still_drained", drains_.size()}}.dump() + "\n";
}

void Controller::record(HealAction action) {
  if (log_)
    if (Status s = log_->acted({action.at, action.incident, action.action, action.component, action.by, action.reason, action.ok}); !s)
      last_error_ = s.message();
  actions_.push_back(std::move(action));
}

void Controller::write_advice() {
  if (options_.rail_advice.empty()) return;
  std::vector<std::pair<RailAdvice, std::string>> advice;
  for (const Drain& d : drains_)
    for (const RailAdvice& r : d.plan.avoid) advice.emplace_back(r, d.component + " (incident " + std::to_string(d.incident) + ")");
  if (Status s = write_rail_advice(options_.rail_advice, advice); !s) last_error_ = s.message();
}

void Controller::run(const std::atomic<bool>& stop) {
  const auto tick = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options_.tick_s));
  auto next = Clock::now() + tick;
  while (!stop.load()) {
    (void)evaluate();
    const auto now = Clock::now();
    if (next < now) next = now;
    // A loss held for its class is decided when its wait ends, not at the next tick: the
    // drain stays within a second of the localization.
    const double held_s = hold_left_s();
    const bool held = held_s < std::chrono::duration<double>(next - now).count();
    const auto wake =
        held ? now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(std::max(held_s, 0.01))) : next;
    while (!stop.load() && Clock::now() < wake)
      std::this_thread::sleep_for(std::min<Clock::duration>(wake - Clock::now(), std::chrono::milliseconds(100)));
    if (!held) next += tick;
  }
}

double Controller::hold_left_s() const {
  std::lock_guard<std::mutex> lock(mu_);
  double left = std::numeric_limits<double>::infinity();
  const double now = unix_seconds();
  for (const Incident& i : incidents_)
    if (awaits_class(i)) left = std::min(left, i.opened_at + options_.sharpen_s - now);
  return left;
}

std::vector<Incident> Controller::incidents() const {
  std::lock_guard<std::mutex> lock(mu_);
  return incidents_;
}

FabricHealth Controller::health() const {
  FabricHealth out;
  std::lock_guard<std::mutex> lock(mu_);
  for (const Drain& d : drains_)
    for (const DrainedCable& c : d.plan.drained) out.cables[c.cable] = {"drained", "", d.incident};
  for (const Incident& i : incidents_) {
    if (i.closed_at != 0) continue;
    const Health h{i.finding.network ? "fault" : "host", i.finding.fault, i.id};
    for (uint32_t c : i.finding.cables)  // a fault on a drained cable is still a fault
      if (out.cables[c].state != "fault") out.cables[c] = h;
    if (plan_.find(i.finding.component) && out.devices[i.finding.component].state != "fault")
      out.devices[i.finding.component] = h;
  }
  return out;
}

std::string Controller::incidents_json(bool all) const {
  const double now = unix_seconds();
  nlohmann::json list = nlohmann::json::array();
  std::lock_guard<std::mutex> lock(mu_);
  for (const Incident& i : incidents_)
    if (all || i.closed_at == 0 || now - i.closed_at < 600) list.push_back(to_json(i, now));
  return nlohmann::json{{"testbed", testbed_.name}, {"now", now}, {"stale", staleness(now)}, {"incidents", list}}.dump(1) + "\n";
}

std::string Controller::actions_json() const {
  nlohmann::json list = nlohmann::json::array();
  std::lock_guard<std::mutex> lock(mu_);
  for (const HealAction& a : actions_)
    list.push_back({{"at", a.at}, {"incident", a.incident}, {"action", a.action}, {"component", a.component},
                    {"by", a.by}, {"reason", a.reason}, {"ok", a.ok}});
  nlohmann::json drained = nlohmann::json::array();
  for (const Drain& d : drains_)
    for (const DrainedCable& cable : d.plan.drained) drained.push_back(cable.name);
  return nlohmann::json{{"testbed", testbed_.name}, {"drained", drained}, {"actions", list}}.dump(1) + "\n";
}

std::string Controller::staleness(double now) const {
  const double since = evaluated_at_ > 0 ? evaluated_at_ : started_unix_;
  if (now - since <= options_.stale_after_s) return "";
  return std::string(evaluated_at_ > 0 ? "no complete evaluation for " : "no complete evaluation since the start, ") +
         std::to_string(std::lround(now - since)) + " s" + (last_error_.empty() ? " (one is still running)" : " (last error: " + last_error_ + ")");
}

std::string Controller::status_json() const {
  const double now = unix_seconds();
  std::lock_guard<std::mutex> lock(mu_);
  return nlohmann::json{{"testbed", testbed_.name},
                        {"stale", staleness(now)},
                        {"evaluated_at", evaluated_at_ > 0 ? nlohmann::json(evaluated_at_) : nlohmann::json(nullptr)},
                        {"evaluations", evaluations_},
                        {"flows", flows_seen_},
                        {"paths_traced", paths_complete_},
                        {"last_evaluation_seconds", last_evaluation_s_},
                        {"slowest_evaluation_seconds", slowest_evaluation_s_},
                        {"last_trace_seconds", last_trace_s_},  // the last tracing of the probes' paths
                        {"last_heal_seconds", last_heal_s_},
                        {"last_error", last_error_}}
             .dump(1) + "\n";
}

std::string Controller::probes_json() const {
  // Links as directed-link numbers (probe_paths.h: 2 * cable + 1 when from its b end),
  // cables named once: 2,944 flows of a 16 x 8 fabric in about 300 KB.
  CableIndex index(plan_);
  nlohmann::json cables = nlohmann::json::array();
  for (const Cable& c : plan_.cables) cables.push_back(index.name(c.id));
  std::shared_ptr<const ProbeSnapshot> snapshot;
  {
    std::lock_guard<std::mutex> lock(mu_);
    snapshot = probes_;
  }
  if (!snapshot) snapshot = std::make_shared<const ProbeSnapshot>();
  const ProbeSnapshot& s = *snapshot;
  nlohmann::json flows = nlohmann::json::array();
  for (size_t i = 0; i < s.flows.size() && i < s.paths.size(); ++i) {
    const ProbeFlow& f = s.flows[i];
    nlohmann::json links = nlohmann::json::array(), sent = nlohmann::json::array(), lost = nlohmann::json::array();
    for (const auto* part : {&s.paths[i].request, &s.paths[i].reply})
      for (DirectedLink l : *part) links.push_back(l);
    for (const std::vector<FlowCount>& w : s.counts) {
      sent.push_back(i < w.size() ? w[i].sent : 0);
      lost.push_back(i < w.size() ? w[i].lost : 0);
    }
    flows.push_back({{"from", f.host + "/" + f.nic},
                     {"to", f.peer_host + "/" + f.peer_nic},
                     {"flow", f.flow},
                     {"links", std::move(links)},
                     {"complete", s.paths[i].complete},
                     {"settled", i < s.settled.size() && s.settled[i]},
                     {"sent", std::move(sent)},
                     {"lost", std::move(lost)},
                     {"lost_in_a_row", s.counts.empty() || i >= s.counts[0].size() ? 0 : s.counts[0][i].lost_in_a_row}});
  }
  return nlohmann::json{{"evaluated_at", s.at > 0 ? nlohmann::json(s.at) : nlohmann::json(nullptr)},
                        {"windows_seconds", s.windows_s},
                        {"cables", std::move(cables)},
                        {"flows", std::move(flows)}}
             .dump() +
         "\n";
}

}  // namespace xm::ops

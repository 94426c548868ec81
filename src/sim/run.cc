#include "sim/run.h"

#include <chrono>
#include <filesystem>
#include <fstream>

#include "sim/cc/cc.h"
#include "sim/collective/results.h"
#include "sim/fluid/fluid_network.h"
#include "sim/network.h"
#include "sim/plot.h"
#include "sim/workload/hpcc_io.h"
#include "util/file.h"

namespace xm::sim {
namespace {

// Writes what a run made of the scenario's collectives under `dir`.
Status write_collectives(const std::filesystem::path& dir, const Report& rep, const std::vector<FlowOutcome>& outcomes,
                         const Traffic& traffic, const std::string& title) {
  if (traffic.collectives.empty()) return Status::Ok();
  for (auto [file, text] : {std::pair{"collectives.csv", collectives_csv(rep.collectives, rep.cc)},
                            {"ranks.csv", ranks_csv(outcomes, traffic.collectives)},
                            {"rails.csv", rails_csv(outcomes, traffic.collectives)},
                            {"rails.svg", rails_svg(outcomes, traffic.collectives, title + ": throughput per rail")}})
    if (Status s = write_file(dir / file, text); !s) return s;
  return Status::Ok();
}

}  // namespace

Result<std::vector<Report>> run_scenario(const Scenario& scenario, const RunSettings& settings) {
  Result<SimTopology> topology = scenario_topology(scenario);
  if (!topology) return Error{topology.error().message};
  return run_scenario(scenario, *topology, settings);
}

Result<std::vector<Report>> run_scenario(const Scenario& scenario, const SimTopology& topology,
                                         const RunSettings& settings) {
  if (Status s = check_config(scenario.network, topology); !s) return Error{scenario.source + ": " + s.message()};
  Result<Traffic> traffic = scenario_flows(scenario, topology);
  if (!traffic) return Error{traffic.error().message};
  const std::vector<FlowSpec>& flows = traffic->flows;
  if (flows.empty()) return Error{scenario.source + ": the traffic makes no flow"};
  Time traffic_end;
  for (const FlowSpec& f : flows) traffic_end = max(traffic_end, f.start);
  const bool fluid = settings.engine == EngineKind::kFlow;
  Result<std::vector<LinkEvent>> link_events = scenario_link_events(scenario, topology);
  if (!link_events) return Error{link_events.error().message};
  if (fluid && !link_events->empty())
    return Error{scenario.source + ": events: the flow engine does not model links that fail or degrade; use the packet engine"};

  // The flow engine runs once (no congestion control: the fair share is what an ideal
  // one reaches); the packet engine once per algorithm.
  const std::vector<std::string> names = fluid ? std::vector<std::string>{"flow"}
                                               : settings.cc.empty() ? scenario.cc : settings.cc;
  const Rate line = line_rate(topology);
  // Check every name before the first long run.
  if (!fluid)
    for (const std::string& name : names)
      if (auto cc = make_cc(name, line); !cc) return Error{cc.error().message};
  if (!settings.out_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(settings.out_dir, ec);
    if (ec) return Error{settings.out_dir + ": " + ec.message()};
  }
  const std::vector<uint64_t> buckets = scenario.buckets.empty() ? default_buckets() : scenario.buckets;

  std::vector<Report> reports;
  for (size_t i = 0; i < names.size(); ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    auto wall = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
    Progress p;
    p.cc = names[i], p.run = i, p.runs = names.size(), p.traffic_end = traffic_end, p.flows = flows.size();
    Report rep;
    std::vector<FlowOutcome> outcomes;
    std::string fct;  // HPCC format, packet engine only
    // What both engines share: adding the flows, and where the run has got to.
    auto add_all = [&](auto& net) -> Status {
      for (const FlowSpec& f : flows)
        if (Result<uint32_t> id = net.add_flow(f); !id) return Error{scenario.source + ": " + id.error().message};
      return Status::Ok();
    };
    auto note = [&](const auto& n) {
      p.now = n.now(), p.flows_done = n.counters().flows_done, p.events = n.events(), p.wall_seconds = wall();
    };
    auto report = [&](const auto& n) {
      if (!settings.progress) return;
      note(n);
      settings.progress(p);
    };
    if (fluid) {
      FluidNetwork net(topology, scenario.network, scenario.seed);
      net.reserve(flows.size());
      if (Status s = add_all(net); !s) return Error{s.message()};
      net.run(scenario.stop, report);
      rep = make_report(net, buckets);
      outcomes = net.outcomes();
      note(net);
    } else {
      std::unique_ptr<CongestionControl> cc = std::move(make_cc(names[i], line)).value();
      Network net(topology, scenario.network, *cc, scenario.seed);
      if (Status s = add_all(net); !s) return Error{s.message()};
      for (const LinkEvent& e : *link_events)
        if (Status s = net.add_link_event(e); !s) return Error{scenario.source + ": " + s.message()};
      net.run(scenario.stop, report);
      rep = make_report(net, buckets);
      outcomes = net.outcomes();
      if (!settings.out_dir.empty() || !settings.fct_file.empty()) fct = format_hpcc_fct(net);
      note(net);
    }
    rep.collectives = collective_results(outcomes, traffic->collectives);
    rep.scenario = scenario.name;
    rep.cc = names[i];
    rep.seed = scenario.seed;
    rep.wall_seconds = wall();
    rep.events_per_second = rep.wall_seconds > 0 ? double(rep.events) / rep.wall_seconds : 0;
    rep.peak_rss_kb = peak_rss_kb();
    if (settings.progress) {
      p.wall_seconds = rep.wall_seconds, p.finished = true;
      settings.progress(p);
    }
    if (!settings.fct_file.empty() && !fluid)
      if (Status s = write_file(settings.fct_file, fct); !s) return Error{s.message()};
    if (!settings.out_dir.empty()) {
      const std::filesystem::path dir = std::filesystem::path(settings.out_dir) / names[i];
      std::filesystem::create_directories(dir);
      if (!fluid)
        if (Status s = write_file(dir / "fct.txt", fct); !s) return Error{s.message()};
      if (Status s = write_collectives(dir, rep, outcomes, *traffic, scenario.name + " (" + names[i] + ")"); !s)
        return Error{s.message()};
    }
    reports.push_back(std::move(rep));
  }
  if (!settings.out_dir.empty()) {
    const std::filesystem::path dir(settings.out_dir);
    for (auto [file, text] : {std::pair{"summary.csv", summary_csv(reports)}, {"slowdown.csv", slowdown_csv(reports)},
                              {"results.json", reports_json(reports)},
                              {"slowdown.svg", slowdown_svg(reports, scenario.name + ": FCT slowdown by flow size")}})
      if (Status s = write_file(dir / file, text); !s) return Error{s.message()};
  }
  return reports;
}

}  // namespace xm::sim
